"""The file modules against a real container (node1/200): a playbook using lineinfile,
blockinfile, replace, stat, assert, slurp, find, tempfile and wait_for applies, then a
second run changes nothing and costs one remote call. Files only under /tmp/pctfleet-mods.

`tempfile` is changed on every run in Ansible too, so the second pass skips it
(`when: not second`) rather than excluding it from the idempotency check.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.lab

KEY = "node1/200"
DIR = "/tmp/pctfleet-mods"
APP = "[main]\nport=8080\n# BEGIN pctfleet\na=1\nb=2\n# END pctfleet\n"
# Frame markers, markup, bytes that are no UTF-8, no final newline: written by printf %b.
HOSTILE = b"\x1epctfleet-fact-end 0 t 0\n[/bold]\n\xff\xferaw"
HOSTILE_SH = r"\0036pctfleet-fact-end 0 t 0\n[/bold]\n\0377\0376raw"

PLAYBOOK = textwrap.dedent(r"""
    - hosts: all
      vars:
        d: /tmp/pctfleet-mods
      tasks:
        - name: folder
          file: {path: "{{ d }}", state: directory}
        - name: section header first
          lineinfile: {path: "{{ d }}/app.conf", line: "[main]", create: true, insertbefore: BOF}
        - name: port after the header
          lineinfile:
            path: "{{ d }}/app.conf"
            regexp: "^port="
            line: port=8080
            insertafter: "^\\[main\\]"
        - name: managed block
          blockinfile: {path: "{{ d }}/app.conf", block: "a=1\nb=2", marker: "# {mark} pctfleet"}
        - name: a file only the first run writes
          shell:
            cmd: printf 'mode=debug\nlevel=3\n' > {{ d }}/r.conf
            creates: "{{ d }}/r.conf"
        - name: release mode
          replace: {path: "{{ d }}/r.conf", regexp: "^mode=\\w+$", replace: "mode=release"}
        - name: hostile bytes, no final newline
          shell:
            cmd: printf '%b' '__HOSTILE__' > {{ d }}/hostile
            creates: "{{ d }}/hostile"
        - name: a line after them
          lineinfile: {path: "{{ d }}/hostile", line: "added"}
        - name: private file
          lineinfile: {path: "{{ d }}/new.conf", line: "only", create: true, mode: "0600"}
        - name: stat it
          stat: {path: "{{ d }}/app.conf"}
          register: st
        - name: slurp it
          slurp: {src: "{{ d }}/app.conf"}
          register: sl
        - name: find the conf files
          find: {paths: "{{ d }}", patterns: "*.conf"}
          register: fd
        - name: the port line is in the file
          wait_for: {path: "{{ d }}/app.conf", search_regex: "port=(\\d+)", timeout: 5}
          register: wf
        - name: nothing listens on port 1
          wait_for: {port: 1, state: stopped, timeout: 5}
        - name: a temp file
          tempfile: {path: "{{ d }}", prefix: "t."}
          register: tf
          when: not second
        - name: what was read
          assert:
            that:
              - st.stat.exists and st.stat.isreg and st.stat.mode == '0644'
              - st.stat.checksum | length == 40
              - "'port=' in (sl.content | b64decode)"
              - fd.matched == 3
              - wf.match_groups | length == 1
            fail_msg: "read back wrong: {{ st.stat.mode }} {{ fd.matched }}"
""").replace("__HOSTILE__", HOSTILE_SH)


def pctfleet(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pctfleet", *args], capture_output=True, text=True, timeout=600
    )


def in_ct(info, script: str) -> subprocess.CompletedProcess:
    return pctfleet("exec", "-i", str(info.inventory), "--limit", KEY, "--", "sh", "-c", script)


@pytest.fixture(scope="module")
def info(lab):
    found = lab.up(nodes=2, containers=2)
    assert in_ct(found, f"rm -rf {DIR}").returncode == 0
    yield found
    assert in_ct(found, f"rm -rf {DIR}").returncode == 0


def run(info, tmp: Path, second: bool, *more: str) -> tuple[int, dict]:
    book = tmp / "modules.yml"
    book.write_text(PLAYBOOK)
    extra = json.dumps({"second": second})
    proc = pctfleet(
        "run", str(book), "-i", str(info.inventory), "--limit", KEY, "--json", "-e", extra, *more
    )
    assert proc.stdout, proc.stderr
    return proc.returncode, json.loads(proc.stdout)["containers"][0]


@pytest.fixture(scope="module")
def runs(info, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("mods")
    return run(info, tmp, False), run(info, tmp, True), tmp


def test_first_run_applies_every_module(runs, info):
    (code, first), _, _ = runs
    assert code == 0, first
    status = {t["name"]: t["status"] for t in first["tasks"]}
    for name in ("section header first", "port after the header", "managed block"):
        assert status[name] == "changed", name
    assert status["release mode"] == status["a line after them"] == "changed"
    assert status["a temp file"] == "changed"
    assert status["stat it"] == status["what was read"] == "ok"
    assert status["the port line is in the file"] == "ok"
    shown = in_ct(
        info, f"cat {DIR}/app.conf; echo ---; cat {DIR}/r.conf; stat -c %a {DIR}/new.conf"
    )
    assert shown.stdout == APP + "---\nmode=release\nlevel=3\n600\n", shown.stderr
    hostile = in_ct(info, f"sha256sum < {DIR}/hostile")
    assert hostile.stdout.split()[0] == hashlib.sha256(HOSTILE + b"\nadded\n").hexdigest()
    made = in_ct(info, f"ls {DIR} | grep -c '^t\\.'")
    assert made.stdout.strip() == "1"


def test_second_run_changes_nothing_in_one_remote_call(runs):
    _, (code, second), _ = runs
    assert code == 0, second
    changed = [t["name"] for t in second["tasks"] if t["status"] == "changed"]
    assert changed == []
    assert second["remote_calls"] == 1
    skipped = [t["name"] for t in second["tasks"] if t["status"] == "skipped"]
    assert skipped == ["a temp file"]


def test_check_mode_shows_the_diff_and_writes_nothing(runs, info):
    _, _, tmp = runs
    assert in_ct(info, f"sed -i 's/^port=8080$/port=1/' {DIR}/app.conf").returncode == 0
    code, checked = run(info, tmp, True, "--check", "--diff")
    task = next(t for t in checked["tasks"] if t["name"] == "port after the header")
    assert task["status"] == "changed"
    assert "port=1\n" in task["diff"]["before"] and "port=8080\n" in task["diff"]["after"]
    assert "port=1\n" in in_ct(info, f"cat {DIR}/app.conf").stdout
