"""An sshd from Debian 13 (OpenSSH 10, what Proxmox VE 9 nodes run) on loopback.

OpenSSH 10 split the pre-authentication half of sshd into its own program
(sshd-auth): what a login pipelines (the signed request behind the service
request, channels behind the login) crosses that split, so it is tested against
the real thing. The lab's cached trixie rootfs gets openssh-server (cached as
`trixie-sshd` beside it); sshd runs chrooted there, in a mount namespace of
its own, and is stopped by the PID it wrote.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from pctfleet.lab.rootfs import CACHE_DIR, Recipe, ensure_rootfs

ADDRESS, PORT = "127.0.14.1", 2222
NAME = "trixie-sshd"
CONFIG = f"""\
ListenAddress {ADDRESS}:{PORT}
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
PidFile /run/sshd-test.pid
"""


def ensure_root(cache_dir: Path = CACHE_DIR) -> Path:
    """The trixie rootfs with openssh-server, built once (seconds to a minute,
    as fast as the mirror answers)."""
    root = cache_dir / NAME
    if (root / "usr/sbin/sshd").exists():
        return root
    base = ensure_rootfs(cache_dir, recipe=Recipe("trixie"))
    tmp = cache_dir / f"{NAME}.tmp"
    with open(cache_dir / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (root / "usr/sbin/sshd").exists():
            return root
        shutil.rmtree(tmp, ignore_errors=True)
        subprocess.run(["cp", "-a", str(base), str(tmp)], check=True)
        shutil.copy("/etc/resolv.conf", tmp / "etc/resolv.conf")
        # Debian's way to keep a package's install from starting its service here.
        policy = tmp / "usr/sbin/policy-rc.d"
        policy.write_text("#!/bin/sh\nexit 101\n")
        policy.chmod(0o755)
        install = (
            "apt-get update -q && DEBIAN_FRONTEND=noninteractive "
            "apt-get install -y -q --no-install-recommends openssh-server"
        )
        _in_root(tmp, install, timeout=600)
        os.rename(tmp, root)
    return root


def _chrooted(root: Path, command: str) -> list[str]:
    """argv running `command` in a chroot of `root`, with /dev and /proc mounted in
    a mount namespace of its own (the mounts go with it)."""
    mounts = f"mount --bind /dev {root}/dev && mount -t proc proc {root}/proc"
    return ["unshare", "--mount", "--fork", "sh", "-c", f"{mounts} && exec chroot {root} {command}"]


def _in_root(root: Path, script: str, timeout: float) -> subprocess.CompletedProcess:
    argv = _chrooted(root, f"sh -c '{script}'")
    return subprocess.run(argv, check=True, capture_output=True, timeout=timeout)


class Sshd:
    """A running OpenSSH 10 sshd that takes `public_key` for root."""

    def __init__(self, root: Path, public_key: Path, known_hosts: Path) -> None:
        self.root = root
        self.known_hosts = known_hosts
        ssh_dir = root / "root/.ssh"
        ssh_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        (ssh_dir / "authorized_keys").write_bytes(public_key.read_bytes())
        (root / "etc/ssh/sshd_config.d").mkdir(parents=True, exist_ok=True)
        (root / "etc/ssh/test.conf").write_text(CONFIG)
        (root / "run/sshd").mkdir(parents=True, exist_ok=True)
        self.pid_file = root / "run/sshd-test.pid"
        self.pid_file.unlink(missing_ok=True)
        if not (root / "etc/ssh/ssh_host_ed25519_key").exists():
            _in_root(root, "ssh-keygen -A", timeout=60)
        host_key = (root / "etc/ssh/ssh_host_ed25519_key.pub").read_text().split()[:2]
        known_hosts.write_text(f"[{ADDRESS}]:{PORT} {' '.join(host_key)}\n")
        argv = _chrooted(root, "/usr/sbin/sshd -D -e -f /etc/ssh/test.conf")
        self.log = root / "run/sshd-test.log"
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(argv, stdout=log, stderr=log)
        self._wait_listening()

    def version(self) -> str:
        with socket.create_connection((ADDRESS, PORT), timeout=5) as sock:
            return sock.recv(256).decode().strip()

    def _wait_listening(self) -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                socket.create_connection((ADDRESS, PORT), timeout=1).close()
                return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"sshd did not listen: {self.log.read_text(errors='replace')}")

    def stop(self) -> None:
        if self.pid_file.exists():
            os.kill(int(self.pid_file.read_text()), signal.SIGTERM)
        self.process.wait(timeout=20)
