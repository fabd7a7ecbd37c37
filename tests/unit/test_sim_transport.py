"""The simulated transport: latency, per-node session caps, converged answers to real probes."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import pytest

from pctfleet.cuda import audit as drift
from pctfleet.facts import script as probe
from pctfleet.inventory import load_inventory
from pctfleet.run.engine import RunOptions
from pctfleet.run.playbookrun import RunRequest, execute, prepare
from pctfleet.transport.base import CommandTimeout
from pctfleet.transport.options import ConnectOptions
from pctfleet.transport.sim import (
    CannedAnswers,
    SimNode,
    SimTarget,
    answer_probe,
    build_sim_fleet,
    converged_answers,
    converged_reading,
    snippet_key,
    snippets,
)

REPO = Path(__file__).resolve().parents[2]
BENCH_PLAYBOOK = REPO / "bench" / "pctfleet_site.yml"

PLAYBOOK = """
- name: every module the simulation models
  hosts: all
  vars: {venv: /opt/app/venv, port: 8000}
  tasks:
    - name: venv
      command: python3 -m venv {{ venv }} creates={{ venv }}/bin/python
    - name: packages
      pip: {name: ["six==1.16.0", "idna>=3"], virtualenv: "{{ venv }}"}
    - name: folder
      file: {path: /opt/app, state: directory, mode: "0750", owner: app}
    - name: link
      file: {src: /opt/app, dest: /srv/app, state: link}
    - name: gone
      file: {path: /tmp/old, state: absent}
    - name: config
      copy: {dest: /opt/app/app.conf, content: "port={{ port }}\\nhost={{ ct_name }}\\n"}
      notify: restart
    - name: stale
      server_stop: {pidfile: /run/old.pid}
    - name: server
      server:
        name: app
        command: ["{{ venv }}/bin/python", "-m", "http.server", "{{ port | string }}"]
        env_file: /opt/app/app.conf
        ready_url: "http://127.0.0.1:{{ port }}/"
      register: srv
    - name: check
      fail: {msg: no pid}
      when: srv.pid is not defined
  handlers:
    - name: restart
      server: {name: app, state: restarted, command: "true"}
"""

INVENTORY = """
defaults: {user: root}
nodes:
  pve1:
    containers:
      200: {name: a}
      201: {name: b}
      202: {name: c}
  pve2:
    containers: [200, 201, 202]
