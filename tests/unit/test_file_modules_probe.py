"""The new file modules' snippets run for real (locally, no root): what a container's
file holds comes back byte for byte through the probe, and plans from it are exact."""

from __future__ import annotations

import base64
import hashlib
import os
import socket
import subprocess
import textwrap
import time
from pathlib import Path

from pctfleet.facts.script import run_probe
from pctfleet.modules import REGISTRY, known_args
from pctfleet.modules.args import Context
from pctfleet.playbook.loader import load_playbook
from pctfleet.run.engine import ContainerEngine, RunOptions
from pctfleet.run.results import ContainerRun
from pctfleet.sh import snippet
from pctfleet.transport.local import LocalTarget

# Frame markers, rich markup, an escape, bytes that are no UTF-8, and no final newline.
HOSTILE = b"\x1epctfleet-fact-end 0 t 0\n[/bold][red]x\n\x1b[31m\xff\xfe\x80 raw\r\nlast"


def _plan(name: str, raw: dict, check: bool = False):
    module = REGISTRY[name]
    args = module.prepare(raw, Context(), "test")
    facts = run_probe(LocalTarget(), {"t1": module.probe(args, False)})
    return module.decide(args, facts["t1"], check)


def test_lineinfile_keeps_every_byte_it_read(tmp_path: Path) -> None:
    path = tmp_path / "hostile.conf"
    path.write_bytes(HOSTILE)
    os.chmod(path, 0o640)
    plan = _plan("lineinfile", {"path": str(path), "line": "added"})
    assert plan.changed and [p.dest for p in plan.pushes] == [str(path)]
    assert plan.pushes[0].content == HOSTILE + b"\nadded\n"
    assert plan.pushes[0].mode == "0640"


def test_an_edit_through_a_link_writes_the_real_file(tmp_path: Path) -> None:
    real = tmp_path / "real.conf"
    real.write_bytes(b"a\n")
    (tmp_path / "link.conf").symlink_to(real)
    plan = _plan("replace", {"path": str(tmp_path / "link.conf"), "regexp": "a", "replace": "b"})
    assert [(p.dest, p.content) for p in plan.pushes] == [(str(real), b"b\n")]


