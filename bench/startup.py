"""How long the CLI takes from process start to its first SSH connect.

    .venv/bin/python bench/startup.py INVENTORY [PLAYBOOK] [--runs N] [--known-hosts FILE]

Each run starts a fresh interpreter that patches `socket.socket.connect` (in
that process only, for measurement) to note CLOCK_MONOTONIC at the first
connect and exit at once: what is measured is the work done before any byte
goes to a node. The parent notes the same clock just before it starts the
child, so interpreter start-up is counted. Since nodes are logged in to in the
background as soon as the inventory is loaded, that first connect comes early
and says little about when work starts: a second series stops the child when
its first command's exec request goes out (the first `pct exec` sent), which
includes most of the login: a probe goes right behind the login request. A
third series times the CLI's imports for `run` alone (`import
pctfleet.cli.main` and the app `pctfleet run` builds).
`measure()` returns the medians for bench/run.py.
Run it with compiled bytecode (as an installed package has): with
PYTHONDONTWRITEBYTECODE set and no __pycache__, compiling dominates.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PLAYBOOK = HERE / "pctfleet_site.yml"

# Runs in the child: exits with code 0 and prints the clock at the first connect.
_WRAPPER = """
import os, socket, sys, time, runpy
_connect = socket.socket.connect
def _first(self, *args, **kwargs):
    sys.stdout.write("connect=%r\\n" % time.monotonic())
    sys.stdout.flush()
    os._exit(0)
socket.socket.connect = _first
sys.argv = ["pctfleet"] + sys.argv[1:]
runpy.run_module("pctfleet", run_name="__main__")
"""

# Runs in the child: exits when the first command goes to a node's channel.
_EXEC_WRAPPER = """
import importlib.util, os, sys, time, runpy

class _Hook:
    def find_spec(self, name, path, target=None):
        if name != "pctfleet.transport.channel":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        load = spec.loader.exec_module
        def exec_module(module):
            load(module)
            def first(*args, **kwargs):
                sys.stdout.write("connect=%r\\n" % time.monotonic())
                sys.stdout.flush()
                os._exit(0)
            module.start_command = first  # the one way an exec request goes out
        spec.loader.exec_module = exec_module
        return spec

sys.meta_path.insert(0, _Hook())
sys.argv = ["pctfleet"] + sys.argv[1:]
runpy.run_module("pctfleet", run_name="__main__")
"""


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _first_connect(argv: list[str], wrapper: str = _WRAPPER) -> tuple[float | None, float]:
    """Seconds from spawning the CLI to its first connect (None if it never connects),
    and the CPU seconds it used until then: on a busy machine the steadier number."""
    start, cpu = time.monotonic(), _children_cpu()
    proc = subprocess.run(
        [sys.executable, "-c", wrapper, *argv], capture_output=True, text=True, timeout=60
    )
    used = _children_cpu() - cpu
    for line in proc.stdout.splitlines():
        if line.startswith("connect="):
            return float(line.split("=", 1)[1]) - start, used
    return None, used


def _import_only() -> float:
    start = time.monotonic()
    code = "from pctfleet.cli import main; main.app_for(['run'])"
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.monotonic() - start


def run_argv(inventory: str | Path, playbook: str | Path, known_hosts: str | Path | None) -> list:
    """The CLI's arguments. Without the lab's known_hosts the login is refused (an
    unknown host key) and no `pct exec` is ever sent: that series would be empty."""
    argv = ["run", "-i", str(inventory), str(playbook)]
    return argv + (["--known-hosts", str(known_hosts)] if known_hosts else [])


def measure(
    inventory: str | Path,
    playbook: str | Path = PLAYBOOK,
    runs: int = 5,
    known_hosts: str | Path | None = None,
) -> dict:
    """Medians over `runs` fresh processes: import of the CLI, and start to first connect."""
    argv = run_argv(inventory, playbook, known_hosts)
    imports = [_import_only() for _ in range(runs)]
    measured = [_first_connect(argv) for _ in range(runs)]
    execs = [_first_connect(argv, _EXEC_WRAPPER) for _ in range(runs)]
    connects = [wall for wall, _ in measured]
    reached = [c for c in connects if c is not None]
    sent = [wall for wall, _ in execs if wall is not None]
    return {
        "runs": runs,
        "import_s": statistics.median(imports),
        "first_connect_s": statistics.median(reached) if reached else None,
        "first_connect_cpu_s": statistics.median(cpu for _, cpu in measured),
        "never_connected": runs - len(reached),
        "first_exec_s": statistics.median(sent) if sent else None,
        "first_exec_cpu_s": statistics.median(cpu for _, cpu in execs),
        "exec_samples": [wall for wall, _ in execs],
        "import_samples": imports,
        "connect_samples": connects,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("inventory")
    parser.add_argument("playbook", nargs="?", default=str(PLAYBOOK))
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--known-hosts", help="the lab's known_hosts (else ~/.ssh/known_hosts)")
    args = parser.parse_args()
    result = measure(args.inventory, args.playbook, args.runs, args.known_hosts)
    connect = result["first_connect_s"]
    print(f"{'median of ' + str(args.runs):<24} seconds")
    print(f"{'import pctfleet.cli':<24} {result['import_s']:.3f}")
    print(f"{'start to first connect':<24} {'-' if connect is None else f'{connect:.3f}'}")
    print(f"{'  of which CPU':<24} {result['first_connect_cpu_s']:.3f}")
    sent = result["first_exec_s"]
    print(f"{'start to first pct exec':<24} {'-' if sent is None else f'{sent:.3f}'}")
    print(f"{'  of which CPU':<24} {result['first_exec_cpu_s']:.3f}")
    return 0 if connect is not None else 1


if __name__ == "__main__":
    sys.exit(main())
