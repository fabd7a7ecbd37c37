"""The system modules against a real systemd container (node1/220, bookworm): group,
user, a unit written with copy and run by systemd_service, get_url from that unit's
127.0.0.1 server, and apt on packages already installed (the lab reaches no mirror).
A second run changes nothing in one remote call; everything is removed afterwards.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.lab

DIR = "/tmp/pctfleet-sys"
UNIT = "pctfleet-sysweb.service"
BODY = "hello from the lab\n"
DIGEST = hashlib.sha256(BODY.encode()).hexdigest()

PLAYBOOK = textwrap.dedent(f"""
    - hosts: all
      tasks:
        - name: group
          group: {{name: pfgrp, gid: 4242}}
        - name: user
          user: {{name: pfuser, uid: 4243, group: pfgrp, shell: /bin/sh, create_home: false}}
          register: u
        - name: content to serve
          copy: {{dest: {DIR}/www/hello.txt, content: "{BODY.strip()}\\n"}}
        - name: unit
          copy:
            dest: /etc/systemd/system/{UNIT}
            content: |
              [Service]
              User=pfuser
              ExecStart=/usr/bin/python3 -m http.server 8766 --bind 127.0.0.1 --directory {DIR}/www
              [Install]
              WantedBy=multi-user.target
        - name: service
          systemd_service: {{name: {UNIT}, state: started, enabled: true, daemon_reload: true}}
        - name: serving
          wait_for: {{port: 8766, timeout: 20}}
        - name: download
          get_url:
            url: http://127.0.0.1:8766/hello.txt
            dest: {DIR}/hello.txt
            checksum: sha256:{DIGEST}
            mode: "0640"
            owner: pfuser
        - name: installed packages
          apt: {{name: [dpkg, base-files], state: present}}
          register: a
        - name: read back
          assert:
            that: [u.uid == 4243, not a.cache_updated]
""")


def pctfleet(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pctfleet", *args], capture_output=True, text=True, timeout=600
    )


@pytest.fixture(scope="module")
def key(lab, extra_ct):
    node, ctid = extra_ct("bookworm", "systemd")
    found = f"{node}/{ctid}"
    yield found
    clean = (
        f"systemctl disable --now {UNIT}; rm -f /etc/systemd/system/{UNIT}; "
        f"systemctl daemon-reload; userdel pfuser; groupdel pfgrp; rm -rf {DIR}; :"
    )
    pctfleet("exec", "-i", str(lab.inventory), "--limit", found, "--", "sh", "-c", clean)


def run(lab, key: str, tmp: Path) -> dict:
    book = tmp / "system.yml"
    book.write_text(PLAYBOOK)
    proc = pctfleet("run", str(book), "-i", str(lab.inventory), "--limit", key, "--json")
    assert proc.stdout, proc.stderr
    return json.loads(proc.stdout)["containers"][0]


def test_system_modules_apply_then_converge_in_one_call(lab, key, tmp_path):
    first = run(lab, key, tmp_path)
    status = {t["name"]: t["status"] for t in first["tasks"]}
    assert all(s != "failed" for s in status.values()), first
    for name in ("group", "user", "unit", "service", "download"):
        assert status[name] == "changed", (name, first)
    assert status["installed packages"] == "ok"
    shown = pctfleet(
        "exec",
        "-i",
        str(lab.inventory),
        "--limit",
        key,
        "--",
        "sh",
        "-c",
        f"stat -c '%a %U' {DIR}/hello.txt; systemctl is-enabled {UNIT}",
    )
    assert shown.stdout.split() == ["640", "pfuser", "enabled"], shown
    second = run(lab, key, tmp_path)
    assert [t["name"] for t in second["tasks"] if t["status"] != "ok"] == [], second
    assert second["remote_calls"] == 1
