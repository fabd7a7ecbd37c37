"""`pip`: packages in a virtualenv, with exact pins honoured and nothing upgraded behind them."""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from pctfleet.errors import PlaybookError
from pctfleet.modules.args import Args, Context, arg, text, text_list
from pctfleet.modules.base import Fact, FactReader, Module, Plan, World, q, words
from pctfleet.sh import library, snippet

REQUIREMENT = re.compile(
    r"^\s*(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*(?P<extras>\[[^\]]*\])?\s*(?P<spec>[<>=!~].*)?$"
)
SPEC = re.compile(r"^\s*(==|>=|<=|!=|~=|>|<)\s*([A-Za-z0-9.*+!_-]+)\s*$")

# Every installed distribution, by PEP 503 name: pip_list.py, a program printing its own
# pf_kv line, sent as it is (it reads the metadata without importing importlib.metadata).
LIST_INSTALLED = (Path(__file__).parent / "pip_list.py").read_text()


def normalize(name: str) -> str:
    """PEP 503 name: `Flashinfer_Python` and `flashinfer-python` are one package."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _release(version: str) -> tuple:
    parts = re.match(r"^\d+(\.\d+)*", version)
    return tuple(int(p) for p in parts.group(0).split(".")) if parts else ()


def _compare(have: tuple, want: tuple) -> int:
    """-1, 0 or 1; PEP 440 pads the shorter release with zeros, so 2.4.0 equals 2.4."""
    width = max(len(have), len(want))
    padded_have = have + (0,) * (width - len(have))
    padded_want = want + (0,) * (width - len(want))
    return (padded_have > padded_want) - (padded_have < padded_want)


def _canonical(version: str) -> str:
    """'13.0' and '13.0.0' are the same version (PEP 440 pads releases with zeros)."""
    match = re.match(r"^(\d+(?:\.\d+)*)(.*)$", version.strip().lower().lstrip("v"))
    if not match:
        return version
    release = match.group(1).split(".")
    while len(release) > 1 and release[-1] == "0":
        release.pop()
    return ".".join(release) + match.group(2)


def satisfies(installed: str, spec: str) -> bool:
    """Does `installed` meet a specifier list like '>=1.2,<2' (release numbers compared)?"""
    for clause in filter(None, (c.strip() for c in spec.split(","))):
        op, wanted = SPEC.match(clause).groups()
        if op == "==" and not wanted.endswith("*"):
            if _canonical(installed) != _canonical(wanted):
                return False
            continue
        have, want = _release(installed), _release(wanted.rstrip(".*"))
        prefix, order = have[: len(want)] == want, _compare(have, want)
        checks = {
            "==": prefix,
            "!=": not prefix if wanted.endswith("*") else order != 0,
            ">=": order >= 0,
            "<=": order <= 0,
            ">": order > 0,
            "<": order < 0,
            "~=": order >= 0 and have[: len(want) - 1] == want[:-1],
        }
        if not checks[op]:
            return False
    return True


def installer(uv: str, has_pip: bool) -> str:
    """uv whenever the container has it (much faster, and needs no pip in the venv); else
    pip, bootstrapped with ensurepip where the venv has none (`uv venv` makes none)."""
    return uv or ("pip" if has_pip else "ensurepip")


def pip_line(tool: str, python: str, verb: str, argv: list[str]) -> str:
    """One call of sh/lib/pip.sh's `pctfleet_pip`; the script needs `library(("pip",))`."""
    return " ".join(q(w) for w in ["pctfleet_pip", tool, python, verb, *argv]) + "\n"


def parse_requirement(text: str, where: str) -> tuple[str, str]:
    match = REQUIREMENT.match(text)
    spec = (match.group("spec") or "") if match else ""
    if not match or any(not SPEC.match(c) for c in spec.split(",") if c.strip()):
        raise PlaybookError(f"pip: {text!r} is not a requirement like 'name==1.2'", where=where)
    return normalize(match.group("name")), spec


def a_version(spec: str) -> str:
    """A version that meets `spec`: the pinned one, or a lower bound."""
    for clause in (c.strip() for c in spec.split(",")):
        match = re.match(r"^(==|>=|~=)\s*([0-9][A-Za-z0-9.]*)$", clause)
        if match:
            return match.group(2)
    return "1.0"


