"""delegate_to / local_action (tasks on this machine) and per-task check_mode / diff.

The "container" here is a LocalTarget that records every command it is given, so a
test can tell what reached the container from what ran on the controller.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from pctfleet.errors import InputError, PlaybookError
from pctfleet.inventory import inventory_from_text
from pctfleet.modules import known_args
from pctfleet.playbook.loader import load_playbook
from pctfleet.run.engine import ContainerEngine, RunOptions
from pctfleet.run.playbookrun import preflight
from pctfleet.run.results import ContainerRun
from pctfleet.transport.local import LocalTarget


class Container(LocalTarget):
    """This machine standing in for a container; remembers what it was asked to run."""

    def __init__(self) -> None:
        super().__init__("ct")
        self.seen: list[str] = []

    def _run(self, argv, stdin, timeout, sinks, **_kw):  # noqa: ANN001, ANN202
        self.seen.append(" ".join(argv) + (stdin.decode() if isinstance(stdin, bytes) else ""))
        return super()._run(argv, stdin, timeout, sinks)


def load(tmp_path: Path, text: str):
    book = tmp_path / "book.yml"
    book.write_text(textwrap.dedent(text))
    return load_playbook(book, known_args()).plays[0]


def play(tmp_path: Path, text: str, **options) -> tuple[ContainerRun, Container]:
    loaded = load(tmp_path, text)
    run, target = ContainerRun("node", 200), Container()
    opts = RunOptions(base_dir=str(tmp_path), lock_wait=5, **options)
    ContainerEngine(target, run, dict(loaded.vars), opts).play(loaded.tasks, [])
    run.finish_status()
    return run, target


def test_local_action_forms_read_as_delegated_tasks(tmp_path):
    tasks = load(
        tmp_path,
        """\
        - hosts: all
          tasks:
            - local_action: command echo hi chdir=/tmp
            - local_action: module=command cmd="echo two" creates=/x
            - local_action: {module: copy, content: hi, dest: /tmp/x}
            - local_action: ansible.builtin.shell echo three
            - copy: {content: hi, dest: /tmp/y}
              delegate_to: 127.0.0.1
            - local_action: copy content="{{ a }} b" dest=/tmp/{{ n }} mode='0600'
            - local_action: module=copy content="{{ a }} b" dest=/tmp/{{ n }}
            - local_action: {module: "copy content='{{ a }} b'", dest: /tmp/z}
        """,
    ).tasks
    got = [(t.module, t.args, t.delegate_to) for t in tasks]
    assert got == [
        ("command", {"cmd": "echo hi", "chdir": "/tmp"}, "localhost"),  # as ansible-core splits it
        ("command", {"cmd": "echo two", "creates": "/x"}, "localhost"),
        ("copy", {"content": "hi", "dest": "/tmp/x"}, "localhost"),
        ("shell", {"cmd": "echo three"}, "localhost"),
        ("copy", {"content": "hi", "dest": "/tmp/y"}, "127.0.0.1"),
        ("copy", {"content": "{{ a }} b", "dest": "/tmp/{{ n }}", "mode": "0600"}, "localhost"),
        ("copy", {"content": "{{ a }} b", "dest": "/tmp/{{ n }}"}, "localhost"),
        ("copy", {"content": "{{ a }} b", "dest": "/tmp/z"}, "localhost"),
    ]


@pytest.mark.parametrize(
    ("task", "expected"),
    [
        ("command: id\n  delegate_to: node2", r"book.yml:4: .*'node2' is not supported: only"),
        ("command: id\n  delegate_to: localhost\n  delegate_facts: true", r":5: .*delegate_facts"),
        ("local_action: nosuch x=1", r"book.yml:3: .*local_action' names no known module"),
        ("local_action: command id\n  delegate_to: localhost", r":4: .*exclude each other"),
        ("server: {name: s, command: x}\n  delegate_to: localhost", r":4: .*'server' cannot be"),
        ("include_tasks: x.yml\n  delegate_to: localhost", r":4: .*'include_tasks' cannot"),
        ("command: id\n  check_mode: maybe", r":4: .*'check_mode' must be true or false"),
        ("command: id\n  diff: 1", r":4: .*'diff' must be true or false"),
    ],
)
def test_what_cannot_be_delegated_is_refused_at_load_with_its_line(tmp_path, task, expected):
    with pytest.raises(PlaybookError, match=expected):
        load(tmp_path, "- hosts: all\n  tasks:\n    - " + task.replace("\n  ", "\n      "))


def test_a_delegated_template_and_command_run_here_not_in_the_container(tmp_path):
    (tmp_path / "t.j2").write_text("for {{ label }}\n")
    text = f"""\
        - hosts: all
          vars: {{label: ct200, here: localhost}}
          tasks:
            - copy: {{content: a, dest: "{tmp_path}/in-ct-a"}}
            - template: {{src: t.j2, dest: "{tmp_path}/rendered"}}
              delegate_to: "{{{{ here }}}}"
            - local_action: command touch {tmp_path}/touched creates={tmp_path}/touched
            - copy: {{content: b, dest: "{tmp_path}/in-ct-b"}}
        """
    run, target = play(tmp_path, text)
    assert run.status == "changed", run.message
    assert (tmp_path / "rendered").read_text() == "for ct200\n"
    assert (tmp_path / "touched").exists()
    assert not any("rendered" in s or "touched" in s for s in target.seen)
    assert run.local_calls >= 2
    run, target = play(tmp_path, text)  # converged: one container call, facts read here
    assert [t.status for t in run.tasks] == ["ok"] * 4, run.tasks
    assert run.remote_calls == 1 and run.local_calls == 2


def test_a_delegated_change_does_not_make_the_container_probe_again(tmp_path):
    text = f"""\
        - hosts: all
          tasks:
            - copy: {{content: a, dest: "{tmp_path}/a"}}
            - local_action: command echo hi
            - copy: {{content: b, dest: "{tmp_path}/b"}}
        """
    play(tmp_path, text)
    run, _ = play(tmp_path, text)
    assert [t.status for t in run.tasks] == ["ok", "changed", "ok"]
    assert run.remote_calls == 1


def test_delegate_to_rendering_to_another_host_fails_in_preflight(tmp_path):
    loaded = load(
        tmp_path,
        """\
        - hosts: all
          vars: {peer: node2}
          tasks:
            - command: id
              delegate_to: "{{ peer }}"
        """,
    )
    inventory = inventory_from_text(
        "nodes:\n  pve1:\n    address: 10.1.2.6\n    containers:\n      200: {}\n"
    )
    with pytest.raises(InputError, match=r"book.yml:4: .*rendered to 'node2': only localhost"):
        preflight(loaded, loaded.tasks, inventory.containers, inventory, loaded.vars, ".")


def test_check_mode_true_only_reports_even_in_a_real_run(tmp_path):
    run, _ = play(
        tmp_path,
        f"""\
        - hosts: all
          tasks:
            - copy: {{content: x, dest: "{tmp_path}/real"}}
            - copy: {{content: x, dest: "{tmp_path}/pretend"}}
              check_mode: true
        """,
    )
    assert [t.status for t in run.tasks] == ["changed", "changed"]
    assert (tmp_path / "real").exists() and not (tmp_path / "pretend").exists()


def test_check_mode_false_really_runs_under_check_and_blocks_pass_it_on(tmp_path):
    run, _ = play(
        tmp_path,
        f"""\
        - hosts: all
          tasks:
            - copy: {{content: x, dest: "{tmp_path}/dry"}}
            - block:
                - copy: {{content: x, dest: "{tmp_path}/wet"}}
              check_mode: false
        """,
        check=True,
    )
    assert [t.status for t in run.tasks] == ["changed", "changed"]
    assert (tmp_path / "wet").exists() and not (tmp_path / "dry").exists()


def test_diff_per_task_overrides_the_run_s_diff(tmp_path):
    text = f"""\
        - hosts: all
          tasks:
            - copy: {{content: one, dest: "{tmp_path}/a"}}
              diff: true
            - copy: {{content: two, dest: "{tmp_path}/b"}}
            - copy: {{content: three, dest: "{tmp_path}/c"}}
              diff: false
        """
    run, _ = play(tmp_path, text, check=True)
    assert [t.diff is not None for t in run.tasks] == [True, False, False]
    run, _ = play(tmp_path, text, check=True, diff=True)
    assert [t.diff is not None for t in run.tasks] == [True, True, False]
