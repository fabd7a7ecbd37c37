"""The pct:// testinfra backend and verify's judging, without a lab: URLs, quoting, errors."""

from __future__ import annotations

import base64
import subprocess
from pathlib import Path

import pytest
import testinfra
import testinfra.backend
import yaml

from pctfleet import sh
from pctfleet.facts.kv import decode_fields
from pctfleet.infra import (
    SERVER_ENV,
    Gathered,
    verdict_cccl,
    verdict_health,
    verdict_jit,
    verdict_port,
    verdict_server_pid,
    verdict_toolchain,
)
from pctfleet.transport.base import (
    AuthFailed,
    CommandTimeout,
    ContainerStopped,
    NodeUnreachable,
    RunResult,
)
from pctfleet.transport.options import ConnectOptions
from pctfleet.transport.pct import MARKER, PctTarget
from pctfleet.verify import SETTINGS
from pctfleet.verify import backend as pct
from pctfleet.verify.runner import (
    CheckResult,
    _check_id,
    container_settings,
    host_spec,
    judge,
)

LAB_URL = (
    "pct://root@127.0.10.1:2222?container=200&identity=/k/id&known_hosts=/k/kh"
    "&accept_new=1&timeout=30&node=node1&server_port=30100"
)


def backend_for(url: str) -> pct.PctBackend:
    return testinfra.backend.get_backend(url)


# -- URLs -----------------------------------------------------------------------------


def test_full_url_sets_every_connection_option() -> None:
    spec = backend_for(LAB_URL).spec
    assert (spec.node, spec.address, spec.ctid, spec.key) == (
        "node1",
        "127.0.10.1",
        200,
        "node1/200",
    )
    assert spec.options == ConnectOptions(
        user="root",
        port=2222,
        identity="/k/id",
        known_hosts="/k/kh",
        accept_new_host_keys=True,
        connect_timeout=10.0,
        command_timeout=30.0,
    )
    assert dict(spec.settings) == {"server_port": "30100"}


def test_container_from_the_path_and_defaults() -> None:
    backend = backend_for("pct://pve1/201")
    assert backend.spec.ctid == 201 and backend.spec.options.user is None
    assert backend.spec.options.accept_new_host_keys is False
    assert backend.spec.options.command_timeout == pct.DEFAULT_TIMEOUT
    assert backend.get_pytest_id() == "pct://pve1/201"


def test_testinfra_identity_option_is_honoured() -> None:
    backend = testinfra.backend.get_backend("pct://pve1?container=200", ssh_identity_file="/k")
    assert backend.spec.options.identity == "/k"


@pytest.mark.parametrize(
    "url, fragment",
    [
        ("pct://pve1", "no container"),
        ("pct://pve1?container=abc", "container='abc'"),
        ("pct://pve1?container=200&identiy=/k", "unknown parameter 'identiy'"),
        ("pct://pve1:99999?container=200", "port='99999' is out of range"),
        ("pct://pve1?container=200&accept_new=maybe", "accept_new='maybe' must be 1 or 0"),
        ("pct://pve1?container=200&timeout=soon", "timeout='soon' is not a number"),
        ("pct://root:secret@pve1?container=200", "no passwords"),
    ],
)
def test_bad_urls_say_what_is_wrong(url: str, fragment: str) -> None:
    with pytest.raises(pct.PctUrlError) as caught:
        backend_for(url)
    assert fragment in str(caught.value)


def test_other_schemes_parse_as_before() -> None:
    host, kw = testinfra.backend.parse_hostspec("ssh://root@h?identity=x&timeout=3")
    assert host == "root@h" and kw == {"connection": "ssh", "timeout": "3"}


def test_several_hosts_become_several_backends_sorted_by_id() -> None:
    hosts = testinfra.get_hosts(["pct://n1/201", "pct://n1/200", "pct://n2/200"])
    assert sorted(h.backend.get_pytest_id() for h in hosts) == [
        "pct://n1/200",
        "pct://n1/201",
        "pct://n2/200",
    ]


