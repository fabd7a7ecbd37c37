"""Host-level helpers for the lab: tools, processes, PID files, sockets.

Processes are only ever found through PID files the lab wrote and their
/proc parent links; nothing here looks processes up by name.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from pctfleet.lab.model import LabError

INSTALL_HINT = "apt-get update && apt-get install -y openssh-server lxc debootstrap"

# tool -> Debian package that provides it
REQUIRED_TOOLS = {
    "sshd": "openssh-server",
    "ssh-keygen": "openssh-client",
    "lxc-start": "lxc",
    "lxc-stop": "lxc",
    "lxc-info": "lxc",
    "lxc-attach": "lxc",
    "debootstrap": "debootstrap",
    "unshare": "util-linux",
    "setsid": "util-linux",
    "mount": "mount",
}
SBIN_DIRS = ("/usr/local/sbin", "/usr/sbin", "/sbin")


def which(tool: str) -> str | None:
    # Non-login root shells sometimes lack the sbin directories on PATH.
    path = os.environ.get("PATH", "") + ":" + ":".join(SBIN_DIRS)
    return shutil.which(tool, path=path)


def check_host() -> None:
    """Fail early, with the fix, when the lab cannot run on this machine."""
    if os.geteuid() != 0:
        raise LabError("the lab needs root (it starts sshd and LXC containers)")
    missing = sorted({pkg for tool, pkg in REQUIRED_TOOLS.items() if which(tool) is None})
    if missing:
        raise LabError(f"missing packages: {', '.join(missing)}; install them with: {INSTALL_HINT}")


def tool(name: str) -> str:
    found = which(name)
    if found is None:
        raise LabError(f"{name} not found; install it with: {INSTALL_HINT}")
    return found


def run(
    cmd: list[str], *, check: bool = True, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise LabError(f"{' '.join(cmd)} did not finish within {timeout:.0f} s") from None
    if check and res.returncode != 0:
        detail = (res.stderr or res.stdout).strip().splitlines()
        raise LabError(f"{' '.join(cmd)} failed ({res.returncode}): {' | '.join(detail[-3:])}")
    return res


# LXC 5.0's lxc-attach first re-executes itself from a sealed memfd copy
# (CVE-2019-5736). Under load the sealing can fail (EBUSY), and its error path
# then aborts: this message, then SIGABRT, before it has attached.
REXEC_FAILED = "Failed to rexec as memfd"
ATTACH_TRIES = 3


def attach(cmd: list[str], **kwargs: object) -> subprocess.CompletedProcess:
    """`subprocess.run(cmd, capture_output=True, **kwargs)` for an lxc-attach command
    line, run again when lxc-attach died at its own start (nothing ran inside)."""
    for attempt in range(ATTACH_TRIES):
        time.sleep(0.2 * attempt)  # the crash comes with load: give it a moment
        done = subprocess.run(cmd, capture_output=True, **kwargs)  # type: ignore[call-overload]
        if not died_before_attaching(done):
            break
    return done


def died_before_attaching(done: subprocess.CompletedProcess) -> bool:
    said = (
        done.stderr
        if isinstance(done.stderr, str)
        else (done.stderr or b"").decode(errors="replace")
    )
    return done.returncode in (-signal.SIGABRT, 128 + signal.SIGABRT) and REXEC_FAILED in said


def spawn_detached(cmd: list[str], log: Path) -> None:
    """Start a long-lived process in its own session, not as our child.

    `setsid --fork` makes init its parent, so a process killed later is
    reaped at once instead of lingering as our zombie (which would still
    look alive in /proc).
    """
    with open(log, "ab") as out:
        subprocess.run(
            [tool("setsid"), "--fork", *cmd],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            check=True,
            close_fds=True,
        )


def write_if_changed(path: Path, text: str, mode: int = 0o644) -> bool:
    """Write atomically, and only when the content differs (keeps `up` a no-op)."""
    try:
        if path.read_text(encoding="utf-8") == text:
            if path.stat().st_mode & 0o7777 != mode:
                path.chmod(mode)
            return False
    except FileNotFoundError:
        pass
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.chmod(mode)
    os.replace(tmp, path)
    return True


# --- processes ---------------------------------------------------------------


def read_pidfile(path: Path) -> int | None:
    try:
        text = path.read_text(encoding="ascii").strip()
    except (FileNotFoundError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None


def _stat_fields(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # The command name sits in parentheses and may itself contain spaces.
    return raw[raw.rfind(")") + 2 :].split()


def pid_alive(pid: int | None) -> bool:
    """True for a live process; a zombie counts as dead."""
    if not pid:
        return False
    fields = _stat_fields(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (FileNotFoundError, ProcessLookupError):
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def exe(pid: int) -> str:
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return ""


def owned_pid(pidfile: Path, marker: str) -> int | None:
    """The PID in `pidfile` if it is alive and its command line names `marker`.

    The marker check guards against a recycled PID: we only ever signal a
    process whose arguments point into the lab's own state directory.
    """
    pid = read_pidfile(pidfile)
    if pid_alive(pid) and any(marker in arg for arg in cmdline(pid)):  # type: ignore[arg-type]
        return pid
    return None


def children_map() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat_fields(int(entry))
            if fields is not None:
                kids.setdefault(int(fields[1]), []).append(int(entry))
    return kids


def descendants(pid: int) -> list[int]:
    """All processes whose parent chain leads to `pid`, by PPID from /proc."""
    kids = children_map()
    found: list[int] = []
    queue = list(kids.get(pid, []))
    while queue:
        child = queue.pop(0)
        found.append(child)
        queue.extend(kids.get(child, []))
    return found


def signal_pids(pids: Iterable[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


def wait_until(check: Callable[[], bool], timeout: float, interval: float = 0.02) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        if check():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)


def stop_pids(pids: list[int], timeout: float = 5.0, sig: int = signal.SIGTERM) -> None:
    """Signal, wait for exit, and escalate to SIGKILL for stragglers."""
    signal_pids(pids, sig)
    if not wait_until(lambda: not any(pid_alive(p) for p in pids), timeout):
        signal_pids([p for p in pids if pid_alive(p)], signal.SIGKILL)
        wait_until(lambda: not any(pid_alive(p) for p in pids), 2.0)


# --- sockets -------------------------------------------------------------------


def _hex_endpoint(address: str, port: int) -> str:
    packed = socket.inet_aton(address)
    # /proc/net/tcp prints the address as a little-endian 32-bit number.
    return f"{int.from_bytes(packed, 'little'):08X}:{port:04X}"


def _listeners() -> set[str]:
    endpoints: set[str] = set()
    try:
        lines = Path("/proc/net/tcp").read_text(encoding="ascii").splitlines()[1:]
    except FileNotFoundError:
        return endpoints
    for line in lines:
        fields = line.split()
        if len(fields) > 3 and fields[3] == "0A":  # 0A: TCP_LISTEN
            endpoints.add(fields[1])
    return endpoints


def listening(address: str, port: int) -> bool:
    """Whether something LISTENs on exactly address:port.

    Read from /proc/net/tcp instead of connecting, so readiness probes do not
    show up as connections in sshd's log.
    """
    return _hex_endpoint(address, port) in _listeners()


def port_taken(address: str, port: int) -> bool:
    """Whether binding address:port would clash, including with 0.0.0.0:port."""
    wanted = {_hex_endpoint(address, port), _hex_endpoint("0.0.0.0", port)}
    return bool(wanted & _listeners())
