"""Roles, import_role/include_role and dynamic include_tasks, run against this machine."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from pctfleet.errors import PlaybookError
from pctfleet.modules import known_args
from pctfleet.playbook.loader import load_playbook, select_tasks
from pctfleet.run.engine import ContainerEngine, RunOptions
from pctfleet.run.playbookrun import container_vars
from pctfleet.run.results import ContainerRun
from pctfleet.transport.local import LocalTarget


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


class _Inv:
    def __init__(self, variables: dict) -> None:
        self.variables = variables

    def vars_for(self, container, extra):  # noqa: ANN001, ANN201, ARG002
        return dict(self.variables)


def run_book(tmp_path: Path, text: str, inventory: dict | None = None, **options):
    book = tmp_path / "book.yml"
    book.write_text(textwrap.dedent(text))
    play = load_playbook(book, known_args(), options.pop("roles_path", ())).plays[0]
    opts = RunOptions(base_dir=str(tmp_path), **options)
    variables = container_vars(_Inv(inventory or {}), None, play, opts.extra_vars)
    run = ContainerRun("local", 100)
    engine = ContainerEngine(LocalTarget(), run, variables, opts)
    engine.play(select_tasks(play.tasks, opts.tags, opts.skip_tags), list(play.handlers))
    run.finish_status()
    return run, engine


def names(run: ContainerRun) -> list[tuple[str, str]]:
    return [(t.name, t.status) for t in run.tasks]


def test_role_defaults_vars_params_precedence(tmp_path):
    write(
        tmp_path,
        {
            "roles/web/defaults/main.yml": "a: default\nb: default\nc: default\n",
            "roles/web/vars/main.yml": "c: role_vars\n",
            "roles/web/tasks/main.yml": """\
            - set_fact: {d: fact}
            - debug: {msg: "{{ a }} {{ b }} {{ c }} {{ d }} {{ role_path | basename }}"}
            """,
        },
    )
    run, _ = run_book(
        tmp_path,
        """\
        - hosts: all
          vars: {c: play}
          roles:
            - {role: web, d: param}
        """,
        inventory={"b": "inventory"},
        extra_vars={"a": "extra"},
    )
    assert run.status == "ok", run.message
    assert names(run)[1] == ("web : debug", "ok")
    # defaults < inventory < play vars < role vars < set_fact < role params < -e
    assert run.tasks[1].msg == "extra inventory role_vars param web"


def test_role_handler_is_notified_and_files_templates_resolve_in_the_role(tmp_path):
    out = tmp_path / "out"
    write(
        tmp_path,
        {
            "templates/conf.j2": "playbook's\n",
            "files/data.txt": "playbook's\n",
            "roles/web/templates/conf.j2": "role {{ port }}\n",
            "roles/web/files/data.txt": "role file\n",
            "roles/web/defaults/main.yml": "port: 80\n",
            "roles/web/handlers/main.yml": (
                f"- name: bounce\n  copy: {{dest: {out}/bounced, content: x}}\n"
            ),
            "roles/web/tasks/main.yml": f"""\
            - template: {{src: conf.j2, dest: {out}/conf}}
              notify: bounce
            - copy: {{src: data.txt, dest: {out}/data}}
            """,
        },
    )
    out.mkdir()
    run, _ = run_book(tmp_path, "- hosts: all\n  roles: [web]\n")
    assert run.status == "changed", run.message
    assert (out / "conf").read_text() == "role 80\n"
    assert (out / "data").read_text() == "role file\n"
    assert (out / "bounced").exists()
    assert names(run)[-1] == ("web : bounce", "changed")


def test_meta_dependencies_run_first_and_once(tmp_path):
    write(
        tmp_path,
        {
            "roles/base/tasks/main.yml": "- debug: {msg: base}\n",
            "roles/a/meta/main.yml": "dependencies: [base]\n",
            "roles/a/tasks/main.yml": "- debug: {msg: a}\n",
            "roles/b/meta/main.yml": "dependencies: [{role: base}]\n",
            "roles/b/tasks/main.yml": "- debug: {msg: b}\n",
            "roles/dup/meta/main.yml": "allow_duplicates: true\n",
            "roles/dup/tasks/main.yml": "- debug: {msg: dup}\n",
        },
    )
    run, _ = run_book(tmp_path, "- hosts: all\n  roles: [a, b, a, dup, dup]\n")
    assert [t.msg for t in run.tasks] == ["base", "a", "b", "dup", "dup"]


def test_include_role_loops_with_tasks_from_and_import_role_tags_are_static(tmp_path):
    write(
        tmp_path,
        {
            "roles/web/tasks/main.yml": "- debug: {msg: main}\n",
            "roles/web/tasks/extra.yml": "- debug: {msg: 'extra {{ item }} {{ greet }}'}\n",
        },
    )
    text = """\
        - hosts: all
          vars: {role: web}
          tasks:
            - import_role: {name: web}
              tags: imported
            - include_role: {name: "{{ role }}", tasks_from: extra}
              loop: [1, 2]
              vars: {greet: hi}
        """
    run, _ = run_book(tmp_path, text)
    msgs = [t.msg for t in run.tasks if t.module == "debug"]
    assert msgs == ["main", "extra 1 hi", "extra 2 hi"]
    assert ("web : debug", "ok") in names(run)
    run, _ = run_book(tmp_path, text, tags={"imported"})
    assert [t.msg for t in run.tasks] == ["main"]  # the include itself is not tagged


def test_roles_path_from_ansible_cfg_and_option(tmp_path):
    write(
        tmp_path,
        {
            "ansible.cfg": "[defaults]\nroles_path = elsewhere/roles:other\n",
            "elsewhere/roles/x/tasks/main.yml": "- debug: {msg: from cfg}\n",
            "cli/x/tasks/main.yml": "- debug: {msg: from option}\n",
        },
    )
    run, _ = run_book(tmp_path, "- hosts: all\n  roles: [x]\n")
    assert [t.msg for t in run.tasks] == ["from cfg"]
    run, _ = run_book(tmp_path, "- hosts: all\n  roles: [x]\n", roles_path=[str(tmp_path / "cli")])
    assert [t.msg for t in run.tasks] == ["from option"]


def test_a_missing_role_names_the_line_and_where_it_looked(tmp_path):
    book = tmp_path / "book.yml"
    book.write_text("- hosts: all\n  tasks:\n    - import_role: {name: nope}\n")
    with pytest.raises(PlaybookError) as err:
        load_playbook(book, known_args())
    text = str(err.value)
    assert text.startswith(f"{book}:3") and "role 'nope' not found" in text
    assert str(tmp_path / "roles") in text and "\n" not in text


def test_include_tasks_templated_and_looped_is_loaded_when_reached(tmp_path):
    write(tmp_path, {"steps/one.yml": "- debug: {msg: 'step {{ n }} {{ item }}'}\n"})
    run, _ = run_book(
        tmp_path,
        """\
        - hosts: all
          tasks:
            - set_fact: {which: one}
            - include_tasks: "steps/{{ which }}.yml"
              loop: [a, b]
              vars: {n: 1}
        """,
    )
    assert run.status == "ok", run.message
    assert [t.msg for t in run.tasks if t.module == "debug"] == ["step 1 a", "step 1 b"]


def test_a_converged_role_costs_one_call(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    write(
        tmp_path,
        {
            "roles/web/tasks/main.yml": f"""\
            - copy: {{dest: {out}/a, content: a}}
            - file: {{path: {out}/d, state: directory}}
            """,
        },
    )
    text = (
        "- hosts: all\n  roles: [web]\n  tasks:\n    - copy: {dest: "
        + f"{out}/b"
        + ", content: b}\n"
    )
    run_book(tmp_path, text)
    run, _ = run_book(tmp_path, text)
    assert (run.status, run.remote_calls) == ("ok", 1)


def test_a_converged_play_with_a_role_costs_one_call_on_the_sim_transport(tmp_path):
    from pctfleet.inventory import load_inventory
    from pctfleet.run.playbookrun import RunRequest, execute, prepare
    from pctfleet.transport.options import ConnectOptions
    from pctfleet.transport.sim import build_sim_fleet, converged_answers

    write(
        tmp_path,
        {
            "roles/web/defaults/main.yml": "port: 80\n",
            "roles/web/templates/web.conf.j2": "listen {{ port }}\n",
            "roles/web/files/motd": "hello\n",
            "roles/web/handlers/main.yml": "- name: reload\n  command: 'true'\n",
            "roles/web/tasks/main.yml": """\
            - template: {src: web.conf.j2, dest: /etc/web.conf}
              notify: reload
            - copy: {src: motd, dest: /etc/motd}
            - file: {path: "/srv/{{ role_name }}", state: directory}
            """,
            "site.yml": (
                "- hosts: all\n  roles: [web]\n  tasks:\n"
                "    - file: {path: /srv, state: directory}\n"
            ),
            "inventory.yml": (
                "defaults: {user: root}\nnodes:\n  pve1:\n    containers: [200, 201]\n"
            ),
        },
    )
    inv = load_inventory(tmp_path / "inventory.yml")
    request = RunRequest(
        tmp_path / "site.yml", inv, list(inv.select("all")), ConnectOptions(), RunOptions()
    )
    prepared = prepare(request)

    def factory(containers, connect):  # noqa: ANN001, ANN202, ARG001
        return build_sim_fleet(
            containers, latency=0.0, answers=lambda c: converged_answers(prepared, c)
        )

    runs = execute(prepared, fleet_factory=factory)
    assert [(r.status, r.remote_calls) for r in runs] == [("ok", 1)] * 2, [r.message for r in runs]
    assert [t.name for t in runs[0].tasks][:3] == ["web : template", "web : copy", "web : file"]


def test_run_with_a_missing_role_exits_4_and_roles_path_option_finds_it(tmp_path):
    import contextlib
    import io

    from pctfleet import exitcodes
    from pctfleet.cli import main as cli

    def invoke(*args: str) -> tuple[int, str]:
        err = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            try:
                code = cli._invoke(cli.app, list(args))
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
        return code, err.getvalue()

    book = tmp_path / "site.yml"
    book.write_text("- hosts: all\n  roles:\n    - web\n")
    # Port 9 on loopback: nothing listens, so a run that got past loading fails to connect.
    common = ["--host", "127.0.0.1", "--port", "9", "--ct", "200", "--check"]
    common += ["--journal-dir", str(tmp_path / "j")]
    code, err = invoke("run", str(book), *common)
    assert code == exitcodes.PARSE_ERROR, err
    assert err.startswith(f"error: {book}:3: role 'web' not found (looked in ")
    assert err.count("\n") == 1 and "Traceback" not in err
    write(tmp_path, {"mine/web/tasks/main.yml": "- debug: {msg: hi}\n"})
    code, err = invoke("run", str(book), "-r", str(tmp_path / "mine"), *common)
    assert code != exitcodes.PARSE_ERROR and "not found" not in err, err


def test_play_tasks_see_public_roles_vars_and_defaults_but_not_an_includes(tmp_path):
    write(
        tmp_path,
        {
            "roles/web/vars/main.yml": "mode: web vars\n",
            "roles/web/tasks/main.yml": "- debug: {msg: web}\n",
            "roles/lib/vars/main.yml": "lib: lib vars\n",
            "roles/lib/tasks/main.yml": "- debug: {msg: lib}\n",
            "roles/inc/vars/main.yml": "inc: inc vars\n",
            "roles/inc/defaults/main.yml": "inc_default: inc default\n",
            "roles/inc/tasks/main.yml": "- debug: {msg: inc}\n",
        },
    )
    run, engine = run_book(
        tmp_path,
        """\
        - hosts: all
          vars: {mode: play vars}
          roles: [web]
          tasks:
            - set_fact:
                seen: "{{ mode }}|{{ lib | default('-') }}|{{ inc | default('-') }}"
            - import_role: {name: lib}
            - include_role: {name: inc}
            - set_fact:
                later: "{{ inc | default('-') }}"
        """,
    )
    assert run.status == "ok", run.message
    # As ansible-playbook: roles: and import_role are public (their vars/ over play vars,
    # for every task of the play, even before the import); include_role is private.
    assert engine.vars["seen"] == "web vars|lib vars|-"
    assert engine.vars["later"] == "-"
