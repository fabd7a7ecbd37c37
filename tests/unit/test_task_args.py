"""Task arguments shared across containers: reused only where the inputs are the same."""

from __future__ import annotations

import inspect
import os
import re
import textwrap

import pytest

from pctfleet import sh
from pctfleet.errors import InputError
from pctfleet.modules import REGISTRY, known_args
from pctfleet.playbook.loader import load_playbook
from pctfleet.playbook.templating import Secret
from pctfleet.run import taskargs
from pctfleet.run.taskargs import task_args


def _tasks(tmp_path, body: str) -> list:
    book = tmp_path / "book.yml"
    book.write_text("- hosts: all\n  tasks:\n" + textwrap.indent(textwrap.dedent(body), "    "))
    return load_playbook(book, known_args()).plays[0].tasks


@pytest.fixture
def parses(monkeypatch) -> list:
    """Every module parse that really ran (not served from the table)."""
    calls: list = []
    real = taskargs.render

    def counted(value, variables, **kwargs):  # noqa: ANN001, ANN202
        calls.append(value)
        return real(value, variables, **kwargs)

    monkeypatch.setattr(taskargs, "render", counted)
    return calls


def test_containers_with_the_same_values_share_one_parse(tmp_path, parses):
    (task,) = _tasks(tmp_path, "- file: {path: '{{ root }}/app', state: directory}\n")
    first = task_args(task, {"root": "/opt", "port": 1}, ".", "w")
    second = task_args(task, {"root": "/opt", "port": 2}, ".", "w")  # port is not read
    assert first is second and first.path == "/opt/app"
    assert len(parses) == 1


def test_different_values_give_different_arguments_directly_and_through_variables(tmp_path, parses):
    (task,) = _tasks(tmp_path, "- file: {path: '{{ app }}/x', state: directory}\n")
    # `app` is the same text everywhere; what it reads (`root`) differs per container.
    one = task_args(task, {"app": "{{ root }}/app", "root": "/a"}, ".", "w")
    two = task_args(task, {"app": "{{ root }}/app", "root": "/b"}, ".", "w")
    three = task_args(task, {"app": "/c"}, ".", "w")
    assert (one.path, two.path, three.path) == ("/a/app/x", "/b/app/x", "/c/x")
    # 1 and "1" and True render alike here but are different values: never confused.
    (mode,) = _tasks(tmp_path, "- command: {cmd: 'echo {{ n }}'}\n")
    assert task_args(mode, {"n": 1}, ".", "w").cmd == "echo 1"
    assert task_args(mode, {"n": True}, ".", "w").cmd == "echo True"


def test_a_list_variable_is_known_by_identity(tmp_path, parses):
    (task,) = _tasks(tmp_path, "- pip: {name: '{{ pkgs }}'}\n")
    shared = ["six", "idna"]
    assert task_args(task, {"pkgs": shared}, ".", "w") is task_args(
        task, {"pkgs": shared}, ".", "w"
    )
    other = task_args(task, {"pkgs": ["packaging"]}, ".", "w")
    assert other.name == ("packaging",)


def test_a_failure_is_not_kept_and_names_each_callers_place(tmp_path, parses):
    (task,) = _tasks(tmp_path, "- file: {path: '{{ where_to }}', state: directory}\n")
    with pytest.raises(InputError, match="first: .*where_to"):
        task_args(task, {}, ".", "first")
    with pytest.raises(InputError, match="second: .*where_to"):
        task_args(task, {}, ".", "second")
    assert task_args(task, {"where_to": "/x"}, ".", "w").path == "/x"


def test_impure_templates_and_context_reading_modules_are_parsed_every_time(tmp_path, parses):
    impure, template = _tasks(
        tmp_path,
        """\
        - command: "echo {{ range(3) | list }}"
        - template: {src: t.j2, dest: /etc/t}
        """,
    )
    (tmp_path / "t.j2").write_text("{{ who }}\n")
    for _ in range(2):
        task_args(impure, {}, ".", "w")
    assert len(parses) == 2  # a call: not known to be a function of the variables
    base = str(tmp_path)
    assert task_args(template, {"who": "a"}, base, "w").data == b"a\n"
    assert task_args(template, {"who": "b"}, base, "w").data == b"b\n"


