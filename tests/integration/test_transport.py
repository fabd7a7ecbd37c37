"""The SSH -> pct transport and `pctfleet exec`, against the real lab."""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import paramiko
import pytest

from pctfleet.transport.base import ContainerMissing, ContainerStopped, TransferError
from pctfleet.transport.files import pull, push
from pctfleet.transport.options import ConnectOptions
from pctfleet.transport.pct import PctTarget
from pctfleet.transport.ssh import NodeConnection

pytestmark = pytest.mark.lab


@pytest.fixture(scope="module")
def info(lab):
    return lab.up(nodes=2, containers=2)


def options(info, **extra) -> ConnectOptions:
    return ConnectOptions(identity=str(info.identity), known_hosts=str(info.known_hosts), **extra)


def target(info, node: int = 0, ctid: int = 200, **extra) -> PctTarget:
    spec = info.nodes[node]
    return PctTarget(NodeConnection(spec.name, spec.address, options(info, **extra)), ctid)


def pctfleet(*args: str, stdin: bytes = b"", timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pctfleet", *args], input=stdin, capture_output=True, timeout=timeout
    )


# The lab's base containers; the lab may hold more (other suites and inits) on node1.
BASE = "node1/200,node1/201,node2/200,node2/201"


def exec_args(info, *more: str) -> list[str]:
    limit = [] if "--limit" in more else ["--limit", BASE]
    return ["exec", "-i", str(info.inventory), *limit, *more]


@pytest.mark.parametrize("code", [0, 3, 255])
def test_exit_codes_pass_through(info, code):
    proc = pctfleet(*exec_args(info, "--limit", "node1/200", "--", "sh", "-c", f"exit {code}"))
    assert proc.returncode == code, proc.stderr


def test_command_exiting_255_is_not_mistaken_for_pct(info):
    result = target(info).run(["sh", "-c", "echo own >&2; exit 255"])
    assert result.exit_code == 255
    assert result.stderr == b"own\n"


def test_stdin_reaches_the_command(info):
    proc = pctfleet(
        *exec_args(info, "--limit", "node2/201", "--", "sha256sum"), stdin=b"abc" * 1000
    )
    assert proc.returncode == 0
    assert proc.stdout.split()[0].decode() == hashlib.sha256(b"abc" * 1000).hexdigest()


def test_binary_output_survives(info):
    proc = pctfleet(*exec_args(info, "--limit", "node1/200", "--", "printf", "\\377\\000\\001\\n"))
    assert proc.stdout == b"\xff\x00\x01\n"
    as_json = pctfleet(*exec_args(info, "--limit", "node1/200", "--json", "--", "printf", "\\377"))
    record = json.loads(as_json.stdout)["results"][0]
    assert record["stdout_base64"] == "/w=="


def test_metacharacters_are_never_interpreted(info):
    name = "a b; $(touch pwned) `touch pwned2` * --x"
    work = "/tmp/meta-test"
    target(info).run(["rm", "-rf", work])
    target(info).run(["mkdir", work])
    proc = pctfleet(*exec_args(info, "--limit", "node1/200", "--", "touch", f"{work}/{name}"))
    assert proc.returncode == 0, proc.stderr
    listing = target(info).run(["ls", "-A", work]).stdout.decode().splitlines()
    assert listing == [name]
    assert target(info).run(["ls", "/root/pwned", "/pwned"]).exit_code != 0


def test_several_containers_in_parallel_prefix_output(info):
    proc = pctfleet(*exec_args(info, "--", "hostname"))
    lines = sorted(proc.stdout.decode().splitlines())
    assert [line.split(" | ")[0] for line in lines] == [
        "node1/200",
        "node1/201",
        "node2/200",
        "node2/201",
    ]
    assert proc.returncode == 0


def test_missing_container_is_its_own_outcome(info):
    with pytest.raises(ContainerMissing, match="999 does not exist"):
        target(info, ctid=999).run(["true"])
    proc = pctfleet(
        "exec",
        "--host",
        info.nodes[0].address,
        "--ct",
        "999",
        "--identity",
        str(info.identity),
        "--known-hosts",
        str(info.known_hosts),
        "--json",
        "--",
        "true",
    )
    record = json.loads(proc.stdout)["results"][0]
    assert record["status"] == "ct-missing" and record["exit_code"] is None


def test_stopped_container_is_its_own_outcome(lab, info):
    lab.stop_container("node2", 201)
    try:
        with pytest.raises(ContainerStopped):
            target(info, node=1, ctid=201).run(["true"])
        proc = pctfleet(*exec_args(info, "--json", "--", "true"))
        statuses = {r["container"]: r["status"] for r in json.loads(proc.stdout)["results"]}
        assert statuses == {
            "node1/200": "ok",
            "node1/201": "ok",
            "node2/200": "ok",
            "node2/201": "ct-stopped",
        }
        assert proc.returncode == 2
    finally:
        lab.start_container("node2", 201)


