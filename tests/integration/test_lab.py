"""The local lab, checked from the outside with the OpenSSH client.

Every assertion is about a real outcome: what `ssh root@node pct ...` prints
and returns, whether a port answers, whether a process is alive.
"""

from __future__ import annotations

import os
import shlex
import socket
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from pctfleet.lab import Lab, LabError
from pctfleet.lab.nodes import ROOT_BASHRC, host_root_bashrc
from pctfleet.lab.rootfs import CACHE_DIR, read_mirror
from pctfleet.lab.system import listening, pid_alive

pytestmark = pytest.mark.lab

USAGE_EXEC = "pct exec <vmid> [<extra-args>] [OPTIONS]"


def ssh(
    lab: Lab, node: str, *remote: str, stdin: str | None = None, timeout: float = 30
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*lab.ssh_args(node), *remote],
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def pids(lab: Lab) -> dict[str, int | None]:
    found: dict[str, int | None] = {}
    for node in lab.status().nodes:
        found[node.name] = node.sshd_pid
        for ct in node.containers:
            out = subprocess.run(
                ["lxc-info", "-n", ct.lxc_name, "-P", str(lab.lxcpath), "-p", "-H"],
                capture_output=True,
                text=True,
                check=False,
            ).stdout.strip()
            found[ct.lxc_name] = int(out) if out.isdigit() else None
    return found


# --- up, files, status ---------------------------------------------------------------


def test_up_twice_is_fast_and_changes_nothing(lab: Lab) -> None:
    before = pids(lab)
    files = [lab.inventory, lab.state_file, lab.known_hosts, lab.identity]
    mtimes = [f.stat().st_mtime_ns for f in files]
    started = time.monotonic()
    info = lab.up(nodes=2, containers=2)
    assert time.monotonic() - started < 2.0
    assert pids(lab) == before
    assert all(before.values())
    assert [f.stat().st_mtime_ns for f in files] == mtimes
    assert [n.name for n in info.nodes][:2] == ["node1", "node2"]


def test_written_files(lab: Lab) -> None:
    info = lab.info
    inventory = yaml.safe_load(info.inventory.read_text())
    assert inventory["defaults"] == {
        "user": "root",
        "port": 22,
        "identity": str(info.identity),
        "known_hosts": str(info.known_hosts),
    }
    assert inventory["nodes"]["node1"]["address"] == "127.0.10.1"
    assert inventory["nodes"]["node2"]["containers"][201] == {
        "name": "n2-ct201",
        "vars": {"server_port": 30201},
    }
    assert inventory["groups"]["lab"]["nodes"][:2] == ["node1", "node2"]
    assert info.inventory.read_text().startswith("# pctfleet lab inventory")
    assert info.identity.stat().st_mode & 0o777 == 0o600
    assert info.identity.with_suffix(".pub").exists()
    hosts = {line.split()[0] for line in info.known_hosts.read_text().splitlines()}
    assert {n.address for n in info.nodes} <= hosts


def test_status_reports_everything_running(lab: Lab) -> None:
    status = lab.status()
    assert status.exists and status.healthy
    node1 = status.nodes[0]
    assert (node1.name, node1.address, node1.port) == ("node1", "127.0.10.1", 22)
    assert node1.sshd_running and pid_alive(node1.sshd_pid)
    assert [(c.ctid, c.state) for c in node1.containers][:2] == [
        (200, "running"),
        (201, "running"),
    ]


def test_each_node_is_its_own_host(lab: Lab) -> None:
    one = ssh(lab, "node1", "hostname; cat /etc/pve/lxc/200.conf; command -v pct")
    two = ssh(lab, "node2", "hostname")
    assert one.returncode == 0, one.stderr
    lines = one.stdout.splitlines()
    assert lines[0] == "node1"
    assert "hostname: n1-ct200" in lines
    assert lines[-1] == "/usr/local/sbin/pct"
    assert two.stdout.strip() == "node2"


@pytest.mark.skipif(not host_root_bashrc().is_file(), reason="the host's root has no .bashrc")
def test_root_on_a_node_has_a_proxmox_nodes_bashrc(lab: Lab) -> None:
    """sshd runs every command through bash, which reads root's ~/.bashrc first: on a
    node it is a fresh Proxmox node's, not whatever the lab host's root set up there."""
    out = ssh(lab, "node1", 'cat "$HOME/.bashrc"')
    assert out.returncode == 0, out.stderr
    assert out.stdout == ROOT_BASHRC


