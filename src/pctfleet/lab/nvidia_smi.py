"""A stand-in for `nvidia-smi` on a lab node without a GPU.

It prints the real tool's formats (captured on an H200 with driver 580.159.04,
tests/unit/nvidia_fixtures/h200/) with the driver version, CUDA version and
GPUs the lab chose, read from the JSON file named in $PCTFLEET_LAB_GPU:
{"driver": "580.159.04", "cuda": "13.0", "gpus": [{"name": ..., "uuid": ...,
"bus": ..., "memory": 143771, "cc": "9.0"}]}. Standalone (stdlib only), like pct.py.
"""

from __future__ import annotations

import json
import os
import sys
import time

RULE = "+-----------------------------------------+------------------------+----------------------+"
WIDE = "+" + "-" * 89 + "+"
HEAD = """\
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|                                         |                        |               MIG M. |
|=========================================+========================+======================|"""
PROCESSES = """\
| Processes:                                                                              |
|  GPU   GI   CI              PID   Type   Process name                        GPU Memory |
|        ID   ID                                                               Usage      |
|=========================================================================================|
|  No running processes found                                                             |"""
UNITS = {"memory.total": " [MiB]"}


def stamp() -> str:
    return time.strftime("%a %b %e %H:%M:%S %Y")


def table(spec: dict) -> str:
    driver, cuda = spec["driver"], spec["cuda"]
    top = f"| NVIDIA-SMI {driver:<22} Driver Version: {driver:<14} CUDA Version: {cuda:<9}|"
    rows = []
    for i, gpu in enumerate(spec["gpus"]):
        mem = f"0MiB / {gpu['memory']}MiB"
        rows.append(f"| {i:>3}  {gpu['name']:<31}On  |{gpu['bus']:>19} Off |{0:>21} |")
        rows.append(
            f"| N/A   36C    P0             80W /  700W | {mem:>22} |      0%      Default |"
        )
        rows.append(f"|{'':41}|{'':24}|{'Disabled':>21} |")
        rows.append(RULE)
    body = [f"{stamp()}       ", WIDE, top, RULE, HEAD, *rows, "", WIDE, PROCESSES, WIDE]
    return "\n".join(body)


def query(spec: dict, fields: list[str], noheader: bool) -> str:
    lines = [] if noheader else [", ".join(f + UNITS.get(f, "") for f in fields)]
    for i, gpu in enumerate(spec["gpus"]):
        values = {
            "index": str(i),
            "name": gpu["name"],
            "uuid": gpu["uuid"],
            "pci.bus_id": gpu["bus"],
            "driver_version": spec["driver"],
            "memory.total": f"{gpu['memory']} MiB",
            "compute_cap": gpu["cc"],
        }
        lines.append(", ".join(values.get(f, "[N/A]") for f in fields))
    return "\n".join(lines)


def version(spec: dict) -> str:
    driver = spec["driver"]
    nvml = ".".join(driver.split(".")[:2])
    return (
        f"NVIDIA-SMI version  : {driver}\nNVML version        : {nvml}\n"
        f"DRIVER version      : {driver}\nCUDA Version        : {spec['cuda']}"
    )


def details(spec: dict) -> str:
    pad = lambda key: f"{key:<55}: "  # noqa: E731
    lines = ["", "==============NVSMI LOG==============", ""]
    lines += [pad("Timestamp") + stamp(), pad("Driver Version") + spec["driver"]]
    lines += [pad("CUDA Version") + spec["cuda"], "", pad("Attached GPUs") + str(len(spec["gpus"]))]
    for gpu in spec["gpus"]:
        lines += [f"GPU {gpu['bus']}", "    " + f"{'Product Name':<51}: {gpu['name']}"]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    with open(os.environ["PCTFLEET_LAB_GPU"], encoding="utf-8") as f:
        spec = json.load(f)
    if spec.get("library") and spec["library"] != spec["driver"]:
        nvml = ".".join(spec["library"].split(".")[:2])
        print("Failed to initialize NVML: Driver/library version mismatch")
        print(f"NVML library version: {nvml}")
        return 18
    if not argv:
        out = table(spec)
    elif argv == ["-L"]:
        out = "\n".join(
            f"GPU {i}: {g['name']} (UUID: {g['uuid']})" for i, g in enumerate(spec["gpus"])
        )
    elif argv == ["--version"]:
        out = version(spec)
    elif argv == ["-q"]:
        out = details(spec)
    elif (
        len(argv) == 2 and argv[0].startswith("--query-gpu=") and argv[1].startswith("--format=csv")
    ):
        fields = argv[0].split("=", 1)[1].split(",")
        out = query(spec, fields, "noheader" in argv[1])
    else:
        print("Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.")
        return 2
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
