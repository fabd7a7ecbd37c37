"""get_url, apt and systemd_service through the engine on this machine (LocalTarget):
the first run downloads from a 127.0.0.1 server, the second changes nothing in one call."""

from __future__ import annotations

import hashlib
import shutil
import textwrap
from pathlib import Path

import pytest

from pctfleet.modules import known_args
from pctfleet.playbook.loader import load_playbook
from pctfleet.run.engine import ContainerEngine, RunOptions
from pctfleet.run.results import ContainerRun
from pctfleet.transport.local import LocalTarget
from tests.unit.test_get_url_download import BODY, server  # noqa: F401  (fixture)


def run_book(tmp_path: Path, text: str) -> ContainerRun:
    book = tmp_path / "book.yml"
    book.write_text(textwrap.dedent(text))
    play = load_playbook(book, known_args()).plays[0]
    run = ContainerRun("local", 100)
    engine = ContainerEngine(
        LocalTarget(), run, dict(play.vars), RunOptions(base_dir=str(tmp_path))
    )
    engine.play(play.tasks, list(play.handlers))
    run.finish_status()
    return run


@pytest.mark.skipif(shutil.which("dpkg-query") is None, reason="no dpkg on this machine")
def test_download_and_packages_converge_in_one_call(server: str, tmp_path: Path) -> None:  # noqa: F811
    digest = hashlib.sha256(BODY).hexdigest()
    book = f"""\
        - hosts: all
          tasks:
            - name: download
              get_url:
                url: "{server}/tool.txt"
                dest: "{tmp_path}/tool.txt"
                checksum: "sha256:{digest}"
                mode: "0600"
              register: got
            - name: packages
              apt: {{name: [dpkg, base-files]}}
            - name: read back
              assert: {{that: ["got.dest == '{tmp_path}/tool.txt'"]}}
        """
    first = run_book(tmp_path, book)
    assert [t.status for t in first.tasks] == ["changed", "ok", "ok"], first.message
    assert (tmp_path / "tool.txt").read_bytes() == BODY
    assert (tmp_path / "tool.txt").stat().st_mode & 0o777 == 0o600
    second = run_book(tmp_path, book)
    assert [t.status for t in second.tasks] == ["ok", "ok", "ok"], second.message
    assert second.remote_calls == 1


def test_systemd_service_without_systemd_fails_naming_it(tmp_path: Path) -> None:
    if Path("/run/systemd/system").is_dir():
        pytest.skip("systemd runs here")
    run = run_book(
        tmp_path, "- hosts: all\n  tasks:\n    - systemd_service: {name: cron, state: started}\n"
    )
    assert run.tasks[0].status == "failed"
    assert "systemd is not running in this container" in run.tasks[0].msg
