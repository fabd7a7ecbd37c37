"""apt_repository, deb822_repository, unarchive (from the controller and in the container),
uri (to a server the test starts in the container), fetch and pause against a base
container: the first run changes the container, the second changes nothing in one remote
call. Everything written is removed afterwards."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tarfile
import textwrap
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.lab

KEY = "node2/201"
DIR = "/tmp/pctfleet-more"
LIST = "/etc/apt/sources.list.d/127_0_0_1_9_pfmods.list"
SOURCES = "/etc/apt/sources.list.d/PF-Mods.sources"

PLAYBOOK = textwrap.dedent(f"""
    - hosts: all
      tasks:
        - name: one-line repository
          ansible.builtin.apt_repository:
            repo: deb http://127.0.0.1:9/pfmods stable main
            update_cache: false
        - name: deb822 repository
          deb822_repository:
            name: PF Mods
            uris: http://127.0.0.1:9/pfmods
            suites: stable
            components: [main]
            enabled: false
        - name: folder
          file: {{path: {DIR}/out, state: directory}}
        - name: from the controller
          unarchive: {{src: tool.tar.gz, dest: {DIR}/out, mode: "0750"}}
        - name: zip to the container
          copy: {{src: tool.zip, dest: {DIR}/tool.zip}}
        - name: in the container
          ansible.builtin.unarchive: {{src: {DIR}/tool.zip, dest: {DIR}, remote_src: true}}
        - name: request
          uri:
            url: http://127.0.0.1:8767/hello.txt
            dest: {DIR}/hello.txt
            creates: {DIR}/hello.txt
            return_content: true
        - name: fetch
          ansible.builtin.fetch: {{src: {DIR}/out/tool/run, dest: fetched}}
        - name: pause
          pause: {{seconds: 1}}
          register: p
        - name: read back
          assert:
            that: [p.stdout == "Paused for 1 seconds"]
""")


def pctfleet(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pctfleet", *args], capture_output=True, text=True, timeout=600
    )


def in_ct(info, script: str) -> subprocess.CompletedProcess:
    return pctfleet("exec", "-i", str(info.inventory), "--limit", KEY, "--", "sh", "-c", script)


CLEAN = f"rm -rf {DIR} {LIST} {SOURCES}"
SERVE = (
    f"mkdir -p {DIR}/www && echo served > {DIR}/www/hello.txt && "
    f"(setsid python3 -m http.server 8767 --bind 127.0.0.1 --directory {DIR}/www "
    f"</dev/null >/dev/null 2>&1 & echo $! > {DIR}/www.pid)"
)


@pytest.fixture(scope="module")
def info(lab):
    found = lab.up(nodes=2, containers=2)
    assert in_ct(found, CLEAN).returncode == 0
    assert in_ct(found, SERVE).returncode == 0
    yield found
    assert in_ct(found, f"kill $(cat {DIR}/www.pid); {CLEAN}").returncode == 0


def _archives(tmp: Path) -> None:
    with tarfile.open(tmp / "tool.tar.gz", "w:gz") as tar:
        info = tarfile.TarInfo("tool/run")
        info.size, info.mtime, info.mode = 3, 1_700_000_000, 0o755
        tar.addfile(info, io.BytesIO(b"hi\n"))
    with zipfile.ZipFile(tmp / "tool.zip", "w") as z:
        z.writestr("zipped/a.txt", "from a zip\n")


def run(info, tmp: Path) -> dict:
    (tmp / "more.yml").write_text(PLAYBOOK)
    proc = pctfleet(
        "run", str(tmp / "more.yml"), "-i", str(info.inventory), "--limit", KEY, "--json"
    )
    assert proc.stdout, proc.stderr
    return json.loads(proc.stdout)["containers"][0]


def test_more_modules_change_the_container_then_converge_in_one_call(info, tmp_path):
    _archives(tmp_path)
    first = run(info, tmp_path)
    status = {t["name"]: t["status"] for t in first["tasks"]}
    failed = [(t["name"], t["msg"]) for t in first["tasks"] if t["status"] == "failed"]
    assert first["status"] == "changed" and not failed, (first["message"], failed)
    for name in (
        "one-line repository",
        "deb822 repository",
        "from the controller",
        "in the container",
        "request",
        "fetch",
    ):
        assert status[name] == "changed", (name, first)
    shown = in_ct(
        info,
        f"cat {LIST} {SOURCES}; stat -c '%a' {DIR}/out/tool/run; cat {DIR}/out/tool/run "
        f"{DIR}/zipped/a.txt {DIR}/hello.txt; ls /tmp | grep -c pctfleet-unarchive",
    )
    assert shown.stdout == (
        "deb http://127.0.0.1:9/pfmods stable main\n"
        "Components: main\nEnabled: no\nX-Repolib-Name: PF Mods\nSuites: stable\nTypes: deb\n"
        "URIs: http://127.0.0.1:9/pfmods\n750\nhi\nfrom a zip\nserved\n0\n"
    ), shown
    fetched = tmp_path / "fetched" / KEY / DIR.lstrip("/") / "out/tool/run"
    assert fetched.read_bytes() == b"hi\n"
    second = run(info, tmp_path)
    assert [t["name"] for t in second["tasks"] if t["status"] != "ok"] == [], second
    assert second["remote_calls"] == 1
