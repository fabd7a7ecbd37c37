"""site.yml on the lab with real pip wheels and a real nvcc: doctor, seeded mismatches, repair."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from dataclasses import dataclass

import pytest
from suites import TRIXIE_CT, cuda_home, ensure_trixie, server_port, suite_params, unit_state

pytestmark = pytest.mark.lab


@dataclass(frozen=True)
class Stack:
    """Where one suite's tests run: a freshly provisioned container and one to break."""

    fresh: str
    seeded: str
    limit: str  # both of them
    systemd: bool  # systemd is PID 1: the server runs as a unit


# On trixie one container plays both parts: every seeding test ends with it repaired.
BOOKWORM = Stack("node2/200", "node2/201", "node2", systemd=False)
TRIXIE = Stack(TRIXIE_CT, TRIXIE_CT, TRIXIE_CT, systemd=True)
PIP = "/opt/sglang/bin/python -m pip install -q --no-deps --disable-pip-version-check"


def pctfleet(*args: str, timeout: float = 1500) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pctfleet", *args], capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture(scope="module")
def lab_inventory(lab):
    return str(lab.up(nodes=2, containers=2).inventory)


@pytest.fixture(scope="module", params=suite_params(BOOKWORM, TRIXIE))
def stack(request, extra_ct) -> Stack:
    if request.param is TRIXIE:
        ensure_trixie(extra_ct)
    return request.param


def sh(inventory: str, key: str, script: str) -> subprocess.CompletedProcess:
    return pctfleet(
        "exec", "-i", inventory, "--limit", key, "--timeout", "900", "--", "sh", "-c", script
    )


def provision(inventory: str, limit: str, *more: str) -> tuple[int, dict]:
    proc = pctfleet("provision", "-i", inventory, "--limit", limit, "--json", *more)
    assert proc.stdout, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def doctor(inventory: str, key: str, *more: str) -> tuple[int, dict]:
    proc = pctfleet("doctor", "-i", inventory, "--limit", key, "--json", *more)
    assert proc.stdout, proc.stderr
    return proc.returncode, json.loads(proc.stdout)["containers"][0]


@pytest.fixture(scope="module")
def provisioned(lab_inventory, stack, tmp_path_factory):
    """The suite's containers wiped of any earlier serving setup, then provisioned."""
    reset = tmp_path_factory.mktemp("reset") / "reset.yml"
    reset.write_text(
        textwrap.dedent("""\
        - hosts: all
          tasks:
            - name: stop an earlier server, and remove its unit where there is one
              server:
                {name: sglang, state: stopped, command: "true", stop_grace: 5,
                 pidfile: /run/pctfleet/sglang.pid}
            - {name: venv, file: {path: /opt/sglang, state: absent}}
            - {name: env, file: {path: /etc/pctfleet, state: absent}}
            - {name: cache, file: {path: /root/.cache/flashinfer, state: absent}}
            - {name: stray, file: {path: /usr/local/cuda-12.8, state: absent}}
        """)
    )
    proc = pctfleet("run", str(reset), "-i", lab_inventory, "--limit", stack.limit)
    assert proc.returncode == 0, proc.stderr
    code, doc = provision(lab_inventory, stack.limit)
    assert code == 0, json.dumps(doc["containers"], indent=1)[-3000:]
    return doc


@pytest.fixture(scope="module")
def ch(lab_inventory, stack, provisioned) -> dict[str, str]:
    """Each container's CUDA_HOME (the venv's nvidia/cu13), read there once."""
    keys = dict.fromkeys([stack.fresh, stack.seeded])
    return {key: cuda_home(lab_inventory, key) for key in keys}


def test_fresh_container_passes_doctor_for_sm120_and_sm90(lab_inventory, stack, provisioned):
    for arch in ("sm_120", "sm_90"):
        code, report = doctor(lab_inventory, stack.fresh, "--arch", arch)
        assert code == 0, report["verdict"]
        assert report["probe"]["compile_ok"] and report["probe"]["link_ok"]
        failing = [r["rule"] for r in report["rules"] if r["ok"] is False]
        assert failing == []
        assert report["components"]["nvidia-nvvm"] == "13.0.88"


def test_second_provision_changes_nothing_with_one_call(lab_inventory, stack, provisioned):
    code, doc = provision(lab_inventory, stack.limit)
    assert code == 0
    for run in doc["containers"]:
        changed = [t["name"] for t in run["tasks"] if t["changed"]]
        assert changed == [] and run["remote_calls"] == 1, (run["ctid"], changed)


