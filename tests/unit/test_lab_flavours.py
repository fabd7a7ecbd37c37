"""Lab container flavours (suite x init): cache names, LXC configs, seeding, lab.json."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from pctfleet.lab import containers as cts
from pctfleet.lab import lab as labmod
from pctfleet.lab import pct, rootfs
from pctfleet.lab.cli import lab_app
from pctfleet.lab.containers import Container
from pctfleet.lab.inventory import render_inventory
from pctfleet.lab.lab import Lab, check_addable, layout_of, per_node, planned_layout
from pctfleet.lab.model import LabError, LabInfo, NodeInfo
from pctfleet.lab.rootfs import Recipe

SYSTEMD = Recipe("bookworm", "systemd")
TRIXIE = Recipe("trixie", "minimal")


# --- rootfs recipes ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("suite", "init", "name"),
    [
        ("bookworm", "minimal", "bookworm"),  # the cache name labs already have
        ("trixie", "minimal", "trixie"),
        ("bookworm", "systemd", "bookworm-systemd"),
        ("trixie", "systemd", "trixie-systemd"),
    ],
)
def test_cache_names(suite, init, name):
    assert Recipe(suite, init).name == name


def test_debootstrap_command_per_recipe(tmp_path):
    cmd = rootfs.debootstrap_cmd(Recipe("trixie", "systemd"), tmp_path / "x.tmp", "http://m")
    assert cmd[1:] == [
        "--variant=minbase",
        "--include=systemd,systemd-sysv,dbus,python3,python3-venv,procps,ca-certificates",
        "trixie",
        str(tmp_path / "x.tmp"),
        "http://m",
    ]
    minimal = rootfs.debootstrap_cmd(Recipe(), tmp_path, "http://m")
    assert "systemd" not in minimal[2] and minimal[3] == "bookworm"


@pytest.mark.parametrize(("suite", "init"), [("sid", "minimal"), ("trixie", "openrc")])
def test_unknown_flavour_is_one_line_naming_the_value(suite, init):
    with pytest.raises(LabError) as err:
        Recipe(suite, init)
    bad = suite if suite == "sid" else init
    assert f"{bad!r}" in str(err.value) and "\n" not in str(err.value)


def fake_root(root: Path, systemd: bool) -> Path:
    (root / "usr/bin").mkdir(parents=True)
    (root / "etc").mkdir()
    (root / "usr/bin/python3").touch()
    (root / "etc/debian_version").write_text("13.1\n")
    if systemd:
        (root / "lib/systemd").mkdir(parents=True)
        (root / "lib/systemd/systemd").touch()
        (root / "sbin").mkdir()
        (root / "sbin/init").symlink_to("../lib/systemd/systemd")
    return root


def test_a_minimal_tree_is_not_a_complete_systemd_cache(tmp_path):
    plain = fake_root(tmp_path / "a", systemd=False)
    assert rootfs.is_complete(plain, Recipe())
    assert not rootfs.is_complete(plain, SYSTEMD)
    assert rootfs.is_complete(fake_root(tmp_path / "b", systemd=True), SYSTEMD)


def test_existing_cache_is_reused_and_a_missing_one_is_built(tmp_path, monkeypatch):
    fake_root(tmp_path / "bookworm", systemd=False)
    built: list[tuple[str, Path]] = []

    def debootstrap(recipe, tmp, mirror, log, say):
        built.append((recipe.name, tmp))
        fake_root(tmp, systemd=recipe.init == "systemd")

    monkeypatch.setattr(rootfs, "_debootstrap", debootstrap)
    monkeypatch.setattr(rootfs, "read_mirror", lambda: "http://m")
    assert rootfs.ensure_rootfs(tmp_path) == tmp_path / "bookworm"
    assert built == []
    got = rootfs.ensure_rootfs(tmp_path, recipe=Recipe("trixie", "systemd"))
    assert got == tmp_path / "trixie-systemd"
    assert built == [("trixie-systemd", tmp_path / "trixie-systemd.tmp")]
    assert rootfs.is_complete(got, Recipe("trixie", "systemd"))
    assert not (tmp_path / "trixie-systemd.tmp").exists()


# --- LXC config and seeding ----------------------------------------------------------


def config_lines(recipe: Recipe) -> list[str]:
    ct = Container(1, 220, Path("/lab/lxc"), recipe)
    return cts.lxc_config(ct, Path("/cache/x")).splitlines()


def test_systemd_config_boots_sbin_init_with_its_mounts_and_halt_signal():
    lines = config_lines(SYSTEMD)
    assert "lxc.init.cmd = /sbin/init" in lines
    assert "lxc.mount.auto = proc:mixed sys:mixed cgroup:rw:force" in lines
    assert "lxc.signal.halt = SIGRTMIN+3" in lines
    assert "lxc.net.0.type = none" in lines
    assert not any("pctfleet-init" in x or x == "lxc.signal.halt = SIGTERM" for x in lines)


def test_minimal_config_keeps_the_lab_init():
    lines = config_lines(TRIXIE)
    assert "lxc.init.cmd = /sbin/pctfleet-init" in lines
    assert "lxc.signal.halt = SIGTERM" in lines
    assert not any(x.startswith("lxc.mount.auto") for x in lines)


@pytest.mark.parametrize("recipe", [Recipe(), TRIXIE, SYSTEMD, Recipe("trixie", "systemd")])
def test_seeding_works_for_every_flavour(tmp_path, recipe):
    ct = Container(1, 221, tmp_path, recipe)
    cts._seed_into(tmp_path / "up", ct)
    assert (tmp_path / "up/etc/hostname").read_text() == "n1-ct221\n"
    assert "n1-ct221" in (tmp_path / "up/etc/hosts").read_text()
    masked = tmp_path / "up/etc/systemd/system/systemd-networkd.service"
    if recipe.init == "systemd":
        for unit in (
            "systemd-networkd.service",
            "systemd-resolved.service",
            "systemd-udevd.service",
        ):
            assert os.readlink(tmp_path / "up/etc/systemd/system" / unit) == "/dev/null"
    else:
        assert not masked.is_symlink()


# --- lab.json, layout and add ---------------------------------------------------------


def old_state() -> dict[str, Any]:
    """lab.json as labs wrote it before flavours existed."""
    nodes = [
        {"name": f"node{i}", "index": i, "address": f"127.0.10.{i}", "port": 22,
         "containers": [200, 201]}
        for i in (1, 2)
    ]  # fmt: skip
    return {"version": 1, "address_base": "127.0.10", "port": 22, "nodes": nodes}


def test_a_lab_from_before_flavours_is_bookworm_minimal(tmp_path):
    layout = layout_of(old_state(), tmp_path, tmp_path / "lxc")
    assert {ct.recipe for _, cs in layout for ct in cs} == {Recipe()}
    assert per_node(old_state()) == 2


def test_up_keeps_each_containers_flavour_and_does_not_multiply_extras(tmp_path):
    state = old_state()
    state["nodes"][0]["containers"] = [200, 201, 210, 221]
    state["nodes"][0]["flavours"] = {
        "210": {"suite": "trixie", "init": "minimal"},
        "221": {"suite": "trixie", "init": "systemd"},
    }
    state["containers_per_node"] = 2
    lab = Lab(tmp_path / "lab")
    layout = planned_layout(state, lab, 3, per_node(state), SYSTEMD)
    got = {n.name: [(c.ctid, c.recipe.name) for c in cs] for n, cs in layout}
    assert got == {
        "node1": [(200, "bookworm"), (201, "bookworm"), (210, "trixie"), (221, "trixie-systemd")],
        "node2": [(200, "bookworm"), (201, "bookworm")],
        # Only containers this `up` creates take its suite/init.
        "node3": [(200, "bookworm-systemd"), (201, "bookworm-systemd")],
    }


def test_state_records_flavours_and_reads_them_back(tmp_path):
    lab = Lab(tmp_path / "lab")
    node = lab._node(1)
    record = lab._node_record(node, [lab._container(node, 220, SYSTEMD)])
    assert record["flavours"] == {"220": {"suite": "bookworm", "init": "systemd"}}
    state = {**old_state(), "nodes": [{**record, "sshd_pid": None}]}
    lab.state_dir.mkdir()
    lab.state_file.write_text(json.dumps(state))
    status = lab.status()
    assert [(c.ctid, c.suite, c.init) for c in status.nodes[0].containers] == [
        (220, "bookworm", "systemd")
    ]


def test_add_of_an_existing_ctid_with_another_flavour_names_both():
    have = [Container(1, 220, Path("/x"), SYSTEMD)]
    same = Container(1, 220, Path("/x"), SYSTEMD)
    assert check_addable("node1", have, same) is have[0]
    with pytest.raises(LabError) as err:
        check_addable("node1", have, Container(1, 220, Path("/x"), TRIXIE))
    assert "bookworm/systemd" in str(err.value) and "trixie/minimal" in str(err.value)


@pytest.mark.parametrize("ctid", [199, 300])
def test_add_refuses_ctids_whose_ports_collide(tmp_path, ctid):
    with pytest.raises(LabError, match=f"CTID {ctid} is outside 200..299"):
        Lab(tmp_path / "lab").add_container("node1", ctid)


def test_inventory_groups_by_suite_and_init(tmp_path):
    info = LabInfo(tmp_path, tmp_path / "i", tmp_path / "k", tmp_path / "h",
                   [NodeInfo("node1", "127.0.10.1", 22, [200, 220, 221])])  # fmt: skip
    flavours = {("node1", 200): Recipe(), ("node1", 220): SYSTEMD,
                ("node1", 221): Recipe("trixie", "systemd")}  # fmt: skip
    inv = yaml.safe_load(render_inventory(info, 22, flavours))
    assert inv["nodes"]["node1"]["containers"][221]["vars"] == {"server_port": 30121}
    assert inv["groups"]["lab"] == {"nodes": ["node1"]}
    assert inv["groups"]["trixie"] == {"containers": ["node1/221"]}
    assert inv["groups"]["systemd"] == {"containers": ["node1/220", "node1/221"]}
    assert inv["groups"]["bookworm"] == {"containers": ["node1/200", "node1/220"]}
    assert inv["groups"]["minimal"] == {"containers": ["node1/200"]}


# --- CLI -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "value"),
    [
        (["up", "--suite", "buster"], "'buster'"),
        (["up", "--init", "runit"], "'runit'"),
        (["add", "node1", "220", "--suite", "sid"], "'sid'"),
        (["add", "node1", "220", "--init", "upstart"], "'upstart'"),
    ],
)
def test_cli_bad_flavour_is_one_line_and_exit_1(tmp_path, args, value):
    res = CliRunner().invoke(lab_app, [*args, "--state-dir", str(tmp_path / "lab")])
    assert res.exit_code == 1, res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and value in lines[0] and lines[0].startswith("error:")


def test_cli_help_teaches_the_flavours():
    res = CliRunner().invoke(lab_app, ["add", "--help"], env={"COLUMNS": "200"})
    assert res.exit_code == 0
    for word in ("--suite", "--init", "trixie", "systemd", "CTID"):
        assert word in res.output


# --- pct reboot ------------------------------------------------------------------------


class FakeLxc:
    def __init__(self, running: bool) -> None:
        self.running = running
        self.calls: list[tuple[str, ...]] = []

    def __call__(self, node, tool, name, *extra):
        self.calls.append((tool, *extra))
        if tool == "lxc-stop":
            self.running = False
        if tool == "lxc-start":
            self.running = True
        return pct.subprocess.CompletedProcess([tool], 0, "", "")


@pytest.fixture
def node(tmp_path, monkeypatch):
    n = pct.Node("node1", 1, str(tmp_path / "lxc"), str(tmp_path / "pve"))
    conf = Path(n.conf_path(220))
    conf.parent.mkdir(parents=True)
    conf.write_text("hostname: n1-ct220\n")
    return n


def reboot(node, monkeypatch, running: bool, *argv: str) -> tuple[int, FakeLxc]:
    fake = FakeLxc(running)
    monkeypatch.setattr(pct, "lxc", fake)
    monkeypatch.setattr(pct, "is_running", lambda n, v: fake.running)
    code = pct.cmd_reboot(node, pct.parse("reboot", list(argv)))
    return code, fake


def test_pct_reboot_shuts_down_cleanly_then_starts(node, monkeypatch):
    code, fake = reboot(node, monkeypatch, True, "220", "--timeout", "7")
    assert code == 0
    # A clean stop (no --kill) bounded by the timeout, then a start.
    assert fake.calls == [("lxc-stop", "-t", "7"), ("lxc-start",)]
    assert fake.running


def test_pct_reboot_of_a_stopped_ct_says_vm_not_running(node, monkeypatch, capsys):
    fake = FakeLxc(False)
    monkeypatch.setattr(pct, "lxc", fake)
    monkeypatch.setattr(pct, "is_running", lambda n, v: False)
    monkeypatch.setattr(pct.Node, "load", classmethod(lambda cls: node))
    assert pct.main(["reboot", "220"]) == 255
    assert capsys.readouterr().err == "VM 220 not running\n"
    assert fake.calls == []


def test_pct_reboot_default_timeout(node, monkeypatch):
    _, fake = reboot(node, monkeypatch, True, "220")
    assert fake.calls[0] == ("lxc-stop", "-t", str(pct.REBOOT_TIMEOUT_S))


def test_lab_restart_container_stops_then_starts_and_waits(tmp_path, monkeypatch):
    lab = Lab(tmp_path / "lab")
    seen: list[str] = []
    ct = Container(1, 220, lab.lxcpath, SYSTEMD)
    monkeypatch.setattr(Lab, "_find_ct", lambda self, n, c: ct)
    for name in ("stop", "start", "wait_booted"):
        monkeypatch.setattr(labmod.cts, name, lambda c, name=name: seen.append(name))
    lab.restart_container("node1", 220)
    assert seen == ["stop", "start", "wait_booted"]


def test_systemd_upper_layer_leaves_sbin_to_the_rootfs(tmp_path):
    cts._seed_into(tmp_path / "up", Container(1, 220, tmp_path, SYSTEMD))
    # An upper /sbin directory would hide the rootfs's /sbin -> usr/sbin link.
    assert not (tmp_path / "up/sbin").exists()
