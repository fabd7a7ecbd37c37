"""Playbook loading, validation messages with file:line, import_tasks, tag selection."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pctfleet.errors import InputError, PlaybookError
from pctfleet.playbook.loader import Handler, Play, Task, load_playbook, select_tasks, should_run

KNOWN: dict[str, set[str] | None] = {
    "command": {"cmd", "argv", "chdir", "creates", "removes", "stdin"},
    "shell": {"cmd", "chdir", "creates", "removes"},
    "copy": {"src", "dest", "content", "mode", "owner"},
    "template": {"src", "dest", "mode"},
    "debug": None,
}

SITE = """\
- name: GPU serving
  hosts: gpu
  gather_facts: false
  become: true
  tags: [serve]
  vars:
    port: 30000
  tasks:
    - name: Probe
      command: nvidia-smi -L
      register: smi
      changed_when: false
      failed_when: [smi.rc != 0, "'GPU' not in smi.stdout"]
      tags: probe
    - name: Env file
      ansible.builtin.template:
        src: env.j2
        dest: /etc/sglang.env
      args:
        mode: "0644"
      notify: restart server
      when: smi.rc == 0
    - name: Wait
      shell: "curl -sf localhost:{{ port }}/health"
      register: health
      until: health.rc == 0
      delay: 2
      timeout: 30
      no_log: true
      ignore_errors: true
      environment: {NO_PROXY: "*"}
    - copy: dest=/tmp/marker content=done
  handlers:
    - name: restart server
      listen: [restart, bounce]
      command: systemctl restart sglang
- hosts: [pve1, pve2]
  tasks:
    - debug: {msg: hi, anything: 1}