"""


def _request(tmp_path: Path, playbook: Path, inventory: str, options: RunOptions) -> RunRequest:
    inv_path = tmp_path / "inventory.yml"
    inv_path.write_text(inventory)
    inv = load_inventory(inv_path)
    return RunRequest(playbook, inv, list(inv.select("all")), ConnectOptions(), options, forks=4)


def _sim_run(request: RunRequest, latency: float = 0.0, converged: bool = True):
    prepared = prepare(request)
    fleets = []

    def factory(containers, connect):  # noqa: ANN001, ANN202, ARG001
        answers = (lambda c: converged_answers(prepared, c)) if converged else None
        fleets.append(build_sim_fleet(containers, latency=latency, answers=answers))
        return fleets[-1]

    return execute(prepared, fleet_factory=factory), fleets[0]


def test_a_call_sleeps_its_latency_and_is_counted():
    node = SimNode("pve1")
    target = SimTarget(node, 200, latency=0.05)
    started = time.monotonic()
    result = target.run(["/bin/sh", "-c", "anything"], stdin=b"")
    assert time.monotonic() - started >= 0.05
    assert (result.exit_code, result.stdout, target.calls, node.calls) == (0, b"", 1, 1)
    assert target.name == "pve1/200"


def test_a_call_longer_than_its_timeout_times_out():
    with pytest.raises(CommandTimeout):
        SimTarget(SimNode("pve1"), 200, latency=1.0).run(["true"], timeout=0.1)


def test_a_node_runs_at_most_max_sessions_calls_at_once():
    node = SimNode("pve1", max_sessions=3)
    targets = [SimTarget(node, 200 + i, latency=0.05) for i in range(9)]
    threads = [threading.Thread(target=t.run, args=(["true"],)) for t in targets]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert node.peak_sessions == 3
    assert time.monotonic() - started >= 3 * 0.05  # 9 calls, 3 at a time
    assert node.calls == 9


def test_probe_scripts_are_answered_snippet_by_snippet():
    script = probe.build_script({"t1": "echo one", "t2": "echo two", "t3": "unknown"})
    answers = {"echo one": "one", "echo two": "a=1\nb=2\n"}
    facts = probe.parse_output(answer_probe(script, answers.get), probe.nonce_of(script))
    assert facts["t1"].output == "one" and facts["t1"].status == 0
    assert facts["t2"].fields() == {"a": "1", "b": "2"}
    assert facts["t3"].output == ""


def test_canned_answers_print_what_the_plain_answers_print():
    readings = {"echo one": "one", "echo two": "a=1\nb=x y=z\n", "echo empty": "e=\n"}
    canned = CannedAnswers({snippet_key(k): v for k, v in readings.items()})
    script = probe.build_script({f"t{i}": s for i, s in enumerate([*readings, "unknown"])})
    printed = answer_probe(script, canned)
    assert printed == answer_probe(script, readings.get)
    assert [canned(s) for s in readings] == list(readings.values())
    facts = probe.parse_output(printed, probe.nonce_of(script))
    assert facts["t1"].fields() == {"a": "1", "b": "x y=z"} and facts["t3"].output == ""


# The layout build_script writes, as one pattern: what `snippets` must find, no more, no less.
_REFERENCE = re.compile(
    r"printf '\\036pctfleet-fact-begin %s %s\\n' (?P<nonce>[0-9a-f]*) '(?P<key>[^']*)'\n"
    r"\(\n(?P<body>.*?)\n\) </dev/null 2>/dev/null\n"
    r"printf '\\036pctfleet-fact-end ",
    re.DOTALL,
)


def test_snippets_are_found_as_the_layouts_pattern_finds_them():
    tricky = {
        "t1": "echo one",
        "t2": "",
        "t3": "printf '\\036pctfleet-fact-begin %s %s\\n' ab 'x'\n(\necho fake\n"
        ") </dev/null 2>/dev/null\nprintf '\\036pctfleet-fact-end %s' ab",
        "t4": "a\n) </dev/null 2>/dev/null\necho inner close",
        "t5": "cat <<'EOF'\n(\nEOF",
    }
    script = probe.build_script(tricky)
    broken = script.replace("'t2'\n(", "'t2' (")  # a begin with no body: skipped
    for text in (script, broken, script[: len(script) // 2], ""):
        found = [m.group("nonce", "key", "body") for m in _REFERENCE.finditer(text)]
        assert list(snippets(text)) == found
    assert [key for _, key, _ in snippets(script)] == list(tricky)


def test_run_script_answers_through_the_target():
    target = SimTarget(SimNode("pve1"), 200, latency=0.0, answer={"true": "x=1"}.get)
    assert probe.run_probe(target, {"k": "true"})["k"].fields() == {"x": "1"}


def test_a_converged_fleet_costs_one_call_per_container_and_changes_nothing(tmp_path):
    playbook = tmp_path / "site.yml"
    playbook.write_text(PLAYBOOK)
    runs, fleet = _sim_run(_request(tmp_path, playbook, INVENTORY, RunOptions()), latency=0.01)
    assert [r.status for r in runs] == ["ok"] * 6, [(r.status, r.message) for r in runs]
    assert [r.remote_calls for r in runs] == [1] * 6
    assert all(t.status in {"ok", "skipped"} for r in runs for t in r.tasks)
    assert sorted(fleet.nodes) == ["pve1", "pve2"]
    assert fleet.connections_opened() == {"pve1": 1, "pve2": 1}


def test_an_audit_of_a_converged_fleet_is_clean(tmp_path):
    playbook = tmp_path / "site.yml"
    playbook.write_text(PLAYBOOK)
    options = RunOptions(
        check=True, diff=True, extra_probes={"fingerprint": drift.fingerprint_snippet}
    )
    runs, _ = _sim_run(_request(tmp_path, playbook, INVENTORY, options))
    assert [drift.judge(r, None).status for r in runs] == ["clean"] * 6
    assert [r.remote_calls for r in runs] == [1] * 6


def test_without_answers_the_engine_plans_changes_and_they_cost_calls(tmp_path):
    playbook = tmp_path / "site.yml"
    playbook.write_text(PLAYBOOK)
    runs, _ = _sim_run(_request(tmp_path, playbook, INVENTORY, RunOptions()), converged=False)
    assert {r.status for r in runs} != {"ok"}
    assert all(r.remote_calls > 1 for r in runs)


def test_a_converged_command_guarded_by_removes_is_skipped(tmp_path):
    """Where the command already ran, the file it removes is gone."""
    playbook = tmp_path / "site.yml"
    playbook.write_text(
        "- hosts: all\n  tasks:\n"
        "    - {name: unlock, command: rm /tmp/lock removes=/tmp/lock}\n"
        "    - {name: unlock again, shell: {cmd: rm /tmp/lock2, removes: /tmp/lock2}}\n"
    )
    runs, _ = _sim_run(_request(tmp_path, playbook, INVENTORY, RunOptions()))
    assert [(t.status, t.msg) for t in runs[0].tasks] == [
        ("ok", "Did not run command since '/tmp/lock' does not exist"),
        ("ok", "Did not run command since '/tmp/lock2' does not exist"),
    ]


@pytest.mark.skipif(not BENCH_PLAYBOOK.exists(), reason="bench/ not in this checkout")
def test_the_benchmark_playbook_is_modelled(tmp_path):
    inventory = INVENTORY.replace(
        "defaults: {user: root}",
        "defaults: {user: root}\nvars: {server_port: 32000, bench_label: x, "
        f"standin_src: {REPO / 'src/pctfleet/lab/sglang_standin.py'}}}",
    )
    runs, _ = _sim_run(_request(tmp_path, BENCH_PLAYBOOK, inventory, RunOptions()))
    assert [(r.status, r.remote_calls) for r in runs] == [("ok", 1)] * 6


def test_a_module_without_a_model_is_refused():
    from pctfleet.modules.base import FactReader, World

    class Unmodelled:
        fact = FactReader()

    with pytest.raises(ValueError, match="'mystery'"):
        converged_reading("mystery", Unmodelled(), None, World())


def test_a_converged_copy_leaves_its_content_for_later_tasks(tmp_path):
    """The server's env_file check reads what an earlier copy or template wrote."""
    from pctfleet.modules import REGISTRY
    from pctfleet.modules.args import Context
    from pctfleet.modules.base import World

    world = World()
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "env.j2").write_text("PORT={{ port }}\n")
    ctx = Context(str(tmp_path), {"port": 8000})
    for module, raw in (
        ("copy", {"dest": "/opt/app/a.env", "content": "A=1\n"}),
        ("template", {"dest": "/opt/app/", "src": "env.j2"}),
    ):
        args = REGISTRY[module].prepare(raw, ctx, "t")
        REGISTRY[module].fact.converged(args, world)
    assert world.files == {"/opt/app/a.env": b"A=1\n", "/opt/app/env.j2": b"PORT=8000\n"}


