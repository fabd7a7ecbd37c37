"""Where pctfleet must leave what ansible-playbook leaves (the lab's differential suite
proves it against Ansible itself; these pin each known case without Ansible)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from pctfleet.modules import known_args
from pctfleet.playbook.loader import load_playbook
from pctfleet.playbook.templating import render, render_template_file
from pctfleet.run.engine import ContainerEngine, RunOptions
from pctfleet.run.playbookrun import container_vars
from pctfleet.run.results import ContainerRun
from pctfleet.transport.local import LocalTarget


def _play(tmp_path: Path, body: str, extra: dict | None = None) -> ContainerEngine:
    book = tmp_path / "book.yml"
    book.write_text(textwrap.dedent(body), encoding="utf-8")
    play = load_playbook(book, known_args()).plays[0]
    extra = extra or {}
    variables = container_vars(_NoInventory(), None, play, extra)
    options = RunOptions(base_dir=str(tmp_path), lock_wait=5, extra_vars=extra)
    engine = ContainerEngine(LocalTarget(), ContainerRun("local", 100), variables, options)
    engine.play(play.tasks, [])
    assert engine.run.status == "ok", engine.run.message
    return engine


class _NoInventory:
    def vars_for(self, container: object, extra: dict) -> dict:
        return {}


def test_a_template_ending_in_a_newline_keeps_it():
    """`"{{ x }}\\n"` is not a bare expression: Ansible renders it to a string with the newline."""
    variables = {"greeting": "hello", "port": 30000}
    assert render("{{ greeting }}\n", variables, where="t") == "hello\n"
    assert render("  {{ greeting }}", variables, where="t") == "  hello"
    assert render("{{ port }}", variables, where="t") == 30000  # one expression: its type


def test_copy_content_keeps_the_trailing_newline(tmp_path):
    _play(
        tmp_path,
        f"""\
        - hosts: all
          vars: {{greeting: hello}}
          tasks:
            - copy: {{content: "{{{{ greeting }}}}\\n", dest: "{tmp_path}/with"}}
            - copy: {{content: "{{{{ greeting }}}}", dest: "{tmp_path}/without"}}
        """,
    )
    assert (tmp_path / "with").read_bytes() == b"hello\n"
    assert (tmp_path / "without").read_bytes() == b"hello"


def test_registered_output_loses_its_final_newlines_like_ansible(tmp_path):
    engine = _play(
        tmp_path,
        """\
        - hosts: all
          tasks:
            - shell: "printf 'a\\\\nb\\\\n'; printf 'e1\\\\ne2\\\\n\\\\n' >&2"
              register: out
        """,
    )
    out = engine.vars["out"]
    assert out["stdout"] == "a\nb" and out["stdout_lines"] == ["a", "b"]
    assert out["stderr"] == "e1\ne2" and out["stderr_lines"] == ["e1", "e2"]


def test_extra_vars_win_over_set_fact_and_register(tmp_path):
    engine = _play(
        tmp_path,
        """\
        - hosts: all
          vars: {color: play}
          tasks:
            - set_fact: {color: fact, shape: fact}
            - command: echo registered
              register: size
        """,
        extra={"color": "extra", "size": "extra"},
    )
    assert engine.vars["color"] == "extra"
    assert engine.vars["size"] == "extra"
    assert engine.vars["shape"] == "fact"


def test_a_template_file_drops_the_newline_after_a_block_tag(tmp_path):
    """ansible-core renders with trim_blocks: template files and inline text alike
    (measured: `debug: {msg: "{% if 1 %}\\nyes{% endif %}"}` shows `yes`)."""
    src = tmp_path / "t.j2"
    src.write_text("a\n{% for x in xs %}\nx={{ x }}\n{% endfor %}\n{% if 0 %}\nno\n{% endif %}\n")
    rendered = render_template_file(src, {"xs": [1, 2]}, where="t")
    assert rendered == "a\nx=1\nx=2\n"
    assert render("{% if 1 %}\nyes{% endif %}", {}, where="t") == "yes"


def test_copy_backup_keeps_the_old_bytes_under_ansible_s_backup_name():
    import re

    from pctfleet.facts.kv import encode_fields
    from pctfleet.modules import REGISTRY
    from pctfleet.modules.args import Context
    from pctfleet.modules.base import Fact

    copy = REGISTRY["copy"]
    args = copy.prepare(
        {"content": "new\n", "dest": "/etc/app.conf", "backup": True}, Context(), "t"
    )
    old = {"type": "file", "mode": "640", "owner": "root", "group": "root", "sha256": "x"}
    facts = Fact(encode_fields({**old, "content": "b2xkCg=="}), 0)
    plan = copy.decide(args, facts, False)
    backup, written = plan.pushes
    assert re.fullmatch(r"/etc/app\.conf\.\d+\.\d{4}-\d\d-\d\d@\d\d:\d\d:\d\d~", backup.dest)
    assert (backup.content, backup.mode) == (b"old\n", "0640")
    assert (written.dest, written.content) == ("/etc/app.conf", b"new\n")
    assert plan.result["backup_file"] == backup.dest


def test_a_directory_s_mode_reaches_every_folder_it_creates_but_no_existing_one(tmp_path):
    import subprocess

    from pctfleet.facts.kv import encode_fields
    from pctfleet.modules import REGISTRY
    from pctfleet.modules.args import Context
    from pctfleet.modules.base import Fact

    (tmp_path / "old").mkdir(mode=0o711)
    (tmp_path / "old").chmod(0o711)
    target = tmp_path / "old" / "a b" / "c"
    file = REGISTRY["file"]
    args = file.prepare({"path": str(target), "state": "directory", "mode": "0750"}, Context(), "t")
    plan = file.decide(args, Fact(encode_fields({"type": "absent"}), 0), False)
    subprocess.run(["sh", "-c", plan.script or ""], check=True)
    modes = {p: oct(p.stat().st_mode & 0o777) for p in (tmp_path / "old", target.parent, target)}
    assert list(modes.values()) == ["0o711", "0o750", "0o750"]
