"""A small TCP relay that stands in front of a lab node's sshd to make faults.

Modes:
  hang   accept connections and then send nothing at all (no SSH banner),
         holding them open until the client gives up.
  delay  forward to --target, holding every chunk --delay-ms milliseconds
         in each direction (tc netem does not exist on the lab kernel).

It runs as its own process (standalone, stdlib only) and writes its PID to
--pidfile once it is listening, so the lab can wait for it and stop it by PID.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys

CHUNK = 65536


def split_hostport(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    return host, int(port)


async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Hang mode: swallow whatever the client sends and never answer."""
    with contextlib.suppress(ConnectionError):
        while await reader.read(CHUNK):
            pass
    writer.close()


async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float) -> None:
    """Copy one direction, releasing each chunk `delay` seconds after it arrived.

    A queue keeps order while letting chunks that arrive close together share
    the wait, so the relay adds latency without throttling throughput.
    """
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

    async def release() -> None:
        while True:
            due, data = await queue.get()
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            if not data:
                if writer.can_write_eof():
                    writer.write_eof()
                return
            writer.write(data)
            await writer.drain()

    sender = asyncio.create_task(release())
    try:
        while data := await reader.read(CHUNK):
            queue.put_nowait((loop.time() + delay, data))
    except ConnectionError:
        pass
    queue.put_nowait((loop.time() + delay, b""))
    with contextlib.suppress(ConnectionError):
        await sender


async def forward(
    client_r: asyncio.StreamReader,
    client_w: asyncio.StreamWriter,
    target: tuple[str, int],
    delay: float,
) -> None:
    try:
        server_r, server_w = await asyncio.open_connection(*target)
    except OSError:
        client_w.close()
        return
    try:
        await asyncio.gather(pump(client_r, server_w, delay), pump(server_r, client_w, delay))
    finally:
        server_w.close()
        client_w.close()


def write_pidfile(path: str) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="ascii") as f:
        f.write(f"{os.getpid()}\n")
    os.replace(tmp, path)  # atomic: readers never see a half-written PID


async def serve(args: argparse.Namespace) -> None:
    host, port = split_hostport(args.listen)
    if args.mode == "hang":
        handler = hold
    else:
        target = split_hostport(args.target)
        delay = args.delay_ms / 1000.0

        async def handler(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            await forward(r, w, target, delay)

    server = await asyncio.start_server(handler, host, port, reuse_address=True)
    write_pidfile(args.pidfile)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with server:
        await stop.wait()
    with contextlib.suppress(FileNotFoundError):
        os.unlink(args.pidfile)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listen", required=True, help="HOST:PORT to accept on")
    parser.add_argument("--target", default="", help="HOST:PORT to forward to (delay mode)")
    parser.add_argument("--mode", choices=("hang", "delay"), required=True)
    parser.add_argument("--delay-ms", type=int, default=0)
    parser.add_argument("--pidfile", required=True)
    args = parser.parse_args(argv)
    if args.mode == "delay" and not args.target:
        parser.error("--target is required in delay mode")
    asyncio.run(serve(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
