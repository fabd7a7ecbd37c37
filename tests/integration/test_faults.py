"""Faults made for real on the lab: nothing is lost, every outcome is named, a rerun converges.

Each test breaks something in the middle of a run (a node's sshd, a container,
the network, the controller itself, the container's disk) and then proves what
was preserved. Every scenario is recorded for docs/reliability.md (see
tests/reliability.py). Two runs at one container at once are covered by
test_run_lock.py.
"""

from __future__ import annotations

import json
import os
import re
import signal
import textwrap
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
from faultlab import KEYS, FaultLab, journal_records, scenario, statuses, wait_for
from suites import PURELIB

from pctfleet.modules.cccl import MANIFEST, TREE_HASH

pytestmark = pytest.mark.lab

# -- playbooks ---------------------------------------------------------------------

SLOW = """\
- hosts: all
  tasks:
    - name: slow change
      shell: "echo {{ mark }} start >> /tmp/pctfleet-fault.log; sleep {{ pause }};
              echo {{ mark }} end >> /tmp/pctfleet-fault.log"
    - name: after the slow change
      shell: "echo {{ mark }} after >> /tmp/pctfleet-fault.log"
"""

QUICK = """\
- hosts: all
  tasks:
    - name: quick change
      shell: "echo {{ mark }} quick >> /tmp/pctfleet-fault.log"
    - name: a file
      copy: {content: "{{ mark }}\\n", dest: /tmp/pctfleet-fault.txt, mode: "0644"}
"""

VENV = "/opt/pctfleet-faults/venv"
ALT = "/opt/cccl-alt"  # a copy with one header byte changed
OVERLAY_CT = "node1/200"

SETUP = f"""\
- hosts: all
  tasks:
    - name: CUDA wheels that carry a CCCL tree
      pip:
        name: ["nvidia-cuda-cccl==13.0.85", "flashinfer-python==0.7.4"]
        virtualenv: {VENV}
        extra_args: "--no-deps"
    - name: a second CCCL source, one header byte different
      shell: |
        set -e
        site=$({VENV}/bin/python -c '{PURELIB}')
        rm -rf {ALT}.tmp && cp -a "$site/flashinfer/data/cccl" {ALT}.tmp
        printf '\\n// pctfleet fault suite: alternate tree\\n' \\
          >> {ALT}.tmp/libcudacxx/include/cuda/std/__cccl/version.h
        mv {ALT}.tmp {ALT}
      args: {{creates: {ALT}}}
"""

OVERLAY = f"""\
- hosts: all
  tasks:
    - name: the venv is there
      command: test -x {VENV}/bin/python
      changed_when: false
    - name: overlay CCCL
      cccl_overlay:
        venv: {VENV}
        cuda_home: "{{{{ cuda_home }}}}"
        source: "{{{{ cccl_source }}}}"
    - name: after the overlay
      file: {{path: "/tmp/pctfleet-after-{{{{ mark }}}}", state: touch}}
"""

PIP_CT = "node2/200"
PIP_VENV = "/opt/pctfleet-faults/pipvenv"
WHEELS = "/opt/pctfleet-faults/wheels"
SIX = ("1.16.0", "1.17.0")
PIP = f"""\
- hosts: all
  tasks:
    - name: six at the wanted version
      pip:
        name: "six=={{{{ six }}}}"
        virtualenv: {PIP_VENV}
        extra_args: "--no-index --find-links {WHEELS}"
    - name: after pip
      file: {{path: "/tmp/pctfleet-after-{{{{ mark }}}}", state: touch}}
"""


