"""Loops, blocks and task vars, run by the engine against this machine (LocalTarget)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from pctfleet.errors import InputError
from pctfleet.modules import known_args
from pctfleet.playbook.loader import load_playbook
from pctfleet.playbook.loops import loop_items
from pctfleet.run.engine import ContainerEngine, RunOptions
from pctfleet.run.results import ContainerRun
from pctfleet.transport.local import LocalTarget


def run_book(tmp_path: Path, text: str, variables: dict | None = None):
    book = tmp_path / "book.yml"
    book.write_text(textwrap.dedent(text))
    play = load_playbook(book, known_args()).plays[0]
    run = ContainerRun("local", 100)
    engine = ContainerEngine(
        LocalTarget(), run, {**play.vars, **(variables or {})}, RunOptions(base_dir=str(tmp_path))
    )
    engine.play(play.tasks, list(play.handlers))
    run.finish_status()
    return run, engine


def test_loop_runs_each_item_with_per_item_when_and_registers_results(tmp_path):
    run, engine = run_book(
        tmp_path,
        f"""\
        - hosts: all
          vars: {{names: [a, b, c]}}
          tasks:
            - name: files
              copy: {{dest: "{tmp_path}/{{{{ item }}}}.txt", content: "{{{{ item }}}}"}}
              loop: "{{{{ names }}}}"
              when: item != 'b'
              register: out
        """,
    )
    assert run.status == "changed", run.message
    assert sorted(p.name for p in tmp_path.glob("*.txt")) == ["a.txt", "c.txt"]
    out = engine.vars["out"]
    assert (out["changed"], out["msg"], out["skipped"]) == (True, "All items completed", False)
    assert [(r["item"], r.get("skipped", False), r["changed"]) for r in out["results"]] == [
        ("a", False, True),
        ("b", True, False),
        ("c", False, True),
    ]
    assert all(r["ansible_loop_var"] == "item" for r in out["results"])
    task = run.tasks[0].as_json()
    assert len(run.tasks) == 1 and task["status"] == "changed"
    assert [(i["item"], i["status"]) for i in task["items"]] == [
        ("a", "changed"),
        ("b", "skipped"),
        ("c", "changed"),
    ]


def test_loop_control_and_a_loop_over_registered_results(tmp_path):
    run, engine = run_book(
        tmp_path,
        """\
        - hosts: all
          tasks:
            - command: echo {{ n }}
              loop: [x, y]
              loop_control: {loop_var: n, index_var: i, label: "L{{ i }}", extended: true}
              register: first
            - set_fact:
                seen: "{{ seen | default([]) + [r.stdout | trim ~ ':' ~ r.n ~ ':' ~ r.i] }}"
                cacheable: true
              loop: "{{ first.results }}"
              loop_control: {loop_var: r}
        """,
    )
    assert run.status == "changed", run.message
    assert engine.vars["seen"] == ["x:x:0", "y:y:1"]
    assert "cacheable" not in engine.vars
    assert [i["item"] for i in run.tasks[0].items] == ["L0", "L1"]
    assert engine.vars["first"]["results"][1]["ansible_loop"]["last"] is True


@pytest.mark.parametrize(
    ("kind", "terms", "expected"),
    [
        ("items", [[1, 2], 3, [[4]]], [1, 2, 3, [4]]),
        ("list", [[1, 2], 3], [[1, 2], 3]),
        ("dict", {"a": 1}, [{"key": "a", "value": 1}]),
        ("sequence", "start=1 end=5 stride=2 format=n%02d", ["n01", "n03", "n05"]),
        ("sequence", "4-6", ["4", "5", "6"]),
        ("sequence", "count=2 start=0x10", ["16", "17"]),
    ],
)
def test_loop_kinds(kind, terms, expected):
    from pctfleet.playbook.loader import Loop

    assert loop_items(Loop(kind, terms), {}, ".", "w") == expected


def test_fileglob_looks_in_files_then_the_playbook_dir_sorted(tmp_path):
    from pctfleet.playbook.loader import Loop

    (tmp_path / "files").mkdir()
    for name in ("files/b.conf", "files/a.conf", "c.conf"):
        (tmp_path / name).write_text("x")
    found = loop_items(Loop("fileglob", "*.conf"), {}, str(tmp_path), "w")
    assert found == [str(tmp_path / "files/a.conf"), str(tmp_path / "files/b.conf")]
    with pytest.raises(InputError, match="cannot count from 5 to 1 by 1"):
        loop_items(Loop("sequence", "start=5 end=1 stride=1"), {}, ".", "w")


def test_until_retries_each_item(tmp_path):
    counter = tmp_path / "n"
    run, engine = run_book(
        tmp_path,
        f"""\
        - hosts: all
          tasks:
            - shell: echo 1 >> {counter}-{{{{ item }}}}; wc -l < {counter}-{{{{ item }}}}
              loop: [a, b]
              register: r
              until: r.stdout | trim | int >= 2
              retries: 3
              delay: 0
        """,
    )
    assert run.status == "changed", run.message
    assert [r["stdout"].strip() for r in engine.vars["r"]["results"]] == ["2", "2"]
    # As Ansible: each result counts its attempts, 1-based, for later tasks to read.
    assert [r["attempts"] for r in engine.vars["r"]["results"]] == [2, 2]
    assert (tmp_path / "n-a").read_text().count("1") == 2
    assert (tmp_path / "n-b").read_text().count("1") == 2


def test_rescue_and_always_run_in_order_and_the_failure_is_rescued(tmp_path):
    log = tmp_path / "log"
    run, engine = run_book(
        tmp_path,
        f"""\
        - hosts: all
          tasks:
            - name: outer
              vars: {{word: from-block}}
              block:
                - shell: echo block >> {log}
                - name: breaks
                  command: /bin/false
                - shell: echo never >> {log}
              rescue:
                - shell: echo "rescue {{{{ ansible_failed_task.name }}}} {{{{ word }}}}" >> {log}
                - set_fact: {{rc_seen: "{{{{ ansible_failed_result.rc }}}}"}}
              always:
                - shell: echo always >> {log}
            - shell: echo after >> {log}
        """,
    )
    assert log.read_text().split("\n")[:-1] == [
        "block",
        "rescue breaks from-block",
        "always",
        "after",
    ]
    assert run.status == "changed", run.message
    assert engine.vars["rc_seen"] == 1
    assert run.stats()["rescued"] == 1 and run.stats()["failed"] == 0
    assert run.tasks[1].as_json()["rescued"] is True


def test_always_runs_and_the_failure_stays_without_rescue_nested(tmp_path):
    log = tmp_path / "log"
    run, _ = run_book(
        tmp_path,
        f"""\
        - hosts: all
          tasks:
            - block:
                - when: go
                  tags: t
                  block:
                    - fail: {{msg: inner}}
                  always:
                    - shell: echo inner-always >> {log}
              always:
                - shell: echo outer-always >> {log}
              when: true
            - shell: echo never >> {log}
        """,
        {"go": True},
    )
    assert log.read_text().split() == ["inner-always", "outer-always"]
    assert run.status == "failed" and "inner" in run.message


def test_block_when_is_anded_into_its_tasks(tmp_path):
    run, _ = run_book(
        tmp_path,
        """\
        - hosts: all
          tasks:
            - when: false
              block:
                - debug: {msg: hi}
              always:
                - debug: {msg: there}
        """,
    )
    assert [t.status for t in run.tasks] == ["skipped", "skipped"]


def test_task_vars_are_scoped_to_the_task_and_under_set_fact(tmp_path):
    (tmp_path / "vars").mkdir()
    (tmp_path / "vars" / "extra.yml").write_text("port: 81\nurl: 'http://h:{{ port }}'\n")
    run, engine = run_book(
        tmp_path,
        """\
        - hosts: all
          vars: {a: play}
          tasks:
            - debug: {msg: "{{ a }}"}
              vars: {a: task}
              register: one
            - debug: {msg: "{{ a }}"}
              register: two
            - set_fact: {b: fact}
            - debug: {msg: "{{ b }}"}
              vars: {b: task}
              register: three
            - include_vars: extra.yml
            - debug: {msg: "{{ url }}"}
              register: four
        """,
    )
    assert run.status == "ok", run.message
    got = [engine.vars[k]["msg"] for k in ("one", "two", "three", "four")]
    assert got == ["task", "play", "fact", "http://h:81"]


SIM_BOOK = """
- hosts: all
  vars: {dirs: [/opt/a, /opt/b], confs: {x: 1, y: 2}}
  tasks:
    - file: {path: "{{ item }}", state: directory}
      loop: "{{ dirs }}"
    - block:
        - copy: {dest: "/opt/a/{{ item.key }}.conf", content: "{{ item.value }}\\n"}
          with_dict: "{{ confs }}"
      rescue:
        - fail: {msg: unreachable}
      always:
        - file: {path: "/opt/b/{{ n }}", state: directory}
          with_sequence: start=1 end=3
          loop_control: {loop_var: n}