def test_a_node_without_round_trips_never_sleeps_for_them(monkeypatch):
    # sleep(0) gives up the GIL: on a fleet of thousands of threads that handoff is
    # the simulation's own cost, counted in the controller CPU the bench reports.
    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)
    node = SimNode("pve1")
    target = SimTarget(node, 200, latency=0.0)
    target.run(["true"])
    target.run(["true"])
    assert slept == [] and node.logins == 1 and node.calls == 2


def test_a_snippet_key_tells_texts_apart_and_matches_equal_ones():
    text = "stat -c %a /opt/app"
    assert snippet_key(text) == snippet_key("".join(["stat -c %a ", "/opt/app"]))
    assert snippet_key(text) != snippet_key(text + " ")
    assert snippet_key(text) != snippet_key("stat -c %a /opt/apq")


def test_callers_that_arrive_during_the_login_wait_for_it():
    node = SimNode("pve1", rtt=0.05)
    starts: list[float] = []
    ends: list[float] = []

    def call() -> None:
        starts.append(time.monotonic())
        SimTarget(node, 200, latency=0.0).run(["true"])
        ends.append(time.monotonic())

    threads = [threading.Thread(target=call) for _ in range(5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # The login (0.05 s) starts with the first call; no call ends before it is over
    # and its own channel and call (0.1 s) are done.
    assert node.logins == 1 and len(ends) == 5
    assert min(ends) - min(starts) >= 0.15
