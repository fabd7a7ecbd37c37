"""The variables the `template` module adds, through ansible-playbook (`-c local`)
and pctfleet (`--local`) rendering the same template to the same file in turn:
`ansible_managed` (the default, ansible.cfg's with {host}, {uid}, {file} and
strftime codes, and a play variable of that name, which wins) and template_host,
template_uid, template_path, template_fullpath, template_destpath, template_mtime.
The files must be byte for byte the same."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import differ
import pytest

TEMPLATE = """\
# {{ ansible_managed }}
host={{ template_host }} uid={{ template_uid }} path={{ template_path }}
full={{ template_fullpath }} dest={{ template_destpath }} mtime={{ template_mtime }}
year={{ template_run_date.year }}
"""
CONFIGS = {
    "the default": "",
    "ansible.cfg's": "[defaults]\nansible_managed = by {uid}@{host} from {file}, %Y-%m-%d\n",
}


def book(work: Path, own: bool) -> Path:
    play = {"hosts": "all", "gather_facts": False, "tasks": []}
    if own:
        play["vars"] = {"ansible_managed": "set by the play for {{ template_host }}"}
    play["tasks"] = [{"template": {"src": "conf.j2", "dest": str(work / "out/site.conf")}}]
    path = work / "book.yml"
    path.write_text(json.dumps([play]))
    return path


@pytest.mark.parametrize("own", [False, True], ids=["config", "play variable"])
@pytest.mark.parametrize("config", CONFIGS)
def test_the_same_file_as_ansible_writes(tmp_path, config, own):
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates/conf.j2").write_text(TEMPLATE)
    (tmp_path / "ansible.cfg").write_text(CONFIGS[config])
    (tmp_path / "out").mkdir()
    playbook = book(tmp_path, own)
    env = {"ANSIBLE_CONFIG": str(tmp_path / "ansible.cfg")}
    differ.ansible_local(playbook, tmp_path, env=env)
    theirs = (tmp_path / "out/site.conf").read_text()
    (tmp_path / "out/site.conf").unlink()
    argv = [sys.executable, "-m", "pctfleet", "run", str(playbook), "--local"]
    argv += ["--journal-dir", str(tmp_path / "runs")]
    ours_env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")} | env
    done = subprocess.run(argv, capture_output=True, text=True, env=ours_env, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert (tmp_path / "out/site.conf").read_text() == theirs
    assert ("set by the play" in theirs) == own
