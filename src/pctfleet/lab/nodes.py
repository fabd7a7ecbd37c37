"""Lab "Proxmox nodes": one sshd per node, each in its own UTS+mount namespace.

Inside a node's namespace:
  - the hostname is the node's name (node1, node2, ...);
  - /etc/pve is a bind mount of the node's own directory, laid out like
    Proxmox's (nodes/<node>/lxc/<ctid>.conf, with `lxc` and `local` links);
  - /usr/local/sbin is a read-only overlay that adds `pct` on top of the
    host's own /usr/local/sbin, so `pct` is on root's default PATH there and
    nowhere on the host;
  - root's ~/.bashrc is a Proxmox node's (Debian's stock file: comments only),
    bound over the host's own. sshd runs every command as `bash -c`, which reads
    that file first, so the lab host's shell setup (a pyenv or conda init costs
    ~0.1 s of CPU) would otherwise slow and change every command a node runs.
"""

from __future__ import annotations

import json
import os
import pwd
import signal
import sys
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from pctfleet.lab.containers import Container
from pctfleet.lab.model import LabError, inside
from pctfleet.lab.system import (
    cmdline,
    descendants,
    exe,
    listening,
    owned_pid,
    port_taken,
    run,
    spawn_detached,
    stop_pids,
    tool,
    wait_until,
    write_if_changed,
)

PRIVATE_PORT = 2222  # where sshd moves while a fault relay holds the real port
NODE_SCRIPT = """\
set -e
hostname "$1"
mount --bind "$2" /etc/pve
mount -t overlay pctfleet-pct -o "ro,lowerdir=$3:/usr/local/sbin" /usr/local/sbin
if [ -f "$8" ]; then mount --bind "$7" "$8"; fi
exec "$4" -D -f "$5" -E "$6"
"""
# What a fresh Proxmox VE node's root has in ~/.bashrc: Debian's base-files copy,
# in which every line is a comment (the first line says whose it is).
ROOT_BASHRC = """\
# ~/.bashrc of root on a pctfleet lab node: as on a fresh Proxmox VE node (Debian's
# stock file, comments only), bound over the lab host's own inside the node.
# Note: PS1 and umask are already set in /etc/profile. You should not
# need this unless you want different defaults for root.
# PS1='${debian_chroot:+($debian_chroot)}\\h:\\w\\$ '
# umask 022
"""


@dataclass(frozen=True)
class Node:
    index: int
    address: str
    port: int
    state_dir: Path

    @property
    def name(self) -> str:
        return f"node{self.index}"

    @property
    def dir(self) -> Path:
        return self.state_dir / self.name

    pve = inside("dir", "pve")
    bin = inside("dir", "bin")
    pidfile = inside("dir", "sshd.pid")
    relay_pidfile = inside("dir", "relay.pid")
    log = inside("dir", "sshd.log")
    host_key = inside("dir", "ssh_host_ed25519_key")
    root_bashrc = inside("dir", "root.bashrc")

    def config_for(self, port: int) -> Path:
        return self.dir / ("sshd_config" if port == self.port else f"sshd_config.{port}")

    def private_port(self) -> int:
        return PRIVATE_PORT if self.port != PRIVATE_PORT else PRIVATE_PORT + 1

    def sshd_pid(self) -> int | None:
        # Any live sshd started from one of this node's configs.
        return owned_pid(self.pidfile, str(self.dir) + "/sshd_config")


# --- files -----------------------------------------------------------------------


def sshd_config(node: Node, port: int, authorized_keys: Path) -> str:
    # StrictModes is off because a lab's state_dir may sit below /tmp (tests
    # do that), whose sticky world-writable mode sshd would otherwise refuse.
    return f"""\
# pctfleet lab: sshd of {node.name}
ListenAddress {node.address}:{port}
HostKey {node.host_key}
PidFile {node.pidfile}
AuthorizedKeysFile {authorized_keys}
StrictModes no
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
MaxSessions 10
LogLevel VERBOSE
PrintMotd no
X11Forwarding no
AcceptEnv LANG LC_*
Subsystem sftp internal-sftp
"""


