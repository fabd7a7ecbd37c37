"""No-op wall on the bench lab without and with +ms each way on every node.

The growth, in round trips, shows whether latency is paid per node (a login, a
channel, a call: about 3) or per container. 3 containers (one node) and 6 (two):

    flock /tmp/pctfleet-lab.lock python bench/latency_lab.py --ms 50
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import benchlab  # noqa: E402

PLAYBOOK = HERE / "pctfleet_site.yml"


def run_wall(inventory: Path, known_hosts: str, limit: str) -> float:
    """One `pctfleet run` of the benchmark playbook with default options: its wall."""
    argv = [sys.executable, "-m", "pctfleet", "run", str(PLAYBOOK), "-i", str(inventory)]
    argv += ["--known-hosts", known_hosts, "--limit", limit, "--json"]
    started = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    wall = time.monotonic() - started
    if proc.returncode != 0:
        raise SystemExit(f"pctfleet run failed ({proc.returncode}): {proc.stderr[-500:]}")
    return wall


def measure(ms: int, runs: int, scratch: Path) -> list[dict]:
    # The bench lab as it is (up, reused); our own copy of its inventory, so the
    # benchmark's own file is left alone.
    lab = benchlab.Lab(benchlab.STATE_DIR, address_base=benchlab.ADDRESS_BASE)
    lab.up(benchlab.NODES, benchlab.CONTAINERS)
    inventory = scratch / "inventory.yml"
    inventory.write_text(benchlab.render_inventory(lab), encoding="utf-8")
    bench = benchlab.BenchLab(lab, inventory, scratch)
    keys = str(bench.info.known_hosts)
    nodes = bench.node_names()
    selections = {3: nodes[0], 6: ",".join(nodes)}
    run_wall(inventory, keys, selections[6])  # converge once: later runs are no-ops
    points = []
    for containers, limit in selections.items():
        plain = [run_wall(inventory, keys, limit) for _ in range(runs)]
        with bench.latency(ms):
            slow = [run_wall(inventory, keys, limit) for _ in range(runs)]
        base, late = statistics.median(plain), statistics.median(slow)
        rtt = 2 * ms / 1000
        points.append(
            {
                "containers": containers,
                "nodes": len(limit.split(",")),
                "latency_ms_each_way": ms,
                "wall_s": round(base, 3),
                "wall_latency_s": round(late, 3),
                "growth_s": round(late - base, 3),
                "growth_rtts": round((late - base) / rtt, 1),
                "runs": runs,
            }
        )
    return points


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ms", type=int, default=50)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pctfleet-latency-") as scratch:
        for point in measure(args.ms, args.runs, Path(scratch)):
            print(json.dumps(point))
    return 0


if __name__ == "__main__":
    sys.exit(main())
