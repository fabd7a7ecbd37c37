"""`debug` with `verbosity`, through ansible-playbook (`-c local`) and pctfleet
(`--local`), without `-v` and with `-vv`: a debug above the run's verbosity is skipped
and registers ansible-core's `skipped_reason`; `ansible_verbosity` is the count of -v
(measured on ansible-core 2.19)."""

from __future__ import annotations

import differ
import pytest

CALL = 1  # bump when how Ansible is called here changes
BOOK = """
- hosts: all
  gather_facts: false
  tasks:
    - {name: always, debug: {msg: "said at {{ ansible_verbosity }}"}}
    - {name: at one, debug: {msg: at one, verbosity: 1}, register: one}
    - {name: at three, debug: {var: playbook_dir, verbosity: 3}, register: three}
    - name: what they registered
      debug:
        msg: >-
          {{ [one, three] | map('dict2items') | map('map', attribute='key') | map('sort')
          | list }} {{ one.skipped_reason | default('-') }}
"""


@pytest.mark.parametrize("more", [[], ["-vv"]], ids=["quiet", "vv"])
def test_debug_verbosity_is_read_as_ansible_reads_it(tmp_path, more):
    for folder in (tmp_path / "ansible", tmp_path / "pctfleet"):
        folder.mkdir()
        (folder / "book.yml").write_text(BOOK)
    inputs = [CALL, BOOK, more]
    ours, theirs = differ.local_side_by_side(
        "debug-verbosity", inputs, tmp_path, lambda _: [], *more
    )
    for row in (*ours["tasks"], *theirs["tasks"]):
        if row[0] == "at three":
            row[2] = ""  # a var's value is shown, not registered as msg, by ansible-core
    assert ours == theirs
    statuses = [row[1] for row in ours["tasks"]]
    assert statuses == (
        ["ok", "ok", "skipped", "ok"] if more else ["ok", "skipped", "skipped", "ok"]
    )
