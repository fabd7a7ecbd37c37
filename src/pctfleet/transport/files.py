"""Files into and out of a target: streamed, atomic, verified by size and sha256.

`pct push` can fail inside the container and still exit 0, so transfers do not
use it: content streams through the command's stdin into a temp file next to
the destination, is checked against the size and hash computed here, and only
then renamed into place. An interrupted transfer leaves the old file.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import BinaryIO

from pctfleet.sh import source
from pctfleet.transport.base import RunResult, Target, TransferError

CHUNK = 1024 * 1024
_CHECK_FAILED = 97
_NOT_VALID = 98
_VALIDATE_MARK = "\n\x1epctfleet-validate "


class ValidationFailed(TransferError):
    """The file's `validate` command refused it: the old file is left as it was."""

    def __init__(self, where: str, dest: str, rc: int, stdout: str, stderr: str) -> None:
        super().__init__(where, f"validation of {dest} failed (exit {rc})")
        self.rc, self.stdout, self.stderr = rc, stdout, stderr


_PUSH = source("push").body

_PULL = source("pull").body


def sha256_of(stream: BinaryIO) -> tuple[str, int]:
    digest, size = hashlib.sha256(), 0
    while chunk := stream.read(CHUNK):
        digest.update(chunk)
        size += len(chunk)
    return digest.hexdigest(), size


def push(
    target: Target,
    source: Path | bytes,
    dest: str,
    *,
    mode: str = "0644",
    owner: str = "",
    timeout: float | None = None,
    validate: str = "",
) -> RunResult:
    """Write `source` (a local file or bytes) to `dest` in the target, atomically;
    `validate` (sh code reading the new file at "$tmp") must pass first."""
    if not dest.startswith("/"):
        raise TransferError(target.name, f"destination must be an absolute path: {dest!r}")
    if isinstance(source, bytes):
        digest, size = hashlib.sha256(source).hexdigest(), len(source)
        return _push_stream(target, source, dest, mode, owner, size, digest, timeout, validate)
    with open(source, "rb") as handle:
        digest, size = sha256_of(handle)
        handle.seek(0)
        return _push_stream(target, handle, dest, mode, owner, size, digest, timeout, validate)


def _push_stream(target, stdin, dest, mode, owner, size, digest, timeout, validate="") -> RunResult:  # noqa: ANN001, E501
    argv = ["/bin/sh", "-c", _PUSH, "pctfleet-push", dest, mode, owner, str(size), digest]
    argv += [validate] if validate else []
    result = target.run(argv, stdin=stdin, timeout=timeout)
    if result.exit_code == _NOT_VALID and _VALIDATE_MARK in result.stderr.decode(errors="replace"):
        raise _refused(target, dest, result)
    if not result.ok:
        detail = (
            result.stderr.decode("utf-8", errors="replace").strip() or f"exit {result.exit_code}"
        )
        raise TransferError(target.name, f"push to {dest} failed: {detail}")
    return result


def _refused(target: Target, dest: str, result: RunResult) -> ValidationFailed:
    """The validator's own output, and its exit status from the mark push.sh wrote."""
    text = result.stderr.decode("utf-8", errors="replace")
    err, _, status = text.rpartition(_VALIDATE_MARK)
    out = result.stdout.decode("utf-8", errors="replace")
    rc = int(status.strip() or 1)
    return ValidationFailed(target.name, dest, rc, out, err)  # as ansible-core keeps them


def pull(target: Target, src: str, dest: Path, *, timeout: float | None = None) -> Path:
    """Copy `src` from the target to local `dest`, atomically, verified by sha256."""
    dest = Path(dest)
    fd, tmp_name = tempfile.mkstemp(prefix=".pctfleet-pull.", dir=dest.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            hasher = _HashingWriter(handle)
            argv = ["/bin/sh", "-c", _PULL, "pctfleet-pull", src]
            result = target.run(argv, timeout=timeout, stdout=hasher)
        _check_pull(target, src, result, hasher)
        os.replace(tmp_name, dest)
    except BaseException:
        os.unlink(tmp_name)
        raise
    return dest


def _check_pull(target: Target, src: str, result: RunResult, hasher: _HashingWriter) -> None:
    text = result.stderr.decode("utf-8", errors="replace")
    if not result.ok:
        raise TransferError(target.name, f"pull of {src} failed: {text.strip()}")
    sums = [line.split() for line in text.split("\n") if line.startswith("\x1epctfleet-sum ")]
    if not sums:
        raise TransferError(target.name, f"pull of {src}: no checksum came back")
    _, want_sum, want_size = sums[-1][-3:]
    if (want_sum, int(want_size)) != (hasher.digest.hexdigest(), hasher.size):
        raise TransferError(target.name, f"pull of {src}: content changed or was cut in transit")


class _HashingWriter:
    def __init__(self, sink: BinaryIO) -> None:
        self.sink = sink
        self.digest = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes) -> int:
        self.digest.update(data)
        self.size += len(data)
        return self.sink.write(data)
