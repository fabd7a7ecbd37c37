#!/usr/bin/env python3
"""A stand-in for `python -m sglang.launch_server` in the lab, which has no GPU.

It accepts SGLang's command line, prints SGLang's real start-up log lines,
answers GET /health with 503 while "starting" and 200 once "ready", and can be
told to fail the way a broken flashinfer JIT makes SGLang fail.
Environment: STANDIN_READY_AFTER (seconds, default 1), STANDIN_FAIL (text of a
warm-up error: print it and exit 1), STANDIN_UNHEALTHY_FILE (while this file
exists, /health answers 503).
"""

import argparse
import http.server
import json
import os
import sys
import threading
import time

READY = "The server is fired up and ready to roll!"


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model-path", default="stand-in")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=30000)
    parser.add_argument("--tp-size", type=int, default=1)
    parser.add_argument("--attention-backend", default="")
    args, _ = parser.parse_known_args()
    return args


def handler_for(state: dict):
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            unhealthy = os.environ.get("STANDIN_UNHEALTHY_FILE", "")
            ready = state["ready"] and not (unhealthy and os.path.exists(unhealthy))
            if self.path in ("/health", "/ready"):
                self._reply(200 if ready else 503, b"")
            elif self.path in ("/v1/models", "/get_model_info"):
                self._reply(200, json.dumps({"model_path": state["model"]}).encode())
            else:
                self._reply(404, b"")

        def _reply(self, code: int, body: bytes) -> None:
            self.send_response(code)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    return Handler


def main() -> int:
    args = parse()
    print(
        f"server_args=ServerArgs(model_path='{args.model_path}', host='{args.host}', "
        f"port={args.port}, tp_size={args.tp_size}, "
        f"attention_backend='{args.attention_backend}')",
        flush=True,
    )
    state = {"ready": False, "model": args.model_path}
    server = http.server.ThreadingHTTPServer((args.host, args.port), handler_for(state))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print("Load weight begin.", flush=True)
    time.sleep(float(os.environ.get("STANDIN_READY_AFTER", "1")))
    failure = os.environ.get("STANDIN_FAIL")
    if failure:
        print(f"Initialization failed. warmup error: {failure}", flush=True)
        return 1
    state["ready"] = True
    print(f"INFO:     Uvicorn running on http://{args.host}:{args.port}", flush=True)
    print(READY, flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    sys.exit(main())
