"""A container seen through its Proxmox node: `pct exec CTID -- argv`.

`pct exec` exits 255 both for its own errors (container missing or stopped)
and when the command itself exits 255. To tell them apart, the command is
wrapped so that it first writes a marker line to stderr from inside the
container: no marker means pct never got in, and pct's message says why.

It writes one to stdout too, and on both streams what came before the marker
is left out: that is the node's, not the command's. sshd runs the line through
root's login shell, and bash reads ~/.bashrc first, so a node whose root prints
a greeting there would otherwise put it at the head of every registered stdout
(and stderr) and every fetched file, as Ansible's `fetch` does with it.

No marker and a death by signal means pct (lxc-attach) crashed before the
command started, so nothing ran: that call is sent once more (`reruns`).
"""

from __future__ import annotations

import io
import shlex
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, BinaryIO

from pctfleet.transport.base import (
    ContainerMissing,
    ContainerStopped,
    NodeUnreachable,
    PctError,
    Sinks,
    Stdin,
    SudoPasswordRequired,
    Target,
    replayable,
)
from pctfleet.transport.fixes import asks_password, start_fix, sudoers_fix

if TYPE_CHECKING:
    from pctfleet.transport.ssh import NodeConnection

MARKER = b"\x1e" + b"pctfleet-entered" + b"\n"
_ENTER = 'printf "\\036pctfleet-entered\\n"; printf "\\036pctfleet-entered\\n" >&2; exec "$@"'
_MAX_SCAN = 64 * 1024
_RERUN_PAUSE_S = 0.2


class MarkerFilter(io.RawIOBase):
    """Pass a stream on from its marker line; remember whether the marker was seen.
    What came before the marker is the node's (its root's ~/.bashrc, pct): left out.
    Without a marker the command never ran, and everything goes on (pct's error)."""

    def __init__(self, sink: BinaryIO) -> None:
        self.sink = sink
        self.entered = False
        self._head = b""
        self._scanning = True

    def writable(self) -> bool:
        return True

    def write(self, data: bytes) -> int:  # type: ignore[override]
        if not self._scanning:
            return self.sink.write(data) or len(data)
        self._head += data
        index = self._head.find(MARKER)
        if index >= 0:
            self.entered = True
            self._flush(self._head[index + len(MARKER) :])
        elif len(self._head) > _MAX_SCAN:
            self._flush(self._head)
        return len(data)

    @property
    def gave_up(self) -> bool:
        """More than _MAX_SCAN bytes came without a marker: whether the command
        started cannot be told from this stream any more."""
        return not self._scanning and not self.entered

    def _flush(self, data: bytes) -> None:
        self._scanning = False
        self._head = b""
        if data:
            self.sink.write(data)

    def finish(self, *, pass_on: bool = True) -> bytes:
        """What is held still: with no marker, all the stream said (on stderr, pct's
        message); passed on to the sink unless `pass_on` is false."""
        held, self._head = self._head, b""
        if held and pass_on:
            self.sink.write(held)
        return held


def _crashed_at_start(code: int) -> bool:
    """Killed by a signal (128 + its number). pct's own errors exit 255."""
    return 128 < code < 255


