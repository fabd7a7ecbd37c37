"""The engine against this machine (LocalTarget): command stdin, register, one probe."""

from __future__ import annotations

import textwrap

from pctfleet.modules import known_args
from pctfleet.playbook.loader import load_playbook
from pctfleet.run import taskargs
from pctfleet.run.engine import ContainerEngine, RunOptions
from pctfleet.run.results import ContainerRun
from pctfleet.transport.local import LocalTarget


def test_command_stdin_reaches_the_program_and_is_registered(tmp_path):
    book = tmp_path / "book.yml"
    book.write_text(
        textwrap.dedent(
            f"""\
        - hosts: all
          tasks:
            - name: read stdin
              command: cat
              args: {{stdin: "hello from stdin"}}
              register: out
            - name: keep it
              copy: {{content: "{{{{ out.stdout }}}}", dest: "{tmp_path}/out.txt"}}
        """
        )
    )
    play = load_playbook(book, known_args()).plays[0]
    run = ContainerRun("local", 100)
    target = LocalTarget()
    options = RunOptions(base_dir=str(tmp_path), lock_wait=5)
    ContainerEngine(target, run, {}, options).play(play.tasks, [])
    assert run.status == "ok", run.message
    assert [t.status for t in run.tasks] == ["changed", "changed"]
    assert (tmp_path / "out.txt").read_text() == "hello from stdin"


def test_a_task_s_details_reach_the_json_redacted(tmp_path):
    """The server's own result (pid, manager) is in the task JSON; a secret in it is not."""
    book = tmp_path / "book.yml"
    pidfile = tmp_path / "s.pid"
    book.write_text(
        textwrap.dedent(
            f"""\
        - hosts: all
          vars: {{api_token: tok-4711}}
          tasks:
            - name: serve
              server:
                name: s
                command: ["sh", "-c", "echo up; exec sleep 30", "tok-4711"]
                pidfile: {pidfile}
                logfile: {tmp_path}/s.log
                ready_log: up
                ready_timeout: 5
            - name: stop it again
              server: {{name: s, command: x, state: stopped, pidfile: {pidfile}}}
        """
        )
    )
    play = load_playbook(book, known_args()).plays[0]
    run = ContainerRun("local", 100)
    options = RunOptions(base_dir=str(tmp_path), lock_wait=5)
    engine = ContainerEngine(LocalTarget(), run, dict(play.vars), options)
    engine.play(play.tasks, [])
    assert [t.status for t in run.tasks] == ["changed", "changed"], run.message
    details = run.tasks[0].as_json()["details"]
    assert details["manager"] == "pidfile" and details["pid"] > 1, details
    engine = ContainerEngine(LocalTarget(), ContainerRun("local", 100), {}, options)
    hostile = {"stale": [{"pid": 7, "cmdline": "serve tok-4711", "why": "x"}]}
    redacted = engine._redacted(play.tasks[0], _with_details(run.tasks[0], hostile))
    assert redacted.details == hostile  # no secret among the engine's variables: kept
    engine.vars = {"api_token": "tok-4711"}
    redacted = engine._redacted(play.tasks[0], _with_details(run.tasks[0], hostile))
    assert redacted.details["stale"][0]["cmdline"] == "serve ********"


def _with_details(task, details):
    import dataclasses

    return dataclasses.replace(task, details=details)


def test_extra_probes_are_read_even_when_no_task_probes(tmp_path):
    """audit's fingerprint comes back from a play whose tasks read nothing in the container."""
    book = tmp_path / "book.yml"
    book.write_text("- hosts: all\n  gather_facts: false\n  tasks:\n    - debug: {msg: hi}\n")
    play = load_playbook(book, known_args()).plays[0]
    options = RunOptions(extra_probes={"mark": lambda variables: "echo marked"})
    run = ContainerRun("local", 100)
    ContainerEngine(LocalTarget(), run, {}, options).play(play.tasks, [])
    assert run.status == "ok", run.message
    assert run.extra_facts["mark"].strip() == "marked"


def test_arguments_rendered_for_the_probe_are_reused_until_a_variable_changes(
    tmp_path, monkeypatch
):
    # `same` reads only the container's vars: rendered once for the probe, reused when it runs.
    # `after` reads a result registered in between: rendered again, with the new value.
    book = tmp_path / "book.yml"
    book.write_text(
        textwrap.dedent(
            f"""\
        - hosts: all
          tasks:
            - name: same
              copy: {{content: "{{{{ greeting }}}}", dest: "{tmp_path}/a.txt"}}
            - name: read
              command: echo there
              register: out
            - name: after
              copy: {{content: "{{{{ out.stdout | default('none') }}}}", dest: "{tmp_path}/b.txt"}}
        """
        )
    )
    play = load_playbook(book, known_args()).plays[0]
    rendered: list[str] = []
    real = taskargs.render

    def counted(value, variables, **kwargs):  # noqa: ANN001, ANN202
        rendered.append(str(value.get("dest", "")))
        return real(value, variables, **kwargs)

    monkeypatch.setattr(taskargs, "render", counted)
    run = ContainerRun("local", 100)
    options = RunOptions(base_dir=str(tmp_path), lock_wait=5)
    ContainerEngine(LocalTarget(), run, {"greeting": "hi"}, options).play(play.tasks, [])
    assert run.status == "ok", run.message
    assert (tmp_path / "b.txt").read_text() == "there"
    assert rendered.count(f"{tmp_path}/a.txt") == 1


class _CountingModule:
    """A module whose probe snippet names its arguments and diff mode, counting calls."""

    def __init__(self, name: str) -> None:
        self.name, self.calls = name, 0

    def probe(self, args: object, want_diff: bool) -> str:
        self.calls += 1
        return f"{self.name} {args} diff={want_diff}"


