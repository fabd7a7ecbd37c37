"""`stat`: what is at a path, as Ansible's `stat` registers it. It never changes anything."""

from __future__ import annotations

import stat as st
from dataclasses import dataclass, field
from typing import Any

from pctfleet.modules.args import Args, Context, arg, flag, text
from pctfleet.modules.base import Fact, FactReader, Module, Plan, World
from pctfleet.sh import snippet

ALGORITHMS = {"md5", "sha1", "sha224", "sha256", "sha384", "sha512"}
_BITS = {
    "wusr": st.S_IWUSR,
    "rusr": st.S_IRUSR,
    "xusr": st.S_IXUSR,
    "wgrp": st.S_IWGRP,
    "rgrp": st.S_IRGRP,
    "xgrp": st.S_IXGRP,
    "woth": st.S_IWOTH,
    "roth": st.S_IROTH,
    "xoth": st.S_IXOTH,
    "isuid": st.S_ISUID,
    "isgid": st.S_ISGID,
}
_KINDS = {
    "isdir": st.S_ISDIR,
    "ischr": st.S_ISCHR,
    "isblk": st.S_ISBLK,
    "isreg": st.S_ISREG,
    "isfifo": st.S_ISFIFO,
    "islnk": st.S_ISLNK,
    "issock": st.S_ISSOCK,
}


def statinfo(raw: str) -> dict[str, Any]:
    """Ansible's stat fields from `stat -c '%f %u %g %s %i %d %h %b %B %.9X %.9Y %.9Z %U %G'`."""
    parts = raw.split(" ")
    mode = int(parts[0], 16)
    uid, gid, size, inode, dev, nlink, blocks, block_size = (int(p) for p in parts[1:9])
    info: dict[str, Any] = {"mode": f"{st.S_IMODE(mode):04o}"}
    info |= {name: test(mode) for name, test in _KINDS.items()}
    info |= {"uid": uid, "gid": gid, "size": size, "inode": inode, "dev": dev, "nlink": nlink}
    info |= {"atime": float(parts[9]), "mtime": float(parts[10]), "ctime": float(parts[11])}
    info |= {name: bool(mode & bit) for name, bit in _BITS.items()}
    info |= {"blocks": blocks, "block_size": block_size}
    for key, name in zip(("pw_name", "gr_name"), parts[12:14], strict=False):
        if name and name != "UNKNOWN":
            info[key] = name
    return info


@dataclass(frozen=True)
class StatArgs(Args):
    path: str = arg(required=True, aliases=("dest", "name"), convert=text)
    follow: bool = arg(False, convert=flag)
    get_checksum: bool = arg(True, convert=flag)
    checksum_algorithm: str = arg(
        "sha1", aliases=("checksum", "checksum_algo"), choices=ALGORITHMS, convert=text
    )
    # Accepted for playbooks that turn them off; mimetype and attributes are not reported.
    get_mime: bool = arg(True, convert=flag)
    get_attributes: bool = arg(True, convert=flag)

    def check(self, ctx: Context, where: str) -> None:
        if not self.path.startswith("/"):
            raise self.fail(f"'path' must be an absolute path, got {self.path!r}", where)


@dataclass(frozen=True)
class Stat:
    fields: dict[str, str] = field(default_factory=dict)


class StatFact(FactReader[Stat]):
    State = Stat

    def command(self, args: StatArgs, want_diff: bool) -> str:
        algorithm = args.checksum_algorithm if args.get_checksum else ""
        follow = int(args.follow)
        return snippet("stat_full", STAT_PATH=args.path, FOLLOW=follow, CHECKSUM=algorithm)

    def parse(self, reading: Fact) -> Stat:
        return Stat(reading.fields())

    def converged(self, args: StatArgs, world: World) -> dict[str, str]:
        return {"exists": "0"}  # whatever it finds, stat changes nothing


def stat_result(args: StatArgs, fields: dict[str, str]) -> dict[str, Any]:
    if fields.get("exists") != "1" or "stat" not in fields:
        return {"exists": False}
    result: dict[str, Any] = {"exists": True, "path": args.path, **statinfo(fields["stat"])}
    access = fields.get("access", "")
    result |= {"readable": "r" in access, "writeable": "w" in access, "executable": "x" in access}
    for key in ("lnk_source", "lnk_target", "checksum"):
        if key in fields:
            result[key] = fields[key]
    return result


class StatModule(Module, name="stat", args=StatArgs, fact=StatFact()):
    """Read a path's attributes into the registered `stat` (never changed)."""

    registers_output = registers_msg = False

    def plan(self, args: StatArgs, state: Stat, check: bool) -> Plan:
        try:
            result = stat_result(args, state.fields)
        except (ValueError, IndexError):
            return Plan(False, failed=True, msg=f"stat of {args.path} could not be read")
        return Plan(False, result={"stat": result})
