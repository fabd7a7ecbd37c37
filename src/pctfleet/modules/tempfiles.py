"""`tempfile`: a new temporary file or directory, its path registered. Like Ansible's, it
is changed on every run (a new name each time) and is skipped in check mode."""

from __future__ import annotations

from dataclasses import dataclass

from pctfleet.modules.args import Args, Context, arg, text
from pctfleet.modules.base import Module, Plan
from pctfleet.sh import snippet


def _any(value: object, where: str) -> str:
    return str(value)


@dataclass(frozen=True)
class TempfileArgs(Args):
    state: str = arg("file", choices={"file", "directory"})
    path: str | None = arg(None, convert=text)
    prefix: str = arg("ansible.", convert=_any)
    suffix: str = arg("", convert=_any)

    def check(self, ctx: Context, where: str) -> None:
        if self.path is not None and not self.path.startswith("/"):
            raise self.fail(f"'path' must be an absolute path, got {self.path!r}", where)
        for key in ("prefix", "suffix"):
            if "/" in getattr(self, key):
                raise self.fail(f"{key!r} may not hold a '/': {getattr(self, key)!r}", where)


class Tempfile(Module, name="tempfile", args=TempfileArgs):
    """Make a temporary file or directory (mode 0600 or 0700) and register its `path`."""

    def plan(self, args: TempfileArgs, state: None, check: bool) -> Plan:
        script = snippet(
            "tempfile",
            TF_DIR=int(args.state == "directory"),
            TF_PATH=args.path or "",
            TF_PREFIX=args.prefix,
            TF_SUFFIX=args.suffix,
        )
        return Plan(True, script=script, skip_in_check=True)

    def finish(self, args: TempfileArgs, plan: Plan, rc: int, out: str, err: str) -> dict:
        if rc != 0:
            reason = err.strip().splitlines()[-1] if err.strip() else f"exit {rc}"
            return {"failed": True, "msg": f"tempfile: {reason}"}
        return {"path": out.strip(), "state": args.state}