def test_a_probe_snippet_is_made_once_for_the_same_module_arguments_and_diff_mode():
    engine = ContainerEngine(LocalTarget(), ContainerRun("local", 100), {}, RunOptions())
    first, second = _CountingModule("stat"), _CountingModule("file")
    args, equal = ["/etc/a"], ["/etc/a"]
    assert engine._snippet(first, args, False) == "stat ['/etc/a'] diff=False"
    assert engine._snippet(first, args, False) == "stat ['/etc/a'] diff=False"
    assert first.calls == 1  # made for the probe, reused when the task is planned
    assert engine._snippet(first, args, True) == "stat ['/etc/a'] diff=True"
    assert engine._snippet(second, args, True) == "file ['/etc/a'] diff=True"
    assert engine._snippet(first, equal, True) == "stat ['/etc/a'] diff=True"
    assert (first.calls, second.calls) == (3, 1)  # other mode, module or object: made anew


def _ran(tmp_path, tasks: str, variables: dict | None = None) -> ContainerRun:
    """`tasks` (YAML under a play's `tasks:`) run on this machine; the container's run."""
    book = tmp_path / "book.yml"
    book.write_text("- hosts: all\n  gather_facts: false\n  tasks:\n" + tasks)
    play = load_playbook(book, known_args()).plays[0]
    run = ContainerRun("local", 100)
    options = RunOptions(base_dir=str(tmp_path), lock_wait=30)
    ContainerEngine(LocalTarget(), run, dict(variables or {}), options).play(play.tasks, [])
    return run


def test_debug_shows_a_message_that_renders_to_none_not_the_default(tmp_path):
    tasks = (
        "    - debug: {msg: '{{ nothing }}'}\n    - debug: {msg: '{{ none }}'}\n    - debug: {}\n"
    )
    run = _ran(tmp_path, tasks, {"nothing": None})
    assert [t.msg for t in run.tasks] == ["None", "None", "Hello world!"]


def test_debug_verbosity_skips_below_it_and_says_why_as_ansible_registers_it(tmp_path):
    tasks = (
        "    - {debug: {msg: shown, verbosity: 1}, register: r}\n"
        "    - debug: {msg: '{{ r }}'}\n"
        "    - debug: {msg: 'at {{ ansible_verbosity | default(0) }}', verbosity: '0'}\n"
    )
    quiet = _ran(tmp_path, tasks)
    assert [t.status for t in quiet.tasks] == ["skipped", "ok", "ok"]
    skipped = {"changed": False, "skipped": True, "skipped_reason": "Verbosity threshold not met."}
    assert quiet.tasks[1].msg == str({**skipped, "failed": False})
    assert quiet.tasks[2].msg == "at 0"
    loud = _ran(tmp_path, tasks, {"ansible_verbosity": 1})
    assert [t.msg for t in loud.tasks][0] == "shown"
    assert loud.tasks[0].status == "ok"


def test_a_role_included_again_with_other_defaults_sees_those(tmp_path):
    role = tmp_path / "roles" / "r"
    (role / "defaults").mkdir(parents=True)
    (role / "tasks").mkdir()
    (role / "defaults" / "main.yml").write_text("v: main\nonly_main: kept\n")
    (role / "defaults" / "other.yml").write_text("v: other\n")
    (role / "tasks" / "main.yml").write_text(
        "- debug: {msg: '{{ v }} {{ only_main | default(\"unset\") }}'}\n"
    )
    run = _ran(
        tmp_path,
        "    - include_role: {name: r}\n"
        "    - include_role: {name: r, defaults_from: other}\n"
        "    - {name: set, set_fact: {v: fact}}\n"
        "    - include_role: {name: r}\n",
    )
    shown = [t.msg for t in run.tasks if t.module == "debug"]
    # As ansible-core (measured): each inclusion's own defaults only, under anything
    # set another way; the first inclusion's do not stay for the second.
    assert shown == ["main kept", "other unset", "fact kept"]


def test_a_rescue_reads_the_failed_task_s_name_as_shown_never_rendered_again(tmp_path):
    run = _ran(
        tmp_path,
        "    - block:\n"
        "        - name: 'check {{ item }}'\n"
        "          command: 'test {{ item }} -lt 2'\n"
        "          loop: [1, 2]\n"
        "      rescue:\n"
        "        - debug: {msg: '[{{ ansible_failed_task.name }}]'}\n",
    )
    assert [t.status for t in run.tasks] == ["failed", "ok"]
    assert run.tasks[-1].msg == "[check {{ item }}]"


def test_an_ignored_failure_with_no_log_still_counts_as_changed_in_the_recap(tmp_path):
    # ansible-core's censored result keeps `changed`: its recap says changed=2 here.
    tasks = (
        "    - {command: 'false', no_log: true, ignore_errors: true}\n"
        "    - {command: 'false', ignore_errors: true}\n"
    )
    run = _ran(tmp_path, tasks)
    counted = [word for task in run.tasks for word in task.recap()]
    assert counted.count("changed") == 2
    assert run.tasks[0].msg == "output hidden (no_log: true)"


def test_a_keyword_template_may_read_a_result_registered_before_it(tmp_path):
    tasks = (
        "    - {command: echo yes, register: r, changed_when: false}\n"
        f"    - copy: {{content: x, dest: '{tmp_path}/late.txt'}}\n"
        "      diff: \"{{ r.stdout == 'yes' }}\"\n"
        "      check_mode: \"{{ r.stdout == 'no' }}\"\n"
    )
    run = _ran(tmp_path, tasks)
    assert [t.status for t in run.tasks] == ["ok", "changed"], run.message
    assert (tmp_path / "late.txt").read_text() == "x"
