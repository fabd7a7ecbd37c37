"""pre_tasks, roles, tasks and post_tasks, and force_handlers, through ansible-playbook
(`-c local`) and pctfleet (`--local`): the order tasks and handlers run in, and their
statuses.

Measured on ansible-core 2.19: the handlers notified in pre_tasks run when pre_tasks
end, before the roles; those notified by roles and tasks run before post_tasks; those
of post_tasks at the end; a handler notified in two sections runs twice. Those
flushes are not listed as tasks; they are tagged `always`, so --tags never drops
them and `--skip-tags always` does, the last one too: then no handler runs. A failure
ends the play for the host before its notified handlers run, unless force_handlers
(the play's, --force-handlers, or ansible.cfg's) runs them first."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import differ
import pytest

CALL = 1  # bump when how Ansible is called here changes


def shell(name: str, **more) -> dict:  # noqa: ANN003
    return {"name": name, "command": "true", **more}


HANDLERS = [{"name": "h1", "debug": {"msg": "h1"}}, {"name": "h2", "debug": {"msg": "h2"}}]
ROLES = {
    f"roles/{role}/{part}/main.yml": [
        shell(f"{role} task", notify=f"{role} handler")
        if part == "tasks"
        else {"name": f"{role} handler", "debug": {"msg": role}}
    ]
    for role in ("web", "db", "pre", "post")
    for part in ("tasks", "handlers")
}
ROLES |= {
    "roles/ra/vars/main.yml": {"x": "from-ra"},
    "roles/rb/vars/main.yml": {"x": "from-rb"},
    "roles/ra/tasks/main.yml": [{"name": "ra task", "debug": {"msg": "ra"}}],
    "roles/rb/tasks/main.yml": [{"name": "rb task", "debug": {"msg": "rb"}}],
    "roles/dup/tasks/main.yml": [shell("dup task", notify="restart")],
    "roles/dup/handlers/main.yml": [
        {"name": "restart", "debug": {"msg": "role restart"}, "listen": "topic"},
        {"name": "other", "debug": {"msg": "role other"}, "listen": "topic"},
    ],
}
SECTIONS = {
    "hosts": "all",
    "gather_facts": False,
    "pre_tasks": [shell("pre1", notify="h1"), {"name": "now", "meta": "flush_handlers"}],
    "roles": ["web"],
    "tasks": [shell("main1", notify=["h2", "h1"], tags=["picked"]), shell("main2")],
    "post_tasks": [shell("post1", notify="h1", tags=["picked"])],
    "handlers": HANDLERS,
}
# Handlers of roles listed in `roles:` run before the play's, those of imported roles
# after, in the order the tasks import them (pre_tasks first).
IMPORTED = {
    "hosts": "all",
    "gather_facts": False,
    "pre_tasks": [{"import_role": {"name": "pre"}}, shell("pre1", notify="h1")],
    "roles": ["web"],
    "tasks": [
        {"import_role": {"name": "db"}},
        shell("main1", notify=["h2", "h1", "pre handler"]),
    ],
    "post_tasks": [
        {"import_role": {"name": "post"}},
        shell("post1", notify=["h2", "web handler", "pre handler"]),
    ],
    "handlers": HANDLERS,
}
PRE_FAILS = {
    "hosts": "all",
    "gather_facts": False,
    "pre_tasks": [shell("pre1", notify="h1"), {"name": "pre2", "fail": {"msg": "no"}}],
    "tasks": [shell("main1")],
    "handlers": HANDLERS,
}
RESCUED = {
    "hosts": "all",
    "gather_facts": False,
    "pre_tasks": [
        {
            "block": [{"name": "breaks", "fail": {"msg": "no"}}],
            "rescue": [shell("rescuer", notify="h2")],
        }
    ],
    "post_tasks": [shell("post1", notify="h2")],
    "handlers": HANDLERS,
}
FORCED = {**PRE_FAILS, "pre_tasks": [shell("pre1", notify="h1")], "force_handlers": True}
FORCED["tasks"] = [shell("main1", notify="h2"), {"name": "main2", "fail": {"msg": "no"}}]
FORCED["post_tasks"] = [shell("post1")]
NEXT_PLAY = {"hosts": "all", "gather_facts": False, "tasks": [shell("next play")]}
UNFORCED = {k: v for k, v in FORCED.items() if k != "force_handlers"}
FAILING_HANDLER = {
    "hosts": "all",
    "gather_facts": False,
    "force_handlers": True,
    "tasks": [
        shell("t1", notify=["h1", "h2"]),
        {"name": "now", "meta": "flush_handlers"},
        shell("t2"),
    ],
    "handlers": [{"name": "h1", "fail": {"msg": "h1 fails"}}, HANDLERS[1]],
}
LAST_FLUSH_FAILS = {
    **FAILING_HANDLER,
    "tasks": [shell("t1", notify=["h1", "h2"]), shell("t2")],
}
# ansible-core loads roles, then pre_tasks, post_tasks and tasks: a role imported in
# pre_tasks runs again (it is no repeat of the roles: one, which came first), its
# vars win (read later), and imported roles' handlers are ordered pre, post, tasks.
LOAD_ORDER = {
    "hosts": "all",
    "gather_facts": False,
    "pre_tasks": [{"import_role": {"name": "rb"}}, {"import_role": {"name": "web"}}],
    "roles": ["ra", "web"],
    "tasks": [
        {"name": "rb's x won", "assert": {"that": "x == 'from-rb'"}},
        {"import_role": {"name": "db"}},
        shell("main1", notify=["db handler", "post handler", "web handler", "h1"]),
    ],
    "post_tasks": [{"import_role": {"name": "post"}}],
    "handlers": HANDLERS,
}
# One name, two handlers (a role's and the play's): by name the one loaded last runs;
# by topic every listener, the last loaded of each name.
SAME_NAME = {
    "hosts": "all",
    "gather_facts": False,
    "roles": ["dup"],
    "tasks": [
        shell("t1", notify="restart"),
        {"name": "now", "meta": "flush_handlers"},
        shell("t2", notify="topic"),
        {"name": "again", "meta": "flush_handlers"},
        shell("t3", notify="dup : restart"),
    ],
    "handlers": [{"name": "restart", "debug": {"msg": "play restart"}, "listen": "topic"}],
}
CONFIG = "[defaults]\nforce_handlers = True\n"
CASES = {
    "sections and their handlers": ([SECTIONS], [], 0),
    "--skip-tags always: no handler runs": ([SECTIONS], ["--skip-tags", "always"], 0),
    "force_handlers: a failure runs the notified handlers": ([FORCED, NEXT_PLAY], [], 2),
    "--force-handlers": ([UNFORCED, NEXT_PLAY], ["--force-handlers"], 2),
    "ansible.cfg force_handlers": ([UNFORCED], [], 2, CONFIG),
    "a play's force_handlers false wins": (
        [{**UNFORCED, "force_handlers": False}],
        ["--force-handlers"],
        2,
        CONFIG,
    ),
    "a failing forced handler: the section's flush runs the rest": ([FAILING_HANDLER], [], 2),
    "a failing forced handler in the last flush: the rest do not run": (
        [LAST_FLUSH_FAILS],
        [],
        2,
    ),
    "handlers of listed and imported roles": ([IMPORTED], [], 0),
    "ansible-core's load order": ([LOAD_ORDER], [], 0),
    "handlers of one name": ([SAME_NAME], [], 0),
    "--tags: the flushes run all the same": ([SECTIONS], ["--tags", "picked"], 0),
    "--skip-tags": ([SECTIONS], ["--skip-tags", "picked"], 0),
    "a failure in pre_tasks": ([PRE_FAILS], [], 2),
    "rescued in pre_tasks, no tasks": ([RESCUED], [], 0),
}


def write(folder: Path, plays: list) -> Path:
    for name, tasks in ROLES.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(json.dumps(tasks))  # roles' tasks, handlers and vars
    book = folder / "book.yml"
    book.write_text(json.dumps(plays, indent=1))
    return book


def ansible_side(book: Path, work: Path, more: list, rc: int, env: dict) -> list:
    tasks = differ.ansible_local(book, work, *more, rc=rc, env=env)
    return [
        [t["task"]["name"], differ.ansible_status(t["hosts"]["localhost"])]
        for t in tasks
        if "localhost" in t["hosts"]
    ]


@pytest.mark.parametrize("case", CASES)
def test_sections_run_as_in_ansible(tmp_path, case):
    plays, more, rc, *config = CASES[case]
    book = write(tmp_path, plays)
    (tmp_path / "ansible.cfg").write_text(config[0] if config else "")
    env = {"ANSIBLE_CONFIG": str(tmp_path / "ansible.cfg")}
    cached = differ.cache_path("play-sections", [CALL, plays, ROLES, more, rc, config])
    if cached.is_file() and not os.environ.get("PCTFLEET_DIFF_FRESH"):
        theirs = json.loads(cached.read_text())
    else:
        theirs = ansible_side(book, tmp_path, more, rc, env)
        differ.keep(cached, theirs)
    argv = [sys.executable, "-m", "pctfleet", "run", str(book), "--local", "--json", *more]
    argv += ["--journal-dir", str(tmp_path / "runs")]
    ours_env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")} | env
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=300, cwd=tmp_path, env=ours_env
    )
    assert done.returncode == rc, done.stderr
    (run,) = json.loads(done.stdout)["containers"]
    assert [[t["name"], t["status"]] for t in run["tasks"]] == theirs