"""


def write(tmp_path: Path, text: str, name: str = "site.yml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def error(tmp_path: Path, text: str, kind: type[Exception] = PlaybookError) -> str:
    path = write(tmp_path, text)
    with pytest.raises(kind) as info:
        load_playbook(path, KNOWN)
    message = str(info.value)
    assert len(message.splitlines()) == 1
    return message.replace(str(path), "F")


def test_playbook_loads_plays_tasks_and_handlers(tmp_path):
    path = write(tmp_path, SITE)
    book = load_playbook(path, KNOWN)
    assert book.path == str(path)
    first, second = book.plays
    assert isinstance(first, Play)
    assert (first.name, first.hosts, first.vars, first.tags) == (
        "GPU serving",
        ("gpu",),
        {"port": 30000},
        frozenset({"serve"}),
    )
    assert first.loc == f"{path}:1"
    assert (second.name, second.hosts) == ("play #2", ("pve1", "pve2"))
    probe, env, wait, marker = first.tasks
    assert probe == Task(
        "Probe",
        "command",
        {"cmd": "nvidia-smi -L"},
        register="smi",
        changed_when=["False"],
        failed_when=["smi.rc != 0", "'GPU' not in smi.stdout"],
        tags=frozenset({"probe", "serve"}),
        loc=f"{path}:9",
    )
    assert (env.module, env.args, env.notify, env.when) == (
        "template",
        {"mode": "0644", "src": "env.j2", "dest": "/etc/sglang.env"},
        ["restart server"],
        ["smi.rc == 0"],
    )
    assert (wait.until, wait.retries, wait.delay, wait.timeout) == ("health.rc == 0", 3, 2.0, 30.0)
    assert (wait.no_log, wait.ignore_errors, wait.environment) == (True, True, ({"NO_PROXY": "*"},))
    assert (marker.name, marker.args) == ("copy", {"dest": "/tmp/marker", "content": "done"})
    (handler,) = first.handlers
    assert isinstance(handler, Handler)
    assert (handler.name, handler.listen, handler.args) == (
        "restart server",
        ["restart", "bounce"],
        {"cmd": "systemctl restart sglang"},
    )
    assert second.tasks[0].args == {"msg": "hi", "anything": 1}


def test_defaults_of_a_bare_task(tmp_path):
    book = load_playbook(write(tmp_path, "- tasks:\n    - command: 'true'\n"), KNOWN)
    play = book.plays[0]
    task = play.tasks[0]
    assert (play.hosts, play.name) == (("all",), "play #1")
    assert (task.name, task.when, task.tags, task.retries, task.delay, task.timeout) == (
        "command",
        [],
        frozenset(),
        0,
        5.0,
        None,
    )
    assert task.changed_when is None and task.failed_when is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "- hosts: all\n  tasks:\n    - name: Copy it\n      copy:\n        dset: /x\n",
            "F:5: task 'Copy it': unknown argument 'dset' for module 'copy' (did you mean 'dest'?)",
        ),
        (
            "- hosts: all\n  tasks:\n    - name: T\n      copy: {dest: /x}\n      args:\n"
            "        mdoe: '0644'\n",
            "F:6: task 'T': unknown argument 'mdoe' for module 'copy'",
        ),
        (
            "- hosts: all\n  tasks:\n    - name: T\n      comand: ls\n",
            "F:4: task 'T': unknown module or keyword 'comand' (did you mean 'command'?)",
        ),
        (
            "- hosts: all\n  tasks:\n    - name: T\n      command: ls\n      whne: x\n",
            "F:5: task 'T': unknown module or keyword 'whne' (did you mean 'when'?)",
        ),
        (
            "- hosts: all\n  tasks:\n    - name: T\n      community.general.pip: {name: x}\n",
            "F:4: task 'T': unknown module or keyword 'community.general.pip'",
        ),
        (
            "- hosts: all\n  tasks:\n    - name: T\n      command: ls\n      shell: ls\n",
            "F:5: task 'T': task names more than one module: 'command', 'shell'",
        ),
        (
            "- hosts: all\n  tasks:\n    - name: T\n      register: x\n",
            "F:3: task 'T': task names no",
        ),
        (
            "- hosts: all\n  tasks:\n    - name: T\n      command: ls\n      with_flattened: [1]\n",
            "F:5: task 'T': 'with_flattened' is not supported (loops: loop, with_items",
        ),
        (
            "- hosts: all\n  vars_prompt:\n    - name: pw\n  tasks: []\n",
            "F:2: play 'play #1': 'vars_prompt': vars_prompt is not supported",
        ),
        (
            "- hosts: all\n  tasks:\n    - name: T\n      command: ls\n      loop_control: {}\n",
            "F:5: task 'T': 'loop_control' needs 'loop' or a with_* keyword",
        ),
        (
            "- hosts: all\n  tasks:\n    - command: ls\n      loop: [1]\n      with_items: [2]\n",
            "F:5: task: one loop per task, got 'loop', 'with_items'",
        ),
        (
            "- hosts: all\n  tasks:\n    - command: ls\n      loop: [1]\n"
            "      loop_control: {loop_var: 2x}\n",
            "F:5: task: 'loop_var' must be a variable name, got '2x'",
        ),
        (
            "- hosts: all\n  tasks:\n    - block: [{command: ls}]\n      register: x\n",
            "F:4: block: 'register' cannot be used on a block",
        ),
        (
            "- hosts: all\n  tasks:\n    - name: T\n      command: ls\n      retries: -1\n",
            "F:5: task 'T': 'retries' must be a whole number >= 0",
        ),
        (
            "- hosts: all\n  tasks:\n    - name: T\n      command: ls\n      delay: soon\n",
            "F:5: task 'T': 'delay' must be a number >= 0",
        ),
        (
            "- hosts: all\n  tasks:\n    - name: T\n      command: ls\n      no_log: maybe\n",
            "F:5: task 'T': 'no_log' must be true or false",
        ),
        (
            "- hosts: all\n  tasks:\n    - name: T\n      command: ls\n      register: 'a b'\n",
            "F:5: task 'T': 'register' must be a variable name",
        ),
        (
            "- hosts: all\n  tasks:\n    - name: T\n      command: ls\n      when: 'x =='\n",
            "F:5: task 'T': 'when': template syntax error",
        ),
        (
            "- hosts: all\n  tasks:\n    - name: T\n      command: ls\n"
            "      when: x | nosuchfilter\n",
            "F:5: task 'T': 'when': template syntax error: No filter named 'nosuchfilter'",
        ),
        (
            "- hosts: all\n  tasks:\n    - name: T\n      command: 'echo {{ x'\n",
            "F:4: task 'T': cannot parse arguments of 'command': unbalanced jinja2 block",
        ),
        (
            "- hosts: all\n  tasks:\n    - name: T\n      command: ls\n      notify: restrat\n"
            "  handlers:\n    - name: restart\n      command: ls\n",
            "F:3: task 'T': notify 'restrat' names no handler (did you mean 'restart'?)",
        ),
        (
            "- hosts: all\n  handlers:\n    - {name: h, command: ls}\n"
            "    - {name: h, command: ls}\n",
            "F:4: handler name 'h' is already used at F:3",
        ),
        (
            "- hosts: all\n  taks: []\n",
            "F:2: play 'play #1': unknown play key 'taks' (did you mean 'tasks'?)",
        ),
        ("- hosts: all\n  roles: [x]\n", "F:2: role 'x' not found"),
        ("- hosts: ''\n  tasks: []\n", "F:1: play 'play #1': 'hosts' must be a non-empty"),
        ("- hosts: all\n  tasks: {a: 1}\n", "F:2: play 'play #1': 'tasks' must be a list"),
        ("- hosts: all\n  pre_tasks: x\n", "F:2: play 'play #1': 'pre_tasks' must be a list"),
        (
            "- hosts: all\n  tasks:\n    - name: T\n      command: echo {{ x }} {% if\n",
            "F:4: task 'T': cannot parse arguments of 'command': unbalanced jinja2 block",
        ),
        (
            "- hosts: all\n  post_tasks:\n    - {name: T, command: ls, notify: nope}\n",
            "F:3: task 'T': notify 'nope' names no handler",
        ),
        (
            "- hosts: all\n  tasks:\n    - include_tasks: {file: x.yml, apply: {delegate_to: h}}\n",
            "F:3: task: 'delegate_to' cannot be used in 'apply' (only when, tags, vars",
        ),
        (
            "- hosts: all\n  tasks:\n    - include_tasks: {file: x.yml, apply: [tags]}\n",
            "F:3: task: 'apply' must be a mapping of keywords, got ['tags']",
        ),
        ("- hosts: all\n  tasks:\n    - just a string\n", "F:3: a task must be a mapping"),
        ("- hosts: all\n  vars:\n    1x: 2\n", "F:3: play 'play #1': '1x' is not a valid name"),
        ("hosts: all\n", "F:1: a playbook is a list of plays"),
        ("[]\n", "F:1: the playbook has no plays"),
        ("- 5\n", "F:1: a play must be a mapping"),
    ],
)
def test_validation_errors_name_file_line_task_and_key(tmp_path, text, expected):
    assert error(tmp_path, text).startswith(expected)


def test_yaml_errors_and_empty_file(tmp_path):
    assert error(tmp_path, "- hosts: all\n  tasks: [\n", InputError).startswith("F:3:1: YAML")
    assert error(tmp_path, "\n", InputError) == "F: file is empty (expected a list of plays)"


def test_fqcn_and_none_arguments(tmp_path):
    book = load_playbook(
        write(
            tmp_path,
            """\
        - hosts: all
          tasks:
            - ansible.legacy.shell: echo hi
            - ansible.builtin.debug:
        """,
        ),
        KNOWN,
    )
    assert [(t.module, t.args) for t in book.plays[0].tasks] == [
        ("shell", {"cmd": "echo hi"}),
        ("debug", {}),
    ]


def test_import_tasks_is_expanded_with_when_and_tags(tmp_path):
    (tmp_path / "tasks").mkdir()
    write(
        tmp_path,
        "- name: inner\n  command: ls\n  tags: [x]\n- import_tasks: deeper.yml\n",
        "tasks/inner.yml",
    )
    write(tmp_path, "- name: deepest\n  command: pwd\n", "tasks/deeper.yml")
    book = load_playbook(
        write(
            tmp_path,
            """\
        - hosts: all
          tasks:
            - name: first
              command: id
            - import_tasks: tasks/inner.yml
              when: go
              tags: imported
              vars: {v: imported}
              ignore_errors: true
        """,
        ),
        KNOWN,
    )
    inner, deepest = book.plays[0].tasks[1:]
    assert (inner.name, inner.when, inner.tags) == ("inner", ["go"], frozenset({"x", "imported"}))
    assert inner.loc == f"{tmp_path / 'tasks' / 'inner.yml'}:1"
    assert (deepest.name, deepest.when) == ("deepest", ["go"])
    # As a block's: its vars and flags reach each task, under the task's own.
    assert (inner.vars, inner.ignore_errors) == ({"v": "imported"}, True)
    assert (deepest.vars, deepest.ignore_errors) == ({"v": "imported"}, True)


def test_import_errors(tmp_path):
    write(tmp_path, "- import_tasks: loop.yml\n", "loop.yml")
    assert "import loop or too deep: loop.yml -> loop.yml" in error(
        tmp_path, "- hosts: all\n  tasks:\n    - import_tasks: loop.yml\n"
    )
    assert error(tmp_path, "- hosts: all\n  tasks:\n    - import_tasks: nope.yml\n").startswith(
        "F:3: task: 'import_tasks': task file 'nope.yml' not found"
    )
    assert error(
        tmp_path, "- hosts: all\n  tasks:\n    - import_tasks: x.yml\n      register: r\n"
    ).startswith("F:4: task: 'register' cannot be used with 'import_tasks'")


def test_vars_files_are_merged_over_play_vars(tmp_path):
    write(tmp_path, "a: from-file\nb: 2\n", "vars.yml")
    book = load_playbook(
        write(
            tmp_path,
            """\
        - hosts: all
          vars: {a: play, c: 3}
          vars_files: [vars.yml]
          tasks: []
        """,
        ),
        KNOWN,
    )
    assert book.plays[0].vars == {"a": "from-file", "b": 2, "c": 3}


def test_vars_files_are_found_in_the_vars_folder_first_as_in_ansible(tmp_path):
    """ansible-playbook finds `vars_files: [x.yml]` in vars/x.yml (measured)."""
    (tmp_path / "vars").mkdir()
    write(tmp_path, "a: beside\n", "x.yml")
    write(tmp_path / "vars", "a: in vars\n", "x.yml")
    write(tmp_path / "vars", "b: only in vars\n", "y.yml")
    book = "- hosts: all\n  vars_files: [x.yml, y.yml]\n  tasks: []\n"
    play = load_playbook(write(tmp_path, book), KNOWN).plays[0]
    assert play.vars == {"a": "in vars", "b": "only in vars"}
    unknown_home = "- hosts: all\n  vars_files: ['~nosuchuser/x.yml']\n  tasks: []\n"
    (warning,) = load_playbook(write(tmp_path, unknown_home), KNOWN).warnings
    assert "vars file '~nosuchuser/x.yml' not found" in warning
    (tmp_path / "vars" / "d.yml").mkdir()  # found first, as Ansible finds it, and refused
    write(tmp_path, "a: 1\n", "d.yml")
    folder = "- hosts: all\n  vars_files: [d.yml]\n  tasks: []\n"
    assert error(tmp_path, folder, InputError).endswith("cannot read file: Is a directory")


def test_a_missing_vars_file_is_skipped_with_a_warning_as_ansible_skips_it(tmp_path):
    """ansible-core 2.19 skips it without a word (measured); pctfleet says so."""
    write(tmp_path, "a: 1\n", "x.yml")
    book = load_playbook(write(tmp_path, "- hosts: all\n  vars_files: [nope.yml, x.yml]\n"), KNOWN)
    assert book.plays[0].vars == {"a": 1}
    (warning,) = book.warnings
    where = f"{tmp_path / 'site.yml'}:2: play 'play #1'"
    assert warning.startswith(f"{where}: vars file 'nope.yml' not found")
    assert warning.endswith("skipped, as ansible-playbook skips it")


def test_a_list_in_vars_files_takes_the_first_file_found(tmp_path):
    (tmp_path / "vars").mkdir()
    write(tmp_path / "vars", "a: default\nb: 2\n", "default.yml")
    write(tmp_path, "a: local\n", "local.yml")
    book = "- hosts: all\n  vars_files:\n    - [nope.yml, local.yml, default.yml]\n"
    loaded = load_playbook(write(tmp_path, book), KNOWN)
    assert (loaded.plays[0].vars, loaded.warnings) == ({"a": "local"}, [])
    book = "- hosts: all\n  vars_files:\n    - [nope.yml, default.yml]\n    - [no1.yml, no2.yml]\n"
    loaded = load_playbook(write(tmp_path, book), KNOWN)
    assert loaded.plays[0].vars == {"a": "default", "b": 2}
    (warning,) = loaded.warnings
    assert warning.startswith(f"{tmp_path / 'site.yml'}:4: ")
    assert "vars file 'no1.yml' or 'no2.yml' not found" in warning


# ---------------------------------------------------------------- tags


def _tasks() -> list[Task]:
    def t(name: str, *tags: str) -> Task:
        return Task(name, "command", tags=frozenset(tags))

    return [
        t("plain"),
        t("a", "a"),
        t("b", "b"),
        t("always", "always"),
        t("never", "never"),
        t("never_a", "never", "a"),
    ]


@pytest.mark.parametrize(
    ("tags", "skip", "expected"),
    [
        (None, None, ["plain", "a", "b", "always"]),
        ({"all"}, None, ["plain", "a", "b", "always"]),
        ({"a"}, None, ["a", "always", "never_a"]),
        ({"never"}, None, ["always", "never", "never_a"]),
        ({"tagged"}, None, ["a", "b", "always"]),
        ({"untagged"}, None, ["plain", "always"]),
        (None, {"a"}, ["plain", "b", "always"]),
        (None, {"always"}, ["plain", "a", "b"]),
        (None, {"all"}, ["always"]),
        ({"a"}, {"always"}, ["a", "never_a"]),
        (None, {"tagged"}, ["plain"]),
        (None, {"untagged"}, ["a", "b", "always"]),
    ],
)
def test_select_tasks_follows_ansible_tag_rules(tags, skip, expected):
    assert [t.name for t in select_tasks(_tasks(), tags, skip)] == expected


def test_play_tags_are_inherited(tmp_path):
    book = load_playbook(
        write(
            tmp_path,
            """\
        - hosts: all
          tags: setup
          tasks:
            - command: ls
        """,
        ),
        KNOWN,
    )
    tasks = book.plays[0].tasks
    assert select_tasks(tasks, {"setup"}, None) == tasks
    assert select_tasks(tasks, None, {"setup"}) == []
    assert should_run([], None, None)


# ---------------------------------------------------------------- property


VOCAB = [
    "hosts",
    "tasks",
    "handlers",
    "name",
    "command",
    "shell",
    "copy",
    "debug",
    "when",
    "tags",
    "notify",
    "register",
    "args",
    "dest",
    "listen",
    "import_tasks",
    "vars",
    "retries",
    "until",
    "{{ x }}",
    "{{",
    "never",
    "always",
]
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 10**12),
    st.floats(),
    st.text(max_size=10),
    st.sampled_from(VOCAB),
)
structures = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(st.sampled_from(VOCAB), st.text(max_size=6)), inner, max_size=5),
    ),
    max_leaves=30,
)
plays = st.lists(
    st.fixed_dictionaries(
        {"hosts": scalars},
        optional={
            "tasks": st.lists(st.dictionaries(st.sampled_from(VOCAB), structures, max_size=4)),
            "handlers": st.lists(st.dictionaries(st.sampled_from(VOCAB), structures, max_size=4)),
            "vars": structures,
            "tags": structures,
        },
    ),
    max_size=3,
)


def _must_load_or_input_error(path: Path) -> None:
    try:
        load_playbook(path, KNOWN)
    except InputError as err:
        assert len(str(err).splitlines()) == 1, str(err)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.one_of(plays, structures))
def test_random_structures_load_or_raise_input_error(tmp_path, data):
    path = tmp_path / "random.yml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True))
    _must_load_or_input_error(path)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.text(alphabet=st.sampled_from(list("ab:-{}[]&*!?|>'\"#%@ \n\t,.01\x00é")), max_size=60))
def test_random_text_loads_or_raises_input_error(tmp_path, text):
    path = tmp_path / "junk.yml"
    path.write_text(text, encoding="utf-8")
    _must_load_or_input_error(path)


def test_pre_and_post_tasks_wrap_the_roles_and_tasks_with_handler_flushes(tmp_path):
    book = tmp_path / "site.yml"
    book.write_text(
        "- hosts: all\n  tags: [t]\n  pre_tasks: [{name: pre, command: ls}]\n"
        "  tasks: [{name: main, command: ls}]\n  post_tasks: [{name: post, command: ls}]\n"
    )
    (play,) = load_playbook(book, KNOWN).plays
    shown = [(t.name, t.implicit) for t in play.tasks]
    flush = ("meta: flush_handlers", True)
    assert shown == [("pre", False), flush, ("main", False), flush, ("post", False)]
    assert [t.name for t in select_tasks(play.tasks, {"nothing"})] == [flush[0]] * 2
    book.write_text("- hosts: all\n  tasks: [{name: main, command: ls}]\n")
    (play,) = load_playbook(book, KNOWN).plays
    assert [t.name for t in play.tasks] == ["main"]  # nothing to flush early


def test_force_handlers_runs_each_section_in_a_block_whose_always_flushes(tmp_path):
    book = tmp_path / "site.yml"
    book.write_text(
        "- hosts: all\n  pre_tasks: [{name: pre, command: ls}]\n"
        "  tasks: [{name: main, command: ls}]\n"
    )
    (play,) = load_playbook(book, KNOWN).plays
    assert play.force_handlers is None and play.task_list(False) is play.tasks
    forced = play.task_list(True)
    assert [[t.name for t in b.block] for b in forced] == [["pre"], ["main"]]
    assert {t.name for b in forced for t in b.always} == {"meta: flush_handlers"}
    assert all(t.tags == {"always"} for b in forced for t in b.always)
    book.write_text("- hosts: all\n  force_handlers: false\n  tasks: [{name: m, command: ls}]\n")
    (play,) = load_playbook(book, KNOWN).plays
    assert play.task_list(True) is play.tasks  # the play's own false wins over the run's


@pytest.mark.parametrize(
    ("task", "args"),
    [
        ("command: make install chdir=/src creates=/usr/bin/x",
         {"cmd": "make install", "chdir": "/src", "creates": "/usr/bin/x"}),
        ('shell: echo "a  b" > out executable=/bin/bash',
         {"cmd": 'echo "a  b" > out', "executable": "/bin/bash"}),
        ("shell: echo {{ x }} chdir={{ d }}", {"cmd": "echo {{ x }}", "chdir": "{{ d }}"}),
        ("command: {cmd: ls chdir=/x}", {"cmd": "ls chdir=/x"}),  # a cmd argument is as given
        ("file: path={{ d }}/x state=directory", {"path": "{{ d }}/x", "state": "directory"}),
        ('copy: content="a\\tb" dest=/x', {"content": "a\tb", "dest": "/x"}),
    ],
)  # fmt: skip
def test_one_line_arguments_split_as_ansible_splits_them(tmp_path, task, args):
    book = tmp_path / "site.yml"
    book.write_text(f"- hosts: all\n  tasks:\n    - {task}\n")
    from pctfleet.modules import known_args

    (play,) = load_playbook(book, known_args()).plays
    assert play.tasks[0].args == args


def test_play_keys_read_and_not_followed_are_named_in_warnings(tmp_path):
    book = tmp_path / "site.yml"
    book.write_text(
        "- hosts: all\n  collections: [community.general]\n  strategy: linear\n"
        "  gather_subset: [min]\n  tasks: [{command: ls}]\n"
    )
    warnings = load_playbook(book, KNOWN).warnings
    assert [w.split(": ", 1)[0] for w in warnings] == [f"{book}:2", f"{book}:4"]
    assert "play key 'collections' is not followed" in warnings[0]