def pve_config(node: Node, ct: Container) -> str:
    # Shaped like a real /etc/pve/lxc/<ctid>.conf so tools that read it parse it.
    return f"""\
#pctfleet lab container (LXC name {ct.name})
arch: amd64
cores: 2
hostname: {ct.hostname}
memory: 2048
ostype: debian
rootfs: local:{ct.ctid}/vm-{ct.ctid}-disk-0.raw,size=8G
swap: 512
"""


def pct_wrapper(node: Node) -> str:
    python = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable
    return f"""\
#!/bin/sh
# pct for pctfleet lab {node.name}: emulates Proxmox's pct on top of LXC.
PCTFLEET_LAB_NODE={node.dir / "node.json"} exec {python} -I {node.dir / "lib/pct.py"} "$@"
"""


def _symlink(path: Path, target: str) -> None:
    if path.is_symlink() and os.readlink(path) == target:
        return
    if path.is_symlink() or path.exists():
        path.unlink()
    path.symlink_to(target)


def ensure_files(node: Node, lxcpath: Path, authorized_keys: Path) -> bool:
    """Create or refresh the node's directory; unchanged files are left alone.

    Returns whether an sshd config changed (so a running sshd must reload).
    """
    for sub in (node.dir, node.bin, node.dir / "lib", node.pve / "nodes" / node.name / "lxc"):
        sub.mkdir(parents=True, exist_ok=True)
    # Proxmox has /etc/pve/lxc -> nodes/<local>/lxc and /etc/pve/local -> nodes/<local>.
    _symlink(node.pve / "lxc", f"nodes/{node.name}/lxc")
    _symlink(node.pve / "local", f"nodes/{node.name}")
    if not node.host_key.exists():
        keygen = [tool("ssh-keygen"), "-q", "-t", "ed25519", "-N", "", "-C", node.name]
        run([*keygen, "-f", str(node.host_key)])
    meta = {"node": node.name, "index": node.index, "lxcpath": str(lxcpath), "pve": str(node.pve)}
    write_if_changed(node.dir / "node.json", json.dumps(meta, indent=2) + "\n")
    shim = resources.files("pctfleet.lab").joinpath("pct.py").read_text(encoding="utf-8")
    write_if_changed(node.dir / "lib/pct.py", shim)
    write_if_changed(node.bin / "pct", pct_wrapper(node), 0o755)
    set_root_bashrc(node, ROOT_BASHRC)
    changed = False
    for port in (node.port, node.private_port()):
        text = sshd_config(node, port, authorized_keys)
        changed = write_if_changed(node.config_for(port), text) or changed
    return changed


def set_root_bashrc(node: Node, text: str) -> None:
    """What root's ~/.bashrc says inside the node from now on. Written in place: the
    node's bind mount holds this very file, and would not see a new one put there."""
    path = node.root_bashrc
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)


def ensure_ct_config(node: Node, ct: Container) -> None:
    path = node.pve / "nodes" / node.name / "lxc" / f"{ct.ctid}.conf"
    write_if_changed(path, pve_config(node, ct), 0o640)


def host_public_key(node: Node) -> str:
    return node.host_key.with_suffix(".pub").read_text(encoding="ascii").split("\n")[0]


# --- sshd lifecycle -----------------------------------------------------------


def _prepare_host() -> None:
    # sshd's privilege-separation directory, and the mount point for /etc/pve
    # (an empty directory on the host; each node mounts its own copy there).
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    Path("/etc/pve").mkdir(mode=0o755, exist_ok=True)


def start_sshd(node: Node, port: int | None = None, timeout: float = 10.0) -> int:
    """Start the node's sshd on `port` (default: its public port) and wait for it."""
    port = node.port if port is None else port
    running = node.sshd_pid()
    if running:
        return running
    if port_taken(node.address, port):
        raise LabError(
            f"{node.address}:{port} is already taken by another listener (the host's own "
            "sshd on 0.0.0.0?); give that sshd a specific ListenAddress, or use another "
            "port for the lab (--port)"
        )
    _prepare_host()
    config = node.config_for(port)
    run([tool("sshd"), "-t", "-f", str(config)])
    node.pidfile.unlink(missing_ok=True)
    cmd = [
        tool("unshare"), "--uts", "--mount", "--propagation", "private", "--",
        "/bin/sh", "-c", NODE_SCRIPT, "pctfleet-node",
        node.name, str(node.pve), str(node.bin), tool("sshd"), str(config), str(node.log),
        str(node.root_bashrc), str(host_root_bashrc()),
    ]  # fmt: skip
    spawn_detached(cmd, node.dir / "node.log")
    if not wait_until(lambda: node.sshd_pid() and listening(node.address, port), timeout):
        raise LabError(
            f"sshd of {node.name} did not come up on {node.address}:{port}; "
            f"see {node.dir / 'node.log'} and {node.log}"
        )
    return node.sshd_pid() or 0


