"""Reading a large inventory: the same fleet as a native file, an Ansible YAML file and
an Ansible INI file, with group_vars beside the Ansible ones.

    .venv/bin/python bench/inventories.py [--runs 3]

Each fleet: 50 nodes, their containers spread evenly; every container in its node's
group and in one group of everyone (the case that made group membership cost the
square of the fleet). Each sample is one fresh interpreter that imports pctfleet,
then loads the file (`load_inventory`, timed) and builds every container's variables
(`vars_for`, timed apart); the peak is that interpreter's maximum RSS. Cells are
medians. Writes its JSON and its section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import tables  # noqa: E402

NODES = 50
SIZES = (1_000, 10_000)
FORMATS = ("native", "ansible-yaml", "ansible-ini")
DEFAULT_JSON = Path("/var/cache/pctfleet/bench/inventories.json")
BEGIN = "<!-- section: inventories (bench/inventories.py) -->"
END = "<!-- end of section: inventories -->"
HEADER = ["format", "containers", "load s", "vars_for s (all)", "peak MB"]
PROBE = """
import json, resource, sys, time
from pctfleet.inventory import load_inventory
start = time.perf_counter()
inv = load_inventory(sys.argv[1])
loaded = time.perf_counter()
for container in inv.containers:
    inv.vars_for(container)
done = time.perf_counter()
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps([len(inv.containers), loaded - start, done - loaded, peak]))
"""


def _address(node: int) -> str:
    return f"127.0.{node // 250}.{node % 250 + 1}"


def _native(per_node: int) -> list[str]:
    lines = ["vars: {tier: all}", "nodes:"]
    for n in range(NODES):
        lines += [f"  pve{n}:", f"    address: {_address(n)}", "    containers:"]
        lines += [f"      {100 + c}: {{name: ct{n}-{c}}}" for c in range(per_node)]
    everyone = ", ".join(f"pve{n}" for n in range(NODES))
    return [*lines, "groups:", "  everyone:", f"    nodes: [{everyone}]"]


def _ansible_yaml(per_node: int) -> list[str]:
    lines = ["all:", "  children:"]
    for n in range(NODES):
        lines += [f"    pve{n}:", f"      vars: {{ansible_host: {_address(n)}}}", "      hosts:"]
        lines += [f"        ct{n}-{c}: {{proxmox_vmid: {100 + c}}}" for c in range(per_node)]
    hosts = [f"        ct{n}-{c}:" for n in range(NODES) for c in range(per_node)]
    return [*lines, "    everyone:", "      hosts:", *hosts]


def _ansible_ini(per_node: int) -> list[str]:
    lines = []
    for n in range(NODES):
        lines += [f"[pve{n}]"] + [f"ct{n}-{c} proxmox_vmid={100 + c}" for c in range(per_node)]
        lines += [f"[pve{n}:vars]", f"ansible_host={_address(n)}"]
    hosts = [f"ct{n}-{c}" for n in range(NODES) for c in range(per_node)]
    return [*lines, "[everyone]", *hosts]


WRITERS = {
    "native": (_native, "native.yml"),
    "ansible-yaml": (_ansible_yaml, "yaml/hosts.yml"),
    "ansible-ini": (_ansible_ini, "ini/hosts"),
}


def write_fleet(folder: Path, fmt: str, size: int) -> Path:
    write, name = WRITERS[fmt]
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(write(size // NODES)) + "\n", encoding="utf-8")
    if fmt != "native":
        (path.parent / "group_vars").mkdir(exist_ok=True)
        (path.parent / "group_vars" / "all.yml").write_text("tier: all\n", encoding="utf-8")
        (path.parent / "group_vars" / "everyone.yml").write_text("seen: true\n", encoding="utf-8")
    return path


def sample(path: Path) -> list[float]:
    argv = [sys.executable, "-c", PROBE, str(path)]
    done = subprocess.run(argv, capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(done.stdout)


def measure(runs: int) -> dict:
    cells = {}
    with tempfile.TemporaryDirectory(prefix="bench-inventories-") as tmp:
        for size in SIZES:
            for fmt in FORMATS:
                path = write_fleet(Path(tmp) / f"{fmt}-{size}", fmt, size)
                samples = [sample(path) for _ in range(runs)]
                assert all(s[0] == size for s in samples), (fmt, size, samples)
                cells[f"{fmt}/{size}"] = {
                    "load_s": statistics.median(s[1] for s in samples),
                    "vars_s": statistics.median(s[2] for s in samples),
                    "peak_mb": statistics.median(s[3] for s in samples),
                }
    return {"machine": tables.machine(), "runs": runs, "nodes": NODES, "cells": cells}


def rows(document: dict) -> list[list[str]]:
    out = []
    for key, cell in document["cells"].items():
        fmt, size = key.split("/")
        out.append([fmt, f"{int(size):,}", f"{cell['load_s']:.2f}", f"{cell['vars_s']:.2f}",
                    f"{cell['peak_mb']:.0f}"])  # fmt: skip
    return out


def markdown(document: dict) -> str:
    m = document["machine"]
    return "\n".join(
        [
            BEGIN,
            "## Reading a large inventory",
            "",
            f"Written by `bench/inventories.py`. One fleet of {document['nodes']} nodes in",
            "three formats (the Ansible ones with group_vars beside them), every container",
            "in its node's group and in one group of everyone; each sample a fresh",
            f"interpreter, cells the median of {document['runs']}.",
            "",
            f"- machine: {m['nproc']} CPUs, {m['cpu_model']}, kernel {m['kernel']},"
            f" Python {m['python']}",
            f"- date: {m['date']}",
            "",
            tables._md_table(HEADER, rows(document)),
            END,
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="samples per cell (>= 3)")
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON)
    parser.add_argument(
        "--docs", type=Path, default=ROOT / "docs/benchmarks.md", help="'-' to skip"
    )
    args = parser.parse_args(argv)
    if args.runs < 3:
        parser.error("--runs must be at least 3 (each cell is a median)")
    document = measure(args.runs)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    print(tables._text_table(HEADER, rows(document)))
    if str(args.docs) != "-":
        page = args.docs.read_text(encoding="utf-8") if args.docs.exists() else ""
        args.docs.write_text(tables.splice_section(page, markdown(document)), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
