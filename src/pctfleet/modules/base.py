"""What a task module is: read facts in the shared probe, decide, emit a change.

A module never talks to the container itself. It contributes a shell snippet
to the container's single probe script, turns that snippet's output into a
decision (`Plan`), and, when something must change, hands the engine a script
to run (and files to push). This is what lets a converged container cost one
`pct exec` for a whole playbook.
"""

from __future__ import annotations

import dataclasses
import importlib
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, TypeVar

from pctfleet.errors import PlaybookError, brief
from pctfleet.facts.kv import decode_fields
from pctfleet.modules.args import Args, Context

T = TypeVar("T")


def q(value: object) -> str:
    """Quote one value for the container's shell. The only quoting helper."""
    return shlex.quote(str(value))


@dataclass
class Push:
    """A file the change writes: pushed atomically and verified by sha256."""

    dest: str
    content: bytes
    mode: str = "0644"
    owner: str = ""
    # sh code that checks the new file (at "$tmp") before it replaces dest ('' = none):
    # `validate`, see modules/validate.py; `validated_as` picks ansible-core's words.
    validate: str = ""
    validated_as: str = "copy"


@dataclass
class Plan:
    """A module's decision for one container."""

    changed: bool
    msg: str = ""
    script: str | None = None  # sh run in the container to apply the change
    pushes: list[Push] = field(default_factory=list)
    diff: dict | None = None  # {"before": str, "after": str, "path": str}
    failed: bool = False
    stdin: bytes = b""  # fed to the change script (Ansible's `command: stdin=`)
    skip_in_check: bool = False
    skipped: str = ""  # why the task is skipped without running (debug's verbosity)
    result: dict = field(default_factory=dict)
    # What the script prints last on stderr before what it tells `finish` (command's
    # times): kept out of the output shown as it arrives (-v).
    trailer: str = ""


@dataclass
class Fact:
    """What one probe snippet printed, and its exit status."""

    output: str
    status: int

    def fields(self) -> dict[str, str]:
        """The `pf_kv` lines, decoded, as a dict (later lines win; other lines are dropped)."""
        return decode_fields(self.output)


def from_fields(state: type[T], fields: Mapping[str, str], **computed: Any) -> T:
    """`state` with each field read from the fact field of its name, else its default.

    The fields given in `computed` are the ones not read as plain text.
    """
    read = {
        f.name: fields.get(f.name, f.default)
        for f in dataclasses.fields(state)  # type: ignore[arg-type]
        if f.name not in computed
    }
    return state(**read, **computed)


class FactReader(Generic[T]):
    """One fact: the shell snippet that reads it in the container and its parser.

    `State` is the parsed type; `State()` is what the fact says where nothing was read.

    `command(args, want_diff)` is the snippet (it joins the container's one
    probe script); `parse(reading)` turns what it printed into a typed value.
    """

    State: ClassVar[type | None] = None

    def command(self, args: Any, want_diff: bool) -> str:
        raise NotImplementedError

    def parse(self, reading: Fact) -> T:
        raise NotImplementedError

    def converged(self, args: Any, world: World) -> dict[str, str]:
        """The fields this fact reads where the task is already done.

        The simulated fleet answers probes with it, and the module harness
        checks that `plan` changes nothing on it (every module is idempotent).
        """
        raise NotImplementedError(f"{type(self).__name__} has no converged state")


@dataclass
class World:
    """What earlier tasks of a play left in a container, for `FactReader.converged`."""

    files: dict[str, bytes] = field(default_factory=dict)


# Which file of this package defines each module. Importing every file costs
# a third of the CLI's start-up, so a name's file is imported the first time the
# name is asked for; tests/unit/test_module_registration.py keeps this complete.
FILES: dict[str, str] = {
    "apt": "apt", "package": "apt", "apt_repository": "aptsources",
    "deb822_repository": "aptsources", "assert": "assertion", "blockinfile": "blockinfile",
    "cccl_overlay": "cccl", "command": "command", "shell": "command", "debug": "controller",
    "set_fact": "controller", "fail": "controller", "include_vars": "controller",
    "copy": "copy", "template": "copy", "cuda_links": "cudalinks", "fetch": "fetch",
    "file": "file", "find": "find", "get_url": "get_url", "group": "group",
    "include_tasks": "include", "include_role": "include", "flashinfer_cache": "jitcache",
    "lineinfile": "lineinfile", "meta": "meta", "pause": "pause", "pip": "pip",
    "replace": "replace", "server": "server", "server_stop": "server", "slurp": "slurp",
    "stat": "stat", "systemd_service": "systemd", "systemd": "systemd", "service": "systemd",
    "tempfile": "tempfiles", "cuda_toolchain": "toolchain", "compile_probe": "toolchain",
    "unarchive": "unarchive", "uri": "uri", "user": "user", "wait_for": "wait_for",
}  # fmt: skip


class _Registry(dict):
    """Modules by name. Every module registers itself here when its class is defined
    (see Module.__init_subclass__); looking a name up imports the file that defines it,
    and listing them all imports every file."""

    def _load(self, name: object) -> bool:
        if name in FILES and not dict.__contains__(self, name):
            importlib.import_module(f"pctfleet.modules.{FILES[name]}")
        return dict.__contains__(self, name)

    def load_all(self) -> None:
        for name in FILES:
            self._load(name)

    def __missing__(self, name: str) -> Module:
        if self._load(name):
            return dict.__getitem__(self, name)
        raise KeyError(name)

    def __contains__(self, name: object) -> bool:
        return self._load(name)

    def get(self, name: str, default: Any = None) -> Any:
        return self[name] if self._load(name) else default

    def names(self) -> set[str]:
        """Every module's name, without importing any file."""
        return set(FILES) | set(dict.keys(self))

    def __iter__(self):  # noqa: ANN204 - dict's own signature
        self.load_all()
        return dict.__iter__(self)

    def __len__(self) -> int:
        self.load_all()
        return dict.__len__(self)

    def keys(self):  # noqa: ANN201
        self.load_all()
        return dict.keys(self)

    def values(self):  # noqa: ANN201
        self.load_all()
        return dict.values(self)

    def items(self):  # noqa: ANN201
        self.load_all()
        return dict.items(self)