def host_root_bashrc() -> Path:
    """Root's ~/.bashrc on the host: what a node's own copy is bound over."""
    return Path(pwd.getpwuid(0).pw_dir) / ".bashrc"


def lacks_root_bashrc(node: Node) -> bool:
    """The node's running sshd was started without its own root ~/.bashrc (by an
    older lab), so its commands still read the host's: it must start again."""
    pid, target = node.sshd_pid(), host_root_bashrc()
    if pid is None or not target.is_file():
        return False
    try:
        mounts = Path(f"/proc/{pid}/mountinfo").read_text(encoding="utf-8")
    except OSError:
        return False
    # mountinfo's fifth field is the mount point; a file bind mount is listed there.
    return f" {target} " not in mounts


def reload_sshd(node: Node, timeout: float = 10.0) -> None:
    """Make a running sshd re-read its config: SIGHUP re-executes it in place
    (same PID, sessions untouched)."""
    pid = node.sshd_pid()
    if pid is None:
        return
    os.kill(pid, signal.SIGHUP)
    # It closes and re-binds its listener; wait until it is back.
    time.sleep(0.05)
    ports = (node.port, node.private_port())
    if not wait_until(lambda: any(listening(node.address, p) for p in ports), timeout):
        raise LabError(f"sshd of {node.name} did not come back after reloading its config")


def _session_pids(listener: int) -> list[int]:
    """sshd processes (connections) below the listener, found by PPID chain."""
    sshd_exe = os.path.realpath(tool("sshd"))
    return [pid for pid in descendants(listener) if exe(pid) == sshd_exe]


def kill_sshd(node: Node) -> None:
    """Kill the node's sshd listener and every live session, like a crash."""
    listener = node.sshd_pid()
    if listener is None:
        return
    sessions = _session_pids(listener)
    # The listener first, so it cannot accept anything new meanwhile.
    stop_pids([listener], sig=signal.SIGKILL)
    stop_pids(sessions, sig=signal.SIGKILL)
    node.pidfile.unlink(missing_ok=True)


def stop_listener(node: Node) -> None:
    """Stop only the listener (SIGTERM); established sessions stay up."""
    listener = node.sshd_pid()
    if listener is not None:
        stop_pids([listener])
    node.pidfile.unlink(missing_ok=True)


def stop_everything(node: Node) -> None:
    """For `down`: the listener and its whole process tree."""
    listener = node.sshd_pid()
    if listener is None:
        return
    tree = descendants(listener)
    stop_pids([listener])
    stop_pids(tree)
    node.pidfile.unlink(missing_ok=True)


def relay_pid(node: Node) -> int | None:
    return owned_pid(node.relay_pidfile, str(node.relay_pidfile))


def relay_mode(node: Node) -> str | None:
    pid = relay_pid(node)
    if pid is None:
        return None
    args = cmdline(pid)
    return args[args.index("--mode") + 1] if "--mode" in args else "unknown"


def start_relay(node: Node, mode: str, delay_ms: int, timeout: float = 10.0) -> None:
    script = resources.files("pctfleet.lab").joinpath("relay.py")
    cmd = [
        sys.executable, "-I", str(script),
        "--listen", f"{node.address}:{node.port}",
        "--target", f"{node.address}:{node.private_port()}",
        "--mode", mode, "--delay-ms", str(delay_ms),
        "--pidfile", str(node.relay_pidfile),
    ]  # fmt: skip
    node.relay_pidfile.unlink(missing_ok=True)
    spawn_detached(cmd, node.dir / "relay.log")
    ready = wait_until(lambda: relay_pid(node) and listening(node.address, node.port), timeout)
    if not ready:
        raise LabError(f"the {mode} relay of {node.name} did not start; see relay.log")


def stop_relay(node: Node) -> None:
    pid = relay_pid(node)
    if pid is not None:
        stop_pids([pid])
    node.relay_pidfile.unlink(missing_ok=True)
