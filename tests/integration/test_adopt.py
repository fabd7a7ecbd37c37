"""A toolchain assembled by hand with uv, adopted by one provision run.

The venv /root/venv is made with `uv venv` (no pip) and filled with uv, not through
pctfleet: the 13.0 runtime and headers as cuda-toolkit 13.0.2 pins them, then
`nvidia-cuda-nvcc` 13.2 over them, a libcudart link made by hand and a stale file in
flashinfer's JIT cache. The doctor explains the failure; one `provision` repairs it;
a second one changes nothing with one `pct exec`.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from suites import PURELIB
from test_brownfield import KEY, UV, UV_TOML, in_ct, uv_binary  # noqa: F401

from pctfleet.cuda.rules import expected_components
from pctfleet.sh import library

pytestmark = pytest.mark.lab

VENV = "/root/venv"
JIT = "/root/.cache/flashinfer"
STALE = f"{JIT}/0.7.4/120/cached_ops/adopt_stale_kernel"
# Everything provision would otherwise share with other tests on this container
# (server env file, PID file, port, work folder) is the test's own.
OWN = "/root/adopt"
EXTRA = {
    "venv": VENV,
    "cuda_toolkit": "13.0.2",
    "server_env_file": f"{OWN}/sglang.env",
    "server_pidfile": f"{OWN}/sglang.pid",
    "server_log": f"{OWN}/sglang.log",
    "server_workdir": f"{OWN}/work",
    "server_port": 30251,
    "flashinfer_workspace_base": f"{OWN}/workspace",
}
MADE = f"{VENV} {OWN} {STALE} /root/.local/bin/uv /root/.cache/uv /etc/uv"
APT_GXX = "apt-get update -q && apt-get install -y -q --no-install-recommends g++"
PINNED = "cuda-toolkit[nvcc,nvvm,crt,cudart,cccl,curand]==13.0.2"
PORT_PIDS = library(["listener"]) + f"pctfleet_port_pids /proc {EXTRA['server_port']}"
# The incident's server: started by hand with nohup, no PID file, on the serving port.
BY_HAND = f"nohup python3 -m http.server {EXTRA['server_port']} >/dev/null 2>&1 & echo $!"


def pctfleet(*args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "pctfleet", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=1500)


def provision(info, *more: str) -> tuple[int, dict]:
    proc = pctfleet(
        "provision", "-i", str(info.inventory), "--limit", KEY, "--json", "-e", json.dumps(EXTRA),
        *more,
    )  # fmt: skip
    assert proc.stdout, proc.stderr[-3000:]
    (container,) = json.loads(proc.stdout)["containers"]
    return proc.returncode, container


def doctor(info) -> tuple[int, dict]:
    proc = pctfleet(
        "doctor", "-i", str(info.inventory), "--limit", KEY, "--json", "--venv", VENV,
        "--env-file", EXTRA["server_env_file"], "--cuda-toolkit", "13.0.2",
    )  # fmt: skip
    assert proc.stdout, proc.stderr[-3000:]
    return proc.returncode, json.loads(proc.stdout)["containers"][0]


def stop_our_server() -> None:
    pid = f"{EXTRA['server_pidfile']}"
    in_ct(f"[ -f {pid} ] && kill -TERM -$(cat {pid}) 2>/dev/null; :")


@pytest.fixture
def handmade(lab, uv_binary):  # noqa: F811
    """/root/venv mixed by hand with uv; afterwards everything made here is removed."""
    info = lab.up(nodes=2, containers=2)
    # The incident's containers had a compiler: without one, nvcc fails before it can
    # meet the mismatched headers. Installed once; a lab container keeps it.
    in_ct(f"command -v g++ >/dev/null || {{ {APT_GXX}; }}")
    in_ct(f"rm -rf {MADE} && {UV_TOML} && mkdir -p /root/.local/bin {OWN}")
    in_ct(f"cat > {UV} && chmod 755 {UV}", stdin=uv_binary)
    in_ct(f"{UV} venv -q {VENV}")
    in_ct(f"{UV} pip install -q --python {VENV}/bin/python '{PINNED}'")
    in_ct(f"{UV} pip install -q --python {VENV}/bin/python --no-deps nvidia-cuda-nvcc==13.2.78")
    site = in_ct(f"{VENV}/bin/python -c '{PURELIB}'").stdout.decode().strip()
    link = f"{site}/nvidia/cu13/lib/libcudart.so"
    in_ct(f"ln -sfn libcudart.so.13 {link} && mkdir -p {STALE} && : > {STALE}/x.so")
    stranger = int(in_ct(BY_HAND).stdout)
    in_ct(f"for i in $(seq 50); do {PORT_PIDS} | grep -qx {stranger} && exit 0; sleep 0.1; done")
    info.stranger = stranger
    yield info
    in_ct(f"kill -KILL {stranger} 2>/dev/null; :")
    stop_our_server()
    in_ct(f"rm -rf {MADE}; rmdir /root/.local/bin /root/.local 2>/dev/null || :")
    # The stale kernel's folders, when nothing else is left in them (no provision ran).
    in_ct(f"rmdir -p {STALE.rsplit('/', 1)[0]} 2>/dev/null || :")


def installed() -> dict[str, str]:
    names = " ".join(expected_components("13.0.2"))
    read = "import importlib.metadata as m, sys; [print(n, m.version(n)) for n in sys.argv[1:]]"
    out = in_ct(f"{VENV}/bin/python -c '{read}' {names}").stdout.decode()
    return dict(line.split() for line in out.splitlines())


def jit_entries() -> list[str]:
    out = in_ct(f"find {JIT} -mindepth 1 -maxdepth 1 ! -name '.pctfleet*' -printf '%f\\n'")
    return out.stdout.decode().split()


def test_handmade_uv_toolchain_is_explained_then_adopted_in_one_provision(handmade):
    code, before = doctor(handmade)
    assert code == 2, before["verdict"]
    assert before["components"]["nvidia-cuda-nvcc"].startswith("13.2"), before["components"]
    assert not (before["probe"]["compile_ok"] and before["probe"]["link_ok"])
    explained = " ".join(f"{f['cause']} {f['line']}" for f in before["findings"])
    assert "CUDA compiler and CUDA toolkit headers are incompatible" in explained, explained
    assert "nvcc and the CUDART_VERSION" in explained, explained

    code, checked = provision(handmade, "--check")
    task = next(t for t in checked["tasks"] if t["name"] == "matched CUDA toolchain")
    assert task["status"] == "changed", task
    assert "CUDA compiler and CUDA toolkit headers are incompatible" in task["msg"], task["msg"]

    code, first = provision(handmade)
    failed = [t["msg"] for t in first["tasks"] if t["status"] == "failed"]
    assert code == 0 and not failed, failed
    changed = {t["name"] for t in first["tasks"] if t["changed"]}
    assert "matched CUDA toolchain" in changed, changed
    (server,) = [t for t in first["tasks"] if t["module"] == "server"]
    stopped = [p["pid"] for p in server["details"].get("stale", [])]
    assert stopped == [handmade.stranger], server
    ours = int(in_ct(f"cat {EXTRA['server_pidfile']}").stdout)
    assert [int(p) for p in in_ct(PORT_PIDS).stdout.split()] == [ours] != [handmade.stranger]

    code, after = doctor(handmade)
    assert code == 0, after["verdict"]
    assert after["probe"]["compile_ok"] and after["probe"]["link_ok"]
    assert installed() == expected_components("13.0.2")
    assert jit_entries() == [], "the stale JIT files survived"
    assert not has_pip(), "pip was put into the uv venv: uv was not used"

    code, second = provision(handmade)
    changed = [t["name"] for t in second["tasks"] if t["changed"]]
    assert code == 0 and changed == [] and second["remote_calls"] == 1, changed


def has_pip() -> bool:
    check = f"{VENV}/bin/python -c 'import pip' 2>/dev/null && echo yes || echo no"
    return in_ct(check).stdout.decode().strip() == "yes"
