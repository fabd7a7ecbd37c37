"""The engine against this machine (LocalTarget): command stdin, register, one probe."""

from __future__ import annotations

import textwrap

from pctfleet.modules import known_args
from pctfleet.playbook.loader import load_playbook
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
