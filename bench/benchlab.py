"""The benchmark's own lab (2 nodes x 3 containers on 127.0.12.x) and what it counts.

A dedicated lab, so the test labs (127.0.10.x, 127.0.11.x) are not disturbed.
One Ansible YAML inventory serves both tools: pctfleet reads Ansible
inventories written for proxmox_pct_remote as they are.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from pctfleet.lab import Lab
from pctfleet.lab.inventory import STANDIN
from pctfleet.transport.options import ConnectOptions
from pctfleet.transport.pct import PctTarget
from pctfleet.transport.ssh import NodePool

STATE_DIR = Path("/var/lib/pctfleet-lab-bench")
ADDRESS_BASE = "127.0.12"
NODES = 2
CONTAINERS = 3
PORT_BASE = 32000  # server ports 32010..; the test labs use 30000s and 31000s

# What the playbooks create; RESET removes it and lays out the "before" state a
# first converge starts from: a stale process with its PID file and an old cache.
RESET = r"""
for pf in /run/bench/server.pid /run/bench/stale.pid; do
  if [ -f "$pf" ]; then
    pid=$(cat "$pf")
    case $pid in
      ''|*[!0-9]*) ;;
      *) kill -KILL "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null ;;
    esac
  fi
done
rm -rf /opt/bench /etc/bench /run/bench /var/log/bench /var/cache/bench-jit
mkdir -p /run/bench /var/cache/bench-jit/old-toolchain
echo stale > /var/cache/bench-jit/old-toolchain/kernel.so
setsid sleep 3600 </dev/null >/dev/null 2>&1 &
echo $! > /run/bench/stale.pid
"""


@dataclass
class BenchLab:
    lab: Lab
    inventory: Path  # every node and container
    work: Path  # scratch space for the benchmark (Ansible's HOME, baselines, ...)
    # containers -> an inventory of that many (the first node alone, then both nodes)
    inventories: dict[int, Path] = field(default_factory=dict)

    @property
    def info(self):  # noqa: ANN201 - pctfleet.lab.LabInfo
        return self.lab.info

    def node_names(self) -> list[str]:
        return [node.name for node in self.info.nodes]

    def containers(self) -> int:
        return sum(len(node.containers) for node in self.info.nodes)

    def connect_options(self) -> ConnectOptions:
        info = self.info
        return ConnectOptions(
            user="root", identity=str(info.identity), known_hosts=str(info.known_hosts)
        )

    def sshd_counts(self) -> dict[str, dict[str, int]]:
        """Per node: SSH logins and sessions (channels running a command) so far."""
        counts = {}
        for node in self.node_names():
            log = self.lab.state_dir / node / "sshd.log"
            text = log.read_text(errors="replace") if log.exists() else ""
            counts[node] = {
                "logins": len(re.findall(r"Accepted publickey for ", text)),
                "sessions": len(re.findall(r"Starting session: ", text)),
            }
        return counts

    @contextmanager
    def latency(self, ms: int) -> Iterator[None]:
        """Every node behind the lab's delaying relay: +ms each way on every chunk."""
        with ExitStack() as stack:
            for node in self.node_names():
                stack.enter_context(self.lab.latency(node, ms))
            yield

    def for_each_container(self, script: str) -> dict[str, tuple[int, str]]:
        """Run an sh script in every container (one connection per node); key -> (rc, out)."""
        pool = NodePool()
        options = self.connect_options()
        jobs = []
        for node in self.info.nodes:
            conn = pool.get(node.name, node.address, options)
            jobs += [(f"{node.name}/{ctid}", PctTarget(conn, ctid)) for ctid in node.containers]
        try:
            with ThreadPoolExecutor(max_workers=len(jobs)) as ex:
                futures = {key: ex.submit(t.run_script, script, timeout=60) for key, t in jobs}
                results = {key: f.result() for key, f in futures.items()}
        finally:
            pool.close()
        return {
            key: (r.exit_code, r.text() + r.stderr.decode(errors="replace"))
            for key, r in results.items()
        }

    def reset(self) -> None:
        """Every container back to the state before a first converge."""
        for key, (code, out) in self.for_each_container(RESET).items():
            if code != 0:
                raise RuntimeError(f"reset of {key} failed ({code}): {out}")


def server_port(node_index: int, ctid: int) -> int:
    """Containers share the host's network namespace: a port each."""
    return PORT_BASE + node_index * 10 + (ctid - 200)


def host_name(node_index: int, ctid: int) -> str:
    """The inventory's name for container `ctid` on the node_index-th node (from 1)."""
    return f"n{node_index}-ct{ctid}"


def render_inventory(lab: Lab, nodes: int | None = None) -> str:
    """Ansible YAML for proxmox_pct_remote, which pctfleet reads as it is (first `nodes`)."""
    info = lab.info
    lines = [
        "# The benchmark's inventory (written by bench/run.py): Ansible YAML for",
        "# community.proxmox.proxmox_pct_remote; pctfleet reads it as it is.",
        "all:",
        "  vars:",
        "    ansible_user: root",
        f"    ansible_ssh_private_key_file: {info.identity}",
        f"    standin_src: {STANDIN}",
        "  children:",
    ]
    for index, node in enumerate(info.nodes[:nodes], start=1):
        lines += [
            f"    {node.name}:",
            f"      vars: {{ansible_host: {node.address}}}",
            "      hosts:",
        ]
        for ctid in node.containers:
            label = host_name(index, ctid)
            lines.append(
                f"        {label}: {{proxmox_vmid: {ctid}, server_port: "
                f"{server_port(index, ctid)}, bench_label: {label}}}"
            )
    return "\n".join(lines) + "\n"


def bring_up(say=print) -> BenchLab:  # noqa: ANN001
    """The lab up (built once, reused), its inventory written, containers reachable."""
    lab = Lab(STATE_DIR, address_base=ADDRESS_BASE, say=say)
    lab.up(NODES, CONTAINERS)
    work = STATE_DIR / "bench"
    work.mkdir(exist_ok=True)
    inventory = work / "inventory.yml"
    inventory.write_text(render_inventory(lab), encoding="utf-8")
    inventories = {}
    for nodes in range(1, NODES + 1):
        path = work / f"inventory-{nodes}node.yml"
        path.write_text(render_inventory(lab, nodes), encoding="utf-8")
        inventories[sum(len(n.containers) for n in lab.info.nodes[:nodes])] = path
    return BenchLab(lab, inventory, work, inventories)
