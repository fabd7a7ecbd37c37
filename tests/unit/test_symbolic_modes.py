"""Symbolic modes (`u=rw,g=r,o=`, `g+w`, `a+X`): parsed once with the task's arguments,
resolved in the plan against the mode the probe read, with Ansible's rules (measured on
ansible-core 2.19 under umask 022)."""

from __future__ import annotations

import contextlib
import hashlib
import io

import pytest

from pctfleet import exitcodes
from pctfleet.cli import main as cli
from pctfleet.errors import PlaybookError
from pctfleet.facts.kv import encode_fields
from pctfleet.modules import REGISTRY
from pctfleet.modules.args import Context
from pctfleet.modules.base import Fact, World
from pctfleet.modules.modes import Mode, file_mode, wanted_mode
from pctfleet.transport import ssh
from pctfleet.transport.base import NodeUnreachable

FILE, DIRECTORY = False, True

# (mode, current, directory, wanted): each measured with ansible-playbook where it says so.
RESOLVED = [
    ("u=rw,g=r,o=", 0o644, FILE, 0o640),
    ("u=rw,g=r,o=", 0o777, FILE, 0o640),
    ("g+w", 0o644, FILE, 0o664),
    ("g+w", 0o664, FILE, 0o664),  # already there: the second run changes nothing
    ("a+x", 0o644, FILE, 0o755),
    ("go-w", 0o666, FILE, 0o644),
    ("u=rwx,go=rx", 0o600, FILE, 0o755),
    ("o-r", 0o644, FILE, 0o640),
    # No users: the umask's bits are left alone (ansible-playbook: `+x` 0755, `=r` 0444).
    ("+x", 0o644, FILE, 0o755),
    ("=r", 0o644, FILE, 0o444),
    ("-w", 0o644, FILE, 0o444),
    ("+w", 0o444, FILE, 0o644),
    ("=", 0o644, FILE, 0o000),
    # Nothing to apply: the mode stays (ansible-playbook: `u`, `u+`, `a`, `u+x,`).
    ("u", 0o644, FILE, 0o644),
    ("u+", 0o644, FILE, 0o644),
    ("a", 0o600, FILE, 0o600),
    ("u+x,", 0o644, FILE, 0o744),
    ("ug=", 0o644, FILE, 0o004),
    # Several operators in one clause, and a class's bits copied: one after the other.
    ("u=rw-w+x,g=u,o=g-x", 0o644, FILE, 0o554),
    ("go=u", 0o640, FILE, 0o666),
    # Special bits: s for u and g, t for o; `=` clears the class's one.
    ("g+s,o+t,u+s", 0o644, FILE, 0o7644),
    ("u=rwx", 0o4755, FILE, 0o755),
    ("o=rwx", 0o1777, DIRECTORY, 0o777),
    ("o+s,u+t", 0o644, FILE, 0o644),
]

# `X`: x only for a directory, or a mode with an x bit already (after the clauses before).
X_RULE = [
    ("u=rwX,g=rX,o=", 0o644, FILE, 0o640),
    ("u=rwX,g=rX,o=", 0o744, FILE, 0o750),
    ("u=rwX,g=rX,o=X", 0o755, DIRECTORY, 0o751),
    ("go=rX", 0o744, FILE, 0o755),
    ("a+X", 0o600, DIRECTORY, 0o711),
    ("a+X", 0o600, FILE, 0o600),
    ("u+x,g+X", 0o644, FILE, 0o754),
    ("g+X,u+x", 0o644, FILE, 0o744),
]


@pytest.mark.parametrize(("text", "current", "directory", "wanted"), RESOLVED + X_RULE)
def test_a_symbolic_mode_resolves_as_ansible_resolves_it(text, current, directory, wanted):
    mode = file_mode(text, "t")
    assert mode.octal is None
    assert oct(mode.resolve(current, directory)) == oct(wanted)


@pytest.mark.parametrize(
    ("value", "octal"), [("0644", 0o644), ("644", 0o644), (0o640, 0o640), ("0o640", 0o640)]
)
def test_an_octal_mode_is_the_mode_whatever_the_file_has(value, octal):
    mode = file_mode(value, "t")
    assert (mode.octal, mode.resolve(0o7777, True), mode.resolve(0, False)) == (octal,) * 3


