"""The pinned CUDA toolchain into a fresh venv: uv against pip, in one lab container.

    flock /tmp/pctfleet-lab.lock .venv/bin/python bench/installers.py [--runs 3]

Both installers get the same requirement, `cuda-toolkit[nvcc,nvvm,crt,cudart,cccl]==X`
(what the `cuda_toolchain` module installs, lib/pip.sh), into a venv made by
`python3 -m venv` (untimed) in the shared lab's node2/201. Cold: each installer's cache
off (pip --no-cache-dir, uv --no-cache). Warm: pip's cache is the lab's bind mount
(/root/.cache/pip); uv's is its own folder, filled by one untimed run first. Each
cell is the median of --runs. After every run the installed versions are read back
and must equal the pins. Writes its JSON and its section of docs/benchmarks.md
(bench/run.py keeps the section when it rewrites the page).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import tables  # noqa: E402

from pctfleet.cuda.rules import expected_components  # noqa: E402
from pctfleet.lab import Lab  # noqa: E402

TOOLKIT = "13.0.2"
REQUIREMENT = f"cuda-toolkit[nvcc,nvvm,crt,cudart,cccl]=={TOOLKIT}"
LXC = ["lxc-attach", "-P", "/var/lib/pctfleet-lab/lxc", "-n", "pctfleet-n2-201", "--"]
VENV = "/root/bench-installers-venv"
UV = "/root/.local/bench-installers/uv"
UV_CACHE = "/root/.cache/bench-installers-uv"
MADE = f"{VENV} {Path(UV).parent} {UV_CACHE}"
# The lab's HTTPS goes through a proxy whose CA is only in the system store.
UV_ENV = f"UV_NATIVE_TLS=1 UV_CACHE_DIR={UV_CACHE} UV_LINK_MODE=hardlink"
INSTALL = {
    "pip": f"{VENV}/bin/python -m pip install -q --disable-pip-version-check",
    "uv": f"{UV_ENV} {UV} pip install -q --python {VENV}/bin/python",
}
COLD = {"pip": "--no-cache-dir", "uv": "--no-cache"}
READ_BACK = (
    "import importlib.metadata as m, json, sys; "
    "print(json.dumps({n: m.version(n) for n in sys.argv[1:]}))"
)
DEFAULT_JSON = Path("/var/lib/pctfleet-lab-bench/bench/installers.json")


def in_ct(script: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    done = subprocess.run([*LXC, "sh", "-c", script], input=stdin, capture_output=True)
    if done.returncode != 0:
        raise SystemExit(f"installers: in the container: {script}: {done.stderr.decode()[-800:]}")
    return done


def uv_binary(folder: Path) -> bytes:
    """uv from its PyPI wheel, as tests/integration/test_brownfield.py gets it."""
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:"]
    subprocess.run([*cmd, "-d", str(folder), "uv"], check=True, capture_output=True, timeout=300)
    with zipfile.ZipFile(next(folder.glob("uv-*.whl"))) as wheel:
        name = next(n for n in wheel.namelist() if n.endswith(".data/scripts/uv"))
        return wheel.read(name)


def one_run(installer: str, cold: bool) -> float:
    """Seconds for one install into a fresh venv; the versions must equal the pins."""
    in_ct(f"rm -rf {VENV} && python3 -m venv {VENV}")
    command = f"{INSTALL[installer]} {COLD[installer] if cold else ''} '{REQUIREMENT}'"
    started = time.monotonic()
    in_ct(command)
    seconds = time.monotonic() - started
    pins = expected_components(TOOLKIT)
    got = json.loads(in_ct(f"{VENV}/bin/python -c '{READ_BACK}' {' '.join(pins)}").stdout)
    if got != pins:
        raise SystemExit(f"installers: {installer} installed {got}, pinned {pins}")
    return round(seconds, 3)


def cache_mb(path: str) -> float:
    out = in_ct(f"du -sk {path} 2>/dev/null | cut -f1 || echo 0").stdout.decode().strip()
    return round(int(out or 0) / 1024, 1)


def measure_all(runs: int, say) -> dict:
    cells: dict[str, dict] = {}
    for mode in ("cold", "warm"):
        for installer in ("pip", "uv"):
            if mode == "warm":
                say(f"warming {installer}'s cache (untimed)")
                one_run(installer, cold=False)
            samples = []
            for i in range(runs):
                samples.append(one_run(installer, cold=mode == "cold"))
                say(f"  {installer} {mode} {i + 1}/{runs}: {samples[-1]:.2f}s")
            cells[f"{installer}/{mode}"] = {
                "installer": installer,
                "mode": mode,
                "samples": samples,
                "median_s": statistics.median(samples),
            }
    uv_version = in_ct(f"{UV} --version").stdout.decode().split()[1]
    pip_version = in_ct(f"{VENV}/bin/python -m pip --version").stdout.decode().split()[1]
    return {
        "machine": tables.machine(),
        "container": "node2/201 (lab, Debian 12, python3 -m venv)",
        "requirement": REQUIREMENT,
        "versions": {"uv": uv_version, "pip": pip_version},
        "cache_mb": {"pip": cache_mb("/root/.cache/pip"), "uv": cache_mb(UV_CACHE)},
        "runs": runs,
        "cells": cells,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="samples per cell (>= 3)")
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON)
    parser.add_argument("--docs", type=Path, default=ROOT / "docs/benchmarks.md")
    parser.add_argument("--render", type=Path, help="measure nothing: render this JSON")
    args = parser.parse_args(argv)
    if args.render:
        document = json.loads(args.render.read_text(encoding="utf-8"))
    else:
        if args.runs < 3:
            parser.error("--runs must be at least 3 (each cell is a median)")
        document = measure_lab(args.runs)
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    print(tables.installers_console(document))
    if str(args.docs) != "-":
        page = args.docs.read_text(encoding="utf-8") if args.docs.exists() else ""
        args.docs.write_text(tables.splice_installers(page, document), encoding="utf-8")
    return 0


def measure_lab(runs: int) -> dict:
    def say(text: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)

    Lab().up(nodes=2, containers=2)
    folder = Path("/tmp") / f"bench-installers-{time.monotonic_ns()}"
    folder.mkdir()
    in_ct(f"rm -rf {MADE} && mkdir -p {Path(UV).parent}")
    try:
        in_ct(f"cat > {UV} && chmod 755 {UV}", stdin=uv_binary(folder))
        return measure_all(runs, say)
    finally:
        in_ct(f"rm -rf {MADE}")
        for item in folder.iterdir():
            item.unlink()
        folder.rmdir()


if __name__ == "__main__":
    sys.exit(main())