@dataclass(frozen=True)
class PipArgs(Args):
    name: tuple[str, ...] = arg((), required=True, convert=text_list)
    version: str | None = arg(None, convert=text)
    virtualenv: str | None = arg(None, convert=text)
    virtualenv_command: str | None = arg(None, convert=text)
    virtualenv_python: str | None = arg(None, convert=text)
    extra_args: str | None = arg(None, convert=text)
    state: str = arg("present", choices={"present", "absent"})
    executable: str | None = arg(None, convert=text)

    def check(self, ctx: Context, where: str) -> None:
        if not self.name:
            raise PlaybookError("module 'pip' needs 'name'", where=where)
        for item in self.items():
            if item.startswith("-"):
                raise self.fail(f"{item!r} is an option, not a package: use extra_args", where)
        self.requirements(where)
        for key in ("extra_args", "virtualenv_command"):
            words(getattr(self, key) or "", key, where, self.module)

    def items(self) -> list[str]:
        """The requirements as written (`version` pins a single name)."""
        if self.version and len(self.name) == 1:
            return [f"{self.name[0]}=={self.version}"]
        return list(self.name)

    def requirements(self, where: str = "") -> list[tuple[str, str, str]]:
        """(as written, PEP 503 name, specifier) for each requirement."""
        return [(item, *parse_requirement(item, where)) for item in self.items()]

    def python(self) -> str:
        return f"{self.virtualenv}/bin/python" if self.virtualenv else self.executable or "python3"


@dataclass(frozen=True)
class Installed:
    """What the python the task names has installed; `venv` is 'absent' when it is missing.

    `uv` is the container's uv, '' when it has none.
    """

    pkgs: dict[str, str] = field(default_factory=dict)
    venv: str = ""
    uv: str = ""

    @property
    def installer(self) -> str:
        return installer(self.uv, "pip" in self.pkgs)


class InstalledPackages(FactReader[Installed]):
    """Every distribution the task's python sees, by PEP 503 name."""

    State = Installed

    def command(self, args: PipArgs, want_diff: bool) -> str:
        return snippet("pip_installed", PYTHON=args.python(), PROGRAM=LIST_INSTALLED)

    def parse(self, reading: Fact) -> Installed:
        fields = reading.fields()
        pkgs = json.loads(fields["pkgs"]) if "pkgs" in fields else {}
        return Installed(pkgs, fields.get("venv", ""), fields.get("uv", ""))

    def converged(self, args: PipArgs, world: World) -> dict[str, str]:
        if args.state == "absent":
            return {"pkgs": "{}"}
        installed = {name: a_version(spec) for _, name, spec in args.requirements()}
        return {"pkgs": json.dumps(installed, sort_keys=True)}


class Pip(Module, name="pip", args=PipArgs, fact=InstalledPackages()):
    def plan(self, args: PipArgs, state: Installed, check: bool) -> Plan:
        installed = state.pkgs
        if args.state == "absent":
            present = [name for _, name, _ in args.requirements() if name in installed]
            if not present:
                return Plan(False)
            line = pip_line(state.installer, args.python(), "uninstall", present)
            return Plan(
                True,
                script=library(("pip",)) + line,
                diff=self._diff(installed, present, "absent"),
            )
        missing = [
            (item, name)
            for item, name, spec in args.requirements()
            if name not in installed or not satisfies(installed[name], spec)
        ]
        if not missing:
            return Plan(False)
        script = (
            library(("pip",))
            + self._venv_line(args, state)
            + self._install_line(args, state, [m[0] for m in missing])
        )
        return Plan(
            True,
            script=script,
            diff=self._diff(installed, [m[1] for m in missing], [m[0] for m in missing]),
        )

    def _venv_line(self, args: PipArgs, state: Installed) -> str:
        if not args.virtualenv or state.venv != "absent":
            return "set -e\n"
        command = shlex.split(args.virtualenv_command or "python3 -m venv")
        if args.virtualenv_python:
            command = [args.virtualenv_python, "-m", "venv"]
        return "set -e\n" + " ".join(q(c) for c in [*command, args.virtualenv]) + "\n"

    def _install_line(self, args: PipArgs, state: Installed, items: list[str]) -> str:
        extra = shlex.split(args.extra_args or "")
        return pip_line(state.installer, args.python(), "install", [*extra, *items])

    @staticmethod
    def _diff(installed: dict, names: list[str], after: list[str] | str) -> dict:
        before = "".join(
            f"{n}=={installed[n]}\n" if n in installed else f"{n} (absent)\n" for n in names
        )
        if after == "absent":
            return {
                "path": "pip",
                "before": before,
                "after": "".join(f"{n} (absent)\n" for n in names),
            }
        return {"path": "pip", "before": before, "after": "".join(f"{a}\n" for a in after)}
