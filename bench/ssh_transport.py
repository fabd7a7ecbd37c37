"""SSH transport cost on the lab: logins per node for 20 concurrent commands,
connect time, peak RSS and import time of pctfleet.transport.ssh.

    flock /tmp/pctfleet-lab.lock python bench/ssh_transport.py
"""

from __future__ import annotations

import json
import re
import resource
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

LAB = Path("/var/lib/pctfleet-lab")
NODES = [("node1", "127.0.10.1"), ("node2", "127.0.10.2")]


def logins(node: int) -> int:
    return (
        (LAB / f"node{node + 1}" / "sshd.log")
        .read_text(errors="replace")
        .count("Accepted publickey")
    )


def options():
    from pctfleet.transport.options import ConnectOptions

    return ConnectOptions(identity=str(LAB / "id_ed25519"), known_hosts=str(LAB / "known_hosts"))


def twenty_concurrent() -> list[int]:
    from pctfleet.transport.pct import PctTarget
    from pctfleet.transport.ssh import NodeConnection

    before = [logins(0), logins(1)]
    nodes = [NodeConnection(name, addr, options()) for name, addr in NODES]
    threads = [
        threading.Thread(target=PctTarget(nodes[i % 2], 200 + (i // 2) % 2).run, args=(["true"],))
        for i in range(20)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for n in nodes:
        n.close()
    return [logins(0) - before[0], logins(1) - before[1]]


def connect_seconds(rounds: int = 10) -> float:
    """Median time from nothing to the first command's exit on a node (`true`)."""
    import io

    from pctfleet.transport.ssh import NodeConnection

    times = []
    for _ in range(rounds):
        node = NodeConnection("node1", "127.0.10.1", options())
        started = time.perf_counter()
        node.exec("true", stdin=b"", timeout=10, stdout=io.BytesIO(), stderr=io.BytesIO())
        times.append(time.perf_counter() - started)
        node.close()
    return statistics.median(times)


def import_ms() -> float:
    """Median cumulative import time of pctfleet.transport.ssh, fresh interpreter each."""
    runs = []
    for _ in range(5):
        err = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", "import pctfleet.transport.ssh"],
            capture_output=True,
            text=True,
            check=True,
        ).stderr
        line = [x for x in err.splitlines() if re.search(r"\|\s+pctfleet\.transport\.ssh$", x)][0]
        runs.append(int(line.split("|")[1]) / 1000)
    return statistics.median(runs)


def main() -> None:
    out = {"import_ms": import_ms()}
    out["logins_per_node_20_concurrent"] = twenty_concurrent()
    out["connect_s_median"] = round(connect_seconds(), 4)
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