def test_slurp_returns_the_bytes(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(HOSTILE)
    plan = _plan("slurp", {"src": str(path)})
    assert base64.b64decode(plan.result["content"]) == HOSTILE


def test_stat_reads_mode_size_and_checksum(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(HOSTILE)
    os.chmod(path, 0o4750)
    (tmp_path / "l").symlink_to(path)
    found = _plan("stat", {"path": str(path)}).result["stat"]
    assert (found["exists"], found["isreg"], found["mode"], found["size"]) == (
        True,
        True,
        "4750",
        len(HOSTILE),
    )
    assert found["isuid"] and found["checksum"] == hashlib.sha1(HOSTILE).hexdigest()
    assert abs(found["mtime"] - path.stat().st_mtime) < 0.001
    link = _plan("stat", {"path": str(tmp_path / "l")}).result["stat"]
    assert link["islnk"] and link["lnk_source"] == str(path) and "checksum" not in link
    followed = _plan("stat", {"path": str(tmp_path / "l"), "follow": True}).result["stat"]
    assert followed["isreg"] and not followed["islnk"]


def test_find_lists_names_with_newlines_and_spaces(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "odd\nname .log").write_bytes(b"x")
    (tmp_path / "sub" / "deep.log").write_bytes(b"x")
    (tmp_path / "other.txt").write_bytes(b"x")
    flat = _plan("find", {"paths": str(tmp_path), "patterns": "*.log"}).result
    assert [f["path"] for f in flat["files"]] == [str(tmp_path / "odd\nname .log")]
    deep = _plan("find", {"paths": str(tmp_path), "patterns": "*.log", "recurse": True}).result
    assert sorted(f["path"] for f in deep["files"]) == sorted(
        [str(tmp_path / "odd\nname .log"), str(tmp_path / "sub" / "deep.log")]
    )
    assert deep["examined"] == 4


def _sh(script: str) -> subprocess.CompletedProcess:
    return subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=30)


def test_tempfile_makes_a_private_file(tmp_path: Path) -> None:
    module = REGISTRY["tempfile"]
    args = module.prepare({"path": str(tmp_path), "suffix": ".x"}, Context(), "t")
    proc = _sh(module.plan(args, None, False).script)
    made = Path(module.finish(args, None, proc.returncode, proc.stdout, proc.stderr)["path"])
    assert made.parent == tmp_path and made.name.startswith("ansible.") and made.suffix == ".x"
    assert made.is_file() and made.stat().st_mode & 0o777 == 0o600


def test_wait_for_sees_a_listening_port_and_times_out_on_a_file() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        assert not _plan("wait_for", {"port": port}).changed  # already open: no loop
    module = REGISTRY["wait_for"]
    args = module.prepare({"path": "/nonexistent/pctfleet", "timeout": 1}, Context(), "t")
    started = time.monotonic()
    proc = _sh(module.plan(args, None, False).script)
    result = module.finish(args, None, proc.returncode, proc.stdout, proc.stderr)
    assert result["failed"] and time.monotonic() - started < 10
    assert result["msg"] == "Timeout when waiting for file /nonexistent/pctfleet"


def test_tasks_sharing_a_snippet_read_it_once() -> None:
    class Counting(LocalTarget):
        scripts: list[str] = []

        def run_script(self, script, *a, **k):  # noqa: ANN001, ANN002, ANN003
            self.scripts.append(script)
            return super().run_script(script, *a, **k)

    target = Counting()
    text = snippet("file_text", TEXT_PATH="/etc/hostname", TEXT_LIMIT=100)
    facts = run_probe(target, {"a": text, "b": text, "c": "pf_kv x 1"})
    assert target.scripts[0].count("readlink -m") == 1
    assert facts["a"] == facts["b"] and facts["c"].fields() == {"x": "1"}


def _play(tmp_path: Path, text: str, extra: dict) -> ContainerRun:
    book = tmp_path / "book.yml"
    book.write_text(textwrap.dedent(text))
    play = load_playbook(book, known_args()).plays[0]
    run = ContainerRun("local", 100)
    options = RunOptions(base_dir=str(tmp_path), lock_wait=5)
    ContainerEngine(LocalTarget(), run, {**play.vars, **extra}, options).play(play.tasks, [])
    return run


def test_edits_of_one_file_in_a_row_see_each_other_and_converge(tmp_path: Path) -> None:
    """Each edit reads what the one before wrote; the second run is one call, no change."""
    book = f"""\
        - hosts: all
          tasks:
            - shell: {{cmd: "printf 'x=1\\n' > {tmp_path}/f", creates: "{tmp_path}/f"}}
            - lineinfile: {{path: "{tmp_path}/f", line: "a=1"}}
            - lineinfile: {{path: "{tmp_path}/f", line: "b=1", insertbefore: "^a="}}
            - replace: {{path: "{tmp_path}/f", regexp: "^x=1$", replace: "x=2"}}
            - blockinfile: {{path: "{tmp_path}/f", block: "c=3"}}
            - lineinfile: {{path: "{tmp_path}/f", line: "d=4", insertafter: "^x="}}
            - wait_for: {{path: "{tmp_path}/f", delay: 0.1, timeout: 5}}
              register: waited
              when: first
            - assert: {{that: "not first or (waited.elapsed <= 1 and not waited.changed)"}}
        """
    first = _play(tmp_path, book, {"first": True})
    assert first.status == "ok", first.message
    statuses = [t.status for t in first.tasks]
    assert statuses == ["changed"] * 6 + ["ok", "ok"], [(t.status, t.msg) for t in first.tasks]
    marker = "# {mark} ANSIBLE MANAGED BLOCK\n"
    block = marker.format(mark="BEGIN") + "c=3\n" + marker.format(mark="END")
    assert (tmp_path / "f").read_text() == "x=2\nd=4\nb=1\na=1\n" + block
    second = _play(tmp_path, book, {"first": False})
    assert [t.status for t in second.tasks] == ["ok"] * 6 + ["skipped", "ok"]
    assert second.remote_calls == 1
