"""Dataclass methods compiled once per install, not at every start of the CLI.

On Python 3.11 and 3.12 `@dataclass` writes the source of `__init__`,
`__repr__`, `__eq__` (and the frozen setters) for every class and compiles it
with `exec`. The CLI defines about ninety dataclasses before its first SSH
connect: measured, that compiling was a quarter of its import time (60-70 ms
of CPU on a 2-core controller, every run). The source only depends on the class
(field names, defaults), so the compiled code is kept next to the package's
bytecode and reused: `exec` then runs the same code it would have compiled.

Safe by construction and by checks: the key is a digest of the whole source
text (a class that changes is a miss, compiled as before); the file is read only when it is
owned by root or by us and nobody else may write it (like the `.pyc` beside it);
a file from another Python (magic number) or one that does not load is ignored;
it is written atomically and only when something was missing. Python 3.13
builds these methods another way, and this module then does nothing.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import marshal
import os
import stat
import sys
import tempfile
from pathlib import Path
from types import CodeType

_ARGS = ("name", "args", "body", "globals", "locals", "return_type")
_MISSING = dataclasses.MISSING


class MethodCache:
    """Compiled dataclass method sources, by source text, backed by one file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.codes: dict[bytes, CodeType] = self._read()
        self.missed = 0

    def _read(self) -> dict[bytes, CodeType]:
        try:
            with open(self.path, "rb") as handle:
                info = os.fstat(handle.fileno())
                if not _trusted(info):
                    return {}
                magic, codes = marshal.load(handle)
        except (OSError, EOFError, ValueError, TypeError):
            return {}
        if magic != importlib.util.MAGIC_NUMBER or not isinstance(codes, dict):
            return {}
        return codes

    def code(self, source: str) -> CodeType:
        # By digest: the texts themselves made the file three times slower to load.
        key = hashlib.blake2b(source.encode(), digest_size=16).digest()
        found = self.codes.get(key)
        if found is None:
            found = self.codes[key] = compile(source, "<string>", "exec", dont_inherit=True)
            self.missed += 1
        return found

    def save(self) -> None:
        """Write the file when this process compiled something new; never raises."""
        if not self.missed:
            return
        try:
            handle, temp = tempfile.mkstemp(dir=self.path.parent, prefix=".methods-")
        except OSError:  # a read-only install: it compiles as before
            return
        try:
            with os.fdopen(handle, "wb") as out:
                marshal.dump((importlib.util.MAGIC_NUMBER, self.codes), out)
            os.replace(temp, self.path)
            self.missed = 0
        except (OSError, ValueError):
            Path(temp).unlink(missing_ok=True)


def _trusted(info: os.stat_result) -> bool:
    """Owned by root or by us, a plain file nobody else may write."""
    if info.st_uid not in (0, os.geteuid()) or not stat.S_ISREG(info.st_mode):
        return False
    return not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def default_path() -> Path:
    """Beside pctfleet's own bytecode, named for this interpreter."""
    package = Path(__file__).resolve().parent.parent
    return package / "__pycache__" / f"dataclass-methods.{sys.implementation.cache_tag}.marshal"


def _hookable() -> bool:
    create = getattr(dataclasses, "_create_fn", None)
    code = getattr(create, "__code__", None)
    return code is not None and code.co_varnames[: len(_ARGS)] == _ARGS


def install(path: Path | None = None) -> MethodCache | None:
    """Make `@dataclass` use the cache from now on; None where this Python differs."""
    if not _hookable() or sys.version_info >= (3, 13):
        return None
    cache = MethodCache(path or default_path())
    dataclasses._create_fn = _creator(cache)
    return cache


def _creator(cache: MethodCache):  # noqa: ANN202 - dataclasses' own private signature
    """dataclasses._create_fn of 3.11/3.12, line for line, but for where the code comes from."""

    def _create_fn(name, args, body, *, globals=None, locals=None, return_type=_MISSING):  # noqa: A002, ANN001, ANN202
        if locals is None:
            locals = {}  # noqa: A001
        return_annotation = ""
        if return_type is not _MISSING:
            locals["_return_type"] = return_type
            return_annotation = "->_return_type"
        args = ",".join(args)
        body = "\n".join(f"  {b}" for b in body)
        txt = f" def {name}({args}){return_annotation}:\n{body}"
        local_vars = ", ".join(locals.keys())
        txt = f"def __create_fn__({local_vars}):\n{txt}\n return {name}"
        ns: dict = {}
        exec(cache.code(txt), globals, ns)  # noqa: S102 - what dataclasses itself runs
        return ns["__create_fn__"](**locals)

    return _create_fn