def test_node_down_is_unreachable(lab, info):
    lab.kill_sshd("node2")
    try:
        proc = pctfleet(*exec_args(info, "--json", "--", "true"))
        statuses = {r["container"]: r["status"] for r in json.loads(proc.stdout)["results"]}
        assert statuses["node2/200"] == "unreachable" and statuses["node1/200"] == "ok"
        assert proc.returncode == 3
    finally:
        lab.start_sshd("node2")


def test_hanging_node_times_out_within_the_limit(lab, info):
    with lab.hang("node1"):
        started = time.monotonic()
        proc = pctfleet(
            *exec_args(
                info, "--limit", "node1/200", "--connect-timeout", "2", "--json", "--", "true"
            )
        )
        elapsed = time.monotonic() - started
    record = json.loads(proc.stdout)["results"][0]
    assert record["status"] == "unreachable"
    assert "node1" in record["message"] and "no SSH answer within 2s" in record["message"]
    assert elapsed < 2 + 5  # the limit plus interpreter start-up


def test_command_timeout_fires(info):
    started = time.monotonic()
    proc = pctfleet(
        *exec_args(info, "--limit", "node1/200", "--timeout", "1.5", "--json", "--", "sleep", "30")
    )
    record = json.loads(proc.stdout)["results"][0]
    assert record["status"] == "timeout"
    assert time.monotonic() - started < 10


def test_unknown_host_key_is_refused_then_accept_new_records_it(info, tmp_path):
    known = tmp_path / "known_hosts"
    spec = info.nodes[0]
    common = [
        "--host",
        spec.address,
        "--ct",
        "200",
        "--identity",
        str(info.identity),
        "--known-hosts",
        str(known),
        "--json",
    ]
    refused = pctfleet("exec", *common, "--", "true")
    record = json.loads(refused.stdout)["results"][0]
    assert record["reason"] == "hostkey-unknown"
    assert "--accept-new-host-keys" in record["message"]
    assert not known.exists()
    accepted = pctfleet("exec", *common, "--accept-new-host-keys", "--", "true")
    assert accepted.returncode == 0
    assert spec.address in known.read_text()
    again = pctfleet("exec", *common, "--", "true")
    assert again.returncode == 0


def test_changed_host_key_is_always_refused(info, tmp_path):
    spec = info.nodes[0]
    impostor = paramiko.Ed25519Key.from_private_key_file(str(info.identity))
    known = tmp_path / "known_hosts"
    known.write_text(f"{spec.address} ssh-ed25519 {impostor.get_base64()}\n")
    for extra in ([], ["--accept-new-host-keys"]):
        proc = pctfleet(
            "exec",
            "--host",
            spec.address,
            "--ct",
            "200",
            "--identity",
            str(info.identity),
            "--known-hosts",
            str(known),
            "--json",
            *extra,
            "--",
            "true",
        )
        record = json.loads(proc.stdout)["results"][0]
        assert record["reason"] == "hostkey-changed"
        assert record["message"].count("SHA256:") == 2
        assert record["message"].startswith(spec.address)
        assert proc.returncode == 3


def test_wrong_key_is_auth_failed(info, tmp_path):
    key = tmp_path / "other"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    proc = pctfleet(
        "exec",
        "--host",
        info.nodes[0].address,
        "--ct",
        "200",
        "--identity",
        str(key),
        "--known-hosts",
        str(info.known_hosts),
        "--json",
        "--",
        "true",
    )
    assert json.loads(proc.stdout)["results"][0]["reason"] == "auth-failed"


def _accepted_logins(info, node: int) -> int:
    log = Path(info.state_dir) / f"node{node + 1}" / "sshd.log"
    return log.read_text(errors="replace").count("Accepted publickey")


