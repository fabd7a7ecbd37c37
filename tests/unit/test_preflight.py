"""Preflight: every task rendered for every container before any change, `when` respected."""

from __future__ import annotations

import textwrap

import pytest

from pctfleet.errors import InputError
from pctfleet.fleet import preflight
from pctfleet.inventory import inventory_from_text
from pctfleet.modules import known_args
from pctfleet.playbook import load_playbook

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
