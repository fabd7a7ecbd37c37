"""The cached Debian rootfs every lab container uses as its read-only lower layer.

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
from pathlib import Path

from .model import LabError
from .system import cmdline, tool

CACHE_DIR = Path("/var/cache/pctfleet/rootfs")
SUITE = "bookworm"
INCLUDE = "python3,python3-venv,procps,ca-certificates"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
BUILD_TIMEOUT_S = 1800

Say = Callable[[str], None]


def _quiet(_msg: str) -> None:
    pass


def is_complete(root: Path) -> bool:
    # python3 is the last thing the containers need that debootstrap installs.
    return (root / "usr/bin/python3").exists() and (root / "etc/debian_version").exists()


def read_mirror(
    sources_dir: Path = Path("/etc/apt/sources.list.d"),
    sources_list: Path = Path("/etc/apt/sources.list"),
) -> str:
    """The Debian mirror apt on this machine already uses (not the security one)."""
    candidates: list[str] = []
    for path in sorted(sources_dir.glob("*.sources")) if sources_dir.is_dir() else []:
        for m in re.finditer(r"^URIs:\s*(\S+)", path.read_text(encoding="utf-8"), re.M):
            candidates.append(m.group(1))
    if sources_list.is_file():
        for line in sources_list.read_text(encoding="utf-8").splitlines():
            parts = line.split()
            if len(parts) >= 3 and parts[0] == "deb":
                url = next((p for p in parts[1:] if re.match(r"[a-z]+://", p)), None)
                if url:
                    candidates.append(url)
    for url in candidates:
        if "security" not in url:
            return url.rstrip("/")
    return DEFAULT_MIRROR


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


def _wait_for_foreign(tmp: Path, root: Path, say: Say) -> None:
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
        if is_complete(root):
            return
        time.sleep(0.1)


def _debootstrap(tmp: Path, mirror: str, log: Path, say: Say) -> None:
    cmd = [
        tool("debootstrap"),
        "--variant=minbase",
        f"--include={INCLUDE}",
        SUITE,
        str(tmp),
        mirror,
    ]
    say(f"building the {SUITE} rootfs from {mirror} (about a minute; log: {log})")
    with open(log, "wb") as out:
        res = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=out, check=False)
    if res.returncode != 0:
        tail = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-3:]
        raise LabError(f"debootstrap failed ({res.returncode}): {' | '.join(tail)} (see {log})")


def ensure_rootfs(cache_dir: Path = CACHE_DIR, say: Say = _quiet) -> Path:
    """Return the cached rootfs, building it only if it is missing."""
    root = cache_dir / SUITE
    if is_complete(root):
        return root
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = cache_dir / f"{SUITE}.tmp"
    with open(cache_dir / ".build.lock", "w") as lock:
        # Serialises builders that use this code; others are caught below.
        fcntl.flock(lock, fcntl.LOCK_EX)
        _wait_for_foreign(tmp, root, say)
        if is_complete(root):
            return root
        if root.exists():
            raise LabError(f"{root} exists but is incomplete; remove it and run again")
        if tmp.exists():
            say(f"removing the unfinished build {tmp}")
            shutil.rmtree(tmp)
        started = time.monotonic()
        _debootstrap(tmp, read_mirror(), cache_dir / f"{SUITE}.log", say)
        os.rename(tmp, root)
        say(f"rootfs ready in {time.monotonic() - started:.0f} s: {root}")
    return root