def book(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def mark() -> str:
    return uuid.uuid4().hex[:10]


# -- fixtures ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def fl(lab) -> FaultLab:
    """This suite's own lab (the shared `lab` fixture only decides whether labs can run)."""
    return FaultLab().up()


@pytest.fixture
def healed(fl):
    """Every node and container up before and after the test, whatever it broke."""
    fl.up()
    yield fl
    fl.up()


@dataclass(frozen=True)
class Overlay:
    """Where the overlay tests' venv keeps its CUDA toolkit and flashinfer's own CCCL."""

    site: str  # the venv's site-packages, as its Python reports it

    @property
    def cuda_home(self) -> str:
        return f"{self.site}/nvidia/cu13"

    @property
    def bundled(self) -> str:
        return f"{self.site}/flashinfer/data/cccl"  # flashinfer's own CCCL: the default source


@pytest.fixture(scope="module")
def overlay_ready(fl, tmp_path_factory) -> Overlay:
    """node1/200 with CUDA wheels, flashinfer's CCCL and an alternate CCCL source."""
    folder = tmp_path_factory.mktemp("overlay-setup")
    code, doc, err = fl.run(
        book(folder, "setup.yml", SETUP), "--limit", OVERLAY_CT, journal=folder, timeout=900
    )
    assert code == 0, err[-3000:]
    return Overlay(fl.ct_out(OVERLAY_CT, f"{VENV}/bin/python -c '{PURELIB}'").strip())


@pytest.fixture(scope="module")
def pip_ready(fl) -> str:
    """node2/200 with a venv and the wheels of two versions of six, installable offline;
    the venv's site-packages."""
    script = f"""set -e
[ -x {PIP_VENV}/bin/python ] || python3 -m venv {PIP_VENV}
for v in {SIX[0]} {SIX[1]}; do
  ls {WHEELS}/six-$v-*.whl >/dev/null 2>&1 ||
    {PIP_VENV}/bin/pip download -q --no-deps -d {WHEELS} six==$v
done
"""
    proc = fl.ct_sh(PIP_CT, script, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return fl.ct_out(PIP_CT, f"{PIP_VENV}/bin/python -c '{PURELIB}'").strip()


# -- looking at the overlay ----------------------------------------------------------


def tree_hash(root: Path) -> str:
    """modules/cccl.py's TREE_HASH, in Python: sha256sum of every file, sorted, hashed."""
    import hashlib

    lines = []
    for folder, _, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            if name == MANIFEST or os.path.islink(path):
                continue
            rel = "./" + os.path.relpath(path, root)
            with open(path, "rb") as handle:
                digest = hashlib.file_digest(handle, "sha256").hexdigest()
            lines.append((rel.encode(), f"{digest}  {rel}\n".encode()))
    listing = b"".join(line for _, line in sorted(lines))
    return hashlib.sha256(listing).hexdigest()


def overlay_state(fl: FaultLab, ov: Overlay) -> dict:
    """The overlay as it is: manifest, the tree's hash (two ways), leftovers."""
    include = fl.ct_root(OVERLAY_CT) / ov.cuda_home.lstrip("/") / "include"
    manifest_file = include / "cccl" / MANIFEST
    manifest = json.loads(manifest_file.read_text()) if manifest_file.exists() else {}
    shell = fl.ct_out(OVERLAY_CT, TREE_HASH + f'pctfleet_tree_hash "{ov.cuda_home}/include/cccl"')
    return {
        "manifest": manifest,
        "source": manifest.get("source"),
        "hash": tree_hash(include / "cccl"),
        "shell_hash": shell.strip(),
        "stage": (include / ".cccl.pctfleet-stage").exists(),
        "orig": (include / "cccl.pctfleet-orig").is_dir(),
    }


def assert_whole(state: dict, *sources: str) -> None:
    """Old or new, never half: the tree hashes to what its own manifest recorded."""
    assert state["source"] in sources, state["manifest"]
    assert state["hash"] == state["shell_hash"] == state["manifest"]["tree_hash"], state
    assert state["orig"], "the wheel's original tree is kept"


def other(ov: Overlay, source: str | None) -> str:
    return ov.bundled if source == ALT else ALT


def overlay_vars(ov: Overlay, source: str) -> list[str]:
    """-e options: the CCCL source ("" means flashinfer's bundled tree) and CUDA_HOME."""
    cccl = "" if source == ov.bundled else source
    return ["-e", f"cccl_source={cccl}", "-e", f"cuda_home={ov.cuda_home}"]


def overlay(fl: FaultLab, ov: Overlay, tmp_path: Path, source: str, *more: str):
    return fl.run(
        book(tmp_path, "overlay.yml", OVERLAY),
        "--limit", OVERLAY_CT, *overlay_vars(ov, source), "-e", f"mark={mark()}",
        *more, journal=tmp_path / f"j-{mark()}",
    )  # fmt: skip


def verify_overlay(fl: FaultLab) -> str:
    proc = fl.cli(
        "verify", "-i", fl.inventory, "--limit", OVERLAY_CT,
        "-k", "cccl_overlay_matches_manifest", "-e", f"venv={VENV}",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def kinds(records: list[dict]) -> list[str]:
    return [r["kind"] for r in records]


def task_names(records: list[dict]) -> list[str]:
    return [r["name"] for r in records if r["kind"] == "task"]


# -- a node, a container, the network --------------------------------------------------


def test_sshd_killed_mid_run(healed, tmp_path):
    fl, m = healed, mark()
    with scenario("faults", "A node's sshd killed in the middle of a run") as s:
        slow = book(tmp_path, "slow.yml", SLOW)
        journal = tmp_path / "j1"
        proc = fl.start(
            "run", str(slow), "-i", fl.inventory, "--journal-dir", str(journal),
            "-e", f"mark={m}", "-e", "pause=3", "--lock-lease", "3", "--connect-timeout", "3",
        )  # fmt: skip
        logs = {k: fl.ct_root(k) / "tmp/pctfleet-fault.log" for k in KEYS}
        wait_for(lambda: all(_has(p, f"{m} start") for p in logs.values()), 60, "every start")
        fl.lab.kill_sshd("node1")
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 3, err
        records = journal_records(journal)
        final = {r["container"]: r["status"] for r in records if r["kind"] == "container"}
        assert final == {
            "node1/200": "unreachable",
            "node1/201": "unreachable",
            "node2/200": "changed",
            "node2/201": "changed",
        }
        recap = err[err.index("RECAP") :]
        for key in ("node1/200", "node1/201"):
            row = next(line for line in recap.splitlines() if f"│ {key} " in line)
            assert "unreachable" in row
            assert re.search(f"{key}: connection (lost|closed) ", recap), recap
        for key in ("node2/200", "node2/201"):
            assert _has(logs[key], f"{m} after"), "the other node finished"
        for key in ("node1/200", "node1/201"):
            assert not _has(fl.ct_root(key) / "tmp/pctfleet-fault.log", f"{m} after")
        why = re.search("node1/200: (.*)", recap).group(1)
        s.outcome = (
            f"exit {proc.returncode}; recap and journal: node1/200, node1/201 unreachable "
            f"('{why}'), node2/200, node2/201 changed"
        )
        fl.lab.start_sshd("node1")
        started = time.monotonic()
        code, doc, err = fl.run(slow, "-e", f"mark={m}", "-e", "pause=0", journal=tmp_path / "j2")
        assert code == 0, err
        assert set(statuses(doc).values()) == {"changed"}
        for key in ("node1/200", "node1/201"):
            assert _has(fl.ct_root(key) / "tmp/pctfleet-fault.log", f"{m} after")
        s.preserved = (
            "node2 ran every task; node1 never started its next task; after sshd came back "
            f"the rerun converged with exit 0 in {time.monotonic() - started:.1f}s (it waited "
            "for the cut-off run's lock lease)"
        )


def _has(path: Path, text: str) -> bool:
    try:
        return text in path.read_text()
    except OSError:
        return False


def test_container_stopped_mid_run(healed, tmp_path):
    fl, m = healed, mark()
    victim = "node2/201"
    with scenario("faults", "A container stopped in the middle of a run") as s:
        slow = book(tmp_path, "slow.yml", SLOW)
        journal = tmp_path / "j1"
        proc = fl.start(
            "run", str(slow), "-i", fl.inventory, "--journal-dir", str(journal),
            "-e", f"mark={m}", "-e", "pause=3", "--lock-lease", "3",
        )  # fmt: skip
        logs = {k: fl.ct_root(k) / "tmp/pctfleet-fault.log" for k in KEYS}
        wait_for(lambda: all(_has(p, f"{m} start") for p in logs.values()), 60, "every start")
        fl.lab.stop_container("node2", 201)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 3, err
        records = journal_records(journal)
        final = {r["container"]: r for r in records if r["kind"] == "container"}
        assert {k: r["status"] for k, r in final.items()} == {
            "node1/200": "changed",
            "node1/201": "changed",
            "node2/200": "changed",
            victim: "ct-stopped",
        }
        assert "container 201 stopped while a command ran" in final[victim]["message"]
        assert f"{victim}: container 201 stopped" in err
        s.outcome = (
            f"exit 3; {victim} ct-stopped ('{final[victim]['message'].split('(')[0].strip()}'), "
            "the three others changed"
        )
        fl.lab.start_container("node2", 201)
        code, doc, err = fl.run(slow, "-e", f"mark={m}", "-e", "pause=0", journal=tmp_path / "j2")
        assert code == 0, err
        assert _has(fl.ct_root(victim) / "tmp/pctfleet-fault.log", f"{m} after")
        s.preserved = (
            "only the stopped container's run ended; the others ran every task; "
            "after `pct start` the rerun converged (exit 0)"
        )


def test_hung_node_times_out_within_the_limit(healed, tmp_path):
    fl, m = healed, mark()
    with scenario("faults", "A node that accepts TCP and then says nothing (hang)") as s:
        quick = book(tmp_path, "quick.yml", QUICK)
        with fl.lab.hang("node1"):
            started = time.monotonic()
            code, doc, err = fl.run(
                quick, "-e", f"mark={m}", "--connect-timeout", "2", journal=tmp_path / "j1"
            )
            elapsed = time.monotonic() - started
        assert code == 3, err
        runs = {f"{c['node']}/{c['ctid']}": c for c in doc["containers"]}
        assert statuses(doc) == {
            "node1/200": "unreachable",
            "node1/201": "unreachable",
            "node2/200": "changed",
            "node2/201": "changed",
        }
        for key in ("node1/200", "node1/201"):
            message = runs[key]["message"]
            assert "127.0.13.1:22" in message and "no SSH answer within 2s" in message, message
            # One verdict per node: its second container does not wait a second time.
            assert runs[key]["duration"] < 2 + 1.5, (key, runs[key]["duration"])
        s.outcome = (
            "exit 3; node1/200 and node1/201 unreachable: "
            f"'{runs['node1/200']['message'].split(' (')[0]}' after "
            f"{max(runs[k]['duration'] for k in ('node1/200', 'node1/201')):.1f}s "
            f"(--connect-timeout 2); node2 changed; whole run {elapsed:.1f}s"
        )
        s.preserved = "node2's containers finished every task; node1's were never touched"


def test_latency_run_completes_and_timeouts_fire(healed, tmp_path):
    fl, m = healed, mark()
    with scenario("faults", "A node behind 200 ms of added latency") as s:
        quick = book(tmp_path, "quick.yml", QUICK)
        with fl.lab.latency("node2", 200):
            code, doc, err = fl.run(quick, "-e", f"mark={m}", journal=tmp_path / "j1")
        assert code == 0, err
        assert set(statuses(doc).values()) == {"changed"}
        runs = {f"{c['node']}/{c['ctid']}": c for c in doc["containers"]}
        slow_node = max(runs[k]["duration"] for k in ("node2/200", "node2/201"))
        fast_node = max(runs[k]["duration"] for k in ("node1/200", "node1/201"))
        assert slow_node > fast_node
        s.outcome = (
            f"exit 0, every container changed; node2's containers took {slow_node:.1f}s "
            f"against node1's {fast_node:.1f}s"
        )
        s.preserved = "the run completed everywhere under the default limits"

    with scenario("faults", "A command longer than --timeout, behind 200 ms latency") as s:
        victim, m2 = "node2/201", mark()
        with fl.lab.latency("node2", 200):
            started = time.monotonic()
            code, doc, err = fl.run(
                book(tmp_path, "slow.yml", SLOW), "--limit", victim, "-e", f"mark={m2}",
                "-e", "pause=60", "--timeout", "3", "--lock-lease", "2", journal=tmp_path / "j2",
            )  # fmt: skip
            elapsed = time.monotonic() - started
        # The command runs on in the container; it is ours: end it so its lock can expire.
        assert fl.kill_ct_processes(victim, b"pctfleet-task")
        assert code == 3, err
        run = doc["containers"][0]
        assert run["status"] == "timeout"
        assert run["message"].startswith("command did not finish within 3s"), run
        assert elapsed < 30, "the 60s command was cut off"
        s.outcome = (
            f"exit 3; {victim} status timeout: '{run['message'].split(' (')[0]}'; "
            f"the run ended after {elapsed:.1f}s (every call pays the latency) instead of 60s"
        )
        s.preserved = "node2/201's earlier state; nothing after the slow task ran"


def test_timed_out_command_keeps_the_lock(healed, tmp_path):
    fl, m = healed, mark()
    victim = "node1/201"
    log = fl.ct_root(victim) / "tmp/pctfleet-fault.log"
    with scenario("faults", "The next run while a timed-out command still runs") as s:
        code, doc, err = fl.run(
            book(tmp_path, "slow.yml", SLOW), "--limit", victim, "-e", f"mark={m}",
            "-e", "pause=5", "--timeout", "1", "--lock-lease", "2", journal=tmp_path / "j1",
        )  # fmt: skip
        assert code == 3 and doc["containers"][0]["status"] == "timeout", err
        started = time.monotonic()
        code, doc, err = fl.run(
            book(tmp_path, "quick.yml", QUICK), "--limit", victim, "-e", f"mark={m}",
            journal=tmp_path / "j2",
        )  # fmt: skip
        waited = time.monotonic() - started
        assert code == 0, err
        order = [line.split()[1] for line in log.read_text().splitlines() if line.startswith(m)]
        assert order == ["start", "end", "quick"], order
        s.outcome = (
            "the first run timed out after 1s (exit 3) while its 5s command ran on; the next "
            f"run waited {waited:.1f}s for the container's lock, then converged (exit 0)"
        )
        s.preserved = (
            "no interleaving: the log reads start, end, then the next run's change "
            "(before the fix the lock was released on timeout and the runs overlapped)"
        )


# -- interrupting the controller -----------------------------------------------------


def _wait_stage(fl: FaultLab, ov: Overlay, proc) -> None:  # noqa: ANN001
    stage = fl.ct_root(OVERLAY_CT) / ov.cuda_home.lstrip("/") / "include/.cccl.pctfleet-stage"

    def staging() -> bool:
        assert proc.poll() is None, "the run ended before the overlay started"
        return stage.exists()

    wait_for(staging, 120, "the overlay's stage folder", step=0.002)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_interrupt_mid_overlay(healed, overlay_ready, tmp_path, sig):
    fl, ov = healed, overlay_ready
    name = signal.Signals(sig).name
    with scenario("faults", f"{name} in the middle of the CCCL overlay") as s:
        before = overlay_state(fl, ov)
        old, new, m = before["source"], other(ov, before["source"]), mark()
        journal = tmp_path / "j1"
        proc = fl.start(
            "run", str(book(tmp_path, "overlay.yml", OVERLAY)), "-i", fl.inventory,
            "--limit", OVERLAY_CT, "--journal-dir", str(journal),
            *overlay_vars(ov, new), "-e", f"mark={m}",
        )  # fmt: skip
        _wait_stage(fl, ov, proc)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 99, err
        assert "interrupted: no new tasks started" in err
        after = overlay_state(fl, ov)
        assert_whole(after, old, new)
        assert after["source"] == new  # the running task was let finish
        assert not after["stage"]
        records = journal_records(journal)
        assert kinds(records) == ["start", "task", "task", "container", "interrupted"]
        assert task_names(records) == ["the venv is there", "overlay CCCL"]
        assert [r["status"] for r in records if r["kind"] == "task"] == ["ok", "changed"]
        assert records[3]["status"] == "interrupted"
        assert not (fl.ct_root(OVERLAY_CT) / f"tmp/pctfleet-after-{m}").exists()
        verify_overlay(fl)
        s.outcome = (
            f"exit 99; the overlay task that was running finished (CCCL from {new}), "
            "'after the overlay' never started; journal: start, 2 task records, container "
            "'interrupted', 'interrupted'"
        )
        code, doc, err = overlay(fl, ov, tmp_path, new)
        assert code == 0, err
        tasks = {t["name"]: t["status"] for t in doc["containers"][0]["tasks"]}
        assert tasks == {
            "the venv is there": "ok",
            "overlay CCCL": "ok",
            "after the overlay": "changed",
        }
        assert_whole(overlay_state(fl, ov), new)
        s.preserved = (
            "the new tree, whole: recomputed tree hash == manifest hash == TREE_HASH in the "
            "container; `pctfleet verify -k cccl_overlay_matches_manifest` passed; no stage "
            "folder left; the rerun finished (overlay ok, the rest changed)"
        )


@pytest.mark.parametrize("remote", [False, True], ids=["controller", "controller+remote"])
def test_sigkill_mid_overlay(healed, overlay_ready, tmp_path, remote):
    fl, ov = healed, overlay_ready
    title = "SIGKILL of the controller in the middle of the CCCL overlay"
    if remote:
        title += ", its remote script killed too"
    with scenario("faults", title) as s:
        before = overlay_state(fl, ov)
        old, new, m = before["source"], other(ov, before["source"]), mark()
        proc = fl.start(
            "run", str(book(tmp_path, "overlay.yml", OVERLAY)), "-i", fl.inventory,
            "--limit", OVERLAY_CT, "--journal-dir", str(tmp_path / "j1"), "--lock-lease", "2",
            *overlay_vars(ov, new), "-e", f"mark={m}",
        )  # fmt: skip
        _wait_stage(fl, ov, proc)
        proc.kill()
        proc.wait(30)
        killed = []
        if remote:  # the script and its cp, as a node that kills a dead session's processes
            killed = fl.kill_ct_processes(OVERLAY_CT, b"pctfleet-task")
            killed += fl.kill_ct_processes(OVERLAY_CT, b".cccl.pctfleet-stage")
            assert killed, "the overlay script was running"
        wait_for(lambda: not fl.ct_processes(OVERLAY_CT, b"pctfleet-task"), 60, "the remote script")
        after = overlay_state(fl, ov)
        assert_whole(after, old, new)
        if remote:
            assert after["source"] == old and after["stage"]  # cut off before the swap
        verify_overlay(fl)
        ended = "old" if after["source"] == old else "new"
        s.outcome = (
            "controller killed while the stage folder was being filled; "
            + (
                f"the remote script was killed too ({len(killed)} processes): "
                if remote
                else "the remote script, no longer watched, ran on: "
            )
            + f"the tree is the {ended} one"
            + (", a partial stage folder is left" if after["stage"] else "")
        )
        code, doc, err = overlay(fl, ov, tmp_path, new)
        assert code == 0, err
        final = overlay_state(fl, ov)
        assert_whole(final, new)
        assert not final["stage"]
        s.preserved = (
            f"the {ended} tree, whole (recomputed hash == manifest == TREE_HASH; verify "
            "passed); the rerun took over the dead run's lock, "
            + ("removed the stage folder, " if after["stage"] else "")
            + "and converged on the new tree (exit 0)"
        )


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_interrupt_mid_pip_install(healed, pip_ready, tmp_path, sig):
    fl, site = healed, pip_ready
    name = signal.Signals(sig).name
    python = f"{PIP_VENV}/bin/python"
    version = f"{python} -c 'import six; print(six.__version__)' 2>/dev/null || echo absent"
    with scenario("faults", f"{name} in the middle of a pip install") as s:
        old = fl.ct_out(PIP_CT, version).strip()
        new = SIX[1] if old == SIX[0] else SIX[0]
        m, journal = mark(), tmp_path / "j1"
        proc = fl.start(
            "run", str(book(tmp_path, "pip.yml", PIP)), "-i", fl.inventory, "--limit", PIP_CT,
            "--journal-dir", str(journal), "-e", f"six={new}", "-e", f"mark={m}",
        )  # fmt: skip

        def installing() -> bool:
            assert proc.poll() is None, "the run ended before pip started"
            return bool(fl.ct_processes(PIP_CT, b"pip", b"install", PIP_VENV.encode()))

        wait_for(installing, 120, "pip install", step=0.002)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 99, err
        now = fl.ct_out(PIP_CT, version).strip()
        assert now in (old, new)
        assert now == new  # the running task was let finish
        dists = fl.ct_out(PIP_CT, f"ls -d {site}/six-*")
        assert dists.split() == [f"{site}/six-{new}.dist-info"]
        assert fl.ct_sh(PIP_CT, f"{python} -m pip check").returncode == 0
        records = journal_records(journal)
        assert kinds(records) == ["start", "task", "container", "interrupted"]
        assert task_names(records) == ["six at the wanted version"]
        assert not (fl.ct_root(PIP_CT) / f"tmp/pctfleet-after-{m}").exists()
        s.outcome = (
            f"exit 99; pip ran to the end (six {old} -> {now}), the next task never started; "
            "journal: start, the pip task, container 'interrupted', 'interrupted'"
        )
        code, doc, err = fl.run(
            book(tmp_path, "pip.yml", PIP), "--limit", PIP_CT, "-e", f"six={new}",
            "-e", f"mark={m}", journal=tmp_path / "j2",
        )  # fmt: skip
        assert code == 0, err
        tasks = [t["status"] for t in doc["containers"][0]["tasks"]]
        assert tasks == ["ok", "changed"]
        s.preserved = (
            f"one six dist-info ({now}), `pip check` clean, the package imports; the rerun "
            "found pip done and finished the rest (exit 0)"
        )


# -- the container's disk --------------------------------------------------------------


def test_disk_full_during_overlay(healed, overlay_ready, tmp_path):
    fl, ov = healed, overlay_ready
    include = f"{ov.cuda_home}/include"
    with scenario("faults", "The container's disk fills during the CCCL overlay") as s:
        before = overlay_state(fl, ov)
        old, new = before["source"], other(ov, before["source"])
        # A tmpfs a few MB larger than what include/ holds now, with the same content.
        fill = f"""set -e
if grep -q " {include} tmpfs " /proc/mounts; then umount {include}; fi
used=$(du -sk {include} | cut -f1)
rm -rf /tmp/pctfleet-inc && cp -a {include} /tmp/pctfleet-inc
mount -t tmpfs -o size=$((used + 4096))k,mode=0755 pctfleet-full {include}
cp -a /tmp/pctfleet-inc/. {include}/
rm -rf /tmp/pctfleet-inc
df -k {include} | tail -1
"""
        proc = fl.ct_sh(OVERLAY_CT, fill)
        assert proc.returncode == 0, proc.stderr
        try:
            assert overlay_state(fl, ov)["hash"] == before["hash"]
            code, doc, err = overlay(fl, ov, tmp_path, new)
            assert code == 2, err
            run = doc["containers"][0]
            task = next(t for t in run["tasks"] if t["name"] == "overlay CCCL")
            assert task["status"] == "failed"
            assert "No space left on device" in task["msg"], task
            assert "No space left on device" in run["message"]
            after = overlay_state(fl, ov)
            assert_whole(after, old)
            assert after["hash"] == before["hash"] and not after["stage"]
            verify_overlay(fl)
            s.outcome = f"exit 2; the overlay task failed: '{task['msg']}'"
        finally:
            fl.ct_sh(OVERLAY_CT, f"umount {include}")
        code, doc, err = overlay(fl, ov, tmp_path, new)
        assert code == 0, err
        assert_whole(overlay_state(fl, ov), new)
        s.preserved = (
            "the old tree, byte for byte (same hash, manifest intact, verify passed); the "
            "partial stage folder was removed; with space back the rerun converged"
        )
