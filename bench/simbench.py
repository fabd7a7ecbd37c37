"""The cost of scale: pctfleet's controller on a simulated fleet of up to 10,000 containers.

No SSH and no containers: `pctfleet.transport.sim` gives every container a
target whose calls sleep a fixed per-call latency inside its node's session
slots (MaxSessions 10) and answer probe scripts as a converged container
would. Inventory parsing, preflight, templating, the engine's planning and
results are pctfleet's real code, through `fleet.prepare`/`fleet.execute`,
with pctfleet's default options (no --forks: every node up to its limit).
`--rtt` adds a network round trip per login, channel and call.

Each point runs in its own process, so its memory is its own:

    python bench/simbench.py --containers 1000 --mode noop     # prints one JSON line
    python bench/simbench.py --latency-scenario                # RTT 0 against RTT 0.1
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PLAYBOOK = HERE / "pctfleet_site.yml"
PER_NODE = 20  # 1,000 containers on 50 nodes
LATENCY = 0.2  # seconds per `pct exec`: a real node's pct (a Perl CLI) plus an SSH channel
FORKS = None  # pctfleet's default: no global cap, each node up to its channel limit
NODE_LIMIT = 10  # sshd's MaxSessions default
SIZES = (10, 100, 1000, 10000)
MODES = ("noop", "audit")
RTT = 0.1  # the latency scenario's round trip (50 ms each way)


def inventory_yaml(containers: int, per_node: int = PER_NODE) -> str:
    """A native pctfleet inventory: `containers` spread `per_node` to a node."""
    from pctfleet.lab.inventory import STANDIN

    nodes = math.ceil(containers / per_node)
    lines = ["defaults: {user: root}", f"vars: {{standin_src: {STANDIN}}}", "nodes:"]
    left = containers
    for n in range(1, nodes + 1):
        lines += [f"  sim{n:03d}:", "    containers:"]
        for i in range(min(per_node, left)):
            ctid, label = 200 + i, f"s{n:03d}-ct{200 + i}"
            port = 32000 + n * 100 + i
            lines.append(
                f"      {ctid}: {{name: {label}, vars: {{server_port: {port}, "
                f"bench_label: {label}}}}}"
            )
        left -= per_node
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


def ideal_seconds(layout: list[int], calls: int, latency: float, rtt: float, workers: int) -> float:
    """The calls' own time: each node's waves of NODE_LIMIT containers (a login, then
    per call a channel, a call and the latency), or the workers' turns if fewer."""
    per_call = latency + 2 * rtt
    by_node = max(math.ceil(n / NODE_LIMIT) for n in layout) * calls * per_call + rtt
    by_workers = math.ceil(sum(layout) / workers) * calls * per_call
    return round(max(by_node, by_workers), 3)


def run_point(
    containers: int,
    mode: str,
    latency: float,
    forks: int | None = FORKS,
    rtt: float = 0.0,
    per_node: int = PER_NODE,
) -> dict:
    """One simulated run in this process: measured around prepare + execute only."""
    from pctfleet.cuda import audit as drift
    from pctfleet.inventory import load_inventory
    from pctfleet.run.engine import RunOptions
    from pctfleet.run.playbookrun import RunRequest, execute, prepare
    from pctfleet.run.scheduler import worker_count
    from pctfleet.transport.options import ConnectOptions
    from pctfleet.transport.sim import build_sim_fleet, converged_answers

    with tempfile.NamedTemporaryFile("w", suffix=".yml") as handle:
        handle.write(inventory_yaml(containers, per_node))
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
        fleet = build_sim_fleet(cts, latency=latency, answers=lambda c: tables[c.key], rtt=rtt)
        return fleet

    compiles = count_compiles()
    cpu2, wall2 = time.process_time(), time.monotonic()
    runs = execute(prepared, fleet_factory=factory)
    statuses = [run.status for run in runs]
    if mode == "audit":
        statuses = [drift.judge(run, None).status for run in runs]
    cpu3, wall3 = time.process_time(), time.monotonic()
    calls = [run.remote_calls for run in runs]
    workers = worker_count(selected, forks, lambda c: NODE_LIMIT)
    layout = [len(node_cts) for node_cts in _by_node(selected).values()]
    return {
        "mode": mode,
        "containers": containers,
        "nodes": len(fleet.nodes),
        "forks": workers,  # containers in flight at most: the worker threads
        "forks_option": forks,
        "node_limit": NODE_LIMIT,
        "latency_s": latency,
        "rtt_s": rtt,
        "wall_s": round((wall1 - wall0) + (wall3 - wall2), 3),
        "execute_wall_s": round(wall3 - wall2, 3),
        "prepare_wall_s": round(wall1 - wall0, 3),
        "ideal_s": ideal_seconds(layout, max(calls), latency, rtt, workers),
        "logins_per_node": max(fleet.connections_opened().values()),
        "cpu_s": round((cpu1 - cpu0) + (cpu3 - cpu2), 3),
        "peak_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "calls_per_ct": sum(calls) / len(calls),
        "changed": sum(1 for run in runs if run.status == "changed"),
        "statuses": {s: statuses.count(s) for s in sorted(set(statuses))},
        "peak_sessions_per_node": max(n.peak_sessions for n in fleet.nodes.values()),
        "jinja2_compiles_per_ct_in_execute": round(compiles[0] / containers, 1),
    }