def test_one_connection_per_node_and_options() -> None:
    a, b = backend_for("pct://n1/200").spec, backend_for("pct://n1/201").spec
    other = backend_for("pct://n1/200?identity=/other").spec
    try:
        assert pct.node_connection(a) is pct.node_connection(b)
        assert pct.node_connection(a) is not pct.node_connection(other)
    finally:
        pct.close_all()


# -- quoting: once, by testinfra's helper, then by the node's shell ---------------------------


class FakeTarget:
    """Records argv; answers like a container would."""

    def __init__(self, error: Exception | None = None) -> None:
        self.calls: list[tuple] = []
        self.error = error

    def run(self, argv, stdin=None, **_kw):  # noqa: ANN001
        self.calls.append((list(argv), stdin))
        if self.error is not None:
            raise self.error
        return RunResult(0, b"out\n", b"")

    def run_script(self, script, **_kw):  # noqa: ANN001
        return self.run(["/bin/sh", "-s", "--"], stdin=script.encode())


def with_target(target: FakeTarget, url: str = "pct://n1/200") -> pct.PctBackend:
    backend = backend_for(url)
    backend._target = target  # type: ignore[assignment]
    return backend


def test_args_are_quoted_once_into_sh_c() -> None:
    target = FakeTarget()
    result = with_target(target).run("ls -l %s %s", "a b; c", "$(x)")
    assert target.calls[0][0] == ["/bin/sh", "-c", "ls -l 'a b; c' '$(x)'"]
    assert result.rc == 0 and result.stdout == "out\n"


class FakeNode:
    node = "n1"
    target = type("T", (), {"user": "root"})()


def test_the_node_command_line_delivers_arguments_exactly(tmp_path: Path) -> None:
    # Stand in for the node: its login shell runs our line; `pct exec 200 --` runs the rest.
    command = backend_for("pct://n1/200").get_command("printf '%%s|' %s %s", "a b; c", "'q'")
    line = PctTarget(FakeNode(), 200).command_line(["/bin/sh", "-c", command])  # type: ignore[arg-type]
    script = f'pct() {{ shift 3; "$@"; }}\n{line}\n'
    out = subprocess.run(["sh", "-c", script], capture_output=True, check=True)
    assert out.stdout == MARKER + b"a b; c|'q'|"


def test_counting_a_hosts_calls_logs_in_nowhere() -> None:
    backend = backend_for("pct://n1/200")
    assert backend.calls == 0 and backend._target is None  # verify's count: no login for it


def test_run_script_sends_the_script_on_stdin() -> None:
    target = FakeTarget()
    with_target(target).run_script("echo $HOME")
    assert target.calls == [(["/bin/sh", "-s", "--"], b"echo $HOME")]


# -- errors: never a failed check ---------------------------------------------------------


@pytest.mark.parametrize(
    "error, status, sticky",
    [
        (ContainerStopped("n1/200", "container 200 is not running"), "ct-stopped", True),
        (NodeUnreachable("n1", "cannot reach 10.0.0.1:22"), "unreachable", True),
        (AuthFailed("n1", "authentication failed"), "unreachable", True),
        (CommandTimeout("n1/200", "no answer within 30s"), "timeout", False),
    ],
)
def test_transport_errors_map_to_container_unavailable(error, status, sticky) -> None:  # noqa: ANN001
    target = FakeTarget(error)
    backend = with_target(target)
    with pytest.raises(pct.ContainerUnavailable) as caught:
        backend.run("true")
    assert caught.value.status == status
    assert str(caught.value).startswith(status) and error.message in str(caught.value)
    with pytest.raises(pct.ContainerUnavailable):
        backend.run("true")
    # A lasting outcome answers at once: no second connect timeout per test.
    assert len(target.calls) == (1 if sticky else 2)


def test_the_reason_shows_when_it_is_more_precise() -> None:
    error = pct.ContainerUnavailable.from_transport(AuthFailed("n1", "denied"))
    assert str(error) == "unreachable [auth-failed]: n1: denied"


