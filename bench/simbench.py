"""The cost of scale: pctfleet's controller on a simulated fleet of up to 1,000 containers.

No SSH and no containers: `pctfleet.transport.sim` gives every container a
target whose calls sleep a fixed per-call latency inside its node's session
slots (MaxSessions 10) and answer probe scripts as a converged container
would. Inventory parsing, preflight, templating, the engine's planning and
results are pctfleet's real code, through `fleet.prepare`/`fleet.execute`.

Each point runs in its own process, so its memory is its own:

    python bench/simbench.py --containers 1000 --mode noop     # prints one JSON line
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PLAYBOOK = HERE / "pctfleet_site.yml"
PER_NODE = 20  # 1,000 containers on 50 nodes
LATENCY = 0.2  # seconds per `pct exec`: a real node's pct (a Perl CLI) plus an SSH channel
FORKS = 10  # pctfleet's default
SIZES = (10, 100, 1000)
MODES = ("noop", "audit")


def inventory_yaml(containers: int) -> str:
    """A native pctfleet inventory: `containers` spread PER_NODE to a node."""
    from pctfleet.lab.inventory import STANDIN

    nodes = math.ceil(containers / PER_NODE)
    lines = ["defaults: {user: root}", f"vars: {{standin_src: {STANDIN}}}", "nodes:"]
    left = containers
    for n in range(1, nodes + 1):
        lines += [f"  sim{n:03d}:", "    containers:"]
        for i in range(min(PER_NODE, left)):
            ctid, label = 200 + i, f"s{n:03d}-ct{200 + i}"
            port = 32000 + n * 100 + i
            lines.append(
                f"      {ctid}: {{name: {label}, vars: {{server_port: {port}, "
                f"bench_label: {label}}}}}"
            )
        left -= PER_NODE
    return "\n".join(lines) + "\n"


def count_compiles() -> list[int]:
    """Count jinja2 template compilations (a counter in a list; costs ~1 us a call)."""
    import jinja2

    count = [0]
    compile_ = jinja2.Environment.compile

    def counted(self, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        count[0] += 1
        return compile_(self, *args, **kwargs)

    jinja2.Environment.compile = counted
    return count


def run_point(containers: int, mode: str, latency: float, forks: int) -> dict:
    """One simulated run in this process: measured around prepare + execute only."""
    from pctfleet.cuda import audit as drift
    from pctfleet.inventory import load_inventory
    from pctfleet.run.engine import RunOptions
    from pctfleet.run.playbookrun import RunRequest, execute, prepare
    from pctfleet.transport.options import ConnectOptions
    from pctfleet.transport.sim import build_sim_fleet, converged_answers

    with tempfile.NamedTemporaryFile("w", suffix=".yml") as handle:
        handle.write(inventory_yaml(containers))
        handle.flush()
        cpu0, wall0 = time.process_time(), time.monotonic()
        inventory = load_inventory(handle.name)
    selected = list(inventory.select("all"))
    options = RunOptions()
    if mode == "audit":
        options = RunOptions(
            check=True, diff=True, extra_probes={"fingerprint": drift.fingerprint_snippet}
        )
    request = RunRequest(PLAYBOOK, inventory, selected, ConnectOptions(), options, forks)
    prepared = prepare(request)
    cpu1, wall1 = time.process_time(), time.monotonic()
    # The simulation's own work (not pctfleet's): converged answers for every container.
    tables = {c.key: converged_answers(prepared, c) for c in selected}
    fleet = None

    def factory(cts: list, connect: ConnectOptions):  # noqa: ANN202, ARG001
        nonlocal fleet
        fleet = build_sim_fleet(cts, latency=latency, answers=lambda c: tables[c.key])
        return fleet

    compiles = count_compiles()
    cpu2, wall2 = time.process_time(), time.monotonic()
    runs = execute(prepared, fleet_factory=factory)
    statuses = [run.status for run in runs]
    if mode == "audit":
        statuses = [drift.judge(run, None).status for run in runs]
    cpu3, wall3 = time.process_time(), time.monotonic()
    calls = [run.remote_calls for run in runs]
    return {
        "mode": mode,
        "containers": containers,
        "nodes": len(fleet.nodes),
        "forks": forks,
        "latency_s": latency,
        "wall_s": round((wall1 - wall0) + (wall3 - wall2), 3),
        "ideal_s": round(math.ceil(containers / forks) * latency * max(calls), 3),
        "cpu_s": round((cpu1 - cpu0) + (cpu3 - cpu2), 3),
        "peak_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "calls_per_ct": sum(calls) / len(calls),
        "changed": sum(1 for run in runs if run.status == "changed"),
        "statuses": {s: statuses.count(s) for s in sorted(set(statuses))},
        "peak_sessions_per_node": max(n.peak_sessions for n in fleet.nodes.values()),
        "jinja2_compiles_per_ct_in_execute": round(compiles[0] / containers, 1),
    }


def curve(say=print, latency: float = LATENCY, forks: int = FORKS) -> list[dict]:  # noqa: ANN001
    """Every size and mode, each in a fresh process."""
    points = []
    for mode, size in [(mode, size) for mode in MODES for size in SIZES]:
        argv = [sys.executable, str(Path(__file__).resolve()), "--containers", str(size)]
        argv += ["--mode", mode, "--latency", str(latency), "--forks", str(forks)]
        out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
        point = json.loads(out.strip().splitlines()[-1])
        say(
            f"  sim {mode:5} {size:5} containers: {point['wall_s']:6.2f}s wall "
            f"(ideal {point['ideal_s']:.2f}s) {point['cpu_s']:5.2f}s cpu "
            f"{point['peak_mb']:4.0f} MB {point['statuses']}"
        )
        points.append(point)
    return points


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--containers", type=int)
    parser.add_argument("--mode", choices=MODES, default="noop")
    parser.add_argument("--latency", type=float, default=LATENCY)
    parser.add_argument("--forks", type=int, default=FORKS)
    args = parser.parse_args(argv)
    if args.containers is None:
        for point in curve(latency=args.latency, forks=args.forks):
            print(json.dumps(point))
        return 0
    print(json.dumps(run_point(args.containers, args.mode, args.latency, args.forks)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