"""


def test_a_converged_looped_playbook_costs_one_call(tmp_path):
    from pctfleet.inventory import load_inventory
    from pctfleet.run.playbookrun import RunRequest, execute, prepare
    from pctfleet.transport.options import ConnectOptions
    from pctfleet.transport.sim import build_sim_fleet, converged_answers

    (tmp_path / "site.yml").write_text(SIM_BOOK)
    (tmp_path / "inv.yml").write_text("nodes:\n  pve1:\n    containers: [200]\n")
    inv = load_inventory(tmp_path / "inv.yml")
    request = RunRequest(
        tmp_path / "site.yml", inv, list(inv.select("all")), ConnectOptions(), RunOptions()
    )
    prepared = prepare(request)

    def fleet(containers, connect):  # noqa: ANN001, ANN202, ARG001
        return build_sim_fleet(
            containers, latency=0.0, answers=lambda c: converged_answers(prepared, c)
        )

    [run] = execute(prepared, fleet_factory=fleet)
    assert (run.status, run.remote_calls) == ("ok", 1), run.message
    assert [len(t.items or []) for t in run.tasks] == [2, 2, 3]
    assert all(i["status"] == "ok" for t in run.tasks for i in t.items)


def test_include_vars_under_a_name_and_a_missing_file(tmp_path):
    (tmp_path / "x.yml").write_text("a: 1\n")
    run, engine = run_book(
        tmp_path, "- hosts: all\n  tasks:\n    - include_vars: {file: x.yml, name: cfg}\n"
    )
    assert engine.vars["cfg"] == {"a": 1} and "a" not in engine.vars
    run, _ = run_book(tmp_path, "- hosts: all\n  tasks:\n    - include_vars: nope.yml\n")
    assert run.status == "failed" and "include_vars: file 'nope.yml' not found" in run.message


def test_the_recap_counts_as_ansible_an_ignored_failure_and_each_included_file(tmp_path):
    (tmp_path / "step.yml").write_text("- debug: {msg: '{{ item }}'}\n")
    run, _ = run_book(
        tmp_path,
        f"""\
        - hosts: all
          tasks:
            - name: ignored
              command: /bin/false
              ignore_errors: true
            - include_tasks: step.yml
              loop: [a, b, c]
              when: item != 'b'
            - copy: {{content: "x", dest: "{tmp_path}/out"}}
        """,
    )
    assert run.status == "changed", run.message
    assert run.tasks[0].ignored and run.tasks[0].as_json()["ignored"] is True
    # ansible-playbook's recap of the same play: the ignored failure is ok, ignored and
    # (a command) changed; the include is ok once per file it brought in.
    assert run.stats() == {
        "ok": 6, "changed": 2, "failed": 0, "skipped": 0, "rescued": 0, "ignored": 1
    }  # fmt: skip


def test_an_ignored_failure_is_reported_as_ignored_when_it_happens(tmp_path):
    """The journal writes each task as it is reported: `ignored` must be set by then."""
    book = tmp_path / "book.yml"
    book.write_text("- hosts: all\n  tasks:\n    - {command: /bin/false, ignore_errors: true}\n")
    play = load_playbook(book, known_args()).plays[0]
    reported: list[dict] = []
    engine = ContainerEngine(
        LocalTarget(),
        ContainerRun("local", 100),
        {},
        RunOptions(base_dir=str(tmp_path)),
        on_result=lambda run, result: reported.append(result.as_json()),
    )
    engine.play(play.tasks, [])
    assert [(r["status"], r.get("ignored")) for r in reported] == [("failed", True)]


def test_a_templated_notify_naming_no_handler_fails_its_task_when_it_changed(tmp_path):
    """As ansible-core: handlers are looked up for a changed result only, after the
    task ran (ansible-core then stops the whole run; here the task fails)."""
    run, _ = run_book(
        tmp_path,
        f"""\
        - hosts: all
          vars: {{svc: wbe}}
          tasks:
            - name: unchanged
              command: "true"
              changed_when: false
              notify: "restart {{{{ svc }}}}"
            - name: changed
              command: "touch {tmp_path}/ran"
              notify: "restart {{{{ svc }}}}"
          handlers:
            - {{name: restart web, command: "true"}}
        """,
    )
    unchanged, changed = run.tasks
    assert unchanged.status == "ok" and changed.status == "failed"
    assert "notify names 'restart wbe', which is no handler (handlers: restart web)" in changed.msg
    assert (tmp_path / "ran").exists()
