"""`fetch`: a file of the container copied to the controller, laid out as Ansible lays it
out (`dest/<inventory_hostname>/<src>`, or `dest` itself with `flat`).

The file's bytes are read in the shared probe (as `slurp` reads them, up to 4 MiB) and
compared with the controller's copy by sha1: a second run writes nothing and costs
nothing beyond the probe. The controller's file is written after the change is accepted,
never in check mode.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Self

from pctfleet.modules.args import Args, Context, arg, flag, text
from pctfleet.modules.base import Module, Plan, World
from pctfleet.modules.slurp import SlurpText
from pctfleet.modules.textfile import TextFile, unreadable


@dataclass(frozen=True)
class FetchArgs(Args):
    reads_context: ClassVar[bool] = True
    src: str = arg(required=True, convert=text)
    dest: str = arg(required=True, convert=text)
    flat: bool = arg(False, convert=flag)
    fail_on_missing: bool = arg(True, convert=flag)
    validate_checksum: bool = arg(True, convert=flag)
    # Not an argument: where the copy goes on the controller, worked out when prepared.
    local: str = ""

    @classmethod
    def parse(cls, raw: Mapping[str, Any], ctx: Context, where: str) -> Self:
        args = super().parse(raw, ctx, where)
        dest = Path(ctx.base_dir) / Path(args.dest).expanduser()  # an absolute dest stays
        if args.flat:
            local = dest / Path(args.src).name if args.dest.endswith("/") else dest
        else:
            host = str(ctx.variables.get("inventory_hostname", "localhost"))
            local = dest / host / os.path.normpath(args.src).lstrip("/")
        return dataclasses.replace(args, local=str(local))

    def check(self, ctx: Context, where: str) -> None:
        if not self.src.startswith("/"):
            raise self.fail(f"'src' must be an absolute path, got {self.src!r}", where)


class FetchText(SlurpText):
    def converged(self, args: FetchArgs, world: World) -> dict[str, str]:
        local = Path(args.local)
        world.files[args.src] = local.read_bytes() if local.is_file() else b""
        return super().converged(args, world)


@dataclass
class FetchPlan(Plan):
    data: bytes = b""  # what the controller's copy must hold


def _sha1(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()  # noqa: S324 - Ansible's fetch checksum is sha1


class Fetch(Module, name="fetch", args=FetchArgs, fact=FetchText()):
    """Copy a file from the container to the controller (Ansible's `fetch`)."""

    registers_output = registers_msg = False

    def plan(self, args: FetchArgs, state: TextFile, check: bool) -> Plan:
        result: dict[str, Any] = {"file": args.src, "dest": args.local}
        if state.type == "absent":
            msg = "the remote file does not exist"
            if args.fail_on_missing:
                return Plan(False, failed=True, msg=f"{msg}, not transferring", result=result)
            return Plan(False, msg=f"{msg}, not transferring, ignored", result=result)
        if state.type == "directory":
            return Plan(
                False,
                failed=True,
                msg="remote file is a directory, fetch cannot work on directories",
            )
        failed = unreadable(state, args.src)
        if failed:
            return failed
        data = state.content or b""
        remote = _sha1(data)
        result |= {"checksum": remote, "remote_checksum": remote}
        result["remote_md5sum"] = None
        local = Path(args.local)
        have = local.read_bytes() if local.is_file() else None
        if have == data:
            return Plan(False, result=result | {"md5sum": hashlib.md5(data).hexdigest()})  # noqa: S324
        before = "" if have is None else have.decode("utf-8", "replace")
        diff = {"path": args.local, "before": before, "after": data.decode("utf-8", "replace")}
        return FetchPlan(True, diff=diff, result=result, data=data)

    def finish(self, args: FetchArgs, plan: Plan, rc: int, out: str, err: str) -> dict:
        data = plan.data if isinstance(plan, FetchPlan) else b""
        local = Path(args.local)
        try:
            local.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{local.name}.", dir=local.parent)
            with os.fdopen(fd, "wb") as out_file:
                out_file.write(data)
            os.replace(tmp, local)
        except OSError as exc:
            return {"failed": True, "msg": f"cannot write {local}: {exc.strerror}"}
        written = _sha1(local.read_bytes())
        if args.validate_checksum and written != _sha1(data):
            return {"failed": True, "msg": "checksum mismatch", "checksum": written}
        return {"changed": True, "md5sum": hashlib.md5(data).hexdigest()}  # noqa: S324
