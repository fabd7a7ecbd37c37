"""Drift: what differs from the playbook's desired state and from a recorded baseline.

The playbook runs in check mode, and a fingerprint of the container (versions,
links, overlay hash, server, every pip package) rides along in the same probe:
one `pct exec` per container for the whole audit.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pctfleet.cuda.facts import parse_toolchain, toolchain_snippet
from pctfleet.cuda.stale import describe, parse_stale, stale_snippet  # noqa: F401  (the probe)
from pctfleet.facts.kv import decode_fields
from pctfleet.jsonfields import json_fields
from pctfleet.modules.cccl import MANIFEST
from pctfleet.modules.pip import LIST_INSTALLED
from pctfleet.run.results import UNREACHED, ContainerRun
from pctfleet.sh import snippet
from pctfleet.status import ContainerOutcome

DEFAULT_BASELINE = Path("~/.local/state/pctfleet/baseline.json")
MATRIX = ("nvcc", "nvvm", "runtime", "cccl", "torch", "flashinfer", "sglang", "driver")
CT_PREFIX = "ct."  # fingerprint keys read from the node's CT config, not the container
# Keys that change in routine operation (a backup's lock, the snapshot a CT
# descends from): recording them would report every backup as drift.
CT_VOLATILE = frozenset({"lock", "parent"})
MATRIX += ("node driver",)  # the container's node's kernel module
PIP_KEYS = {
    "nvvm": "nvidia-nvvm",
    "runtime": "nvidia-cuda-runtime",
    "torch": "torch",
    "flashinfer": "flashinfer-python",
    "sglang": "sglang",
}


def fingerprint_snippet(variables: dict) -> str:
    """Everything a fingerprint holds, read in the audit's single probe (sh/fingerprint.sh)."""
    venv = str(variables.get("venv", "/opt/sglang"))
    # With the driver's userspace side (cuda/gpu_rules.py judges it, not the fingerprint).
    probe = toolchain_snippet(venv) + snippet("gpu_userspace")
    return probe + snippet(
        "fingerprint",
        VENV=venv,
        PIDFILE=variables.get("server_pidfile", "/run/pctfleet/sglang.pid"),
        MANIFEST=MANIFEST,
        LIST_INSTALLED=LIST_INSTALLED,
    )


def fingerprint(raw: str) -> dict[str, str]:
    """Flat key -> value: the toolchain's versions, links, overlay, server, pip packages."""
    facts = parse_toolchain(raw)
    found: dict[str, str] = {}
    for key, value in (
        ("nvcc", facts.nvcc_version),
        ("ptxas", facts.ptxas_version),
        ("cicc", facts.cicc_release),
        ("cudart", facts.cudart_version),
        ("cccl", facts.cccl_version),
        ("driver", facts.driver_version),
    ):
        if value:
            found[key] = value
    for name, target in facts.links.items():
        found[f"link.{name}"] = target
    pairs = decode_fields(raw)
    if "pkgs" in pairs:
        found.update({f"pip.{k}": v for k, v in json.loads(pairs["pkgs"]).items()})
    if "overlay" in pairs:
        found["overlay.tree_hash"] = str(_manifest(pairs["overlay"]).get("tree_hash"))
    found["server"] = pairs.get("server", "stopped")
    return found


def _manifest(text: str) -> dict:
    """The overlay manifest; {} when it is not a JSON object (it was edited by hand)."""
    try:
        manifest = json.loads(text)
    except ValueError:
        return {}
    return manifest if isinstance(manifest, dict) else {}


def ct_fingerprint(config: tuple[tuple[str, str], ...]) -> dict[str, str]:
    """A CT config as fingerprint keys (`ct.cores`, `ct.dev0`); a repeated
    `lxc.*` key keeps all its values, in the order the config lists them."""
    found: dict[str, list[str]] = {}
    for key, value in config:
        if key not in CT_VOLATILE:
            found.setdefault(CT_PREFIX + key, []).append(value)
    return {key: "\n".join(values) for key, values in found.items()}


def ct_configs(found: list) -> dict[str, dict[str, str]]:
    """By container key, the CT config each node reported (`NodeFound` list)."""
    return {
        f"{f.node.name}/{ct.ctid}": ct_fingerprint(ct.config) for f in found for ct in f.containers
    }


@dataclass
class DriftItem:
    kind: str  # task | baseline | ct-config | extra-package | missing | stale-process | stale-cache
    what: str
    expected: str
    actual: str  # in JSON as these fields (json_fields turns a dataclass into its fields)
    fix: str = ""


@dataclass
class ContainerAudit(ContainerOutcome):
    # status: clean | drift | unreachable | ct-missing | ct-stopped | timeout | error
    items: list[DriftItem] = field(default_factory=list)
    fingerprint: dict[str, str] = field(default_factory=dict)
    remote_calls: int = 0
    driver: dict[str, str] = field(default_factory=dict)  # "container" / "node" driver versions

    def versions(self) -> dict[str, str]:
        fp = self.fingerprint
        row = {
            "nvcc": fp.get("nvcc", ""),
            "cccl": fp.get("cccl", ""),
            "driver": self.driver.get("container") or fp.get("driver", ""),
            "node driver": self.driver.get("node", ""),
        }
        row.update({col: fp.get(f"pip.{pkg}", "") for col, pkg in PIP_KEYS.items()})
        return {col: row.get(col, "") for col in MATRIX}

    def as_json(self) -> dict:
        return json_fields(
            self,
            "container status message drift versions remote_calls",
            drift=self.items,
            versions=self.versions(),
        )