class PctTarget(Target):
    """Commands in container `ctid` on `node`, over the node's shared SSH connection."""

    def __init__(self, node: NodeConnection, ctid: int) -> None:
        self.node = node
        self.ctid = int(ctid)
        self.name = f"{node.node}/{self.ctid}"
        self.calls = 0
        self.reruns = 0

    @property
    def node_key(self) -> str:
        return self.node.node

    @property
    def session_limit(self) -> int:
        return self.node.max_sessions

    def _pct(self, *words: str) -> str:
        """A node-side `pct` line. The only quoting layer: the node's login shell."""
        pct = ["pct"] if self.node.target.user == "root" else ["sudo", "-n", "pct"]
        return shlex.join([*pct, *words])

    def command_line(self, argv: Sequence[str]) -> str:
        """The node-side shell line that runs argv inside the container."""
        return self._pct("exec", str(self.ctid), "--", "/bin/sh", "-c", _ENTER, "pctfleet", *argv)

    def _run(
        self,
        argv: list[str],
        stdin: Stdin,
        timeout: float | None,
        sinks: Sinks,
        *,
        read_only: bool = False,
    ) -> tuple[int, float]:
        started = time.monotonic()
        limit = timeout if timeout is not None else self.node.options.command_timeout
        code, entered, message = self._attempt(argv, stdin, limit, sinks, read_only)
        spent = time.monotonic() - started + _RERUN_PAUSE_S
        left = None if limit is None else limit - spent  # None: no limit at all
        time_left = left is None or left > 0
        if entered is False and _crashed_at_start(code) and replayable(stdin) and time_left:
            # pct (lxc-attach) died by a signal before the command started: nothing
            # ran, so it is sent once more (LXC 5.0's lxc-attach aborts at its own
            # start when sealing its memfd copy fails under load).
            self.reruns += 1
            time.sleep(_RERUN_PAUSE_S)
            code, entered, message = self._attempt(argv, stdin, left, sinks, read_only)
        if not entered:
            sinks.err().write(message)
            self._raise_pct_error(code, message)
        if code > 128 and self._stopped_meanwhile():
            raise ContainerStopped(
                self.name,
                f"container {self.ctid} stopped while a command ran (exit {code})",
                f"{start_fix(self.ctid, self.node.node)}, then rerun",
            )
        return code, time.monotonic() - started

    def _attempt(
        self, argv: list[str], stdin: Stdin, timeout: float | None, sinks: Sinks, read_only: bool
    ) -> tuple[int, bool | None, bytes]:
        """One `pct exec`: (exit code, whether the command started (None: cannot be
        told, past _MAX_SCAN bytes with no marker), what pct said when it did not;
        none of the node's output is passed on then)."""
        marker = MarkerFilter(sinks.err())
        out = MarkerFilter(sinks.out())
        code, _ = self.node.exec(
            self.command_line(argv),
            stdin=stdin,
            timeout=timeout,
            stdout=out,
            stderr=marker,
            read_only=read_only,
        )
        entered = marker.entered or out.entered
        message = marker.finish(pass_on=entered)  # entered: what stderr said is the command's
        out.finish(pass_on=entered)  # never entered: all of it is the node's
        unsure = not entered and (marker.gave_up or out.gave_up)
        return code, None if unsure else entered, message

    def _stopped_meanwhile(self) -> bool:
        """A command killed by a signal may mean the container went down under it."""
        out = io.BytesIO()
        code, _ = self.node.exec(
            self._pct("status", str(self.ctid)),
            stdin=b"",
            timeout=self.node.options.connect_timeout,
            stdout=out,
            stderr=io.BytesIO(),
        )
        return code == 0 and b"status: stopped" in out.getvalue()

    def _raise_pct_error(self, code: int, message: bytes) -> None:
        text = message.decode("utf-8", errors="replace").strip()
        last = text.splitlines()[-1] if text else f"pct exited {code} without output"
        if "does not exist" in text and "Configuration file" in text:
            raise ContainerMissing(
                self.name, f"container {self.ctid} does not exist on {self.node.node}"
            )
        if "not running" in text:
            raise ContainerStopped(
                self.name,
                f"container {self.ctid} is not running",
                start_fix(self.ctid, self.node.node),
            )
        if asks_password(text):
            raise SudoPasswordRequired(
                self.name,
                f"sudo asks {self.node.target.user} for a password",
                sudoers_fix(self.node.target.user, self.node.node),
            )
        if code == 127:
            raise NodeUnreachable(
                self.name, f"pct not found on the node: {last}", "is it a Proxmox VE node?"
            )
        raise PctError(self.name, f"pct failed (exit {code}): {last}")