def test_a_bare_number_is_decimal_as_in_ansible():
    assert file_mode(644, "t").octal == 0o1204


def test_a_new_path_starts_from_what_the_umask_leaves():
    # ansible-playbook: copy of a new file with g+w: 0664; file state=directory with g+w: 0775.
    assert wanted_mode(file_mode("g+w", "t"), "") == "0664"
    assert wanted_mode(file_mode("g+w", "t"), "", directory=True) == "0775"
    assert wanted_mode(file_mode("u=rwx,g=rx,o=", "t"), "", directory=True) == "0750"
    assert wanted_mode(file_mode("g+w", "t"), "0600") == "0620"
    assert wanted_mode(file_mode("0640", "t"), "0777") == "0640"
    assert wanted_mode(None, "0644") is None


@pytest.mark.parametrize(
    ("text", "clause"),
    [
        ("u=rwz", "u=rwz"),
        ("ua+x", "ua+x"),  # chmod takes it; Ansible does not
        ("A+x", "A+x"),
        ("u+x, g+w", " g+w"),
        ("0999", "0999"),
        ("g+w,z=r", "z=r"),
    ],
)
def test_a_bad_symbolic_mode_is_ansible_s_error_on_one_line(text, clause):
    with pytest.raises(PlaybookError) as error:
        file_mode(text, "book.yml:7")
    message = str(error.value)
    assert "mode must be in octal or symbolic form" in message and "\n" not in message
    assert f"bad symbolic permission for mode: {clause}" in message
    assert "book.yml:7" in message


@pytest.mark.parametrize("value", ["17777", 0o10000, -1])
def test_an_octal_mode_past_07777_is_refused(value):
    with pytest.raises(PlaybookError, match="'mode' must be from '0000' to '07777'"):
        file_mode(value, "t")


@pytest.mark.parametrize("module", ["file", "copy", "lineinfile", "blockinfile", "replace"])
def test_the_arguments_carry_the_parsed_mode(module):
    args = {"path": "/etc/x", "dest": "/etc/x", "content": "x", "line": "x", "block": "x"}
    args |= {"regexp": "x", "mode": "u=rw,g=r,o="}
    names = REGISTRY[module].Args.names() or set()
    parsed = REGISTRY[module].prepare(
        {k: v for k, v in args.items() if k in names and not (k == "dest" and "path" in names)},
        Context(),
        "t",
    )
    assert isinstance(parsed.mode, Mode) and parsed.mode.clauses


def _decide(module: str, args: dict, facts: dict[str, str] | None):
    mod = REGISTRY[module]
    parsed = mod.prepare(args, Context(), "t")
    return mod.decide(parsed, None if facts is None else Fact(encode_fields(facts), 0), False)


def test_file_resolves_against_the_mode_the_probe_read():
    stat = {"type": "file", "mode": "644", "owner": "root", "group": "root"}
    plan = _decide("file", {"path": "/etc/x", "mode": "g+w"}, stat)
    assert plan.changed and "chmod 0664 -- /etc/x" in plan.script
    # The second run reads 664: nothing left to do, and no second look at the file.
    assert not _decide("file", {"path": "/etc/x", "mode": "g+w"}, stat | {"mode": "664"}).changed


def test_file_on_a_folder_without_state_reads_x_as_a_folder_s():
    # No x bit anywhere: only the path's being a folder lets X add one.
    folder = {"type": "directory", "mode": "600", "owner": "root", "group": "root"}
    plan = _decide("file", {"path": "/srv/d", "mode": "a+X"}, folder)
    assert "chmod 0711 -- /srv/d" in plan.script, plan.script


def test_file_gives_each_new_folder_the_resolved_mode():
    plan = _decide("file", {"path": "/srv/a/b", "state": "directory", "mode": "g+w"}, None)
    for folder in ("/srv", "/srv/a", "/srv/a/b"):
        assert f"mkdir -- {folder} && chmod 0775 -- {folder};" in plan.script, plan.script
    existing = {"type": "directory", "mode": "755", "owner": "root", "group": "root"}
    args = {"path": "/srv/a", "state": "directory", "mode": "u=rwX,g=rX,o="}
    assert "chmod 0750 -- /srv/a" in _decide("file", args, existing).script


