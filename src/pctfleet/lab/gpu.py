"""An NVIDIA driver for lab nodes that have no GPU: stand-ins at the real paths.

A node's sshd runs in its own mount namespace (nodes.py). Inside it, and
nowhere else, `set_node_driver` mounts:
  - /proc/driver: the node's `gpu/proc` folder, with `nvidia/version` as the
    kernel module writes it;
  - /dev: a read-only overlay of the node's `gpu/dev` (character devices with
    NVIDIA's numbers: nvidia0.., nvidiactl, nvidia-uvm, nvidia-caps/) over the
    real /dev, its pts/shm mounts bound again on top;
  - /usr/local/bin: an overlay adding the nvidia-smi stand-in (nvidia_smi.py).
So the product reads them by their real paths. A node set to `driver=None` has
none of them (a GPU-less node). Containers get the userspace side with
`set_ct_userspace` (library files named with the version, device stand-ins).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from pctfleet.lab.model import LabError
from pctfleet.lab.nodes import Node, pve_config
from pctfleet.lab.system import attach, tool, write_if_changed

H200 = {
    "name": "NVIDIA H200",
    "uuid": "GPU-e0c1fb49-7d03-4358-cd92-c1ac93ea16d3",
    "bus": "00000000:00:06.0",
    "memory": 143771,
    "cc": "9.0",
}
PROC_VERSION = (
    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  {driver}  Release Build  "
    "(nixbld@)  \nGCC version:  gcc version 15.3.0 (GCC) \n"
)
UVM_MAJOR = 238
UNMOUNT = """\
grep -q ' pctfleet-gpu-dev ' /proc/self/mountinfo && umount -l /dev
grep -q ' pctfleet-gpu-bin ' /proc/self/mountinfo && umount -l /usr/local/bin
mountpoint -q /proc/driver && umount -l /proc/driver
exit 0
"""
MOUNT = """\
set -e
G=$1
mount --bind "$G/proc" /proc/driver
mkdir -p "$G/hostdev"
mount --rbind /dev "$G/hostdev"
mount -t overlay pctfleet-gpu-dev -o "ro,lowerdir=$G/dev:/dev" /dev
for s in pts shm mqueue hugepages; do
  if mountpoint -q "$G/hostdev/$s"; then mount --rbind "$G/hostdev/$s" "/dev/$s"; fi
done
umount -l "$G/hostdev"
mount -t overlay pctfleet-gpu-bin -o "ro,lowerdir=$G/bin:/usr/local/bin" /usr/local/bin
"""


@dataclass
class NodeDriver:
    """What a lab node's driver looks like; `driver` None: no driver at all."""

    driver: str | None = "580.159.04"
    cuda: str = "13.0"
    gpus: int = 1
    uvm: bool = True  # /dev/nvidia-uvm exists (it is gone after a reboot until loaded)
    library: str | None = None  # the node's own userspace, when it differs from the module
    extra: dict = field(default_factory=dict)

    def spec(self) -> dict:
        gpus = [{**H200, "bus": f"00000000:00:{6 + i:02x}.0"} for i in range(self.gpus)]
        return {"driver": self.driver, "cuda": self.cuda, "gpus": gpus, "library": self.library}


def _in_node(node: Node, script: str, *args: str) -> None:
    pid = node.sshd_pid()
    if pid is None:
        raise LabError(f"sshd of {node.name} is not running: `lab up` first")
    cmd = [tool("nsenter"), "-t", str(pid), "-m", "--", "/bin/sh", "-c", script, "sh", *args]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise LabError(f"{node.name}: {done.stderr.strip() or 'nsenter failed'}")


def set_node_driver(node: Node, want: NodeDriver) -> None:
    """Make `node` look like a machine with this driver (or none), replacing what it had."""
    root = node.dir / "gpu"
    _in_node(node, UNMOUNT)
    shutil.rmtree(root, ignore_errors=True)
    if want.driver is None:
        return
    (root / "proc/nvidia").mkdir(parents=True)
    (root / "proc/nvidia/version").write_text(PROC_VERSION.format(driver=want.driver))
    _device_nodes(root / "dev", want)
    (root / "bin").mkdir()
    write_if_changed(root / "spec.json", json.dumps(want.spec(), indent=2) + "\n")
    script = resources.files("pctfleet.lab").joinpath("nvidia_smi.py").read_text(encoding="utf-8")
    write_if_changed(root / "nvidia_smi.py", script)
    python = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable
    wrapper = (
        f"#!/bin/sh\n# nvidia-smi for pctfleet lab {node.name}: no GPU here, see nvidia_smi.py\n"
        f'PCTFLEET_LAB_GPU={root / "spec.json"} exec {python} -I {root / "nvidia_smi.py"} "$@"\n'
    )
    write_if_changed(root / "bin/nvidia-smi", wrapper, 0o755)
    _in_node(node, MOUNT, str(root))


def _device_nodes(dev: Path, want: NodeDriver) -> None:
    (dev / "nvidia-caps").mkdir(parents=True)
    nodes = {f"nvidia{i}": (195, i) for i in range(want.gpus)}
    nodes["nvidiactl"] = (195, 255)
    if want.uvm:
        nodes.update({"nvidia-uvm": (UVM_MAJOR, 0), "nvidia-uvm-tools": (UVM_MAJOR, 1)})
    nodes.update({"nvidia-caps/nvidia-cap1": (241, 1), "nvidia-caps/nvidia-cap2": (241, 2)})
    for name, (major, minor) in nodes.items():
        os.mknod(dev / name, 0o20666, os.makedev(major, minor))


def set_ct_config(node: Node, ct, lines: list[str]) -> None:  # noqa: ANN001 - lab Container
    """The CT's /etc/pve config as the lab writes it, plus `lines` (passthrough entries)."""
    path = node.pve / "nodes" / node.name / "lxc" / f"{ct.ctid}.conf"
    write_if_changed(path, pve_config(node, ct) + "".join(f"{x}\n" for x in lines), 0o640)


USERSPACE = """\
set -e
L=/usr/lib/x86_64-linux-gnu
rm -f $L/libcuda.so* $L/libnvidia-ml.so* /dev/nvidia*
if [ -n "$1" ]; then
  : > "$L/libcuda.so.$1"; ln -s "libcuda.so.$1" $L/libcuda.so.1
  : > "$L/libnvidia-ml.so.$1"; ln -s "libnvidia-ml.so.$1" $L/libnvidia-ml.so.1
fi
shift
for d; do : > "/dev/$d"; done
"""


def set_ct_userspace(lxcpath: Path, lxc_name: str, version: str | None, devices: list[str]) -> None:
    """Driver library files of `version` (none: None) and openable device stand-ins in a CT."""
    cmd = [tool("lxc-attach"), "-P", str(lxcpath), "-n", lxc_name, "--"]
    args = ["/bin/sh", "-c", USERSPACE, "sh", version or "", *devices]
    done = attach([*cmd, *args], text=True, check=False)
    if done.returncode != 0:
        raise LabError(f"{lxc_name}: {done.stderr.strip()}")
