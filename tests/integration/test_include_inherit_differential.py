"""What the tasks of `include_tasks` and `include_role` get from around the include,
through ansible-playbook (`-c local`) and pctfleet (`--local`): the play's, a block's,
an `import_tasks`' and a `roles:` entry's `environment`, `check_mode`, `ignore_errors`,
`no_log`, `when` (read again for each included task) and `tags` (with `--tags`), while
the include's own `ignore_errors`, `no_log` and `tags` stay its own; the include's
own `vars` rank as include params, over set_fact (measured on ansible-core 2.19)."""

from __future__ import annotations

from pathlib import Path

import differ
import pytest

CALL = 1  # bump when how Ansible is called here changes
KEYWORDS = """
- hosts: all
  gather_facts: false
  environment: {PLAY_ENV: from-play}
  tasks:
    - {name: play env, include_tasks: env.yml, vars: {tag: play}}
    - environment: {BLOCK_ENV: from-block}
      block: [{name: block env, include_tasks: env.yml, vars: {tag: block}}]
    - check_mode: true
      block: [{name: block check, include_tasks: write.yml, vars: {tag: checked}}]
    - ignore_errors: true
      block: [{name: block ignore, include_tasks: fail.yml, vars: {tag: ignored}}]
    - name: own ignore_errors is the include's
      block:
        - {name: own ignore, include_tasks: fail.yml, ignore_errors: true, vars: {tag: own}}
      rescue:
        - {name: rescued, debug: {msg: "rescued {{ ansible_failed_task.name }}"}}
    - when: not (done | default(false))
      block: [{name: block when, include_tasks: when.yml}]
    - {name: imported when, import_tasks: imports.yml, when: not (done2 | default(false))}
    - no_log: true
      block: [{name: block no_log, include_tasks: write.yml, vars: {tag: secret}}]
    - {name: own no_log, include_tasks: write.yml, no_log: true, vars: {tag: shown}}
"""
KEYWORD_FILES = {
    "env.yml": (
        "- {name: 'env {{ tag }}', shell: 'echo \"[${PLAY_ENV-}|${BLOCK_ENV-}]\"', register: o,"
        " changed_when: false}\n"
        "- {name: 'shows env {{ tag }}', debug: {msg: '{{ o.stdout }}'}}\n"
    ),
    "write.yml": (
        "- {name: 'write {{ tag }}', copy: {content: 'new {{ tag }}\\n',"
        " dest: '{{ playbook_dir }}/{{ tag }}.txt'}, register: w}\n"
        "- {name: 'shows write {{ tag }}', debug: {msg: '{{ w.changed }}'}}\n"
    ),
    "fail.yml": (
        "- {name: 'fails {{ tag }}', command: 'false'}\n"
        "- {name: 'after {{ tag }}', debug: {msg: 'went on'}}\n"
    ),
    "when.yml": "- set_fact: {done: true}\n- {name: after set, debug: {msg: still running}}\n",
    "imports.yml": "- {name: imported include, include_tasks: imported.yml}\n",
    "imported.yml": (
        "- set_fact: {done2: true}\n- {name: after set2, debug: {msg: still running}}\n"
    ),
    "checked.txt": "old\n",
}
TAGS = """
- hosts: all
  gather_facts: false
  roles:
    - {role: cuda, tags: [cuda]}
  tasks:
    - tags: [cuda]
      block: [{name: tagged block, include_tasks: inc.yml, vars: {tag: block}}]
    - {name: tagged import, import_tasks: imports.yml, tags: [cuda]}
    - {name: own tag, include_tasks: inc.yml, tags: [cuda], vars: {tag: own}}
"""
TAG_FILES = {
    "roles/cuda/tasks/main.yml": "- {name: role include, include_tasks: install.yml}\n",
    "roles/cuda/tasks/install.yml": (
        "- {name: install, copy: {content: 'installed\\n', dest: '{{ playbook_dir }}/cuda.txt'}}\n"
    ),
    "inc.yml": "- {name: 'included {{ tag }}', debug: {msg: 'ran {{ tag }}'}}\n",
    "imports.yml": "- {name: imported include, include_tasks: inc.yml, vars: {tag: imported}}\n",
}
PARAMS = """
- hosts: all
  gather_facts: false
  tasks:
    - set_fact: {a: fact, b: fact, c: fact}
    - vars: {b: block}
      block:
        - {name: params, include_tasks: shows.yml, vars: {a: inc, c: inc}}
    - {name: role params, include_role: {name: r}, vars: {a: inc}}
    - {name: imported role, import_role: {name: r}, vars: {a: imp}}
"""
PARAM_FILES = {
    "shows.yml": (
        "- {name: shows params, debug: {msg: 'a={{ a }} b={{ b }} c={{ c }}'}}\n"
        "- {name: shows over own, debug: {msg: 'c={{ c }}'}, vars: {c: task-own}}\n"
    ),
    "roles/r/tasks/main.yml": "- {name: shows role, debug: {msg: 'a={{ a }}'}}\n",
}
CASES = {
    "keywords": (KEYWORDS, KEYWORD_FILES, []),
    "tags": (TAGS, TAG_FILES, ["--tags", "cuda"]),
    "params": (PARAMS, PARAM_FILES, []),
}


def _files(folder: Path) -> list:
    return sorted([p.name, p.read_text()] for p in folder.glob("*.txt"))


@pytest.mark.parametrize("case", CASES)
def test_included_tasks_get_what_is_around_the_include(tmp_path, case):
    book, files, more = CASES[case]
    for folder in (tmp_path / "ansible", tmp_path / "pctfleet"):
        for name, text in {"book.yml": book, **files}.items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text(text)
    inputs = [CALL, book, files, more]
    ours, theirs = differ.local_side_by_side("include-inherit", inputs, tmp_path, _files, *more)
    shown = {row[0]: row[2] for row in ours["tasks"]}
    roles = [row[2] for row in ours["tasks"] if row[0].endswith("shows role")]
    for row in (*ours["tasks"], *theirs["tasks"]):
        said = row[0].removeprefix("r : ").startswith(("shows", "rescued", "after", "included"))
        if not said or row[1] == "skipped" or row[2] == "output hidden (no_log: true)":
            row[2] = ""  # only what the debug tasks that ran and showed it say is compared
    assert ours == theirs
    if case == "keywords":
        assert shown["shows env play"] == "[from-play|]"
        assert shown["shows env block"] == "[from-play|from-block]"
        assert ["checked.txt", "old\n"] in ours["files"]
        assert shown["rescued"] == "rescued fails own"
        assert shown["shows write secret"] == "output hidden (no_log: true)"
        assert shown["shows write shown"] == "True"
        assert [r[1] for r in ours["tasks"] if r[0].startswith("after set")] == ["skipped"] * 2
    elif case == "tags":
        assert [name for name, _ in ours["files"]] == ["cuda.txt"]
    else:  # as ansible-core ranks an include's vars: over set_fact, as role params
        assert shown["shows params"] == "a=inc b=fact c=inc"
        assert shown["shows over own"] == "c=inc"
        assert roles == ["a=inc", "a=fact"]
