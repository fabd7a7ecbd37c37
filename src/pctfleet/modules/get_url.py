"""`get_url`: a file downloaded into the container, checked against a checksum.

The probe reads the destination's checksum and attributes; the download itself
runs at apply time inside the container with its python3 (urllib), into a temporary
file that is verified and then renamed over the destination.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from pctfleet.errors import PlaybookError, brief
from pctfleet.facts.kv import decode_fields
from pctfleet.modules.args import Args, Context, arg, flag, text
from pctfleet.modules.base import Fact, FactReader, Module, Plan, World, mode_string
from pctfleet.modules.group import account
from pctfleet.sh import snippet

DIGESTS = {"md5": 32, "sha1": 40, "sha224": 56, "sha256": 64, "sha384": 96, "sha512": 128}


def checksum(value: object, where: str) -> tuple[str, str]:
    """`algorithm:hexdigest`, as Ansible writes it."""
    algo, _, digest = text(value, where).partition(":")
    digest = digest.strip().lower()
    if DIGESTS.get(algo.lower()) != len(digest) or not re.fullmatch(r"[0-9a-f]+", digest):
        raise PlaybookError(
            f"'checksum' must be like 'sha256:<hex digest>' (also {', '.join(sorted(DIGESTS))}), "
            f"got {brief(value)}",
            where=where,
        )
    return algo.lower(), digest


def positive(value: object, where: str) -> float:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        number = -1
    if isinstance(value, bool) or not 0 < number < 1e6:
        raise PlaybookError(
            f"'timeout' must be a number of seconds > 0, got {brief(value)}", where=where
        )
    return number


@dataclass(frozen=True)
class GetUrlArgs(Args):
    url: str = arg(required=True, convert=text)
    dest: str = arg(required=True, convert=text)
    checksum: tuple[str, str] | None = arg(None, convert=checksum)
    mode: str | None = arg(None, convert=mode_string)
    owner: str | None = arg(None, convert=account)
    group: str | None = arg(None, convert=account)
    force: bool = arg(False, convert=flag)
    timeout: float = arg(10.0, convert=positive)
    validate_certs: bool = arg(True, convert=flag)  # accepted; urllib always validates

    def check(self, ctx: Context, where: str) -> None:
        if urlsplit(self.url).scheme not in ("http", "https", "ftp", "file"):
            raise self.fail(f"'url' must be http, https, ftp or file, got {brief(self.url)}", where)
        if not self.dest.startswith("/"):
            raise self.fail(f"'dest' must be an absolute path, got {self.dest!r}", where)

    @property
    def algo(self) -> str:
        return self.checksum[0] if self.checksum else "sha1"

    @property
    def filename(self) -> str:
        return posixpath.basename(urlsplit(self.url).path) or "index.html"


@dataclass(frozen=True)
class Dest:
    path: str = ""
    stat: str = ""  # `mode owner group`; empty where there is no file
    sum: str = ""


class DestFact(FactReader[Dest]):
    State = Dest

    def command(self, args: GetUrlArgs, want_diff: bool) -> str:
        return snippet("get_url_fact", DEST=args.dest, NAME=args.filename, ALGO=args.algo)

    def parse(self, reading: Fact) -> Dest:
        f = reading.fields()
        return Dest(f.get("path", ""), f.get("stat", ""), f.get("sum", ""))

    def converged(self, args: GetUrlArgs, world: World) -> dict[str, str]:
        mode = f"{int(args.mode, 8):o}" if args.mode else "644"
        stat = f"{mode} {args.owner or 'root'} {args.group or 'root'}"
        return {"path": args.dest, "stat": stat, "sum": args.checksum[1] if args.checksum else "0"}


def _attrs_differ(args: GetUrlArgs, stat: str) -> bool:
    mode, owner, group = (stat.split(" ") + ["", "", ""])[:3]
    if args.mode and int(args.mode, 8) != int(mode or "0", 8):
        return True
    return (args.owner or owner) != owner or (args.group or group) != group


def _kept_sums(args: GetUrlArgs, state: Dest) -> dict[str, str | None]:
    # As Ansible registers a kept file: with a checksum it returns before reading
    # anything (both None); without one it fetched the same bytes again (both the sum).
    if args.checksum:
        return {"checksum_src": None, "checksum_dest": None}
    return {"checksum_src": state.sum, "checksum_dest": state.sum}


class GetUrl(Module, name="get_url", args=GetUrlArgs, fact=DestFact()):
    """Download a file into the container (Ansible's `get_url`)."""

    def plan(self, args: GetUrlArgs, state: Dest, check: bool) -> Plan:
        path = state.path or args.dest
        result = {"dest": path, "url": args.url}
        exists = bool(state.stat)
        stale = bool(args.checksum) and state.sum != args.checksum[1]  # type: ignore[index]
        fetch = not exists or args.force or stale
        if not fetch and not _attrs_differ(args, state.stat):
            return Plan(False, msg="file already exists", result=result | _kept_sums(args, state))
        inputs = {
            "URL": args.url,
            "DEST_PATH": path,
            "ALGO": args.algo,
            "TIMEOUT": f"{args.timeout:g}",
        }
        inputs |= {"SUM": args.checksum[1] if args.checksum else "", "FETCH": int(fetch)}
        inputs |= {"MODE": args.mode or "", "OWNER": args.owner or "", "GROUP": args.group or ""}
        return Plan(True, script=snippet("get_url", **inputs), result=result)

    def finish(self, args: GetUrlArgs, plan: Plan, rc: int, out: str, err: str) -> dict:
        fields = decode_fields(out)
        if rc != 0:
            lines = err.strip().splitlines()
            return {"failed": True, "msg": lines[-1] if lines else f"exit {rc}", "url": args.url}
        changed = fields.get("changed") == "1" or fields.get("attrs_changed") == "1"
        result: dict = {"changed": changed, "msg": "OK" if "size" in fields else "attributes set"}
        for key in ("checksum_src", "checksum_dest", "size", "status_code", "elapsed"):
            if key in fields:
                result[key] = (
                    int(fields[key])
                    if fields[key].isdigit() and "checksum" not in key
                    else fields[key]
                )
        mode, owner, group = (fields.get("attrs", "").split(" ") + ["", "", ""])[:3]
        return result | {"mode": mode.zfill(4) if mode else "", "owner": owner, "group": group}
