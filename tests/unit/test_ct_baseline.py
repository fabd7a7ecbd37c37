"""A container's CT config is part of its baseline: a line changed on the node is drift."""

from __future__ import annotations

from pathlib import Path

from pctfleet.cuda import audit as drift
from pctfleet.inventory.discover import parse_pct_config
from pctfleet.run.results import ContainerRun
from pctfleet.status import exit_code

CONFIG = """\
arch: amd64
cores: 8
dev0: /dev/nvidia0
dev1: /dev/nvidiactl
hostname: gpu-a
lxc.cgroup2.devices.allow: c 195:* rwm
lxc.cgroup2.devices.allow: c 238:* rwm
lock: backup
memory: 65536
"""


def ct(text: str = CONFIG) -> dict[str, str]:
    return drift.ct_fingerprint(parse_pct_config(text))


def record_then_audit(tmp_path: Path, before: dict, after: dict) -> drift.ContainerAudit:
    path = tmp_path / "baseline.json"
    run = ContainerRun("node1", 200, extra_facts={"stale": ""})
    drift.judge_fleet([run], path, True, {"node1/200": before})
    (audit,), _ = drift.judge_fleet([run], path, False, {"node1/200": after})
    return audit


def test_repeated_lxc_keys_keep_every_value_and_a_backup_lock_is_left_out() -> None:
    found = ct()
    assert found["ct.lxc.cgroup2.devices.allow"] == "c 195:* rwm\nc 238:* rwm"
    assert found["ct.dev0"] == "/dev/nvidia0"
    assert "ct.lock" not in found


def test_a_removed_device_line_is_ct_config_drift_and_exits_2(tmp_path: Path) -> None:
    audit = record_then_audit(tmp_path, ct(), ct(CONFIG.replace("dev1: /dev/nvidiactl\n", "")))
    assert audit.status == "drift" and exit_code("audit", [audit.status]) == 2
    assert [(i.kind, i.what, i.expected, i.actual) for i in audit.items] == [
        ("ct-config", "dev1", "/dev/nvidiactl", "(absent)")
    ]


def test_an_unchanged_config_and_a_lock_taken_by_a_backup_stay_clean(tmp_path: Path) -> None:
    unlocked = CONFIG.replace("lock: backup\n", "")
    assert record_then_audit(tmp_path, ct(unlocked), ct()).status == "clean"


def test_no_config_on_either_side_is_not_drift(tmp_path: Path) -> None:
    # A baseline recorded before CT configs were, or a node not read this time.
    assert record_then_audit(tmp_path, {}, ct()).status == "clean"
    assert record_then_audit(tmp_path, ct(), {}).status == "clean"
