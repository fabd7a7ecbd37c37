"""What of SGLang's dependency set a GPU machine lacks, and what carrying it costs.

    pip install --dry-run --ignore-installed --report REPORT --only-binary=:all: \
        --python-version 3.12 --platform manylinux_2_28_x86_64 ... --target T sglang==V
    python3 -m pip list --format json >MACHINE            # there
    pip download --no-deps ... -d WHEELS (each URL this script's --need prints)
    python3 bench/gpu/sglang_deps.py REPORT MACHINE [WHEELS]

Each resolved package is `same` (the machine has that version), `reuse` (the
machine's version meets every specifier the resolved set puts on it), `conflict`
(it does not: the version must travel) or `missing`. With WHEELS, the sizes of
what must travel, against the 64 MiB a call may carry.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import Version

CARRY_LIMIT = 64 * 2**20
TORCH_STACK = {"torch", "triton", "torchaudio", "torchcodec"}
CU12_LIB = re.compile(r"nvidia-(?!cutlass)[a-z-]+-cu12")  # torch 2.9.1's CUDA 12.8 libraries


def specifiers(install: dict, env: dict) -> dict[str, list[tuple[str, object]]]:
    """Every specifier the resolved set puts on each of its members, with who asks."""
    found: dict[str, list[tuple[str, object]]] = {name: [] for name in install}
    for name, item in install.items():
        extras = item.get("requested_extras") or [""]
        for line in item["metadata"].get("requires_dist", []):
            req = Requirement(line)
            if req.marker and not any(req.marker.evaluate(dict(env, extra=e)) for e in extras):
                continue
            if canonicalize_name(req.name) in found:
                found[canonicalize_name(req.name)].append((name, req.specifier))
    return found


def classify(report: dict, machine: dict[str, str]) -> list[dict]:
    env = dict(
        report["environment"],
        python_version="3.12",
        python_full_version="3.12.3",
        sys_platform="linux",
        platform_machine="x86_64",
    )
    install = {canonicalize_name(i["metadata"]["name"]): i for i in report["install"]}
    specs = specifiers(install, env)
    rows = []
    for name, item in sorted(install.items()):
        version, have = item["metadata"]["version"], machine.get(name)
        if have is None:
            status, why = "missing", ""
        elif Version(have).public == Version(version).public:
            status, why = "same", ""
        else:
            bad = [
                f"{by} {spec}"
                for by, spec in specs[name]
                if not spec.contains(Version(have), prereleases=True)
            ]
            status, why = ("conflict", "; ".join(bad)) if bad else ("reuse", "")
        rows.append(
            {
                "name": name,
                "version": version,
                "machine": have,
                "status": status,
                "why": why,
                "url": item["download_info"]["url"],
            }
        )
    return rows


def sizes(rows: list[dict], wheels: Path) -> None:
    size = {
        canonicalize_name(parse_wheel_filename(f.name)[0]): f.stat().st_size
        for f in wheels.glob("*.whl")
    }
    carry = [r["name"] for r in rows if r["status"] in ("missing", "conflict")]
    torch = [n for n in carry if n in TORCH_STACK or CU12_LIB.fullmatch(n)]
    for label, names in (
        ("to carry", carry),
        ("torch stack", torch),
        ("the rest", [n for n in carry if n not in torch]),
    ):
        total = sum(size[n] for n in names)
        over = sum(1 for n in names if size[n] > CARRY_LIMIT)
        print(
            f"{label}: {len(names)} wheels, {total / 1e6:.0f} MB, at least "
            f"{-(-total // CARRY_LIMIT)} calls of 64 MiB, {over} wheels over 64 MiB"
        )


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] == "--need" and len(argv) < 3:
        print("usage: sglang_deps.py [--need] REPORT MACHINE [WHEELS]", file=sys.stderr)
        return 2
    need = argv[0] == "--need"
    args = argv[1:] if need else argv
    report = json.loads(Path(args[0]).read_text())
    machine = {
        canonicalize_name(p["name"]): p["version"] for p in json.loads(Path(args[1]).read_text())
    }
    rows = classify(report, machine)
    if need:
        print("\n".join(r["url"] for r in rows if r["status"] in ("missing", "conflict")))
        return 0
    print(dict(Counter(r["status"] for r in rows)), "of", len(rows), "resolved")
    for r in rows:
        if r["status"] == "conflict":
            print(f"  {r['name']} {r['version']} (machine {r['machine']}): {r['why']}")
    if len(args) > 2:
        sizes(rows, Path(args[2]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
