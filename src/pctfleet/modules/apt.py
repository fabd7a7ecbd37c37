"""`apt` and `package`: Debian packages present, latest or absent, from `dpkg-query -W`.

The probe reads the installed versions of the task's packages (the candidates from
`apt-cache policy` only for `state: latest`, the cache's age only when the cache may
be updated), so a converged task costs nothing beyond the shared probe. A change is
one `apt-get` script, non-interactive.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from fnmatch import fnmatch

from pctfleet.errors import PlaybookError, brief
from pctfleet.modules.args import Args, Context, arg, flag, text_list
from pctfleet.modules.base import Fact, FactReader, Module, Plan, World, q
from pctfleet.modules.group import whole
from pctfleet.sh import snippet

_NAME = re.compile(r"[a-z0-9][a-z0-9+.-]*(:[a-z0-9-]+)?\Z")
_VERSION = re.compile(r"[A-Za-z0-9.+~:*-]+\Z")
STATES = {"present": "present", "installed": "present", "latest": "latest"}
STATES |= {"absent": "absent", "removed": "absent"}


def packages(value: object, where: str) -> tuple[tuple[str, str], ...]:
    """`name`, `name=version` (fnmatch patterns allowed, as in Ansible), a list or a comma list."""
    items = [part.strip() for item in text_list(value, where) for part in item.split(",")]
    found = []
    for item in filter(None, items):
        name, _, version = item.partition("=")
        if not _NAME.match(name) or (version and not _VERSION.match(version)):
            raise PlaybookError(f"not a valid package name or version: {brief(item)}", where=where)
        found.append((name, version))
    return tuple(found)


@dataclass(frozen=True)
class AptArgs(Args):
    name: tuple[tuple[str, str], ...] = arg((), aliases=("package", "pkg"), convert=packages)
    state: str = arg("present", choices=set(STATES))
    update_cache: bool = arg(False, aliases=("update-cache",), convert=flag)
    cache_valid_time: int = arg(0, convert=whole)
    install_recommends: bool | None = arg(None, aliases=("install-recommends",), convert=flag)
    purge: bool = arg(False, convert=flag)
    autoremove: bool = arg(False, convert=flag)
    deb: str | None = arg(None)

    def check(self, ctx: Context, where: str) -> None:
        if self.deb is not None:
            raise self.fail("'deb' is not supported: copy the file and run `dpkg -i`", where)
        if not self.name and not self.wants_cache and not self.autoremove:
            raise self.fail("one of name, update_cache, autoremove or deb is required", where)
        if self.goal == "latest" and any(version for _, version in self.name):
            raise self.fail("a version (name=version) cannot be used with state=latest", where)

    @property
    def wants_cache(self) -> bool:
        return self.update_cache or self.cache_valid_time > 0  # as Ansible 2.4+

    @property
    def goal(self) -> str:
        return STATES[self.state]


@dataclass(frozen=True)
class PackageArgs(AptArgs):
    """`package`: the generic module; only apt is behind it."""

    use: str = arg("auto", choices={"auto", "apt"})


@dataclass(frozen=True)
class Packages:
    dpkg: bool = True
    installed: dict[str, tuple[str, str]] = field(default_factory=dict)  # name -> (status, ver)
    candidates: dict[str, str] = field(default_factory=dict)
    stamp: int | None = None
    now: int = 0
    removable: int = 0


def _candidates(policy: str) -> dict[str, str]:
    found, current = {}, ""
    for line in policy.splitlines():
        if line and not line[0].isspace() and line.endswith(":"):
            current = line[:-1]
        elif line.strip().startswith("Candidate:") and current:
            found[current] = line.split(":", 1)[1].strip()
    return found


class AptFact(FactReader[Packages]):
    State = Packages

    def command(self, args: AptArgs, want_diff: bool) -> str:
        names = " ".join(name for name, _ in args.name)
        latest, cache = int(args.goal == "latest"), int(args.wants_cache)
        return snippet(
            "apt_fact", PKGS=names, LATEST=latest, CACHE=cache, AUTOREMOVE=int(args.autoremove)
        )

    def parse(self, reading: Fact) -> Packages:
        f = reading.fields()
        rows = [line.split("\t") for line in f.get("installed", "").splitlines()]
        installed = {row[0]: (row[1].strip(), row[2]) for row in rows if len(row) == 3}
        stamp = int(f["stamp"]) if f.get("stamp", "").isdigit() else None
        now = int(f["now"]) if f.get("now", "").isdigit() else 0
        removable = int(f["autoremove"]) if f.get("autoremove", "").isdigit() else 0
        return Packages(
            f.get("dpkg") != "0", installed, _candidates(f.get("policy", "")), stamp, now, removable
        )

    def converged(self, args: AptArgs, world: World) -> dict[str, str]:
        rows = "".join(
            f"{name}\tii\t{version.replace('*', '1') or '1.0'}\n" for name, version in args.name
        )
        fields = {"dpkg": "1", "installed": "" if args.goal == "absent" else rows}
        policy = "".join(f"{name}:\n  Installed: 1.0\n  Candidate: 1.0\n" for name, _ in args.name)
        stamp = {"stamp": "100", "now": "100"} if args.wants_cache else {}
        return fields | ({"policy": policy} if args.goal == "latest" else {}) | stamp


def _wanted(args: AptArgs, state: Packages) -> list[str]:
    """The `name[=version]` words apt-get must install."""
    wanted = []
    for name, version in args.name:
        status, current = state.installed.get(name.split(":")[0], ("", ""))
        if status == "ii" and version and fnmatch(current, version):
            continue
        if status == "ii" and not version:
            candidate = state.candidates.get(name, current)
            if args.goal != "latest" or candidate in ("(none)", current):
                continue
        wanted.append(f"{name}={version}" if version else name)
    return wanted


def _unwanted(args: AptArgs, state: Packages) -> list[str]:
    kept = ("ii", "rc") if args.purge else ("ii",)
    # dpkg-query prints `${Package}` without the `:arch` a name may carry.
    found = {name: state.installed.get(name.split(":")[0], ("", ""))[0] for name, _ in args.name}
    return [name for name, status in found.items() if status in kept]


def _stale(args: AptArgs, state: Packages) -> bool:
    if not args.wants_cache:
        return False
    if args.cache_valid_time == 0 or state.stamp is None:
        return True
    return state.now - state.stamp > args.cache_valid_time


def _script(args: AptArgs, stale: bool, install: list[str], remove: list[str], clean: bool) -> str:
    lines = ["set -e", "export DEBIAN_FRONTEND=noninteractive"]
    lines += ["apt-get update -q"] if stale else []
    if install:
        recommends = {True: " -o APT::Install-Recommends=yes", False: " --no-install-recommends"}
        option = recommends.get(args.install_recommends, "")  # type: ignore[arg-type]
        lines.append(f"apt-get install -y -q{option} -- {' '.join(map(q, install))}")
    if remove:
        lines.append(f"apt-get remove -y -q{' --purge' * args.purge} -- {' '.join(map(q, remove))}")
    if clean:
        lines.append(f"apt-get autoremove -y -q{' --purge' * args.purge}")
    return "".join(f"{line}\n" for line in lines)


class Apt(Module, name="apt", args=AptArgs, fact=AptFact()):
    """Install, upgrade or remove Debian packages with apt-get (Ansible's `apt`)."""

    missing = "dpkg-query was not found: this container has no apt"

    def plan(self, args: AptArgs, state: Packages, check: bool) -> Plan:
        if not state.dpkg:
            return Plan(False, failed=True, msg=f"{self.name}: {self.missing}")
        stale = _stale(args, state)
        install = _wanted(args, state) if args.goal != "absent" else []
        remove = _unwanted(args, state) if args.goal == "absent" else []
        clean = args.autoremove and (state.removable > 0 or bool(install or remove))
        result = {
            "cache_updated": stale,
            "cache_update_time": state.now if stale else state.stamp or 0,
        }
        if not (stale or install or remove or clean):
            return Plan(False, result=result)
        before = "".join(
            f"{n} {state.installed.get(n.split('=')[0], ('', 'absent'))[1]}\n"
            for n in install + remove
        )
        after = "".join(f"{n}\n" for n in install) + "".join(f"{n} absent\n" for n in remove)
        diff = {"before": before, "after": after, "path": "packages"} if install or remove else None
        script = _script(args, stale, install, remove, clean)
        return Plan(True, script=script, diff=diff, result=result)

    def finish(self, args: AptArgs, plan: Plan, rc: int, out: str, err: str) -> dict:
        result = super().finish(args, plan, rc, out, err)
        # Only refreshing the cache is no change when packages were named, as in Ansible.
        touched = any(
            f"apt-get {verb}" in (plan.script or "") for verb in ("install", "remove", "autoremove")
        )
        if rc == 0 and args.name and not touched:
            result["changed"] = False
        return result


class Package(Apt, name="package", args=PackageArgs):
    """`package`: apt where there is dpkg; anywhere else it fails saying so."""

    missing = "only apt is supported and this container has no dpkg-query"
