"""The cached Debian rootfs every lab container uses as its read-only lower layer.

One cache per recipe (suite x init): `bookworm`, `trixie`, `bookworm-systemd`,
`trixie-systemd`.

Built once with debootstrap into `<name>.tmp` and renamed when complete, so a
half-built tree is never taken for the cache. A build already running (from
another `lab up`, or started by hand with the same recipe) is waited for
instead of being duplicated.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pctfleet.lab.model import LabError
from pctfleet.lab.system import cmdline, tool

CACHE_DIR = Path("/var/cache/pctfleet/rootfs")
SUITES = ("bookworm", "trixie")  # Debian 12 (PVE 8 templates), Debian 13 (PVE 9)
INITS = ("minimal", "systemd")  # the lab's tiny python PID 1, or systemd as on Proxmox
SUITE, INIT = SUITES[0], INITS[0]
INCLUDE = "python3,python3-venv,procps,ca-certificates"
# dbus because systemctl and logind expect a system bus, as on PVE's templates.
SYSTEMD_INCLUDE = "systemd,systemd-sysv,dbus," + INCLUDE
APT_DIR = Path("/etc/apt")
BUILD_TIMEOUT_S = 1800
# `deb [arch=amd64 signed-by=...] URL suite component...`
_DEB_LINE = re.compile(r"^\s*deb\s+(?:\[[^\]]*\]\s+)?([a-z][a-z0-9+]*://\S+)\s+\S+")

Say = Callable[[str], None]


def _quiet(_msg: str) -> None:
    pass


@dataclass(frozen=True)
class Recipe:
    """One cached rootfs: a Debian suite with the lab's init or with systemd."""

    suite: str = SUITE
    init: str = INIT

    def __post_init__(self) -> None:
        check_flavour(self.suite, self.init)

    @property
    def name(self) -> str:
        # The minimal bookworm keeps its original cache name, `bookworm`.
        return self.suite if self.init == "minimal" else f"{self.suite}-{self.init}"

    @property
    def include(self) -> str:
        return SYSTEMD_INCLUDE if self.init == "systemd" else INCLUDE


def check_flavour(suite: str, init: str) -> None:
    if suite not in SUITES:
        raise LabError(f"unknown suite {suite!r}: use one of {', '.join(SUITES)}")
    if init not in INITS:
        raise LabError(f"unknown init {init!r}: use one of {', '.join(INITS)}")


DEFAULT_RECIPE = Recipe()


def is_complete(root: Path, recipe: Recipe = DEFAULT_RECIPE) -> bool:
    # python3 is the last thing the containers need that debootstrap installs.
    done = (root / "usr/bin/python3").exists() and (root / "etc/debian_version").exists()
    if recipe.init == "systemd":
        # /sbin/init is a link into /lib/systemd: present only if systemd-sysv was.
        init = root / "sbin/init"
        done = done and init.is_symlink() and (root / "lib/systemd/systemd").exists()
    return done


def _deb822_urls(text: str) -> list[str]:
    """`URIs:` of the stanzas that are enabled and fetch binary packages (`Types: deb`)."""
    urls: list[str] = []
    for stanza in re.split(r"\n\s*\n", text):
        fields = dict(re.findall(r"^([\w-]+):[ \t]*(.*)$", stanza, re.M))
        fields = {k.lower(): v.strip() for k, v in fields.items()}
        if "deb" in fields.get("types", "").split() and fields.get("enabled", "yes") != "no":
            urls += fields.get("uris", "").split()
    return urls


def _one_line_urls(text: str) -> list[str]:
    """The URL of each `deb [options] URL suite ...` line (not deb-src, not comments)."""
    found = (_DEB_LINE.match(line.split("#", 1)[0]) for line in text.splitlines())
    return [m.group(1) for m in found if m]


def apt_source_urls(apt_dir: Path = APT_DIR) -> list[str]:
    """Every package URL apt on this machine fetches from, in the order apt reads
    its files: sources.list, then sources.list.d/*.list and *.sources by name."""
    parts = sorted(
        p for p in (apt_dir / "sources.list.d").glob("*") if p.suffix in (".list", ".sources")
    )
    files = [apt_dir / "sources.list", *parts]
    urls: list[str] = []
    for path in files:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            continue
        except OSError as err:
            raise LabError(f"cannot read apt sources {path}: {err.strerror}") from None
        urls += _deb822_urls(text) if path.suffix == ".sources" else _one_line_urls(text)
    return urls