def _by_node(containers: list) -> dict[str, list]:
    out: dict[str, list] = {}
    for container in containers:
        out.setdefault(container.node.name, []).append(container)
    return out


def point_in_process(size: int, mode: str, latency: float, forks: int | None, *more: str) -> dict:
    """One point in a fresh process (its memory its own)."""
    argv = [sys.executable, str(Path(__file__).resolve()), "--containers", str(size)]
    argv += ["--mode", mode, "--latency", str(latency), *more]
    argv += ["--forks", str(forks)] if forks else []
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def curve(  # noqa: ANN201
    say=print,  # noqa: ANN001
    latency: float = LATENCY,
    forks: int | None = FORKS,
    sizes: tuple[int, ...] = SIZES,
) -> list[dict]:
    """Every size and mode, each in a fresh process, with pctfleet's default options."""
    points = []
    for mode, size in [(mode, size) for mode in MODES for size in sizes]:
        point = point_in_process(size, mode, latency, forks)
        say(
            f"  sim {mode:5} {size:5} containers: {point['wall_s']:6.2f}s wall "
            f"(ideal {point['ideal_s']:.2f}s) {point['cpu_s']:5.2f}s cpu "
            f"{point['peak_mb']:4.0f} MB {point['statuses']}"
        )
        points.append(point)
    return points


def latency_scenario(
    say=print,  # noqa: ANN001
    rtt: float = RTT,
    layouts: tuple[tuple[int, int], ...] = ((10, 10), (10, 20)),
    runs: int = 3,
) -> list[dict]:
    """No-op wall without and with `rtt` per login, channel and call (medians of
    `runs`, alternating): the growth in round trips, against one per container.
    Small fleets, so the controller's CPU does not hide the network's cost."""
    points = []
    for nodes, per_node in layouts:
        size, extra = nodes * per_node, ["--per-node", str(per_node)]
        base, slow = [], []
        for _ in range(runs):
            base.append(point_in_process(size, "noop", LATENCY, FORKS, *extra))
            slow.append(point_in_process(size, "noop", LATENCY, FORKS, *extra, "--rtt", str(rtt)))
        plain = statistics.median(p["wall_s"] for p in base)
        late = statistics.median(p["wall_s"] for p in slow)
        point = {
            "containers": size,
            "nodes": nodes,
            "per_node": per_node,
            "rtt_s": rtt,
            "wall_s": plain,
            "wall_rtt_s": late,
            "growth_s": round(late - plain, 3),
            "growth_rtts": round((late - plain) / rtt, 1),
            "waves_per_node": math.ceil(per_node / NODE_LIMIT),
            "logins_per_node": max(p["logins_per_node"] for p in slow),
            "runs": runs,
        }
        say(
            f"  sim latency {nodes} nodes x {per_node}: {plain:.2f}s -> {late:.2f}s with "
            f"RTT {rtt:g}s (+{point['growth_rtts']:g} RTT; one per container in a row "
            f"would be +{per_node * 2 + 1}; {point['waves_per_node']} wave(s) of {NODE_LIMIT})"
        )
        points.append(point)
    return points


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--containers", type=int)
    parser.add_argument("--mode", choices=MODES, default="noop")
    parser.add_argument("--latency", type=float, default=LATENCY)
    parser.add_argument("--forks", type=int, default=FORKS, help="default: no global cap")
    parser.add_argument("--rtt", type=float, default=0.0, help="network round trip, seconds")
    parser.add_argument("--per-node", type=int, default=PER_NODE, help="containers a node")
    parser.add_argument("--latency-scenario", action="store_true")
    args = parser.parse_args(argv)
    if args.latency_scenario:
        for point in latency_scenario(rtt=args.rtt or RTT):
            print(json.dumps(point))
        return 0
    if args.containers is None:
        for point in curve(latency=args.latency, forks=args.forks):
            print(json.dumps(point))
        return 0
    point = run_point(args.containers, args.mode, args.latency, args.forks, args.rtt, args.per_node)
    print(json.dumps(point))
    return 0


if __name__ == "__main__":
    sys.exit(main())
