"""`pip`: packages in a virtualenv, with exact pins honoured and nothing upgraded behind them."""

from __future__ import annotations

import json
import re
import shlex
from typing import Any

from pctfleet.errors import PlaybookError
from pctfleet.facts.kv import PY_KV
from pctfleet.modules.base import Fact, LegacyModule, Plan, q, words

REQUIREMENT = re.compile(
    r"^\s*(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*(?P<extras>\[[^\]]*\])?\s*(?P<spec>[<>=!~].*)?$"
)
SPEC = re.compile(r"^\s*(==|>=|<=|!=|~=|>|<)\s*([A-Za-z0-9.*+!_-]+)\s*$")

LIST_INSTALLED = (
    PY_KV
    + """import importlib.metadata as m, json, re
seen = {}
for d in m.distributions():
    name = d.metadata["Name"]
    if name:
        seen[re.sub(r"[-_.]+", "-", name).lower()] = d.version
pf_kv("pkgs", json.dumps(seen, sort_keys=True))"""
)


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


def parse_requirement(text: str, where: str) -> tuple[str, str]:
    match = REQUIREMENT.match(text)
    spec = (match.group("spec") or "") if match else ""
    if not match or any(not SPEC.match(c) for c in spec.split(",") if c.strip()):
        raise PlaybookError(f"pip: {text!r} is not a requirement like 'name==1.2'", where=where)
    return normalize(match.group("name")), spec


class Pip(LegacyModule):
    name = "pip"
    args = {
        "name",
        "version",
        "virtualenv",
        "virtualenv_command",
        "virtualenv_python",
        "extra_args",
        "state",
        "executable",
    }

    def validate(self, args: dict[str, Any], where: str) -> None:
        names = args.get("name")
        if not names:
            raise PlaybookError("module 'pip' needs 'name'", where=where)
        names = [names] if isinstance(names, str) else [str(n) for n in names]
        if args.get("version") and len(names) == 1:
            names = [f"{names[0]}=={args['version']}"]
        for item in names:
            if item.startswith("-"):
                raise PlaybookError(
                    f"pip: {item!r} is an option, not a package: use extra_args", where=where
                )
        args["_reqs"] = [(item, *parse_requirement(item, where)) for item in names]
        for key in ("extra_args", "virtualenv_command"):
            words(args.get(key) or "", key, where, self.name)
        state = args.setdefault("state", "present")
        if state not in {"present", "absent"}:
            raise PlaybookError(
                f"pip: 'state' must be present or absent, got {state!r}", where=where
            )

    def python(self, args: dict[str, Any]) -> str:
        if args.get("virtualenv"):
            return f"{args['virtualenv']}/bin/python"
        return str(args.get("executable") or "python3")

    def probe(self, args: dict[str, Any], want_diff: bool) -> str:
        py = q(self.python(args))
        return (
            f"if command -v {py} >/dev/null 2>&1; then {py} - <<'PCTFLEET_PY'\n"
            f"{LIST_INSTALLED}\nPCTFLEET_PY\nelse pf_kv venv absent; fi"
        )

    def plan(self, args: dict[str, Any], fact: Fact | None, check: bool) -> Plan:
        facts = fact.fields() if fact else {}
        installed = json.loads(facts["pkgs"]) if "pkgs" in facts else {}
        if args["state"] == "absent":
            present = [name for _, name, _ in args["_reqs"] if name in installed]
            if not present:
                return Plan(False)
            line = " ".join(q(n) for n in present)
            return Plan(
                True,
                script=f"{q(self.python(args))} -m pip uninstall -y {line}\n",
                diff=self._diff(installed, present, "absent"),
            )
        missing = [
            (item, name)
            for item, name, spec in args["_reqs"]
            if name not in installed or not satisfies(installed[name], spec)
        ]
        if not missing:
            return Plan(False)
        script = self._venv_line(args, facts) + self._install_line(args, [m[0] for m in missing])
        return Plan(
            True,
            script=script,
            diff=self._diff(installed, [m[1] for m in missing], [m[0] for m in missing]),
        )

    def _venv_line(self, args: dict[str, Any], facts: dict[str, str]) -> str:
        if not args.get("virtualenv") or facts.get("venv") != "absent":
            return "set -e\n"
        command = shlex.split(str(args.get("virtualenv_command") or "python3 -m venv"))
        if args.get("virtualenv_python"):
            command = [str(args["virtualenv_python"]), "-m", "venv"]
        return "set -e\n" + " ".join(q(c) for c in [*command, args["virtualenv"]]) + "\n"

    def _install_line(self, args: dict[str, Any], items: list[str]) -> str:
        extra = shlex.split(str(args.get("extra_args") or ""))
        words = [
            self.python(args),
            "-m",
            "pip",
            "install",
            "--no-input",
            "--disable-pip-version-check",
            *extra,
            *items,
        ]
        return " ".join(q(w) for w in words) + "\n"

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