def _stale_items(run: ContainerRun) -> list[DriftItem]:
    found = parse_stale(run.extra_facts.get("stale", ""))
    items = [
        DriftItem("stale-process", f"pid {h.pid}", "only processes pctfleet started", describe(h))
        for h in found.processes
    ]
    return items + [
        DriftItem("stale-cache", c.folder, f"toolchain {c.toolchain}", str(c)) for c in found.cache
    ]


def judge(
    run: ContainerRun, baseline: dict[str, str] | None, ct_config: dict[str, str] | None = None
) -> ContainerAudit:
    """Drift items from a check-mode run and, when recorded, the baseline.

    `ct_config`: the container's CT config as its node reported it in this
    audit (`ct_fingerprint`), part of the fingerprint and so of the baseline."""
    audit = ContainerAudit(run.key, "clean", remote_calls=run.remote_calls)
    if run.status in UNREACHED or run.status == "interrupted":
        audit.status, audit.message = run.status, run.message
        return audit
    audit.fingerprint = fingerprint(run.extra_facts.get("fingerprint", "")) | (ct_config or {})
    audit.items = _task_items(run) + _stale_items(run)
    audit.items += _baseline_items(audit.fingerprint, baseline)
    if run.status == "failed":
        audit.status, audit.message = "drift", run.message
    if audit.items:
        audit.status = "drift"
    return audit


def _task_items(run: ContainerRun) -> list[DriftItem]:
    items = []
    for task in run.tasks:
        if task.status in {"changed", "failed"}:
            diff = task.diff or {}
            actual = str(diff.get("before", "")).strip() or task.msg
            expected = str(diff.get("after", "")).strip() or (
                "ok" if task.status == "failed" else "as declared"
            )
            items.append(DriftItem("task", task.name, expected, actual))
    return items


def _has_ct(fingerprint: dict[str, str]) -> bool:
    return any(key.startswith(CT_PREFIX) for key in fingerprint)


def _baseline_items(now: dict[str, str], baseline: dict[str, str] | None) -> list[DriftItem]:
    if baseline is None:
        return []
    # CT configs are compared only when both sides hold one: a baseline recorded
    # before they were, or an audit whose node was not read, is not CT drift.
    compare_ct = _has_ct(now) and _has_ct(baseline)
    items = []
    for key in sorted(set(baseline) | set(now)):
        before, after = baseline.get(key), now.get(key)
        if before == after or (key.startswith(CT_PREFIX) and not compare_ct):
            continue
        if key.startswith(CT_PREFIX):
            what = key.removeprefix(CT_PREFIX)
            items.append(DriftItem("ct-config", what, before or "(absent)", after or "(absent)"))
        elif before is None:
            kind = "extra-package" if key.startswith("pip.") else "baseline"
            items.append(DriftItem(kind, key, "(absent)", str(after)))
        else:
            items.append(DriftItem("baseline", key, before, str(after or "(absent)")))
    return items


def judge_fleet(
    runs: list[ContainerRun],
    baseline_file: Path,
    record: bool,
    ct_configs: dict[str, dict[str, str]] | None = None,
) -> tuple[list[ContainerAudit], int | None]:
    """Judge each run against its baseline; `record`: against none, then save these
    as the new baseline (and say how many were recorded). `ct_configs`: by
    container key, each CT config its node reported (`ct_fingerprint`)."""
    recorded = {} if record else load_baseline(baseline_file)
    configs = ct_configs or {}
    audits = [judge(run, recorded.get(run.key), configs.get(run.key)) for run in runs]
    return audits, save_baseline(baseline_file, audits) if record else None


def load_baseline(path: Path) -> dict[str, dict[str, str]]:
    path = Path(path).expanduser()
    if not path.exists():
        return {}
    return json.loads(path.read_text()).get("containers", {})


def save_baseline(path: Path, audits: list[ContainerAudit]) -> int:
    """Record the fingerprints that were read (unreachable ones keep their old entry)."""
    path = Path(path).expanduser()
    recorded = load_baseline(path)
    fresh = {a.container: a.fingerprint for a in audits if a.fingerprint}
    recorded.update(fresh)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"containers": recorded}, indent=2, sort_keys=True))
    os.replace(tmp, path)
    return len(fresh)


def majority(audits: list[ContainerAudit]) -> dict[str, str]:
    """Per column, the value most containers have: cells that differ stand out."""
    common: dict[str, str] = {}
    rows = [a.versions() for a in audits if a.fingerprint]
    for col in MATRIX:
        counts = Counter(row[col] for row in rows)
        common[col] = counts.most_common(1)[0][0] if counts else ""
    return common


def summary(audits: list[ContainerAudit]) -> dict[str, Any]:
    counts = Counter(a.status for a in audits)
    return {"containers": len(audits), **counts}