def test_a_secret_reaches_the_arguments_it_belongs_to_and_no_other(tmp_path, parses):
    (task,) = _tasks(tmp_path, "- command: {cmd: 'login {{ api_token }}'}\n")
    one = task_args(task, {"api_token": Secret("s3cr3t-one")}, ".", "w")
    two = task_args(task, {"api_token": Secret("s3cr3t-two")}, ".", "w")
    assert (one.cmd, two.cmd) == ("login s3cr3t-one", "login s3cr3t-two")


def test_every_args_class_reading_its_context_says_so():
    # Parsing that reads the variables or files cannot be shared between containers.
    REGISTRY.load_all()
    for module in list(dict.values(REGISTRY)):
        for cls in module.Args.__mro__:
            if "Args" not in cls.__name__ or cls.__module__ == "pctfleet.modules.args":
                continue
            source = re.sub(r"super\(\)\.parse\(.*?, ctx, where\)", "", inspect.getsource(cls))
            source = re.sub(r"def \w+\(self, ctx: Context, where: str\)", "", source)
            source = re.sub(r"def parse\(cls, raw: .*?, ctx: Context, where: str\)", "", source)
            if "ctx" in source:
                assert module.Args.reads_context, f"{cls.__name__} reads ctx"


def test_a_secret_anywhere_in_the_scope_is_hidden_from_every_text_of_a_result():
    from pctfleet.playbook.templating import REDACTED, hider, redact_data

    scope = {
        "nested": {"a": [1, ("x", Secret("deep-one"))]},
        "db_password": "pw-plain",
        "plain": "nothing",
    }
    hide = hider(scope)
    data = {"msg": "deep-one and pw-plain", "lines": ["nothing", "x deep-one"]}
    assert redact_data(data, hide) == {
        "msg": f"{REDACTED} and {REDACTED}",
        "lines": ["nothing", f"x {REDACTED}"],
    }
    assert redact_data(data, scope) == redact_data(data, hide)


def _rewrite(path, content: str, later: int = 0) -> None:
    """New bytes under the same name, its mtime put back (+ `later` s): only the ctime tells."""
    before = path.stat()
    path.write_text(content)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + later * 10**9))


def test_copy_and_template_files_are_read_once_until_they_change(tmp_path, parses):
    copy, template = _tasks(
        tmp_path,
        """\
        - copy: {src: '{{ code }}', dest: /opt/app.py}
        - template: {src: env.j2, dest: '/etc/{{ label }}.env'}
        """,
    )
    (tmp_path / "app.py").write_text("print(1)\n")
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "env.j2").write_text("PORT={{ port }}\n")
    base, code = str(tmp_path), str(tmp_path / "app.py")
    first = task_args(copy, {"code": code, "label": "a"}, base, "w")
    assert task_args(copy, {"code": code, "label": "b"}, base, "w") is first
    assert first.data == b"print(1)\n"
    one = task_args(template, {"port": 1, "label": "a"}, base, "w")
    assert task_args(template, {"port": 1, "label": "a"}, base, "w") is one
    assert task_args(template, {"port": 2, "label": "a"}, base, "w").data == b"PORT=2\n"
    assert len(parses) == 3
    _rewrite(tmp_path / "app.py", "print(2)\n")
    _rewrite(tmp_path / "templates" / "env.j2", "PORT={{ port }}!\n", later=1)  # jinja: mtime
    assert task_args(copy, {"code": code, "label": "a"}, base, "w").data == b"print(2)\n"
    assert task_args(template, {"port": 1, "label": "a"}, base, "w").data == b"PORT=1!\n"