def test_copy_pushes_the_resolved_mode_and_then_keeps_it():
    args = {"content": "x\n", "dest": "/etc/x", "mode": "u=rw,g=r,o="}
    plan = _decide("copy", args, {"type": "absent"})
    assert [p.mode for p in plan.pushes] == ["0640"]
    same = hashlib.sha256(b"x\n").hexdigest()
    kept = {"type": "file", "mode": "640", "owner": "root", "group": "root", "sha256": same}
    assert not _decide("copy", args, kept).changed
    widened = _decide("copy", args | {"mode": "go-w"}, kept | {"mode": "666"})
    assert widened.changed and not widened.pushes and "chmod 0644" in widened.script
    # `g+w` adds to the mode the file has (0600), not to a new file's (0644).
    added = _decide("copy", args | {"mode": "g+w"}, kept | {"mode": "600"})
    assert "chmod 0620 -- /etc/x" in added.script, added.script
    rewritten = _decide("copy", args | {"mode": "g+w"}, kept | {"mode": "600", "sha256": "0"})
    assert [p.mode for p in rewritten.pushes] == ["0620"]
    # A link is replaced by a new file, as Ansible replaces it: from 0644, not the link's 0777.
    link = {"type": "link", "target": "t", "mode": "777", "owner": "root", "group": "root"}
    assert [p.mode for p in _decide("copy", args | {"mode": "g+w"}, link).pushes] == ["0664"]
    assert [p.mode for p in _decide("copy", {"content": "x", "dest": "/x"}, link).pushes] == [
        "0644"
    ]


def test_an_edit_resolves_against_the_file_it_edits_or_a_new_one():
    new = _decide("lineinfile", {"path": "/etc/x", "line": "a", "create": True, "mode": "g+w"},
                  {"type": "absent"})  # fmt: skip
    assert [p.mode for p in new.pushes] == ["0664"]
    there = {"type": "file", "mode": "600", "owner": "root", "group": "root", "real": "/etc/x"}
    there |= {"size": "2", "content": "YQo="}  # "a\n"
    plan = _decide("replace", {"path": "/etc/x", "regexp": "a", "replace": "b", "mode": "g+r"},
                   there)  # fmt: skip
    assert [p.mode for p in plan.pushes] == ["0640"]
    kept = _decide("lineinfile", {"path": "/etc/x", "line": "a", "mode": "u=rw"}, there)
    assert not kept.changed


def test_a_bad_symbolic_mode_stops_the_run_naming_file_and_line(tmp_path, monkeypatch):
    def refuse(self):  # noqa: ANN001
        raise NodeUnreachable(self.node, "a connection was attempted")

    monkeypatch.setattr(ssh.NodeConnection, "_connect", refuse)
    book = tmp_path / "book.yml"
    task = "copy: {content: x, dest: /etc/x, mode: 'u=rw,g=rz'}"
    book.write_text(f"- hosts: all\n  tasks:\n    - name: fine\n      debug: {{}}\n    - {task}\n")
    out, err = io.StringIO(), io.StringIO()
    args = ["run", str(book), "--host", "127.0.13.99", "--ct", "200", "--journal-dir",
            str(tmp_path / "journal")]  # fmt: skip
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli._invoke(cli.app, args)
    text = err.getvalue()
    assert code == exitcodes.PARSE_ERROR, text
    assert text.startswith("error: ") and text.strip().count("\n") == 0, text
    assert f"{book}:5" in text and "bad symbolic permission for mode: g=rz" in text, text


@pytest.mark.parametrize(
    ("module", "args", "mode"),
    [
        ("file", {"path": "/srv/d", "state": "directory", "mode": "g+w"}, "775"),
        ("file", {"path": "/srv/f", "state": "touch", "mode": "u=rw,g=r,o="}, "640"),
        ("copy", {"content": "x", "dest": "/etc/x", "mode": "a+x"}, "755"),
        ("lineinfile", {"path": "/etc/x", "line": "a", "create": True, "mode": "="}, "0"),
    ],
)
def test_the_simulated_fleet_s_converged_file_has_the_resolved_mode(module, args, mode):
    mod = REGISTRY[module]
    parsed = mod.prepare(args, Context(), "t")
    fields = mod.fact.converged(parsed, World())
    assert fields["mode"] == mode
    assert not mod.decide(parsed, Fact(encode_fields(fields), 0), False).changed
