"""Commands on this machine, behind the same interface as a container."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from typing import BinaryIO

from pctfleet.transport.base import CHUNK, CommandTimeout, Sinks, Stdin, Target, stdin_chunks


def _copy(source: BinaryIO, sink: BinaryIO) -> None:
    while chunk := source.read1(CHUNK) if hasattr(source, "read1") else source.read(CHUNK):
        sink.write(chunk)


def _feed(process: subprocess.Popen, stdin: Stdin) -> None:
    try:
        for chunk in stdin_chunks(stdin):
            process.stdin.write(chunk)
        process.stdin.close()
    except (BrokenPipeError, OSError):
        pass


class LocalTarget(Target):
    """This machine. Used by the GPU proof and by `--local` runs."""

    def __init__(self, name: str = "local", timeout: float | None = None) -> None:
        self.name = name
        self.calls = 0
        self.timeout = timeout  # a call's limit when it names none, like --timeout over SSH
        # Where commands run (None: here). A playbook run sets its playbook's folder,
        # where ansible-playbook -c local runs them.
        self.cwd: str | None = None

    def _run(
        self,
        argv: list[str],
        stdin: Stdin,
        timeout: float | None,
        sinks: Sinks,
        *,
        read_only: bool = False,
    ) -> tuple[int, float]:
        timeout = self.timeout if timeout is None else timeout
        started = time.monotonic()
        process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            cwd=self.cwd,
        )
        threads = [
            threading.Thread(target=_feed, args=(process, stdin), daemon=True),
            threading.Thread(target=_copy, args=(process.stdout, sinks.out()), daemon=True),
            threading.Thread(target=_copy, args=(process.stderr, sinks.err()), daemon=True),
        ]
        for thread in threads:
            thread.start()
        try:
            code = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            # The command runs in its own session: stop the whole group we started.
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            raise CommandTimeout(self.name, f"command did not finish within {timeout:g}s") from None
        for thread in threads[1:]:
            thread.join()
        if code < 0:  # killed by a signal: report it the way a shell does
            code = 128 - code
        return code, time.monotonic() - started
