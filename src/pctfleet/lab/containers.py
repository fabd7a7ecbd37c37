"""Real LXC containers standing in for Proxmox CTs.

Each container lives under the lab's own LXC path (never /var/lib/lxc) and
boots an overlayfs: the cached Debian rootfs read-only below, a per-container
upper directory (`delta0`) on top, so creating one costs almost nothing.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from pctfleet.lab.model import LabError, inside
from pctfleet.lab.rootfs import DEFAULT_RECIPE, Recipe
from pctfleet.lab.system import run, tool, write_if_changed

PIP_CACHE = Path("/var/cache/pctfleet/pip")
COMMON_CONF = Path("/usr/share/lxc/config/common.conf")
INIT_PATH = "sbin/pctfleet-init"

# PID 1 for the containers: reap every child, exit on the stop signals.
# Signals are blocked and taken with sigwaitinfo, so no SIGCHLD is lost
# between reaping and sleeping.
INIT_SCRIPT = """\
#!/usr/bin/python3
# PID 1 of a pctfleet lab container: reaps children, exits on SIGTERM/SIGPWR.
import os
import signal
import sys

STOP = {signal.SIGTERM, signal.SIGINT, signal.SIGPWR, signal.SIGHUP}
WATCH = STOP | {signal.SIGCHLD}
signal.pthread_sigmask(signal.SIG_BLOCK, WATCH)
while True:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            break
    if signal.sigwaitinfo(WATCH).si_signo in STOP:
        sys.exit(0)
"""


# Units a systemd container must never run: the lab's containers share the
# host's network namespace (lxc.net.0.type = none), so anything that configures
# links, addresses, DNS, time or devices would reconfigure the host itself.
MASKED_UNITS = (
    "systemd-networkd.service",
    "systemd-networkd.socket",
    "systemd-networkd-wait-online.service",
    "systemd-network-generator.service",
    "systemd-resolved.service",
    "systemd-timesyncd.service",
    "systemd-udevd.service",
    "systemd-udevd-control.socket",
    "systemd-udevd-kernel.socket",
    "systemd-udev-trigger.service",
    "networking.service",
    "ifup@.service",
    "getty@.service",
    "serial-getty@.service",
)


@dataclass(frozen=True)
class Container:
    node_index: int
    ctid: int
    lxcpath: Path
    recipe: Recipe = DEFAULT_RECIPE

    @property
    def name(self) -> str:
        return f"pctfleet-n{self.node_index}-{self.ctid}"

    @property
    def hostname(self) -> str:
        return f"n{self.node_index}-ct{self.ctid}"

    @property
    def dir(self) -> Path:
        return self.lxcpath / self.name

    upper = inside("dir", "delta0")

    def lxc(self, name: str, *extra: str, check: bool = True) -> str:
        cmd = [tool(name), "-n", self.name, "-P", str(self.lxcpath), *extra]
        return run(cmd, check=check).stdout.strip()


def init_lines(recipe: Recipe) -> list[str]:
    """What PID 1 needs: the lab's own init, or systemd as on Proxmox."""
    if recipe.init != "systemd":
        return [f"lxc.init.cmd = /{INIT_PATH}", "lxc.signal.halt = SIGTERM"]
    return [
        "lxc.init.cmd = /sbin/init",
        # systemd mounts and manages its own cgroup tree: `force` mounts it
        # writable even on this hybrid cgroup v1/v2 host; proc/sys stay mostly
        # read-only so it cannot change the host's kernel settings.
        "lxc.mount.auto = proc:mixed sys:mixed cgroup:rw:force",
        # systemd treats SIGRTMIN+3 as "halt" (SIGTERM only makes it re-execute).
        "lxc.signal.halt = SIGRTMIN+3",
        "lxc.signal.reboot = SIGINT",
    ]


def lxc_config(ct: Container, rootfs: Path) -> str:
    lines = [
        f"# pctfleet lab container {ct.hostname} (CT {ct.ctid} on node{ct.node_index})",
    ]
    if COMMON_CONF.exists():
        lines.append(f"lxc.include = {COMMON_CONF}")
    lines += [
        "lxc.arch = linux64",
        f"lxc.uts.name = {ct.hostname}",
        f"lxc.rootfs.path = overlay:{rootfs}:{ct.upper}",
        # No bridge in the lab: containers share the host's network namespace.
        "lxc.net.0.type = none",
        "lxc.apparmor.profile = unconfined",
        *init_lines(ct.recipe),
        # common.conf asks for ttys under /dev/lxc; without a console we need none.
        "lxc.tty.max = 0",
        "lxc.autodev = 1",
        "lxc.console.path = none",
        f"lxc.mount.entry = {PIP_CACHE} root/.cache/pip none bind,create=dir 0 0",
        f"lxc.log.file = {ct.dir / 'lxc.log'}",
        "lxc.log.level = WARN",
    ]
    return "\n".join(lines) + "\n"