def test_a_template_reading_through_variables_or_impure_is_never_confused(tmp_path, parses):
    pure, loop = _tasks(
        tmp_path,
        """\
        - template: {src: pure.j2, dest: /etc/a}
        - template: {src: loop.j2, dest: /etc/b}
        """,
    )
    (tmp_path / "pure.j2").write_text("{% if on %}{{ app }}{% endif %}\n")
    (tmp_path / "loop.j2").write_text("{% for x in items %}{{ x }}{% endfor %}\n")
    base, app = str(tmp_path), "{{ root }}/app"
    assert task_args(pure, {"on": True, "app": app, "root": "/a"}, base, "w").data == b"/a/app\n"
    assert task_args(pure, {"on": True, "app": app, "root": "/b"}, base, "w").data == b"/b/app\n"
    assert task_args(pure, {"on": False, "app": app, "root": "/b"}, base, "w").data == b"\n"
    items = ["x", "y"]
    assert task_args(loop, {"items": items}, base, "w").data == b"xy\n"
    items.append("z")  # the same list, changed in place: a loop is no pure template
    assert task_args(loop, {"items": items}, base, "w").data == b"xyz\n"


def test_a_template_is_looked_for_in_the_role_then_the_playbook_in_order(tmp_path):
    from pctfleet.errors import PlaybookError
    from pctfleet.modules.args import Context
    from pctfleet.modules.copy import _find_template

    book, role = tmp_path / "book", tmp_path / "role"
    places = [role / "templates", book / "templates", book, tmp_path / "templates"]
    for place in places:
        place.mkdir(parents=True, exist_ok=True)
    ctx = Context(str(book), {"role_path": str(role)})
    for place in places:  # each found while every place before it lacks the file
        (place / "t.j2").write_text("x")
    for place in places:
        assert _find_template("t.j2", ctx, "w") == place / "t.j2"
        (place / "t.j2").unlink()
    with pytest.raises(PlaybookError, match="t.j2 not found .*role/templates, .*book/templates"):
        _find_template("t.j2", ctx, "w")


def test_minus_zero_is_not_zero(tmp_path, parses):
    # -0.0 == 0.0 and hashes alike, but renders "-0.0": a float is keyed by its bits.
    (task,) = _tasks(tmp_path, "- command: {cmd: 'echo {{ x }}'}\n")
    assert task_args(task, {"x": 0.0}, ".", "w").cmd == "echo 0.0"
    assert task_args(task, {"x": -0.0}, ".", "w").cmd == "echo -0.0"


def test_the_tables_are_bounded_and_emptied_when_the_run_is_over(tmp_path, parses, monkeypatch):
    monkeypatch.setattr(taskargs, "LIMIT", 5)
    (task,) = _tasks(tmp_path, "- command: {cmd: 'echo {{ r.x }} {{ range(3) | list }}'}\n")
    for n in range(20):  # impure: no entry is ever stored, yet each `r` was walked
        task_args(task, {"r": {"x": n}}, ".", "w")
    assert len(taskargs._walks) <= 5
    (kept,) = _tasks(tmp_path, "- command: {cmd: 'echo {{ s }}'}\n")
    task_args(kept, {"s": Secret("hunter2")}, ".", "w")
    assert taskargs._table
    taskargs.forget()
    assert not taskargs._table and not taskargs._walks


def test_a_run_leaves_nothing_in_the_tables(tmp_path):
    from pctfleet.inventory import load_inventory
    from pctfleet.run.engine import RunOptions
    from pctfleet.run.playbookrun import RunRequest, execute, prepare
    from pctfleet.transport.options import ConnectOptions
    from pctfleet.transport.sim import build_sim_fleet, converged_answers
    from tests.unit.test_per_node import PLAYBOOK

    (tmp_path / "site.yml").write_text(PLAYBOOK)
    (tmp_path / "inventory.yml").write_text("nodes:\n  pve1: {containers: [200, 201]}\n")
    inventory = load_inventory(tmp_path / "inventory.yml")
    request = RunRequest(
        tmp_path / "site.yml",
        inventory,
        list(inventory.select("all")),
        ConnectOptions(),
        RunOptions(),
    )
    prepared = prepare(request)
    assert taskargs._table  # preflight's parses, for the engine to find

    def fleet(members, connect):  # noqa: ANN001, ANN202, ARG001
        return build_sim_fleet(
            members, latency=0.0, answers=lambda c: converged_answers(prepared, c)
        )

    assert all(run.status == "ok" for run in execute(prepared, fleet_factory=fleet))
    assert not taskargs._table and not taskargs._walks
    assert not sh._MADE  # nor the probe snippets made with the run's values


