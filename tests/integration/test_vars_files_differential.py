"""`vars_files` as ansible-playbook reads it, both on this machine (`-c local` and
`--local`: which file a play reads does not depend on the connection).

Measured on ansible-core 2.19: a file that is not there is skipped without a word;
an entry that is a list takes the first file found and is skipped when none is;
vars/NAME comes before NAME. A templated name is rendered with the play's vars and
the extra vars (-e); one that reads an undefined variable skips its whole entry,
even a file after it in a first-found list. pctfleet leaves the same values and,
where Ansible is silent, warns on stderr and in the JSON document.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import differ
import pytest

from pctfleet.playbook.varsfiles import SKIPPED

CALL = 1  # bump when how Ansible is called here changes
FILES = {
    "vars/common.yml": "where: vars-folder\ncolour: blue\n",
    "common.yml": "where: beside\n",
    "site.yml": "size: large\n",
    "vars/fallback.yml": "size: small\nshape: round\n",
    "vars/prod.yml": "where: prod\n",
    "vars/gold-prod.yml": "colour: gold\n",
    "vars/pointer.yml": "target: prod\n",
}
EXTRA = ["-e", "env=prod"]
PLAYS = [
    ("missing then found", ["nope.yml", "common.yml"]),
    ("first found in a list", [["nope.yml", "site.yml", "fallback.yml"]]),
    ("list falls through", [["nope.yml", "fallback.yml"], ["no1.yml", "no2.yml"]]),
    ("nothing found", ["nope.yml"]),
    (
        "templated",
        ["{{ env }}.yml", "{{ tier }}-{{ env }}.yml", ["{{ nope }}.yml", "fallback.yml"]],
    ),
    ("a filter covers it", ["{{ nope | default('prod') }}.yml"]),
    ("found before the undefined name", [["fallback.yml", "{{ nope }}.yml"]]),
    ("an earlier file names the next", ["pointer.yml", "{{ target }}.yml"]),
]
SHOWN = ["where", "colour", "size", "shape"]


def _write(folder: Path) -> Path:
    for name, text in FILES.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    plays = []
    for name, entries in PLAYS:
        tasks = [
            {"name": f"{name}: {var}", "debug": {"msg": f"{{{{ {var} | default('unset') }}}}"}}
            for var in SHOWN
        ]
        plays.append({"name": name, "hosts": "all", "gather_facts": False, "vars": {"tier": "gold"},
                      "vars_files": entries, "tasks": tasks})  # fmt: skip
    book = folder / "book.yml"
    book.write_text(json.dumps(plays, indent=1))
    return book


def _ansible(book: Path, work: Path) -> dict[str, str]:
    tasks = differ.ansible_local(book, work, *EXTRA)
    return {t["task"]["name"]: t["hosts"]["localhost"]["msg"] for t in tasks}


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory) -> tuple[dict, dict, subprocess.CompletedProcess]:
    work = tmp_path_factory.mktemp("vars-files")
    book = _write(work)
    key = [CALL, book.read_text(), sorted(FILES.items()), EXTRA]
    cached = differ.cache_path("vars-files", key)
    if cached.is_file() and not os.environ.get("PCTFLEET_DIFF_FRESH"):
        theirs = json.loads(cached.read_text())
    else:
        theirs = _ansible(book, work)
        differ.keep(cached, theirs)
    argv = [sys.executable, "-m", "pctfleet", "run", str(book), "--local", "--json", *EXTRA]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    (run,) = json.loads(done.stdout)["containers"]
    ours = {t["name"]: t["msg"] for t in run["tasks"]}
    return theirs, ours, done


def test_each_play_reads_the_values_ansible_reads(outcomes):
    theirs, ours, _ = outcomes
    assert theirs["missing then found: where"] == "vars-folder"  # the cases are real
    assert theirs["list falls through: size"] == "small"
    assert [theirs[f"templated: {v}"] for v in ("where", "colour", "size")] == [
        "prod", "gold", "unset",
    ]  # fmt: skip
    assert theirs["a filter covers it: where"] == "prod"
    assert theirs["found before the undefined name: shape"] == "round"
    assert theirs["an earlier file names the next: where"] == "prod"
    assert ours == theirs


def test_what_ansible_skips_silently_is_named_in_a_warning(outcomes):
    _, _, done = outcomes
    warnings = json.loads(done.stdout)["warnings"]
    assert len(warnings) == 4, warnings  # an entry found in the end says nothing
    assert "vars file 'nope.yml' not found" in warnings[0]
    assert "vars file 'no1.yml' or 'no2.yml' not found" in warnings[1]
    assert "play 'nothing found': vars file 'nope.yml' not found" in warnings[2]
    assert "play 'templated': vars file '{{ nope }}.yml': undefined variable 'nope'" in warnings[3]
    for warning in warnings:
        assert f"warning: {warning}" in done.stderr


def test_audit_names_them_too(tmp_path):
    book = _write(tmp_path)
    argv = [sys.executable, "-m", "pctfleet", "audit", "-p", str(book), "--local", "--json", *EXTRA]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert done.stdout, done.stderr
    shown = [w for w in done.stderr.splitlines() if w.startswith("warning: ")]
    assert len(shown) == 4, done.stderr
    assert all(w.startswith(f"warning: {book}:") and w.endswith(SKIPPED) for w in shown)