# -- verify's hosts, settings and judging ---------------------------------------------------


class Node:
    name = "pve1"
    address = "10.1.2.6"


def test_host_spec_round_trips_through_testinfra() -> None:
    options = ConnectOptions(
        user="root",
        port=2222,
        identity="/keys/a,b",
        known_hosts="/kh",
        accept_new_host_keys=True,
        command_timeout=60.0,
    )
    url = host_spec(Node(), 201, options, {"venv": "/opt/a,b", "server_port": "30101"})
    assert "," not in url  # testinfra splits --hosts on commas
    spec = backend_for(url).spec
    assert spec.key == "pve1/201" and spec.address == "10.1.2.6"
    assert spec.options == options
    assert dict(spec.settings) == {"venv": "/opt/a,b", "server_port": "30101"}


def test_settings_are_site_yml_defaults_under_inventory_vars() -> None:
    settings = container_settings({"server_port": 30100, "venv": "/srv/{{ 'v' }}"}, where="x")
    assert settings["server_port"] == "30100" and settings["venv"] == "/srv/v"
    assert settings["server_pidfile"] == "/run/pctfleet/sglang.pid"


def test_settings_defaults_are_the_playbooks() -> None:
    site = Path(__file__).resolve().parents[2] / "playbooks" / "site.yml"
    defaults = yaml.safe_load(site.read_text())[0]["defaults"]
    assert {k: str(defaults[k]) for k in SETTINGS} == SETTINGS


@pytest.mark.parametrize(
    "checks, status",
    [
        ([CheckResult("a", "passed"), CheckResult("b", "passed")], "passed"),
        ([CheckResult("a", "passed"), CheckResult("b", "failed", "x")], "failed"),
        ([CheckResult("a", "error", "boom")], "failed"),
        ([CheckResult("a", "error", "ct-stopped: ...", "ct-stopped")], "ct-stopped"),
        ([CheckResult("a", "error", "unreachable: ...", "unreachable")], "unreachable"),
        ([], "error"),
    ],
)
def test_a_container_passes_only_when_every_check_passed(checks, status) -> None:  # noqa: ANN001
    assert judge(checks)[0] == status


def test_check_ids_drop_only_the_host() -> None:
    assert _check_id("test_x[pct://pve-1/200]", "pct://pve-1/200") == "test_x"
    assert _check_id("test_y[pct://n/200-3]", "pct://n/200") == "test_y[3]"
    assert _check_id("test_z", "") == "test_z"


# -- the checks' verdicts on recorded facts --------------------------------------------------

FOLDERS = ["/root/.cache/flashinfer", "/ws/.cache/flashinfer"]
SERVER_SETTINGS = {**SETTINGS, "server_port": "30100"}


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def server(**fields: str) -> Gathered:
    text = "\n".join(f"{k}={v}" for k, v in fields.items())
    return Gathered.parse({"server": text}, FOLDERS, SERVER_SETTINGS)


MATCHED = """pip.cuda-toolkit=13.0.2
pip.nvidia-cuda-nvcc=13.0.88
pip.nvidia-nvvm=13.0.88
pip.nvidia-cuda-crt=13.0.88
pip.nvidia-cuda-runtime=13.0.96
pip.nvidia-cuda-cccl=13.0.85
pip.nvidia-curand=10.4.0.35
exists.curand_kernel=1
cuda_home=/opt/sglang/lib/python3.11/site-packages/nvidia/cu13
nvcc_version=13.0.88
ptxas_version=13.0.88
cicc_release=13.0.88
ptx_version=9.0
ptxas_max_ptx=9.0
cudart_version=13.0"""


def test_toolchain_matched_and_a_newer_cicc() -> None:
    assert verdict_toolchain(Gathered.parse({"toolchain": MATCHED}, [])).ok
    broken = MATCHED.replace("cicc_release=13.0.88", "cicc_release=13.2.78")
    verdict = verdict_toolchain(Gathered.parse({"toolchain": broken}, []))
    assert not verdict.ok and verdict.message.startswith("nvcc-cicc mismatch")


