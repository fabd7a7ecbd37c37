"""ansible.cfg settings that change what a play does, through ansible-playbook
(`-c local`) and pctfleet (`--local`) with the same file: `gathering = explicit`
(a play that does not say gathers no facts), and `[tags] run`/`skip`, which the
command line's --tags/--skip-tags add to (measured on ansible-core 2.19). And facts
a play's first task reads only in an expression (assert's `that`, debug's `var`,
failed_when), which pctfleet gathers for that task as for any other."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import differ
import pytest

CALL = 1  # bump when how Ansible is called here changes
UNDEFINED = "ansible_facts.distribution is undefined"
FACTS = [
    {"hosts": "all", "tasks": [{"name": "no facts", "assert": {"that": UNDEFINED}}]},
    {
        "hosts": "all",
        "gather_facts": True,
        "tasks": [{"name": "facts", "assert": {"that": "ansible_facts.distribution is defined"}}],
    },
]
FIRST_READ = [
    {"hosts": "all", "tasks": [{"name": "that", "assert": {"that": [f"not ({UNDEFINED})"]}}]},
    {"hosts": "all", "tasks": [{"name": "var", "debug": {"var": "ansible_distribution"}}]},
    {
        "hosts": "all",
        "tasks": [{"name": "failed_when", "command": "true", "failed_when": UNDEFINED}],
    },
]
TAGGED = [
    {
        "hosts": "all",
        "gather_facts": False,
        "tasks": [
            {"name": name, "debug": {"msg": name}, "tags": [f"t{name}"]} for name in ("a", "b", "c")
        ]
        + [{"name": "u", "debug": {"msg": "untagged"}}],
    }
]
TAGS = "[tags]\nrun = ta\nskip = tc\n"
CASES = {
    "gathering = explicit": (FACTS, "[defaults]\ngathering = explicit\n", []),
    "facts a first task reads in an expression": (FIRST_READ, "", []),
    "[tags] alone": (TAGGED, TAGS, []),
    "--tags adds to [tags] run": (TAGGED, TAGS, ["--tags", "tb"]),
    "--skip-tags adds to [tags] skip": (TAGGED, TAGS, ["--tags", "tb", "--skip-tags", "ta"]),
    "--tags all, [tags] skip still holds": (TAGGED, TAGS, ["--tags", "all"]),
}


@pytest.mark.parametrize("case", CASES)
def test_the_same_tasks_run_as_in_ansible(tmp_path, case):
    plays, config, more = CASES[case]
    book = tmp_path / "book.yml"
    book.write_text(json.dumps(plays))
    (tmp_path / "ansible.cfg").write_text(config)
    env = {"ANSIBLE_CONFIG": str(tmp_path / "ansible.cfg")}
    cached = differ.cache_path("ansible-cfg", [CALL, plays, config, more])
    if cached.is_file() and not os.environ.get("PCTFLEET_DIFF_FRESH"):
        theirs = json.loads(cached.read_text())
    else:
        tasks = differ.ansible_local(book, tmp_path, *more, env=env)
        # pctfleet reads facts with a play's first probe: no task of their own.
        shown = [t for t in tasks if t["task"]["name"] != "Gathering Facts"]
        theirs = [[t["task"]["name"], differ.ansible_status(t["hosts"]["localhost"])]
                  for t in shown if "localhost" in t["hosts"]]  # fmt: skip
        differ.keep(cached, theirs)
    argv = [sys.executable, "-m", "pctfleet", "run", str(book), "--local", "--json", *more]
    argv += ["--journal-dir", str(tmp_path / "runs")]
    ours_env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")} | env
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=ours_env)
    assert done.returncode == 0, done.stderr
    ours = [[t["name"], t["status"]] for run in json.loads(done.stdout)["containers"]
            for t in run["tasks"]]  # fmt: skip
    assert ours == theirs
    assert theirs  # a case that runs nothing proves nothing
