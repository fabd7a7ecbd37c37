"""`unarchive`: a tar, tar.gz or zip archive extracted into a folder of the container.

The archive is on the controller (pushed at apply time) or, with `remote_src`, already
in the container. The probe compares the archive's members with what `dest` holds (type,
size, mtime and the task's owner/group/mode, as `tar --diff` would), so a second run
changes nothing and costs nothing beyond the shared probe.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import tarfile
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Self

from pctfleet.errors import PlaybookError
from pctfleet.facts.kv import decode_fields
from pctfleet.modules.args import Args, Context, arg, flag, text, text_list
from pctfleet.modules.base import Fact, FactReader, Module, Plan, Push, World, mode_string
from pctfleet.modules.copy import _bases
from pctfleet.sh import snippet


def manifest(path: Path, where: str) -> tuple[str, list[list[Any]]]:
    """The archive's kind (tar or zip) and members as `[name, d|f|l, size, mtime]`."""
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as z:
                return "zip", [
                    [i.filename.rstrip("/"), "d" if i.is_dir() else "f", i.file_size, 0]
                    for i in z.infolist()
                ]
        with tarfile.open(path) as t:
            kinds = [(m, "d" if m.isdir() else "l" if m.issym() else "f") for m in t.getmembers()]
            return "tar", [
                [m.name, kind, m.size, m.mtime]
                for m, kind in kinds
                if m.isdir() or m.isfile() or m.issym()
            ]
    except (OSError, tarfile.TarError, zipfile.BadZipFile) as err:
        message = f"unarchive: {path} is no tar or zip archive: {err}"
        raise PlaybookError(message, where=where) from None


@dataclass(frozen=True)
class UnarchiveArgs(Args):
    reads_context: ClassVar[bool] = True
    src: str = arg(required=True, convert=text)
    dest: str = arg(required=True, convert=text)
    remote_src: bool = arg(False, convert=flag)
    creates: str | None = arg(None, convert=text)
    mode: str | None = arg(None, convert=mode_string)
    owner: str | None = arg(None, convert=text)
    group: str | None = arg(None, convert=text)
    extra_opts: tuple[str, ...] = arg((), convert=text_list)
    list_files: bool = arg(False, convert=flag)
    keep_newer: bool = arg(False, convert=flag)  # accepted; members are compared as they are
    validate_certs: bool = arg(True, convert=flag)  # accepted; src is never a URL here
    # Not arguments: a controller-side archive, read when the task is prepared.
    data: bytes = dataclasses.field(default=b"", repr=False)
    kind: str = ""
    members: tuple = ()

    @classmethod
    def parse(cls, raw: Mapping[str, Any], ctx: Context, where: str) -> Self:
        args = super().parse(raw, ctx, where)
        if args.remote_src:
            return args
        path = Path(args.src).expanduser()
        if not path.is_absolute():
            found = [b / "files" / path for b in _bases(ctx)] + [Path(ctx.base_dir) / path]
            path = next((p for p in found if p.exists()), found[-1])
        if not path.is_file():
            raise PlaybookError(f"unarchive: src {path} is not a file", where=where)
        kind, members = manifest(path, where)
        return dataclasses.replace(
            args, data=path.read_bytes(), kind=kind, members=tuple(map(tuple, members))
        )

    def check(self, ctx: Context, where: str) -> None:
        for key in ("dest", *(("src",) if self.remote_src else ())):
            if not getattr(self, key).startswith("/"):
                raise self.fail(
                    f"{key!r} must be an absolute path, got {getattr(self, key)!r}", where
                )
        if self.src.startswith(("http://", "https://", "ftp://")):
            raise self.fail("a URL as 'src' is not supported: download it with get_url", where)

    @property
    def archive(self) -> str:
        """Where the archive is in the container (a pushed one: named by its content)."""
        if self.remote_src:
            return self.src
        suffix = ".zip" if self.kind == "zip" else ".tar"
        return f"/tmp/.pctfleet-unarchive-{hashlib.sha256(self.data).hexdigest()[:16]}{suffix}"


@dataclass(frozen=True)
class Extracted:
    created: bool = False
    dest: str = ""  # directory | other | '' (absent)
    archive: str = ""  # absent where a remote archive is missing
    kind: str = ""
    differs: str = ""  # how many members differ; 'unknown' where it could not be read
    members: int = 0
    first: str = ""
    error: str = ""


class ExtractedFact(FactReader[Extracted]):
    State = Extracted

    def command(self, args: UnarchiveArgs, want_diff: bool) -> str:
        listed = json.dumps([list(m) for m in args.members]) if not args.remote_src else ""
        inputs = {"CREATES": args.creates or "", "ARCHIVE": args.archive, "MANIFEST": listed}
        inputs |= {"DEST": args.dest, "MODE": args.mode or ""}
        return snippet("unarchive_fact", OWNER=args.owner or "", GROUP=args.group or "", **inputs)

    def parse(self, reading: Fact) -> Extracted:
        f = reading.fields()
        members = f.get("members", "0")
        return Extracted(
            created=f.get("created") == "1",
            dest=f.get("dest", ""),
            archive=f.get("archive", ""),
            kind=f.get("kind", ""),
            differs=f.get("differs", ""),
            members=int(members) if members.isdigit() else 0,
            first=f.get("first", ""),
            error=f.get("error", ""),
        )

    def converged(self, args: UnarchiveArgs, world: World) -> dict[str, str]:
        return {"dest": "directory", "differs": "0", "members": str(len(args.members))}


class Unarchive(Module, name="unarchive", args=UnarchiveArgs, fact=ExtractedFact()):
    """Extract an archive into `dest` (Ansible's `unarchive`)."""

    def plan(self, args: UnarchiveArgs, state: Extracted, check: bool) -> Plan:
        result = {"dest": args.dest, "src": args.src}
        if state.created:
            return Plan(False, msg=f"skipped, since {args.creates} exists", result=result)
        if state.dest != "directory":
            return Plan(False, failed=True, msg=f"Destination '{args.dest}' is not a directory")
        if state.archive == "absent":
            return Plan(False, failed=True, msg=f"Source '{args.src}' does not exist")
        if state.differs == "0":
            return Plan(False, result=result)
        kind = args.kind or state.kind or "tar"
        if kind == "zip" and args.extra_opts:
            return Plan(False, failed=True, msg="extra_opts are for tar archives only")
        inputs = {"ARCHIVE": args.archive, "DEST": args.dest, "KIND": kind}
        inputs |= {"OWNER": args.owner or "", "GROUP": args.group or "", "MODE": args.mode or ""}
        script = snippet(
            "unarchive", argv=list(args.extra_opts), CLEANUP=int(not args.remote_src), **inputs
        )
        pushes = [] if args.remote_src else [Push(args.archive, args.data, "0600")]
        diff = {"path": args.dest, "before": f"{state.differs} members differ\n", "after": ""}
        return Plan(True, script=script, pushes=pushes, diff=diff, result=result)

    def finish(self, args: UnarchiveArgs, plan: Plan, rc: int, out: str, err: str) -> dict:
        fields = decode_fields(out)
        extract = {"rc": rc, "out": "", "err": err.strip()}
        result = {"handler": fields.get("handler", ""), "extract_results": extract}
        if args.list_files:
            result["files"] = [m[0] for m in args.members]
        if rc != 0:
            lines = err.strip().splitlines()
            return result | {"failed": True, "msg": lines[-1] if lines else f"exit {rc}"}
        return result | {"changed": True}