REGISTRY: _Registry = _Registry()


class Module:
    """Base class: a subclass declares its name, `Args` and `fact`, and implements `plan`.

    The declaration is the class statement,
    `class File(Module, name="file", args=FileArgs, fact=PathStat()):`, and it
    registers the module: adding a module is one file in this package plus its
    fixtures in tests/unit/modules/.
    """

    name: ClassVar[str]
    Args: ClassVar[type[Args]]
    fact: ClassVar[FactReader | None] = None
    # Runs on the controller only (debug, set_fact): needs no probe and no remote call.
    controller: ClassVar[bool] = False
    # A run that failed still registers `changed: true` (Ansible's command and shell).
    changed_when_failed: ClassVar[bool] = False
    # Registers rc/stdout/stderr, also unchanged (0, '', ''), as ansible-core's command,
    # shell, pip or apt do; its file, copy or debug register none unless they failed.
    registers_output: ClassVar[bool] = True
    # Registers `msg` when it did not fail (ansible-core's file, copy or stat do not).
    registers_msg: ClassVar[bool] = True

    def __init_subclass__(
        cls,
        *,
        name: str | None = None,
        args: type[Args] | None = None,
        fact: FactReader | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init_subclass__(**kwargs)
        if args is not None:
            cls.Args = args
        if fact is not None:
            cls.fact = fact
        if name is not None:
            cls.name = name
            cls.Args.module = name  # the name is written once, here; errors quote it
            REGISTRY[name] = cls()

    def known_args(self) -> set[str] | None:
        return self.Args.names()

    def prepare(self, raw: dict[str, Any], ctx: Context, where: str) -> Any:
        """The task's typed arguments; a bad value is a PlaybookError before anything runs."""
        return self.Args.parse(raw, ctx, where)

    def probe(self, args: Any, want_diff: bool) -> str | None:
        """The sh snippet whose output `plan` reads, or None when no facts are needed."""
        return self.fact.command(args, want_diff) if self.fact else None

    def decide(self, args: Any, reading: Fact | None, check: bool) -> Plan:
        """Parse what the probe read, then plan."""
        if self.fact is None:
            return self.plan(args, None, check)
        if reading is None:  # nothing read (a fixture without facts): the fact's empty state
            return self.plan(args, self.fact.State() if self.fact.State else None, check)
        return self.plan(args, self.fact.parse(reading), check)

    def plan(self, args: Any, state: Any, check: bool) -> Plan:
        raise NotImplementedError

    def finish(self, args: Any, plan: Plan, rc: int, out: str, err: str) -> dict:
        """The registered result after the change ran. Default: rc/stdout/stderr (only a
        failure's where the module registers no output)."""
        if rc == 0 and not self.registers_output:
            return {}
        # Ansible's command module drops the final newlines; `_lines` are split from that.
        out, err = out.rstrip("\r\n"), err.rstrip("\r\n")
        result = {"rc": rc, "stdout": out, "stderr": err}
        result |= {"stdout_lines": out.splitlines(), "stderr_lines": err.splitlines()}
        if rc != 0:
            result["failed"] = True
            result["msg"] = err.strip().splitlines()[-1] if err.strip() else f"exit {rc}"
        return result

    def checked(self, args: Any, plan: Plan) -> dict:
        """What the task registers when check mode leaves a change it would make undone.
        Default: nothing more than the plan's."""
        return {}

    def after(self, registered: dict[str, Any], variables: dict[str, Any]) -> None:
        """What a finished task does to the container's variables (set_fact). Default: none."""


def words(value: object, key: str, where: str, module: str) -> list[str]:
    """`value` split like a shell line; unbalanced quotes are a PlaybookError."""
    try:
        return shlex.split(str(value))
    except ValueError as err:
        raise PlaybookError(
            f"{module}: {key!r} cannot be split into words ({err}): {brief(value)}", where=where
        ) from None


def number(args: dict, key: str, where: str, module: str, *, integer: bool = False) -> None:
    """A given `args[key]` must be a finite number >= 0 (a whole one if `integer`)."""
    value = args.get(key)
    if value is None:
        return
    try:
        parsed = int(value) if integer else float(value)
    except (TypeError, ValueError, OverflowError):
        parsed = -1
    if isinstance(value, bool) or not 0 <= parsed < float("inf"):
        kind = "a whole number" if integer else "a number"
        raise PlaybookError(
            f"{module}: {key!r} must be {kind} >= 0, got {brief(value)}", where=where
        )


def as_bool(value: object) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in {"yes", "true", "1", "on"}
    return bool(value)


def mode_string(value: object, where: str) -> str | None:
    """Normalise a mode (0644, '0644', '644', 420) to a 4-digit octal string."""
    if value is None:
        return None
    # YAML already read 0644 as octal; a bare 644 is decimal, as in Ansible.
    text = oct(value)[2:] if isinstance(value, int) else str(value).strip()
    text = text.removeprefix("0o")
    if not text.isdigit() or any(c in "89" for c in text) or int(text, 8) > 0o7777:
        raise PlaybookError(f"'mode' must be octal like '0644', got {value!r}", where=where)
    return text.zfill(4)