def test_twenty_concurrent_commands_use_one_connection_per_node(info):
    before = [_accepted_logins(info, 0), _accepted_logins(info, 1)]
    nodes = [NodeConnection(s.name, s.address, options(info)) for s in info.nodes]
    targets = [PctTarget(nodes[i % 2], 200 + (i // 2) % 2) for i in range(20)]
    results: list = [None] * 20

    def work(index: int) -> None:
        results[index] = targets[index].run(["sh", "-c", "sleep 1; echo done"])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(20)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - started
    assert all(r.stdout == b"done\n" for r in results)
    assert [n.connections_opened for n in nodes] == [1, 1]
    after = [_accepted_logins(info, 0), _accepted_logins(info, 1)]
    assert [a - b for a, b in zip(after, before, strict=True)] == [1, 1]
    assert elapsed < 8  # concurrent, not 20 x 1 s in a row
    for node in nodes:
        node.close()


def test_past_the_session_cap_a_second_connection_opens(info):
    node = NodeConnection(info.nodes[0].name, info.nodes[0].address, options(info))
    targets = [PctTarget(node, 200) for _ in range(12)]
    threads = [threading.Thread(target=t.run, args=(["sleep", "1"],)) for t in targets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert node.connections_opened == 2
    node.close()


def test_fifty_megabytes_stream_with_bounded_memory(info, tmp_path):
    def peak_rss_kb(megabytes: int) -> tuple[int, int]:
        report = tmp_path / f"rss-{megabytes}"
        argv = exec_args(info, "--limit", "node1/200", "--", "head", "-c", f"{megabytes}M")
        argv.append("/dev/zero")
        code = (
            "import resource, sys\n"
            "from pctfleet.cli.main import _invoke, app\n"
            f"rc = _invoke(app, {argv!r})\n"
            "peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
            f"open({str(report)!r}, 'w').write(str(peak))\n"
            "sys.exit(rc)\n"
        )
        proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
        received = 0
        while chunk := proc.stdout.read(1 << 20):
            received += len(chunk)
        assert proc.wait() == 0
        return received, int(report.read_text())

    small_bytes, small_rss = peak_rss_kb(1)
    big_bytes, big_rss = peak_rss_kb(50)
    assert (small_bytes, big_bytes) == (1 << 20, 50 << 20)
    assert big_rss - small_rss < 20 * 1024, f"peak grew {big_rss - small_rss} KiB for 49 MiB more"


def test_push_twenty_megabytes_is_exact_and_atomic(info, tmp_path):
    payload = os.urandom(20 << 20)
    local = tmp_path / "payload.bin"
    local.write_bytes(payload)
    ct = target(info, node=1, ctid=200)
    push(ct, local, "/root/payload.bin", mode="0600")
    back = pull(ct, "/root/payload.bin", tmp_path / "back.bin")
    assert back.read_bytes() == payload
    assert ct.run(["stat", "-c", "%a %U", "/root/payload.bin"]).stdout == b"600 root\n"

    class Truncated(io.RawIOBase):
        """A source that ends early, as if the controller died mid-transfer."""

        def __init__(self) -> None:
            self.sent = 0

        def readable(self) -> bool:
            return True

        def read(self, size: int = -1) -> bytes:
            if self.sent >= 5 << 20:
                return b""
            self.sent += 1 << 20
            return b"x" * (1 << 20)

    from pctfleet.transport import files

    with pytest.raises(TransferError, match="size mismatch"):
        files._push_stream(
            ct,
            Truncated(),
            "/root/payload.bin",
            "0600",
            "",
            20 << 20,
            hashlib.sha256(payload).hexdigest(),
            60,
        )
    digest = ct.run(["sha256sum", "/root/payload.bin"]).stdout.split()[0].decode()
    assert digest == hashlib.sha256(payload).hexdigest()
    leftovers = ct.run(["sh", "-c", "ls -A /root | grep pctfleet-push || true"]).stdout
    assert leftovers == b""


def test_ssh_config_proxyjump_reaches_a_node_through_another(info, tmp_path):
    first, second = info.nodes[0], info.nodes[1]
    config = tmp_path / "ssh_config"
    config.write_text(
        f"Host {second.address}\n  ProxyJump root@{first.address}\n  IdentityFile {info.identity}\n"
        f"Host {first.address}\n  IdentityFile {info.identity}\n"
    )
    before = _accepted_logins(info, 0), _accepted_logins(info, 1)
    options = ConnectOptions(known_hosts=str(info.known_hosts), ssh_config=str(config))
    node = NodeConnection(second.name, second.address, options)
    assert PctTarget(node, 200).run(["hostname"]).stdout == b"n2-ct200\n"
    after = _accepted_logins(info, 0), _accepted_logins(info, 1)
    assert (after[0] - before[0], after[1] - before[1]) == (1, 1)  # the jump, then the node
    node.close()


def test_a_second_connection_past_the_cap_reuses_the_jump_login(info, tmp_path):
    first, second = info.nodes[0], info.nodes[1]
    config = tmp_path / "ssh_config"
    config.write_text(f"Host {second.address}\n  ProxyJump root@{first.address}\n")
    before = _accepted_logins(info, 0), _accepted_logins(info, 1)
    options = ConnectOptions(
        identity=str(info.identity), known_hosts=str(info.known_hosts), ssh_config=str(config)
    )
    node = NodeConnection(second.name, second.address, options)
    threads = [
        threading.Thread(target=PctTarget(node, 200).run, args=(["sleep", "1"],)) for _ in range(12)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    node.close()
    after = _accepted_logins(info, 0), _accepted_logins(info, 1)
    assert node.connections_opened == 2
    assert (after[0] - before[0], after[1] - before[1]) == (1, 2)  # one jump, two node logins