@pytest.mark.skipif(not host_root_bashrc().is_file(), reason="the host's root has no .bashrc")
def test_up_gives_an_older_labs_node_its_own_bashrc(lab: Lab) -> None:
    """A node whose sshd an older lab started (root's ~/.bashrc not bound over):
    `up` starts that sshd again, and the node's commands read the node's own file."""
    node = lab._node(1)
    before = node.sshd_pid()
    umount = ["nsenter", "-t", str(before), "-m", "umount", str(host_root_bashrc())]
    subprocess.run(umount, check=True)
    assert ssh(lab, "node1", 'cat "$HOME/.bashrc"').stdout != ROOT_BASHRC  # an older lab's
    lab.up(nodes=2, containers=2)
    assert node.sshd_pid() != before
    assert ssh(lab, "node1", 'cat "$HOME/.bashrc"').stdout == ROOT_BASHRC


def test_pct_is_not_on_the_host() -> None:
    assert not Path("/usr/local/sbin/pct").exists()


def test_sshd_log_records_connections(lab: Lab) -> None:
    log = lab.state_dir / "node1" / "sshd.log"
    before = log.read_text(errors="replace").count("Connection from")
    assert ssh(lab, "node1", "true").returncode == 0
    after = log.read_text(errors="replace")
    assert after.count("Connection from") == before + 1
    assert "Accepted publickey for root" in after


def test_host_key_checking_is_strict(lab: Lab, tmp_path: Path) -> None:
    wrong = tmp_path / "known_hosts"
    lines = lab.known_hosts.read_text().splitlines()
    # node2's key under node1's address: the client must refuse.
    wrong.write_text(f"127.0.10.1 {' '.join(lines[1].split()[1:])}\n")
    args = [a if "UserKnownHostsFile" not in a else f"UserKnownHostsFile={wrong}"
            for a in lab.ssh_args("node1")]  # fmt: skip
    res = subprocess.run([*args, "true"], capture_output=True, text=True, timeout=30)
    assert res.returncode == 255
    assert "Host key verification failed" in res.stderr


# --- pct exec ------------------------------------------------------------------------


def test_exec_runs_in_the_container(lab: Lab) -> None:
    res = ssh(lab, "node1", "pct", "exec", "200", "--", "hostname")
    assert (res.returncode, res.stdout) == (0, "n1-ct200\n")


@pytest.mark.parametrize("code", [0, 3])
def test_exec_passes_exit_codes(lab: Lab, code: int) -> None:
    res = ssh(lab, "node1", "pct", "exec", "200", "--", "sh", "-c", f"'exit {code}'")
    assert res.returncode == code


def test_exec_passes_stdin_and_stderr(lab: Lab) -> None:
    res = ssh(lab, "node2", "pct exec 201 -- sh -c 'cat; echo oops >&2'", stdin="piped\n")
    assert (res.returncode, res.stdout, res.stderr) == (0, "piped\n", "oops\n")


