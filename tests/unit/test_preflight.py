"""Preflight: every task rendered for every container before any change, `when` respected."""

from __future__ import annotations

import contextlib
import io
import textwrap

import pytest

from pctfleet import exitcodes
from pctfleet.cli import main as cli
from pctfleet.errors import InputError
from pctfleet.inventory import inventory_from_text
from pctfleet.modules import known_args
from pctfleet.playbook.loader import load_playbook
from pctfleet.run.playbookrun import preflight
from pctfleet.transport import ssh
from pctfleet.transport.base import NodeUnreachable

INVENTORY = "nodes:\n  pve1:\n    address: 10.1.2.6\n    containers:\n      200: {}\n"


def check(tmp_path, tasks: str) -> None:
    book = tmp_path / "book.yml"
    book.write_text("- hosts: all\n  tasks:\n" + textwrap.indent(textwrap.dedent(tasks), "    "))
    play = load_playbook(book, known_args()).plays[0]
    inventory = inventory_from_text(INVENTORY)
    preflight(play, play.tasks, inventory.containers, inventory, {}, str(tmp_path))


def test_a_task_whose_condition_is_false_may_use_undefined_vars(tmp_path):
    check(
        tmp_path,
        """\
        - name: lab only
          copy: {src: "{{ standin }}", dest: /opt/x}
          when: standin is defined
        """,
    )


def test_undefined_var_is_named_with_file_and_line(tmp_path):
    with pytest.raises(InputError, match=r"book.yml:\d+.*'nope'"):
        check(
            tmp_path,
            """\
            - name: typo
              copy: {content: "{{ nope }}", dest: /opt/x}
            """,
        )


def test_a_registered_result_is_checked_when_reached(tmp_path):
    check(
        tmp_path,
        """\
        - name: read
          command: cat /etc/hostname
          register: out
        - name: use
          copy: {content: "{{ out.stdout }}", dest: /opt/x}
        """,
    )


def test_debug_var_of_a_registered_result_waits_for_it(tmp_path):
    check(
        tmp_path,
        """\
        - name: read
          command: cat /etc/hostname
          register: out
        - name: show
          debug: {var: out.stdout_lines}
        """,
    )


def test_debug_var_of_an_unknown_name_is_no_error_as_in_ansible(tmp_path):
    # ansible-core shows a placeholder for it and goes on (measured in
    # test_data_marks_differential); a broken expression is still refused.
    check(tmp_path, "- debug: {var: nope}\n")
    with pytest.raises(InputError, match=r"book.yml:\d+.*syntax"):
        check(tmp_path, "- debug: {var: 'nope +'}\n")


def test_a_registered_name_inside_a_path_is_no_reference(tmp_path):
    # "out" is registered and "/tmp/output" contains it: the bad mode is still caught.
    with pytest.raises(InputError, match=r"book.yml:\d+.*'bad'"):
        check(
            tmp_path,
            """\
            - name: read
              command: cat /etc/hostname
              register: out
            - name: a folder
              file: {path: /tmp/output, mode: 'bad'}
            """,
        )


def test_a_condition_naming_a_registered_result_waits_for_it(tmp_path):
    check(
        tmp_path,
        """\
        - name: read
          command: cat /etc/hostname
          register: out
        - name: only when it worked
          file: {path: "/tmp/{{ name }}", mode: "{{ out.stdout }}"}
          when: out.rc == 0
        """,
    )


def test_a_variable_built_from_a_registered_result_waits_for_it(tmp_path):
    book = tmp_path / "book.yml"
    book.write_text(
        textwrap.dedent("""\
        - hosts: all
          vars:
            wanted: "{{ out.stdout }}"
          tasks:
            - name: read
              command: cat /etc/hostname
              register: out
            - name: a folder
              file: {path: /srv/x, mode: "{{ wanted }}"}
        """)
    )
    play = load_playbook(book, known_args()).plays[0]
    inventory = inventory_from_text(INVENTORY)
    preflight(play, play.tasks, inventory.containers, inventory, {}, str(tmp_path))


def test_the_run_command_rejects_it_before_connecting(tmp_path, monkeypatch):
    inventory = tmp_path / "inv.yml"
    inventory.write_text(INVENTORY.replace("10.1.2.6", "127.0.13.99"))
    book = tmp_path / "book.yml"
    book.write_text(
        textwrap.dedent("""\
        - hosts: all
          tasks:
            - name: read
              command: cat /etc/hostname
              register: out
            - name: a folder
              file: {path: /tmp/output, mode: 'bad'}
        """)
    )
    connects = []

    def refuse(self):  # noqa: ANN001
        connects.append(self.node)
        raise NodeUnreachable(self.node, "connection refused (test)")

    monkeypatch.setattr(ssh.NodeConnection, "_connect", refuse)
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = cli._invoke(cli.app, ["run", str(book), "-i", str(inventory)])
    assert code == exitcodes.PARSE_ERROR, err.getvalue()
    assert f"{book}:6:" in err.getvalue() and "'bad'" in err.getvalue()
    assert not connects


@pytest.mark.parametrize(
    "keyword",
    ['ignore_errors: "{{ nope }}"', 'environment: "{{ nope }}"', "environment: {A: '{{ nope }}'}"],
)
def test_a_templated_keyword_is_rendered_before_the_run(tmp_path, keyword):
    with pytest.raises(InputError, match=r"book.yml:\d+.*'nope' is undefined|undefined.*'nope'"):
        check(tmp_path, f"- command: 'true'\n  {keyword}\n")
    check(tmp_path, f"- command: 'true'\n  {keyword}\n  when: nope is defined\n")


def test_a_typo_is_still_refused_beside_a_set_fact_whose_name_is_known(tmp_path):
    book = "- set_fact: {'port_{{ 1 + 1 }}': 1}\n- debug: {msg: '{{ port_2 }}'}\n"
    check(tmp_path, book)
    with pytest.raises(InputError, match="typo"):
        check(tmp_path, book + "- debug: {msg: '{{ typo }}'}\n")
