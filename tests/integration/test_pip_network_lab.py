"""A wheel download that stalls halfway, as on a flaky link: the install still succeeds.

A package index on 127.0.0.1 (the lab's containers share the host's network) serves
one wheel; its first download stops sending halfway until pip's read timeout fires.
pip >= 25.1 (trixie) resumes it with a Range request; older pips (bookworm's 23.0)
fail with "Read timed out", and pctfleet runs the install again. Both are real pips
in real containers through `pct exec`.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
import textwrap
import threading
import time
import zipfile
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from suites import TRIXIE_CT, ensure_trixie, suite_params

pytestmark = pytest.mark.lab

VENV = "/root/netprobe-venv"
WHEEL_NAME = "netprobe-1.0-py3-none-any.whl"
TIMEOUT, STALL = 2, 5  # pip's read timeout here, and how long the cut download stalls


def _wheel() -> bytes:
    """A pure-Python wheel with 4 MB of stored (uncompressed) filler, so a cut lands mid-body."""
    files = {
        "netprobe/__init__.py": b"VERSION = '1.0'\n",
        "netprobe/filler.bin": os.urandom(4 << 20),
        "netprobe-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: netprobe\nVersion: 1.0\n",
        "netprobe-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\n"
        b"Tag: py3-none-any\n",
    }
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as wheel:
        record = []
        for name, data in files.items():
            wheel.writestr(name, data)
            digest = hashlib.sha256(data).hexdigest()
            record.append(f"{name},sha256={digest},{len(data)}")
        record.append("netprobe-1.0.dist-info/RECORD,,")
        wheel.writestr("netprobe-1.0.dist-info/RECORD", "\n".join(record) + "\n")
    return buffer.getvalue()


class FlakyIndex:
    """A PEP 503 index; the first full GET of the wheel stalls after half its bytes."""

    def __init__(self) -> None:
        self.wheel = _wheel()
        self.requests: list[str] = []  # "full" or the Range header, per wheel GET
        self.cut_next = True
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.port = self.server.server_address[1]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        index = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                if self.path.rstrip("/") == "/simple/netprobe":
                    return self._page()
                if self.path == f"/files/{WHEEL_NAME}":
                    return self._wheel(self.headers.get("Range"))
                self.send_error(404)

            def _page(self) -> None:
                digest = hashlib.sha256(index.wheel).hexdigest()
                link = f'<a href="/files/{WHEEL_NAME}#sha256={digest}">{WHEEL_NAME}</a>'
                self._send(200, f"<html><body>{link}</body></html>".encode(), "text/html")

            def _wheel(self, wanted: str | None) -> None:
                index.requests.append(wanted or "full")
                body = index.wheel
                if wanted:
                    start = int(wanted.removeprefix("bytes=").split("-")[0])
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
                    return self._rest(body[start:])
                self.send_response(200)
                if index.cut_next:
                    index.cut_next = False
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body[: len(body) // 2])
                    self.wfile.flush()
                    time.sleep(STALL)  # past the client's read timeout
                    self.close_connection = True
                    return None
                return self._rest(body)

            def _rest(self, body: bytes) -> None:
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Accept-Ranges", "bytes")
                self.end_headers()
                self.wfile.write(body)

            def _send(self, code: int, body: bytes, kind: str) -> None:
                self.send_response(code)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        return Handler


@pytest.fixture
def index() -> Iterator[FlakyIndex]:
    served = FlakyIndex()
    thread = threading.Thread(target=served.server.serve_forever, daemon=True)
    thread.start()
    yield served
    served.server.shutdown()
    served.server.server_close()


@pytest.fixture(params=suite_params("node2/201", TRIXIE_CT))
def where(request, lab, extra_ct) -> Iterator[tuple[str, str]]:
    inventory = str(lab.up(nodes=2, containers=2).inventory)
    if request.param == TRIXIE_CT:
        ensure_trixie(extra_ct)
    yield inventory, request.param
    pctfleet("exec", "-i", inventory, "--limit", request.param, "--", "rm", "-rf", VENV)


def pctfleet(*args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "pctfleet", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=600)


def pip_version(inventory: str, key: str) -> tuple[int, ...]:
    probe = f"{VENV}/bin/python -c 'import pip; print(pip.__version__)'"
    done = pctfleet("exec", "-i", inventory, "--limit", key, "--", "sh", "-c", probe)
    assert done.returncode == 0, done.stderr
    return tuple(int(part) for part in done.stdout.strip().split(".")[:2])


def test_a_download_cut_short_is_resumed_or_tried_again(index, where, tmp_path):
    inventory, key = where
    book = tmp_path / "netprobe.yml"
    book.write_text(
        textwrap.dedent(f"""\
        - hosts: all
          tasks:
            - name: a wheel over a link that drops
              pip:
                name: netprobe==1.0
                virtualenv: {VENV}
                virtualenv_command: python3 -m venv
                extra_args: --timeout {TIMEOUT} --index-url http://127.0.0.1:{index.port}/simple/
        """)
    )
    pctfleet("exec", "-i", inventory, "--limit", key, "--", "rm", "-rf", VENV)
    done = pctfleet("run", str(book), "-i", inventory, "--limit", key, "--json")
    (container,) = json.loads(done.stdout)["containers"]
    (task,) = container["tasks"]
    assert done.returncode == 0, (task["msg"], task.get("stderr", "")[-2000:])
    assert task["changed"] is True
    check = f"{VENV}/bin/python -c 'import netprobe; print(netprobe.VERSION)'"
    imported = pctfleet("exec", "-i", inventory, "--limit", key, "--", "sh", "-c", check)
    assert imported.stdout.strip() == "1.0"
    if pip_version(inventory, key) >= (25, 1):
        assert index.requests[0] == "full" and index.requests[1].startswith("bytes=")
    else:
        assert index.requests == ["full", "full"]