def test_a_template_s_own_variables_follow_its_destination_and_its_run_date(tmp_path, parses):
    managed, dated = _tasks(
        tmp_path,
        """\
        - template: {src: managed.j2, dest: '/etc/{{ label }}'}
        - template: {src: dated.j2, dest: /etc/d}
        """,
    )
    (tmp_path / "managed.j2").write_text("# {{ ansible_managed }} {{ template_destpath }}\n")
    (tmp_path / "dated.j2").write_text("{{ template_run_date.microsecond }}\n")
    base = str(tmp_path)
    one = task_args(managed, {"label": "a"}, base, "w")
    assert task_args(managed, {"label": "a"}, base, "w") is one
    assert one.data == b"# Ansible managed /etc/a\n"
    assert task_args(managed, {"label": "b"}, base, "w").data == b"# Ansible managed /etc/b\n"
    mine = task_args(managed, {"label": "a", "ansible_managed": "mine"}, base, "w")
    assert mine.data.startswith(b"# mine ")
    parsed = len(parses)
    task_args(dated, {}, base, "w")
    task_args(dated, {}, base, "w")
    assert len(parses) == parsed + 2  # rendered each time: never served from the table


def test_a_template_s_own_variables_are_data_never_rendered_again(tmp_path, parses):
    """A dest built from what a container printed reaches the file as text: a template
    in it is never evaluated on this machine."""
    from pctfleet.playbook.templating import Unsafe

    (task,) = _tasks(tmp_path, "- template: {src: t.j2, dest: '/etc/{{ printed }}'}\n")
    (tmp_path / "t.j2").write_text("{{ template_destpath }}\n")
    printed = Unsafe("{{ 6 * 7 }}")
    assert task_args(task, {"printed": printed}, str(tmp_path), "w").data == b"/etc/{{ 6 * 7 }}\n"


def test_template_run_date_read_through_a_variable_is_never_served_again(tmp_path, parses):
    (task,) = _tasks(tmp_path, "- template: {src: t.j2, dest: /etc/t}\n")
    (tmp_path / "t.j2").write_text("{{ stamp }}\n")
    scope = {"stamp": "{{ template_run_date.microsecond }}"}
    parsed = len(parses)
    task_args(task, scope, str(tmp_path), "w")
    task_args(task, scope, str(tmp_path), "w")
    assert len(parses) == parsed + 2


def test_template_fullpath_is_the_path_as_found_links_kept(tmp_path):
    from pctfleet.playbook.templatevars import template_vars

    (tmp_path / "real").mkdir()
    (tmp_path / "real/t.j2").write_text("x")
    (tmp_path / "templates").symlink_to(tmp_path / "real")
    found = template_vars("t.j2", tmp_path / "templates/t.j2", "/d", {}, "w")
    assert found["template_fullpath"] == str(tmp_path / "templates/t.j2")


def test_an_ansible_managed_ansible_cannot_fill_in_is_one_line_naming_it(tmp_path, monkeypatch):
    from pctfleet.errors import PlaybookError
    from pctfleet.playbook import templatevars

    (tmp_path / "ansible.cfg").write_text("[defaults]\nansible_managed = by {who}\n")
    monkeypatch.setenv("ANSIBLE_CONFIG", str(tmp_path / "ansible.cfg"))
    templatevars._configured.cache_clear()
    (tmp_path / "t.j2").write_text("x")
    with pytest.raises(PlaybookError) as err:
        templatevars.template_vars("t.j2", tmp_path / "t.j2", "/d", {}, "book.yml:3")
    message = str(err.value)
    assert message.startswith(f"book.yml:3: {tmp_path}/ansible.cfg [defaults]: ansible_managed")
    assert "\n" not in message and "{host}" in message
    templatevars._configured.cache_clear()
