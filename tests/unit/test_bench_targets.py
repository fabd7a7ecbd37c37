"""bench/tables.py marks every target met, missed (why) or not measured (why)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import tables  # noqa: E402

MACHINE = {"nproc": 2, "cpu_model": "CPU", "kernel": "6.1", "python": "3.11", "date": "D"}


def sample(tool, scenario, wall, size=6, pair="", calls=1, sessions=1.0):  # noqa: ANN001, ANN201
    return {
        "tool": tool,
        "scenario": scenario,
        "wall_s": wall,
        "cpu_s": 0.5,
        "peak_tree_mb": 60.0,
        "maxrss_mb": 60.0,
        "exit_code": 0,
        "logins": {"node1": 1, "node2": 1},
        "sessions_per_ct": sessions,
        "calls": [calls] * size,
        "changed": 0,
        "ok": True,
        "note": "",
        "pair": pair,
        "containers": size,
    }


def ansible_pairs(ratio: float, n: int, size: int = 6) -> list[dict]:
    out = []
    for i in range(n):
        pair = f"ansible/noop/{size}/{i}"
        out += [
            sample("pctfleet", "noop", 1.0, size, pair),
            sample("ansible", "noop", ratio, size, pair),
        ]
    return out


def floor_pairs(ratio: float, n: int, size: int = 6, scenario: str = "noop") -> list[dict]:
    out = []
    for i in range(n):
        pair = f"floor/{scenario}/{size}/{i}/0"
        out += [
            sample("floor", scenario, 1.0, size, pair),
            sample("pctfleet", scenario, ratio, size, pair),
        ]
    return out


def document(samples: list[dict], simulation=None, startup_probe=None) -> dict:  # noqa: ANN001
    return {
        "machine": MACHINE,
        "versions": {"pctfleet": "0.1"},
        "settings": {"latency_ms": 50, "runs": 5, "pairs": 3, "sizes": {"6": 2}},
        "startup": {"pctfleet_cli": 0.2, "floor": 0.2},
        "startup_probe": startup_probe,
        "samples": samples,
        "simulation": simulation or [],
        "seconds": 60,
    }


def verdict(doc: dict, starts: str) -> tuple[str, str]:
    rows = [(m, v) for t, m, v in tables.targets(doc) if t.startswith(starts)]
    assert len(rows) == 1, rows
    return rows[0]


def test_ansible_ratio_met_missed_and_too_few_pairs():
    label = "no-op, 6 containers, 2 nodes: Ansible"
    assert verdict(document(ansible_pairs(45, 5)), label)[1] == "met"
    assert verdict(document(ansible_pairs(30, 5)), label)[1] == "missed: 75% of the target"
    measured, said = verdict(document(ansible_pairs(45, 3)), label)
    assert said.startswith("not measured: 3 pairs") and measured.startswith("45.00x")
    assert verdict(document(floor_pairs(1.1, 5)), label)[1].startswith("not measured: no Ansible")


def test_an_ansible_miss_says_what_the_floor_reaches_against_ansible():
    label = "no-op, 6 containers, 2 nodes: Ansible"
    pairs = floor_pairs(1, 5)
    floor = [{**one, "wall_s": 1.25} if one["tool"] == "floor" else one for one in pairs]
    said = verdict(document(ansible_pairs(30, 5) + floor), label)[1]
    assert said == "missed: 75% of the target; Ansible / floor in this run: 24.0x (their medians)"
    assert verdict(document(ansible_pairs(45, 5) + floor), label)[1] == "met"
    assert verdict(document(ansible_pairs(30, 5)), label)[1] == "missed: 75% of the target"


def test_floor_ratio_is_the_median_of_back_to_back_pairs():
    label = "no-op, 6 containers, 2 nodes: pctfleet / floor"
    assert verdict(document(floor_pairs(1.1, 5)), label)[1] == "met"
    assert verdict(document(floor_pairs(1.3, 5)), label)[1] == "missed: 0.15x over"
    # An Ansible pair is not a floor pair.
    assert verdict(document(ansible_pairs(45, 5)), label)[1].startswith("not measured")


def test_each_size_has_its_own_rows():
    doc = document(ansible_pairs(45, 5, size=3) + ansible_pairs(30, 5, size=6))
    doc["settings"]["sizes"] = {"3": 1, "6": 2}
    assert verdict(doc, "no-op, 3 containers, 1 node: Ansible")[1] == "met"
    assert verdict(doc, "no-op, 6 containers, 2 nodes: Ansible")[1].startswith("missed")


def test_startup_target_met_missed_or_not_measured():
    label = "CLI reaches first SSH connect"
    assert verdict(document([]), label) == ("-", "not measured: bench/startup.py not present")
    probe = {"import_s": 0.1, "first_connect_s": 0.2, "runs": 5}
    assert verdict(document([], startup_probe=probe), label)[1] == "met"
    probe["first_connect_s"] = 0.31
    measured, said = verdict(document([], startup_probe=probe), label)
    assert said == "missed: 0.060 s over" and "0.310 s (median of 5" in measured
    failed = verdict(document([], startup_probe={"error": "boom"}), label)[1]
    assert failed.startswith("not measured") and "boom" in failed


def test_latency_allows_three_round_trips_overall_not_per_node():
    label = "no-op +latency, 6 containers"
    # +50 ms each way: a round trip is 0.1 s; two nodes in parallel still get 0.3 s.
    base = floor_pairs(1.1, 5)
    met = base + floor_pairs(1.35, 5, scenario="noop+latency")
    assert verdict(document(met), label)[1] == "met"
    missed = base + floor_pairs(1.55, 5, scenario="noop+latency")
    measured, said = verdict(document(missed), label)
    assert said == "missed: 0.15 s over; a fresh login alone takes 3 round trips"
    assert "4.5 round trips" in measured
    assert verdict(document(base), label)[1].startswith("not measured")
    noisy = base + [sample("pctfleet", "noop", 2.0)] + floor_pairs(1.35, 5, scenario="noop+latency")
    assert (
        verdict(document(noisy), label)[1] == "met (no-op samples spread 0.90 s: within the noise)"
    )


def test_a_kept_login_that_misses_the_latency_target_is_not_blamed_on_a_fresh_login():
    kept = [sample("pctfleet-kept", "noop", 1.0) for _ in range(5)]
    kept += [sample("pctfleet-kept", "noop+latency", 1.45) for _ in range(5)]
    doc = document(floor_pairs(1.1, 5) + floor_pairs(1.55, 5, scenario="noop+latency") + kept)
    label = "no-op +latency, 6 containers, 2 nodes: grows <= 3 round trips"
    said = {t: v for t, _, v in tables.targets(doc) if t.startswith(label)}
    assert said[label] == "missed: 0.15 s over; a fresh login alone takes 3 round trips"
    assert said[label + tables._kept_label("pctfleet-kept")] == "missed: 0.15 s over"


def point(mode: str, containers: int, wall: float, cpu: float, mb: float) -> dict:
    return {
        "mode": mode,
        "containers": containers,
        "nodes": containers // 20 or 1,
        "wall_s": wall,
        "cpu_s": cpu,
        "peak_mb": mb,
        "calls_per_ct": 1.0,
        "changed": 0,
        "extra_key": "tolerated",
    }


def test_simulation_targets_and_a_missing_point():
    sim = [point("noop", 100, 0.5, 0.25, 60), point("noop", 1000, 5.5, 2.5, 120)]
    doc = document([], simulation=sim)
    assert verdict(doc, "simulation noop, 1,000 containers: wall")[1] == "met"
    assert verdict(doc, "simulation noop, 1,000 containers: peak")[1] == "met"
    assert verdict(doc, "simulation noop, 10,000 containers: wall")[1].startswith("not measured")
    assert verdict(doc, "simulation noop: controller CPU grows")[1] == "met"
    assert verdict(doc, "simulation noop: controller CPU <=") == ("2.5 ms at 1,000", "met")
    sim.append(point("noop", 10000, 70.0, 40.0, 510))
    doc = document([], simulation=sim)
    assert verdict(doc, "simulation noop, 10,000 containers: wall")[1] == "missed: 1.2x the limit"
    assert verdict(doc, "simulation noop, 10,000 containers: peak")[1].startswith("missed")
    assert verdict(doc, "simulation noop: controller CPU grows")[1].startswith("missed")
    assert verdict(doc, "simulation noop: controller CPU <=")[1] == "missed: 1.0 ms over"
    assert "| noop | 10000 | 500 | 70.00 | - |" in tables.markdown(doc)


def test_the_page_and_the_readme_headline_come_from_one_document():
    doc = document(ansible_pairs(45, 5) + floor_pairs(1.1, 5))
    page = tables.markdown(doc)
    assert "| no-op, 6 containers, 2 nodes: Ansible / pctfleet >= 40x | 45.00x" in page
    readme = f"# x\n\nbefore\n{tables.HEADLINE_BEGIN}\nold 34.7x\n{tables.HEADLINE_END}\nafter\n"
    new = tables.splice_headline(readme, doc)
    assert "old 34.7x" not in new and "45.0x faster than Ansible" in new
    assert new.startswith("# x\n\nbefore\n") and new.endswith(f"{tables.HEADLINE_END}\nafter\n")


def test_run_reads_startup_py_by_its_contract_and_none_without_it(tmp_path, monkeypatch):
    import run

    monkeypatch.setattr(run, "STARTUP_MODULE", tmp_path / "startup.py")
    assert run.load_startup() is None
    (tmp_path / "startup.py").write_text(
        "def measure(inventory, playbook, runs, known_hosts=None):\n"
        "    return {'import_s': 0.1, 'first_connect_s': 0.2, 'first_exec_s': 0.45,\n"
        "            'runs': runs, 'extra': 1}\n"
    )
    module = run.load_startup()
    got = run.startup_result(module.measure("inv", "pb", 5))
    assert got == {"import_s": 0.1, "first_connect_s": 0.2, "first_exec_s": 0.45, "runs": 5}
    measured, said = verdict(document([], startup_probe=got), "CLI reaches")
    assert said == "met" and "first pct exec sent at 0.450 s" in measured


def test_render_writes_the_page_and_the_headline_and_refuses_a_bad_file(tmp_path, capsys):
    import json

    import pytest
    import run

    results = tmp_path / "results.json"
    results.write_text(json.dumps(document(ansible_pairs(45, 5) + floor_pairs(1.1, 5))))
    readme = tmp_path / "README.md"
    readme.write_text(f"a\n{tables.HEADLINE_BEGIN}\nold\n{tables.HEADLINE_END}\nb\n")
    docs = tmp_path / "benchmarks.md"
    argv = ["--render", str(results), "--docs", str(docs), "--readme", str(readme)]
    assert run.main(argv) == 0
    assert "| met |" in docs.read_text() and "45.0x faster" in readme.read_text()
    results.write_text("{not json")
    with pytest.raises(SystemExit) as exit_:
        run.main(argv)
    assert exit_.value.code == 2 and f"--render {results}" in capsys.readouterr().err


def test_startup_logs_in_with_the_labs_known_hosts():
    import startup

    argv = startup.run_argv("inv.yml", "site.yml", "/lab/known_hosts")
    assert argv[argv.index("--known-hosts") + 1] == "/lab/known_hosts"
    assert "--known-hosts" not in startup.run_argv("inv.yml", "site.yml", None)


def test_interpreters_target_counts_the_python_starts_of_one_probe():
    label = "converged probe starts at most one interpreter per container"
    one = {"container": "n1-ct200", "starts": ["/opt/bench/venv/bin/python -c ..."]}
    assert tables.interpreters_target(one) == (
        label,
        "1 in n1-ct200's no-op (/opt/bench/venv/bin/python)",
        "met",
    )
    none = tables.interpreters_target({"container": "n1-ct200", "starts": []})
    assert none[1:] == ("0 in n1-ct200's no-op (none)", "met")
    two = {"container": "n1-ct200", "starts": ["/usr/local/bin/python3 -", "python -c x"]}
    assert tables.interpreters_target(two)[2] == "missed: 2 interpreters"
    broken = tables.interpreters_target({"container": "n1-ct200", "error": "RuntimeError: x"})
    assert broken[2] == "not measured: RuntimeError: x"
    assert tables.interpreters_target(None)[2] == "not measured by this run"


def _sh(script: str):  # noqa: ANN202 - CompletedProcess
    import subprocess

    return subprocess.run(["sh", "-c", script], capture_output=True, text=True)


def _fake_root(tmp_path, monkeypatch):  # noqa: ANN001, ANN202
    import interpreters

    venv, log, system = tmp_path / "venv", tmp_path / "starts.log", tmp_path / "python3"
    (venv / "bin").mkdir(parents=True)
    monkeypatch.setattr(interpreters, "SYSTEM", str(system))
    return interpreters, str(venv), str(log), system


def test_interpreter_wrappers_go_in_and_come_out(tmp_path, monkeypatch):
    """The scripts bench/interpreters.py runs in the container, run here on a fake root:
    the wrappers log each start and run the real interpreter; the restore puts back
    what was there (a link for the venv's python, nothing for the other)."""
    import subprocess

    interpreters, venv, log, system = _fake_root(tmp_path, monkeypatch)
    venv_python = Path(venv) / "bin/python"
    venv_python.symlink_to("/usr/bin/python3")
    checked = _sh(interpreters.install_script(venv, log) + interpreters.self_check(venv, log))
    assert (checked.returncode, checked.stdout.split()) == (0, ["1"])
    assert Path(log).read_text() == ""  # emptied for the run to be measured
    out = subprocess.run([str(venv_python), "-c", "print(6 * 7)"], capture_output=True, text=True)
    assert out.stdout == "42\n"
    subprocess.run([str(system), "-c", "pass"], check=True)
    assert len(Path(log).read_text().splitlines()) == 2
    assert _sh(interpreters.restore_script(venv, log)).returncode == 0
    assert not system.exists() and not Path(log).exists()
    assert os.readlink(venv_python) == "/usr/bin/python3"
    assert sorted(p.name for p in Path(venv, "bin").iterdir()) == ["python"]


def test_interpreter_restore_never_removes_an_original(tmp_path, monkeypatch):
    """A failed install (nothing moved aside) leaves the file; a run that never
    restored leaves its saved original, which the next install does not overwrite."""
    interpreters, venv, log, system = _fake_root(tmp_path, monkeypatch)
    system.write_text("original\n")
    assert _sh(interpreters.restore_script(venv, log)).returncode == 0
    assert system.read_text() == "original\n"
    assert _sh(interpreters.install_script(venv, log)).returncode == 0  # then no restore
    assert _sh(interpreters.install_script(venv, log)).returncode == 0  # a later run
    assert _sh(interpreters.restore_script(venv, log)).returncode == 0
    assert system.read_text() == "original\n"
