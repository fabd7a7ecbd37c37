"""`file`: directories, links, empty files, removal and attributes (Ansible's arguments)."""

from __future__ import annotations

from typing import Any

from ..errors import PlaybookError
from .base import Fact, Module, Plan, as_bool, mode_string, q

STATES = {"file", "directory", "absent", "link", "touch"}

STAT_SNIPPET = """p={path}
if [ -L "$p" ]; then pf_kv type link; pf_kv target "$(readlink -- "$p")"
elif [ -d "$p" ]; then pf_kv type directory
elif [ -e "$p" ]; then pf_kv type file
else pf_kv type absent; fi
if [ -e "$p" ] || [ -L "$p" ]; then
  pf_kv mode "$(stat -c %a -- "$p")"
  pf_kv owner "$(stat -c %U -- "$p")"
  pf_kv group "$(stat -c %G -- "$p")"
fi"""


def stat_probe(path: str) -> str:
    return STAT_SNIPPET.format(path=q(path))


def attribute_fixes(path: str, facts: dict[str, str], args: dict[str, Any]) -> tuple[list, dict]:
    """Shell lines that bring mode/owner/group to the wanted values, and the diff of them."""
    lines, before, after = [], {}, {}
    mode = args.get("_mode")
    if mode and facts.get("mode", "").zfill(4) != mode:
        lines.append(f"chmod {mode} -- {q(path)}")
        before["mode"], after["mode"] = facts.get("mode", "").zfill(4), mode
    for key, tool in (("owner", "chown"), ("group", "chgrp")):
        wanted = args.get(key)
        if wanted and facts.get(key) != str(wanted):
            lines.append(f"{tool} -- {q(wanted)} {q(path)}")
            before[key], after[key] = facts.get(key, ""), str(wanted)
    return lines, {"before": before, "after": after}


class File(Module):
    name = "file"
    args = {"path", "dest", "name", "state", "src", "mode", "owner", "group", "force", "follow"}

    def validate(self, args: dict[str, Any], where: str) -> None:
        args["path"] = args.get("path") or args.get("dest") or args.get("name")
        if not args["path"]:
            raise PlaybookError("module 'file' needs 'path'", where=where)
        state = args.setdefault("state", "file")
        if state not in STATES:
            raise PlaybookError(
                f"file: 'state' must be one of {sorted(STATES)}, got {state!r}", where=where
            )
        if state == "link" and not args.get("src"):
            raise PlaybookError("file: state=link needs 'src'", where=where)
        args["_mode"] = mode_string(args.get("mode"), where)

    def probe(self, args: dict[str, Any], want_diff: bool) -> str:
        return stat_probe(args["path"])

    def plan(self, args: dict[str, Any], fact: Fact | None, check: bool) -> Plan:
        facts = fact.fields() if fact else {}
        state, path, current = args["state"], str(args["path"]), facts.get("type", "absent")
        if state == "absent":
            if current == "absent":
                return Plan(False)
            return self._change(f"rm -rf -- {q(path)}", current, "absent", path)
        if state == "file" and current == "absent":
            return Plan(False, failed=True, msg=f"file {path} does not exist (state=touch creates)")
        return getattr(self, f"_{state}")(args, path, current, facts)

    def _change(self, script: str, before: str, after: str, path: str, msg: str = "") -> Plan:
        diff = {"path": path, "before": f"state={before}\n", "after": f"state={after}\n"}
        return Plan(True, script=f"set -e\n{script}\n", diff=diff, msg=msg)

    def _with_attributes(
        self, first: list[str], path: str, facts: dict, args: dict, before: str, after: str
    ) -> Plan:
        fixes, attr_diff = attribute_fixes(path, facts, args)
        lines = first + fixes
        if not lines:
            return Plan(False)
        plan = self._change("\n".join(lines), before, after, path)
        plan.diff["before"] += "".join(f"{k}={v}\n" for k, v in attr_diff["before"].items())
        plan.diff["after"] += "".join(f"{k}={v}\n" for k, v in attr_diff["after"].items())
        return plan

    def _directory(self, args, path, current, facts) -> Plan:  # noqa: ANN001
        if current not in {"absent", "directory"}:
            return Plan(
                False, failed=True, msg=f"{path} exists and is a {current}, not a directory"
            )
        first = [f"mkdir -p -- {q(path)}"] if current == "absent" else []
        return self._with_attributes(
            first, path, {} if first else facts, args, current, "directory"
        )

    def _file(self, args, path, current, facts) -> Plan:  # noqa: ANN001
        return self._with_attributes([], path, facts, args, current, "file")

    def _touch(self, args, path, current, facts) -> Plan:  # noqa: ANN001
        first = [f": >> {q(path)}"] if current == "absent" else []
        return self._with_attributes(first, path, {} if first else facts, args, current, "file")

    def _link(self, args, path, current, facts) -> Plan:  # noqa: ANN001
        src = str(args["src"])
        if current == "link" and facts.get("target") == src:
            return Plan(False)
        if current not in {"absent", "link"} and not as_bool(args.get("force")):
            return Plan(
                False,
                failed=True,
                msg=f"{path} exists and is a {current}; set force: true to replace it",
            )
        # Build the link beside the old one and rename over it: readers never see a gap.
        tmp = f"{path}.pctfleet-tmp"
        lines = [f"rm -rf -- {q(tmp)}", f"ln -s -- {q(src)} {q(tmp)}"]
        if current not in {"absent", "link"}:
            lines.append(f"rm -rf -- {q(path)}")
        lines.append(f"mv -Tf -- {q(tmp)} {q(path)}")
        before = f"link -> {facts.get('target')}" if current == "link" else current
        return self._change("\n".join(lines), before, f"link -> {src}", path)
