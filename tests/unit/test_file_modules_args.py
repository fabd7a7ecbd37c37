"""A bad argument of a file module stops `pctfleet run` before any connection: exit 4 and
one line naming the playbook's file and the task's line."""

from __future__ import annotations

import contextlib
import io

import pytest

from pctfleet import exitcodes
from pctfleet.cli import main as cli
from pctfleet.transport import ssh
from pctfleet.transport.base import NodeUnreachable

BAD = [
    ("lineinfile: {path: /etc/x, regexp: '(a', line: a}", "'regexp' is not a regular expression"),
    ("lineinfile: {path: /etc/x, regexp: '^a'}", "line is required with state=present"),
    ("lineinfile: {path: etc/x, line: a}", "'path' must be an absolute path"),
    ("blockinfile: {path: /etc/x, block: a, insertafter: a, insertbefore: b}", "exclusive"),
    ("replace: {path: /etc/x}", "module 'replace' needs 'regexp'"),
    ("stat: {path: /etc/x, checksum_algorithm: crc}", "'checksum_algorithm' must be one of"),
    ("slurp: {src: x}", "'src' must be an absolute path"),
    ("find: {paths: /srv, age: 2d}", "find: 'age' is not supported here"),
    ("find: {paths: /srv, colour: red}", "unknown argument 'colour'"),
    ("tempfile: {suffix: a/b}", "'suffix' may not hold a '/'"),
    ("wait_for: {port: http}", "'port' must be a whole number >= 0"),
    ("wait_for: {port: 80, search_regex: x}", "search_regex is only supported with 'path'"),
    ("assert: {that: 'x =='}", "assert: bad condition 'x =='"),
]


@pytest.mark.parametrize(("task", "message"), BAD, ids=[b[1] for b in BAD])
def test_bad_arguments_name_the_file_and_line(tmp_path, monkeypatch, task, message):
    def refuse(self):  # noqa: ANN001
        raise NodeUnreachable(self.node, "a connection was attempted")

    monkeypatch.setattr(ssh.NodeConnection, "_connect", refuse)
    book = tmp_path / "book.yml"
    book.write_text(f"- hosts: all\n  tasks:\n    - name: fine\n      debug: {{}}\n    - {task}\n")
    out, err = io.StringIO(), io.StringIO()
    args = ["run", str(book), "--host", "127.0.13.99", "--ct", "200", "--journal-dir",
            str(tmp_path / "journal")]  # fmt: skip
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli._invoke(cli.app, args)
    text = err.getvalue()
    assert code == exitcodes.PARSE_ERROR, text
    assert text.startswith("error: ") and text.strip().count("\n") == 0, text
    assert f"{book}:5" in text and message in text, text