def test_server_runs_sglang_command_line_and_environment(lab_inventory, stack, ch):
    script = (
        "p=$(cat /run/pctfleet/sglang.pid); tr '\\0' ' ' < /proc/$p/cmdline; echo; "
        "tr '\\0' '\\n' < /proc/$p/environ | sort"
    )
    out = sh(lab_inventory, stack.fresh, script).stdout.splitlines()
    assert out[0].split() == [
        "/opt/sglang/bin/python",
        "-m",
        "sglang_standin",
        "--model-path",
        "/models/default",
        "--host",
        "0.0.0.0",
        "--port",
        str(server_port(lab_inventory, stack.fresh)),
        "--tp-size",
        "1",
        "--attention-backend",
        "flashinfer",
        "--sampling-backend",
        "pytorch",
    ]
    env = dict(line.split("=", 1) for line in out[1:] if "=" in line)
    assert env["CUDA_HOME"] == ch[stack.fresh]
    assert env["FLASHINFER_WORKSPACE_BASE"] == "/var/cache/flashinfer-workspace"
    assert env["SGLANG_WARMUP_TIMEOUT"] == "1800"
    assert env["PATH"].startswith(f"{ch[stack.fresh]}/bin:/opt/sglang/bin:")
    if stack.systemd:
        enabled, main_pid, pidfile = unit_state(lab_inventory, stack.fresh)
        assert (enabled, main_pid) == ("enabled", pidfile)


# Seeding scripts run by sh with $CH set to the container's CUDA_HOME.
STRAY_HEADER = (
    "mkdir -p /usr/local/cuda-12.8/include && sed 's/^#define CUDART_VERSION .*/#define "
    'CUDART_VERSION 12080/\' "$CH/include/cuda_runtime_api.h" > '
    "/usr/local/cuda-12.8/include/cuda_runtime_api.h && "
    "echo CPATH=/usr/local/cuda-12.8/include >> /etc/pctfleet/sglang.env"
)

SEEDS = {
    "nvvm newer than nvcc": (
        f"{PIP} nvidia-nvvm==13.2.78",
        "nvcc-cicc",
        "Unsupported .version 9.2; current version is '9.0'",
    ),
    "nvcc newer than the runtime headers": (
        f"{PIP} nvidia-cuda-nvcc==13.2.78 nvidia-nvvm==13.2.78 nvidia-cuda-crt==13.2.78",
        "nvcc-cudart",
        "CUDA compiler and CUDA toolkit headers are incompatible",
    ),
    "link fixes missing": (
        'rm -f "$CH/lib64" "$CH/lib/libcudart.so"',
        "links",
        "cannot find -lcudart",
    ),
    # Measured: pip nvcc puts its own include folder first (-I in nvcc.profile), ahead of
    # CPATH, so this stray tree does not break the probe; the rule still names it.
    "stray CPATH to another include tree": (STRAY_HEADER, "no-stray-headers", None),
}


# Seeds that only swap pip wheels: the wheels, and the versions doctor reads from
# them, are the same on every distribution. They run on bookworm; trixie gets
# the seeds that touch paths (site-packages under its Python, links, CPATH).
WHEELS_ONLY = {"nvvm newer than nvcc", "nvcc newer than the runtime headers"}


# Seeds whose repair reinstalls the toolchain: provision's own compile probe then
# compiles and links again, so the doctor afterwards need not (a probe is ~17 s here).
# After the other repairs the probe's stamp still holds, and doctor compiles.
RECOMPILED_BY_REPAIR = WHEELS_ONLY


@pytest.mark.parametrize("seed", list(SEEDS))
def test_seeded_mismatch_is_diagnosed_then_repaired(lab_inventory, stack, ch, seed):
    if stack is TRIXIE and seed in WHEELS_ONLY:
        pytest.skip("a wheel-only seed: the same wheels as on bookworm, run there")
    script, rule, message = SEEDS[seed]
    seeded = stack.seeded
    assert sh(lab_inventory, seeded, f"CH={ch[seeded]}; {script}").returncode == 0
    # A seed that breaks no compile is found by the rules alone: no probe.
    code, report = doctor(lab_inventory, seeded, *([] if message else ["--no-probe"]))
    assert code == 2
    failing = {r["rule"]: r for r in report["rules"] if r["ok"] is False}
    assert rule in failing, (failing, report["verdict"])
    if message is None:
        assert "/usr/local/cuda-12.8/include" in failing[rule]["evidence"]
    else:
        assert not (report["probe"]["compile_ok"] and report["probe"]["link_ok"])
        assert message in report["probe"]["log"]
        assert any(message.split(";")[0] in f["line"] for f in report["findings"])

    code, doc = provision(lab_inventory, seeded)
    tasks = doc["containers"][0]["tasks"]
    assert code == 0, [t["msg"] for t in tasks if t["status"] == "failed"]
    probe = next(t for t in tasks if t["module"] == "compile_probe")
    recompiled = seed in RECOMPILED_BY_REPAIR
    assert probe["changed"] is recompiled, probe["msg"]
    code, report = doctor(lab_inventory, seeded, *(["--no-probe"] if recompiled else []))
    assert code == 0, report["verdict"]


def test_failing_server_reports_the_recognised_cause(lab_inventory, stack, provisioned):
    failing = json.dumps(
        {
            "server_extra_env": {"STANDIN_FAIL": "ptxas fatal : Unsupported gpu architecture"},
            "server_ready_timeout": 30,
        }
    )
    code, doc = provision(lab_inventory, stack.fresh, "-e", failing)
    assert code == 2
    task = next(t for t in doc["containers"][0]["tasks"] if t["module"] == "server")
    assert task["status"] == "failed"
    assert "Initialization failed. warmup error" in task["msg"]
    code, doc = provision(lab_inventory, stack.fresh)
    assert code == 0
