"""What is data and what is a template, and when a lookup runs, through
ansible-playbook (`-c local`) and pctfleet (`--local`): loop items a file, a command
or `{{ '{{' }}` produced, values tagged `!unsafe`, iterators that filters return
(`product`, `zip`, `map`, `select`, `reverse`), seeded `random`, debug's `var`, and
lookups that read what an earlier task wrote, run once, in the playbook's folder, and
fail only their task (measured on ansible-core 2.19)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import differ

CALL = 1  # bump when how Ansible is called here changes
BOOK = r"""
- hosts: all
  gather_facts: false
  vars:
    tmpl: "{{ '{{' }} 6*6 }}"
    raw: !unsafe "{{ 5*5 }}"
    raw_list: !unsafe ["{{ a }}", {k: "{% x %}"}]
    via_raw: "{{ raw }}"
    a: [1, 2]
    b: [x, y]
    s: [3, 1, 3]
    path: py3.11
  tasks:
    - name: loop over a file's lines
      debug: {msg: "{{ item }}"}
      loop: "{{ lookup('file', 'data.txt').splitlines() }}"
    - name: loop over a pipe's lines
      debug: {msg: "{{ item }}"}
      loop: "{{ query('pipe', 'cat data.txt') }}"
    - name: loop over rendered braces
      debug: {msg: "{{ item }}"}
      with_items: ["{{ tmpl }}", "{{ raw }}", "{{ via_raw }}"]
    - name: unsafe values
      debug: {msg: "{{ raw }} {{ raw_list }} {{ via_raw }}"}
    - name: an unsafe loop
      debug: {msg: "{{ item }}"}
      loop: !unsafe ["{{ q }}"]
    - name: iterators in text
      debug:
        msg: "{{ a | product(b) }} {{ a | zip(b) }} {{ s | unique }} {{ s | map('string') }}
          {{ s | select('gt', 1) }} {{ a | reverse }} {{ {'k': 1}.items() }} {{ 'a.b' | splitext }}"
    - name: iterators as values, in a file
      copy:
        dest: "{{ playbook_dir }}/out/iter.json"
        content: "{{ {'p': a | product(b), 'z': a | zip_longest(b, [9]), 'm': s | map('string'),
          'i': {'k': 1}.items()} }}"
    - name: iterators inside expressions
      debug:
        msg: "{{ s | map('string') | length }} {{ (a | zip(b))[0] }}
          {{ (s | select('gt', 1))[0] }} {{ (a | reverse)[0] }}"
    - name: seeded random, Jinja's filters by their ansible.builtin names
      debug:
        msg: "{{ 60 | random(seed='x') }} {{ 60 | random(start=10, step=5, seed='x') }}
          {{ b | random(seed='y') }} {{ s | ansible.builtin.unique }} {{ s | ansible.builtin.min }}"
    - name: to_yaml of a lone scalar
      copy: {dest: "{{ playbook_dir }}/out/scalar.yml", content: "{{ 'abc' | to_yaml }}"}
    - name: "var: backslashes read as a condition reads them"
      debug: {var: "path | regex_replace('\\d', 'X')"}
    - name: "var: undefined"
      debug: {var: nope}
    - name: "var: an iterator"
      debug: {var: "s | map('string')"}
    - name: a file an earlier task writes
      copy: {dest: "{{ playbook_dir }}/out/made.txt", content: "made here\n"}
    - name: read back by a lookup
      debug: {msg: "{{ lookup('file', playbook_dir ~ '/out/made.txt') }}"}
    - name: a pipe runs once, in the playbook's folder
      debug:
        msg: "{{ lookup('pipe', 'echo x >> out/count.txt; wc -l < out/count.txt') }}
          {{ lookup('pipe', 'pwd') == playbook_dir }}"
    - name: a loop's lookup runs once too
      command: "echo {{ item }}"
      loop: "{{ query('pipe', 'echo y >> out/loop.txt; wc -l < out/loop.txt') }}"
    - name: so does a remote module's argument
      command: "echo {{ lookup('pipe', 'echo z >> out/arg.txt; wc -l < out/arg.txt') }}"
    - name: a failing lookup, ignored
      debug: {msg: "{{ lookup('file', 'no-such-file') }}"}
      ignore_errors: true
    - name: after it
      debug: {msg: after}
    - name: a failing lookup in a block
      block:
        - name: reads a missing file
          debug: {msg: "{{ lookup('file', 'missing.txt') }}"}
      rescue:
        - name: rescued
          debug: {msg: "rescued {{ ansible_failed_result.failed }}"}
"""


def _tree(folder: Path) -> None:
    (folder / "out").mkdir(parents=True)
    (folder / "data.txt").write_text("{{ 7*7 }}\nplain\n")
    (folder / "book.yml").write_text(BOOK)


def _files(root: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted((root / "out").iterdir())}


def _shown(result: dict) -> list:
    """A task's status, message (debug var: the expression and its value) and each
    item's message."""
    shown: Any = result.get("msg", "")
    if result.get("action") == "debug" and "msg" not in result:  # var: under its own key
        (key,) = [k for k in result if k not in ("action", "changed", "warnings", "failed")
                  and not k.startswith("_")]  # fmt: skip
        shown = {"var": key, "value": result[key]}
    items = [str(item.get("msg")) for item in result.get("results", [])]
    return [differ.ansible_status(result), shown, items]


def _ours(book: Path, tmp_path: Path) -> list:
    tasks = differ.pctfleet_local(book, tmp_path / "runs")
    return [[t["status"], t["msg"], [i["msg"] for i in t.get("items", [])]] for t in tasks]


def _as_ours(theirs: list) -> list:
    """Ansible's debug `var` results as pctfleet prints them: `expr = repr(value)`."""
    out = []
    for status, shown, items in theirs:
        if isinstance(shown, dict):
            shown = f"{shown['var']} = {shown['value']!r}"
        out.append([status, str(shown), items])
    return out


def test_data_stays_data_and_lookups_run_when_reached(tmp_path):
    theirs_dir, ours_dir = tmp_path / "ansible", tmp_path / "pctfleet"
    for folder in (theirs_dir, ours_dir):
        _tree(folder)

    def ansible() -> dict:
        tasks = differ.ansible_local(theirs_dir / "book.yml", theirs_dir)
        shown = [_shown(t["hosts"]["localhost"]) for t in tasks]
        return {"tasks": shown, "files": _files(theirs_dir)}

    theirs = differ.cached("data-marks", [CALL, BOOK], ansible)
    ours = _ours(ours_dir / "book.yml", tmp_path)
    expected = _as_ours(theirs["tasks"])
    # The failing lookups: both fail that task alone and go on; the words differ.
    failed = [i for i, (status, _, _) in enumerate(expected) if status == "failed"]
    assert len(failed) == 2
    for index in failed:
        assert ours[index][0] == "failed" and "lookup('file')" in ours[index][1]
        ours[index][1] = expected[index][1] = ""
    assert ours == expected
    assert _files(ours_dir) == theirs["files"]
