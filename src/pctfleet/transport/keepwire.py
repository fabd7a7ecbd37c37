"""The frames between a command and the connection keeper, over a unix socket.

A frame is one kind byte, a 4-byte length and that many bytes. Requests and
verdicts are JSON; a command's stdin and output travel as raw chunks:

  command -> keeper   Q {"keys": [...]}            which of these logins are kept?
                      K {"key", "node", ...}       keep a login to this node
                      X {"key", "command", ...}    run a command, then I... E (stdin)
                      L {}                          list the kept logins
                      S {}                          close them all and end
  keeper -> command   A {...}                      answer to Q, K, L, S
                      O / R                        stdout / stderr chunk
                      C {"code", "seconds"}        the command's exit
                      F {"reason", "where", ...}   the node's typed error
                      G {}                         not kept (any more): log in yourself

Nothing here imports paramiko: a command that finds its nodes kept never loads it.
"""

from __future__ import annotations

import json
import socket
import struct
from typing import BinaryIO

from pctfleet.transport import base

HEADER = struct.Struct("!cI")
MAX_FRAME = 16 * 1024 * 1024  # output travels in CHUNKs; anything this large is not ours
PROTOCOL = 1
CHUNK = base.CHUNK


class WireError(Exception):
    """The other end broke the protocol or went away."""


def send(sock: socket.socket, kind: bytes, payload: bytes = b"") -> None:
    sock.sendall(HEADER.pack(kind, len(payload)) + payload)


def send_json(sock: socket.socket, kind: bytes, value: object) -> None:
    send(sock, kind, json.dumps(value).encode())


def _read_exact(stream: BinaryIO, size: int) -> bytes:
    data = stream.read(size)
    if data is None or len(data) != size:
        raise WireError("the other end closed the connection")
    return data


def receive(stream: BinaryIO) -> tuple[bytes, bytes]:
    """The next frame as (kind, payload); WireError at the end of the stream."""
    kind, size = HEADER.unpack(_read_exact(stream, HEADER.size))
    if size > MAX_FRAME:
        raise WireError(f"a frame of {size} bytes")
    return kind, _read_exact(stream, size) if size else b""


def decode(payload: bytes) -> dict:
    try:
        value = json.loads(payload)
    except ValueError:
        raise WireError("a request that is not JSON") from None
    if not isinstance(value, dict):
        raise WireError("a request that is not a JSON object")
    return value


def _error_types() -> dict[str, type[base.TransportError]]:
    found: dict[str, type[base.TransportError]] = {}
    pending = [base.TransportError]
    while pending:
        cls = pending.pop()
        found.setdefault(cls.reason, cls)
        pending.extend(cls.__subclasses__())
    return found


def error_frame(exc: base.TransportError) -> dict:
    return {"reason": exc.reason, "where": exc.where, "message": exc.message, "hint": exc.hint}


def error_from(frame: dict) -> base.TransportError:
    """The keeper's typed error as the same exception type here."""
    cls = _error_types().get(str(frame.get("reason")), base.TransportError)
    where, message, hint = (str(frame.get(name, "")) for name in ("where", "message", "hint"))
    return cls(where, message, hint)