def read_mirror(apt_dir: Path = APT_DIR) -> str:
    """The Debian mirror apt on this machine already uses (not the security one)."""
    for url in apt_source_urls(apt_dir):
        if "security" not in url:
            return url.rstrip("/")
    raise LabError(
        f"no package mirror in apt's sources to build the rootfs from: add a line "
        f"'deb URL {SUITE} main' to {apt_dir / 'sources.list'} (or a stanza with "
        f"'Types: deb' and 'URIs: URL' to a {apt_dir / 'sources.list.d'}/*.sources file)"
    )


def foreign_build_pid(tmp: Path) -> int | None:
    """A running debootstrap that targets `tmp`, so we wait rather than race it.

    Only read here, never signalled: the process is matched by what it is
    building (its target directory), to know whether to wait.
    """
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        args = cmdline(int(entry))
        if not any(os.path.basename(a) == "debootstrap" for a in args[:2]):
            continue
        try:
            cwd = Path(os.readlink(f"/proc/{entry}/cwd"))
        except OSError:
            continue
        for arg in args:
            if arg.startswith("-"):
                continue
            target = Path(arg) if os.path.isabs(arg) else cwd / arg
            if target == tmp:
                return int(entry)
    return None


def _wait_for_foreign(tmp: Path, root: Path, recipe: Recipe, say: Say) -> None:
    pid = foreign_build_pid(tmp)
    if pid is None:
        return
    say(f"waiting for the rootfs build already running (debootstrap PID {pid}) ...")
    deadline = time.monotonic() + BUILD_TIMEOUT_S
    while foreign_build_pid(tmp) is not None:
        if time.monotonic() > deadline:
            raise LabError(f"the rootfs build into {tmp} has run over {BUILD_TIMEOUT_S} s")
        time.sleep(1)
    # The other builder renames tmp -> root right after debootstrap exits.
    for _ in range(100):
        if is_complete(root, recipe):
            return
        time.sleep(0.1)


def debootstrap_cmd(recipe: Recipe, tmp: Path, mirror: str) -> list[str]:
    include = f"--include={recipe.include}"
    return [tool("debootstrap"), "--variant=minbase", include, recipe.suite, str(tmp), mirror]


def _debootstrap(recipe: Recipe, tmp: Path, mirror: str, log: Path, say: Say) -> None:
    cmd = debootstrap_cmd(recipe, tmp, mirror)
    say(f"building the {recipe.name} rootfs from {mirror} (one to two minutes; log: {log})")
    with open(log, "wb") as out:
        res = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=out, check=False)
    if res.returncode != 0:
        tail = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-3:]
        raise LabError(f"debootstrap failed ({res.returncode}): {' | '.join(tail)} (see {log})")


def ensure_rootfs(
    cache_dir: Path = CACHE_DIR, say: Say = _quiet, recipe: Recipe = DEFAULT_RECIPE
) -> Path:
    """Return the recipe's cached rootfs, building it only if it is missing."""
    root = cache_dir / recipe.name
    if is_complete(root, recipe):
        return root
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = cache_dir / f"{recipe.name}.tmp"
    with open(cache_dir / ".build.lock", "w") as lock:
        # Serialises builders that use this code; others are caught below.
        fcntl.flock(lock, fcntl.LOCK_EX)
        _wait_for_foreign(tmp, root, recipe, say)
        if is_complete(root, recipe):
            return root
        if root.exists():
            raise LabError(f"{root} exists but is incomplete; remove it and run again")
        if tmp.exists():
            say(f"removing the unfinished build {tmp}")
            shutil.rmtree(tmp)
        started = time.monotonic()
        _debootstrap(recipe, tmp, read_mirror(), cache_dir / f"{recipe.name}.log", say)
        os.rename(tmp, root)
        say(f"rootfs ready in {time.monotonic() - started:.0f} s: {root}")
    return root