def test_exec_environment_is_clean(lab: Lab) -> None:
    res = ssh(lab, "node1", "pct", "exec", "200", "--", "sh", "-c", "'echo $HOME:$PATH'")
    assert (
        res.stdout.strip() == "/root:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    )


def test_exec_unknown_container(lab: Lab) -> None:
    res = ssh(lab, "node1", "pct", "exec", "999", "--", "true")
    assert res.returncode == 255
    assert res.stderr.strip() == "Configuration file 'nodes/node1/lxc/999.conf' does not exist"


def test_exec_without_double_dash(lab: Lab) -> None:
    res = ssh(lab, "node1", "pct", "exec", "200", "ls", "-la")
    assert res.returncode == 255
    lines = res.stderr.splitlines()
    assert lines[0] == "Unknown option: la"
    assert lines[-1] == USAGE_EXEC


@pytest.mark.parametrize("bad", ["abc", "20x", "-1"])
def test_ctid_must_be_an_integer(lab: Lab, bad: str) -> None:
    res = ssh(lab, "node1", "pct", "status", "--", bad)
    assert res.returncode == 255
    assert "400 Parameter verification failed." in res.stderr
    assert res.stderr.splitlines()[-1] == "pct status <vmid> [OPTIONS]"


# --- status, list, start, stop ---------------------------------------------------------


def test_status_and_list(lab: Lab) -> None:
    status = ssh(lab, "node1", "pct", "status", "200")
    assert (status.returncode, status.stdout) == (0, "status: running\n")
    listing = ssh(lab, "node1", "pct", "list")
    assert listing.returncode == 0
    lines = listing.stdout.splitlines()
    # Real pct: printf("%-10s %-10s %-12s %-20s\n", ...), trailing blanks included.
    assert lines[0] == f"{'VMID':<10} {'Status':<10} {'Lock':<12} {'Name':<20}"
    assert lines[1] == f"{'200':<10} {'running':<10} {'':<12} {'n1-ct200':<20}"
    assert lines[2] == f"{'201':<10} {'running':<10} {'':<12} {'n1-ct201':<20}"


def test_status_unknown_container(lab: Lab) -> None:
    res = ssh(lab, "node2", "pct", "status", "777")
    assert res.returncode == 255
    assert res.stderr.strip() == "Configuration file 'nodes/node2/lxc/777.conf' does not exist"


def test_stopped_container(lab: Lab) -> None:
    lab.stop_container("node2", 200)
    try:
        assert lab.status().nodes[1].containers[0].state == "stopped"
        status = ssh(lab, "node2", "pct", "status", "200")
        assert (status.returncode, status.stdout) == (0, "status: stopped\n")
        exec_ = ssh(lab, "node2", "pct", "exec", "200", "--", "true")
        assert (exec_.returncode, exec_.stderr) == (255, "container '200' not running!\n")
        stop = ssh(lab, "node2", "pct", "stop", "200")
        assert (stop.returncode, stop.stderr) == (255, "CT 200 not running\n")
        listing = ssh(lab, "node2", "pct", "list").stdout.splitlines()
        assert listing[1].split() == ["200", "stopped", "n2-ct200"]
    finally:
        lab.start_container("node2", 200)
    assert ssh(lab, "node2", "pct", "exec", "200", "--", "true").returncode == 0


def test_pct_stop_and_start(lab: Lab) -> None:
    try:
        assert ssh(lab, "node1", "pct", "stop", "201").returncode == 0
        assert ssh(lab, "node1", "pct", "status", "201").stdout == "status: stopped\n"
    finally:
        start = ssh(lab, "node1", "pct", "start", "201")
    assert start.returncode == 0, start.stderr
    assert ssh(lab, "node1", "pct", "exec", "201", "--", "true").returncode == 0
    again = ssh(lab, "node1", "pct", "start", "201")
    assert (again.returncode, again.stderr) == (255, "CT 201 already running\n")


# --- push and pull -----------------------------------------------------------------------


def test_push_and_pull_round_trip(lab: Lab, tmp_path: Path) -> None:
    src = tmp_path / "payload"
    src.write_bytes(os.urandom(300_000))
    push = ssh(lab, "node1", "pct", "push", "200", str(src), "/root/payload",
               "--perms", "640", "--user", "nobody")  # fmt: skip
    assert (push.returncode, push.stderr) == (0, "")
    stat = ssh(lab, "node1", "pct", "exec", "200", "--", "stat", "-c", "%a:%U:%s", "/root/payload")
    assert stat.stdout.strip() == "640:nobody:300000"
    back = tmp_path / "back"
    pull = ssh(lab, "node1", "pct", "pull", "200", "/root/payload", str(back))
    assert (pull.returncode, pull.stderr) == (0, "")
    assert back.read_bytes() == src.read_bytes()


def test_push_of_a_missing_source_exits_zero(lab: Lab) -> None:
    res = ssh(lab, "node1", "pct", "push", "200", "/nonexistent/file", "/root/x")
    assert res.returncode == 0
    assert res.stderr == "failed to open /nonexistent/file for reading\n"


def test_push_with_an_unknown_user_exits_zero(lab: Lab, tmp_path: Path) -> None:
    src = tmp_path / "f"
    src.write_text("x")
    res = ssh(lab, "node1", "pct", "push", "200", str(src), "/root/f", "--user", "nosuchuser")
    assert (res.returncode, res.stderr) == (0, "failed to get uid for: nosuchuser\n")


def test_pull_of_a_missing_file_exits_zero(lab: Lab, tmp_path: Path) -> None:
    res = ssh(lab, "node1", "pct", "pull", "200", "/root/nonexistent", str(tmp_path / "out"))
    assert res.returncode == 0
    assert res.stderr == "failed to open /root/nonexistent: No such file or directory\n"


# --- faults ------------------------------------------------------------------------------


def test_kill_sshd_refuses_connections_and_drops_sessions(lab: Lab) -> None:
    log = lab.state_dir / "node2" / "sshd.log"
    started_before = log.read_text(errors="replace").count("Starting session: command")
    session = subprocess.Popen(
        [*lab.ssh_args("node2"), "sleep", "60"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    # Wait until the session is really established before killing.
    assert _wait(
        lambda: log.read_text(errors="replace").count("Starting session: command") > started_before
    )
    try:
        lab.kill_sshd("node2")
        assert session.wait(timeout=10) == 255
        res = ssh(lab, "node2", "true")
        assert res.returncode == 255
        assert "Connection refused" in res.stderr
        assert not lab.status().nodes[1].sshd_running
    finally:
        session.kill()
        lab.start_sshd("node2")
    assert ssh(lab, "node2", "true").returncode == 0


def test_hang_sends_no_banner(lab: Lab) -> None:
    with lab.hang("node1"):
        assert lab.status().nodes[0].relay == "hang"
        with socket.create_connection(("127.0.10.1", 22), timeout=5) as conn:
            conn.settimeout(2.0)
            with pytest.raises(TimeoutError):
                conn.recv(64)
    assert lab.status().nodes[0].relay is None
    res = ssh(lab, "node1", "true")
    assert res.returncode == 0, res.stderr


def _banner_seconds() -> float:
    started = time.monotonic()
    with socket.create_connection(("127.0.10.1", 22), timeout=10) as conn:
        conn.settimeout(10)
        assert conn.recv(64).startswith(b"SSH-2.0-")
    return time.monotonic() - started


def test_latency_delays_each_round_trip(lab: Lab) -> None:
    baseline = min(_banner_seconds() for _ in range(3))
    # Minimums of two: a busy machine adds noise only upwards.
    plain = min(_timed(lambda: ssh(lab, "node1", "true")) for _ in range(2))
    with lab.latency("node1", 250):
        assert lab.status().nodes[0].relay == "delay"
        # The banner comes through the relay, held 250 ms (the relay's own clock starts at
        # accept, so the whole wait can be a hair under baseline + 250 ms).
        assert _banner_seconds() >= max(baseline, 0.24)
        slow = min(_timed(lambda: ssh(lab, "node1", "true")) for _ in range(2))
        res = ssh(lab, "node1", "pct", "exec", "200", "--", "hostname")
        assert res.stdout == "n1-ct200\n"
    # A full SSH login is several round trips, each now at least 2 x 250 ms.
    assert slow >= plain + 0.5
    assert ssh(lab, "node1", "true").returncode == 0


def _timed(action) -> float:  # type: ignore[no-untyped-def]
    started = time.monotonic()
    res = action()
    assert res.returncode == 0, res.stderr
    return time.monotonic() - started


def _wait(check, timeout: float = 10.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return False


# --- a second lab: grow it, take it down, bring it back ---------------------------------


def test_up_grows_and_down_removes_only_what_it_started(lab: Lab, tmp_path: Path) -> None:
    other = Lab(tmp_path / "lab2", address_base="127.0.11")
    try:
        first = other.up(nodes=1, containers=1)
        assert [(n.address, n.containers) for n in first.nodes] == [("127.0.11.1", [200])]
        sshd = other.status().nodes[0].sshd_pid
        grown = other.up(nodes=2, containers=2)
        assert [n.containers for n in grown.nodes] == [[200, 201], [200, 201]]
        assert other.status().nodes[0].sshd_pid == sshd
        assert other.status().healthy
        res = ssh(other, "node2", "pct", "exec", "201", "--", "hostname")
        assert res.stdout == "n2-ct201\n"
        # Same LXC names as the main lab, kept apart by their LXC path.
        status = other.status()
    finally:
        other.down()
    assert not (tmp_path / "lab2").exists()
    assert not pid_alive(sshd)
    assert not listening("127.0.11.1", 22)
    for node in status.nodes:
        for ct in node.containers:
            info = subprocess.run(
                ["lxc-info", "-n", ct.lxc_name, "-P", str(tmp_path / "lab2" / "lxc"), "-s"],
                capture_output=True,
                text=True,
            )
            assert "RUNNING" not in info.stdout
    assert (CACHE_DIR / "bookworm" / "usr/bin/python3").exists()
    assert lab.status().healthy  # the main lab was not touched
    # And a fresh cycle on the same directory is clean.
    again = other.up(nodes=1, containers=1)
    assert ssh(other, "node1", "pct", "status", "200").stdout == "status: running\n"
    assert again.nodes[0].containers == [200]
    other.down()
    assert not (tmp_path / "lab2").exists()
    other.down()  # a second down is a no-op


def test_bad_arguments_are_lab_errors(lab: Lab) -> None:
    with pytest.raises(LabError):
        Lab(Path("/tmp/never"), address_base="10.1.2")
    with pytest.raises(LabError, match="no node"):
        lab.stop_container("node99", 200)


def test_mirror_comes_from_apt() -> None:
    assert read_mirror().startswith(("http://", "https://"))


def test_missing_packages_say_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    from pctfleet.lab import system

    monkeypatch.setattr(system, "which", lambda tool: None if tool == "debootstrap" else tool)
    with pytest.raises(LabError, match="apt-get install -y openssh-server lxc debootstrap"):
        system.check_host()


# --- flavours: trixie and systemd containers -------------------------------------------

FLAVOURS = [("trixie", "minimal"), ("bookworm", "systemd"), ("trixie", "systemd")]


def in_ct(lab: Lab, where: tuple[str, int], *cmd: str, timeout: float = 60) -> str:
    node, ctid = where
    # ssh hands the remote words to a shell: quote them.
    remote = shlex.join(["pct", "exec", str(ctid), "--", *cmd])
    res = ssh(lab, node, remote, timeout=timeout)
    assert res.returncode == 0, (cmd, res.stderr)
    return res.stdout.strip()


def boot_state(lab: Lab, where: tuple[str, int]) -> str:
    node, ctid = where
    res = ssh(lab, node, "pct", "exec", str(ctid), "--",
              "systemctl", "is-system-running", "--wait", timeout=120)  # fmt: skip
    if res.stdout.strip() != "running":
        failed = ssh(lab, node, "pct", "exec", str(ctid), "--", "systemctl", "--failed")
        return f"{res.stdout.strip()}: {failed.stdout}"
    return "running"


@pytest.mark.parametrize(("suite", "init"), FLAVOURS)
def test_flavour_inside_the_container(lab: Lab, extra_ct, suite: str, init: str) -> None:
    where = extra_ct(suite, init)
    major = in_ct(lab, where, "cat", "/etc/debian_version").split(".")[0]
    assert major == {"bookworm": "12", "trixie": "13"}[suite]
    version = in_ct(lab, where, "python3", "-c", "import sys;print(sys.version_info[:2])")
    assert version == {"bookworm": "(3, 11)", "trixie": "(3, 13)"}[suite]
    pid1 = in_ct(lab, where, "readlink", "/proc/1/exe")
    if init == "systemd":
        assert pid1 == "/usr/lib/systemd/systemd"
        assert boot_state(lab, where) == "running"
    else:
        assert pid1 == "/usr/bin/python3.13"  # the lab's tiny init
    # The seeding every flavour needs: hostname, hosts, DNS, CA bundle, pip cache.
    assert in_ct(lab, where, "hostname") == f"n1-ct{where[1]}"
    assert f"n1-ct{where[1]}" in in_ct(lab, where, "cat", "/etc/hosts")
    in_ct(lab, where, "test", "-s", "/etc/resolv.conf")
    in_ct(lab, where, "test", "-s", "/etc/ssl/certs/ca-certificates.crt")
    assert in_ct(lab, where, "findmnt", "-n", "-o", "TARGET", "/root/.cache/pip")


def test_flavours_in_status_and_inventory_and_add_is_idempotent(lab: Lab, extra_ct) -> None:
    for suite, init in FLAVOURS:
        extra_ct(suite, init)
    again = lab.add_container("node1", 221, suite="trixie", init="systemd")
    assert (again.ctid, again.state, again.suite, again.init) == (
        221,
        "running",
        "trixie",
        "systemd",
    )
    with pytest.raises(LabError) as err:
        lab.add_container("node1", 220, suite="trixie", init="minimal")
    assert "bookworm/systemd" in str(err.value) and "trixie/minimal" in str(err.value)
    node1 = lab.status().nodes[0]
    flavours = {c.ctid: (c.suite, c.init, c.state) for c in node1.containers}
    assert flavours[200] == ("bookworm", "minimal", "running")
    assert flavours[210] == ("trixie", "minimal", "running")
    assert flavours[220] == ("bookworm", "systemd", "running")
    inventory = yaml.safe_load(lab.inventory.read_text())
    assert inventory["nodes"]["node1"]["containers"][221]["name"] == "n1-ct221"
    assert "node1/221" in inventory["groups"]["systemd"]["containers"]
    # `up` keeps them and their flavours, and makes no extra base containers.
    info = lab.up(nodes=2, containers=2)
    assert info.nodes[0].containers == [200, 201, 210, 220, 221]
    assert info.nodes[1].containers == [200, 201]
    listing = ssh(lab, "node1", "pct", "list").stdout
    assert "n1-ct221" in listing


def test_enabled_unit_survives_pct_reboot_and_stop_start(lab: Lab, extra_ct) -> None:
    unit = "[Service]\nExecStart=/bin/sleep infinity\n[Install]\nWantedBy=multi-user.target\n"
    for where, restart in ((extra_ct("bookworm", "systemd"), "reboot"),
                           (extra_ct("trixie", "systemd"), "stop+start")):  # fmt: skip
        node, ctid = where
        write = ssh(lab, node, "pct", "exec", str(ctid), "--", "tee",
                    "/etc/systemd/system/pctfleet-probe.service", stdin=unit)  # fmt: skip
        assert write.returncode == 0
        in_ct(lab, where, "systemctl", "enable", "--now", "pctfleet-probe.service")
        pid1_before = pids(lab)[f"pctfleet-n1-{ctid}"]
        if restart == "reboot":
            res = ssh(lab, node, "pct", "reboot", str(ctid), timeout=90)
            assert res.returncode == 0, res.stderr
        else:
            assert ssh(lab, node, "pct", "stop", str(ctid)).returncode == 0
            assert ssh(lab, node, "pct", "status", str(ctid)).stdout == "status: stopped\n"
            assert ssh(lab, node, "pct", "start", str(ctid)).returncode == 0
        assert pids(lab)[f"pctfleet-n1-{ctid}"] != pid1_before
        assert boot_state(lab, where) == "running"
        assert in_ct(lab, where, "systemctl", "is-active", "pctfleet-probe.service") == "active"


def test_pct_reboot_of_a_stopped_ct(lab: Lab, extra_ct) -> None:
    node, ctid = extra_ct("trixie", "minimal")
    lab.stop_container(node, ctid)
    try:
        res = ssh(lab, node, "pct", "reboot", str(ctid))
        assert (res.returncode, res.stderr) == (255, f"VM {ctid} not running\n")
    finally:
        lab.start_container(node, ctid)


def test_systemd_container_leaves_the_host_alone(lab: Lab, extra_ct) -> None:
    where = extra_ct("trixie", "systemd")
    for unit in ("systemd-networkd.service", "systemd-resolved.service", "systemd-udevd.service"):
        res = ssh(lab, "node1", "pct", "exec", "221", "--", "systemctl", "is-enabled", unit)
        assert res.stdout.strip() == "masked", unit
    before = (Path("/proc/sys/net/unix/max_dgram_qlen").read_text(), links())
    lab.restart_container(*where)  # a whole boot and shutdown
    assert (Path("/proc/sys/net/unix/max_dgram_qlen").read_text(), links()) == before
    # /proc/sys is read-only inside, so no sysctl can reach the shared kernel.
    res = ssh(lab, "node1", "pct", "exec", "221", "--", "sh", "-c",
              "echo 1 > /proc/sys/kernel/sysrq")  # fmt: skip
    assert res.returncode != 0


def links() -> str:
    return subprocess.run(["ip", "-br", "addr"], capture_output=True, text=True).stdout


def test_systemd_lab_goes_down_cleanly_and_fast(tmp_path: Path) -> None:
    other = Lab(tmp_path / "lab3", address_base="127.0.15")  # no other lab uses it
    try:
        other.up(nodes=1, containers=1, suite="trixie", init="systemd")
        assert other.status().nodes[0].containers[0].init == "systemd"
        started = time.monotonic()
        other.stop_container("node1", 200)
        # systemd halts on SIGRTMIN+3 well before lxc-stop's 10 s kill timeout.
        assert time.monotonic() - started < 5
        log = (other.lxcpath / "pctfleet-n1-200" / "lxc.log").read_text()
        assert "SIGKILL" not in log
    finally:
        started = time.monotonic()
        other.down()
    assert time.monotonic() - started < 5
    assert not (tmp_path / "lab3").exists()