def test_toolchain_without_curand_headers_is_not_matched() -> None:
    # Measured on an H200: without curand_kernel.h flashinfer's prefill JIT fails.
    broken = MATCHED.replace("exists.curand_kernel=1\n", "")
    verdict = verdict_toolchain(Gathered.parse({"toolchain": broken}, []))
    assert not verdict.ok and verdict.message.startswith("curand-headers mismatch")
    assert "curand_kernel.h" in verdict.message


def test_toolchain_unknown_is_not_matched() -> None:
    verdict = verdict_toolchain(Gathered.parse({"toolchain": "venv=/opt/sglang"}, []))
    assert not verdict.ok


def test_cccl_tree_changed_since_the_overlay() -> None:
    manifest = b64('{"source": "/s", "cccl_version": "3.6.0", "tree_hash": "aaaa"}')
    same = Gathered.parse({"cccl": f"manifest={manifest}\ntree_hash=aaaa\nversion=3.6.0"}, [])
    changed = Gathered.parse({"cccl": f"manifest={manifest}\ntree_hash=bbbb"}, [])
    assert verdict_cccl(same).ok
    assert "changed since the overlay" in verdict_cccl(changed).message
    assert not verdict_cccl(Gathered.parse({"cccl": "dst=/x"}, [])).ok


def test_jit_cache_stale_names_the_folder() -> None:
    stale = Gathered.parse({"jit": "toolchain=new\nstamp0=new\nstamp1=old"}, FOLDERS)
    verdict = verdict_jit(stale)
    assert not verdict.ok and "/ws/.cache/flashinfer: built for old" in verdict.message


def test_server_pid_needs_flashinfer_and_the_environment() -> None:
    argv = b64("python\0-m\0sglang.launch_server\0--attention-backend\0flashinfer\0")
    env = b64("CUDA_HOME=/ch\0FLASHINFER_WORKSPACE_BASE=/ws\0")
    assert verdict_server_pid(server(pid="42", state="S", cmdline=argv, environ=env)).ok
    triton = b64("python\0--attention-backend\0triton\0")
    assert (
        "without --attention-backend"
        in verdict_server_pid(server(pid="42", state="S", cmdline=triton, environ=env)).message
    )
    no_env = verdict_server_pid(server(pid="42", state="S", cmdline=argv, environ=b64("A=1")))
    assert "CUDA_HOME not in its environment" in no_env.message
    assert "stale PID file" in verdict_server_pid(server(pid="42")).message
    drift = server(pid="42", state="S", cmdline=argv, environ=env, file_CUDA_HOME=b64("/other"))
    assert "the env file says /other" in verdict_server_pid(drift).message


def test_env_file_values_are_read_the_way_sh_sources_them(tmp_path: Path) -> None:
    env_file = tmp_path / "sglang.env"
    env_file.write_text("# written by pctfleet\nCUDA_HOME='/opt/a b'\nPATH='/nowhere'\n")
    script = sh.library(["envfile"]) + f"pctfleet_env_values {env_file} {' '.join(SERVER_ENV)}\n"
    out = subprocess.run(["sh", "-c", script], capture_output=True, text=True).stdout
    assert decode_fields(out) == {"file_CUDA_HOME": b64("/opt/a b")}


def test_port_must_be_held_by_the_server() -> None:
    assert verdict_port(server(pid="42", listen="00000000:7594 42 42")).ok
    assert verdict_port(server(pid="42", listen="00000000:7594 77 42")).ok  # its child
    held = verdict_port(server(pid="42", listen="00000000:7594 77 77"))
    assert not held.ok and "held by pid 77" in held.message
    assert "nothing listens" in verdict_port(server(pid="42")).message


def test_health_reports_status_and_body() -> None:
    assert verdict_health(server(health="200")).ok
    verdict = verdict_health(server(health="503", health_body="starting"))
    assert verdict.message == "GET http://127.0.0.1:30100/health -> 503 starting"