def ensure_defined(ct: Container, rootfs: Path) -> None:
    """Create the container if missing; an existing one keeps its upper layer."""
    PIP_CACHE.mkdir(parents=True, exist_ok=True)
    ct.dir.mkdir(parents=True, exist_ok=True)
    config = ct.dir / "config"
    if not ct.upper.exists():
        tmp = ct.dir / "delta0.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        _seed_into(tmp, ct)
        # Renamed into place only when complete, so a crash never leaves a
        # half-seeded upper layer that later runs would take as finished.
        tmp.rename(ct.upper)
    write_if_changed(config, lxc_config(ct, rootfs))


def _seed_into(target: Path, ct: Container) -> None:
    """Files the container needs on top of the shared rootfs."""
    (target / "etc/ssl/certs").mkdir(parents=True, exist_ok=True)
    if ct.recipe.init == "systemd":
        # No /sbin in the upper layer: a directory there would hide the rootfs's
        # merged-/usr /sbin link, and with it /sbin/init.
        mask_units(target)
    else:
        (target / "sbin").mkdir(parents=True, exist_ok=True)
        write_if_changed(target / INIT_PATH, INIT_SCRIPT, 0o755)
    write_if_changed(target / "etc/hostname", ct.hostname + "\n")
    hosts = f"127.0.0.1\tlocalhost\n127.0.1.1\t{ct.hostname}\n::1\tlocalhost ip6-localhost\n"
    write_if_changed(target / "etc/hosts", hosts)
    # pip inside the container needs working DNS and the host's CA bundle.
    for host_file in ("/etc/resolv.conf", "/etc/ssl/certs/ca-certificates.crt"):
        src = Path(host_file)
        if src.exists():
            shutil.copyfile(src, target / host_file.lstrip("/"))


def mask_units(target: Path) -> None:
    """Mask (link to /dev/null) what could touch the host; masking an absent unit is harmless."""
    units = target / "etc/systemd/system"
    units.mkdir(parents=True, exist_ok=True)
    for unit in MASKED_UNITS:
        link = units / unit
        if not link.is_symlink():
            os.symlink("/dev/null", link)


def state(ct: Container) -> str:
    """One of "running", "stopped", or "missing" (never defined by the lab)."""
    if not (ct.dir / "config").exists():
        return "missing"
    out = ct.lxc("lxc-info", "-s", "-H", check=False)
    return "running" if out == "RUNNING" else "stopped"


def start(ct: Container) -> None:
    if state(ct) == "running":
        return
    res = run(
        [tool("lxc-start"), "-n", ct.name, "-P", str(ct.lxcpath)],
        check=False,
    )
    if res.returncode != 0 or state(ct) != "running":
        raise LabError(
            f"container {ct.name} failed to start: {res.stderr.strip().splitlines()[-1:]}"
            f" (log: {ct.dir / 'lxc.log'})"
        )


BOOT_TIMEOUT_S = 90


def wait_booted(ct: Container, timeout: int = BOOT_TIMEOUT_S) -> str:
    """For systemd: wait until boot finished; its answer ("running", or "degraded"
    when a unit failed: `systemctl --failed` inside says which)."""
    if ct.recipe.init != "systemd":
        return "running"
    deadline = time.monotonic() + timeout
    cmd = [tool("lxc-attach"), "-n", ct.name, "-P", str(ct.lxcpath), "--",
           "timeout", str(timeout), "systemctl", "is-system-running", "--wait"]  # fmt: skip
    while True:
        res = run(cmd, check=False, timeout=timeout + 10)
        answer = res.stdout.strip()
        if answer in ("running", "degraded"):
            return answer
        # Right after lxc-start systemd has no bus socket yet: ask again.
        if time.monotonic() > deadline:
            raise LabError(
                f"systemd in {ct.name} did not finish booting within {timeout} s "
                f"(is-system-running: {answer or res.stderr.strip()!r}; "
                f"log: {ct.dir / 'lxc.log'})"
            )
        time.sleep(0.2)


def stop(ct: Container, timeout: int = 10) -> None:
    """Stop the container: the halt signal to its init (SIGTERM for the lab's, SIGRTMIN+3
    for systemd), SIGKILL after `timeout` seconds."""
    if state(ct) != "running":
        return
    run(
        [tool("lxc-stop"), "-n", ct.name, "-P", str(ct.lxcpath), "-t", str(timeout)],
        check=False,
        timeout=timeout + 10,
    )
    if state(ct) == "running":
        ct.lxc("lxc-stop", "--kill", check=False)
    if state(ct) == "running":
        raise LabError(f"container {ct.name} did not stop")
