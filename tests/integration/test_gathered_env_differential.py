"""`ansible_env`, `ansible_user_*` and `ansible_date_time` through ansible-playbook
(`-c local`, its setup module) and pctfleet (`--local`, the gather snippet), both run
with one environment chosen here: the environment and the user facts must be the same,
key for key and in order; the clock's fields the same keys, in order, in the same
formats, each reading true to its own epoch in the zone, the two epochs a few seconds
apart (measured on ansible-core 2.19)."""

from __future__ import annotations

import json
import os
import pwd
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import differ
import pytest

USER_FACTS = (
    "user_id", "user_uid", "user_gid", "user_gecos", "user_dir", "user_shell",
    "real_user_id", "effective_user_id", "real_group_id", "effective_group_id",
)  # fmt: skip
_USERS = ", ".join(f"ansible_{name}" for name in USER_FACTS)
_FACTS_USERS = ", ".join(f"ansible_facts.{name}" for name in USER_FACTS)
BOOK = """\
- hosts: all
  tasks:
    - name: write the facts
      copy:
        dest: "{{ playbook_dir }}/{{ out }}.json"
        content: "{{ {'env': ansible_env, 'facts_env': ansible_facts.env,
          'date_time': ansible_date_time, 'facts_date_time': ansible_facts.date_time,
          'home': ansible_env.HOME, 'odd': ansible_env.PF_ODD,
          'user': [USERS], 'facts_user': [FACTS_USERS]} | to_json }}"
""".replace("FACTS_USERS", _FACTS_USERS).replace("USERS", _USERS)
# What each field looks like (ansible-core's date_time collector's strftime formats).
FORMATS = {
    "year": r"\d{4}", "month": r"\d\d", "weekday": r"[A-Z][a-z]+day", "weekday_number": r"[0-6]",
    "weeknumber": r"\d\d", "day": r"\d\d", "hour": r"\d\d", "minute": r"\d\d",
    "second": r"\d\d", "epoch": r"\d{10}", "epoch_int": r"\d{10}", "date": r"\d{4}-\d\d-\d\d",
    "time": r"\d\d:\d\d:\d\d", "iso8601_micro": r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z",
    "iso8601": r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", "iso8601_basic": r"\d{8}T\d{12}",
    "iso8601_basic_short": r"\d{8}T\d{6}", "tz": r"[A-Z]{3,4}|[+-]\d\d", "tz_dst": r"\S+",
    "tz_offset": r"[+-]\d{4}",
}  # fmt: skip
ODD = "{{ 1 + 1 }}\nsecond=line"  # a value with a newline, a template and a `=`: data


def _environment(home: Path, tz: str, user: dict) -> dict:
    """The one environment both tools run with (LANG set: no locale coercion)."""
    keep = ("PATH", "TERM")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    return env | {"HOME": str(home), "LANG": "C.UTF-8", "TZ": tz, "PF_ODD": ODD, **user}


def _ansible(folder: Path, env: dict) -> dict:
    venv = differ.ansible_env.ensure_venv()
    argv = [str(venv / "bin/ansible-playbook"), "-i", "localhost,", "-c", "local"]
    argv += [str(folder / "book.yml"), "-e", f"ansible_python_interpreter={venv / 'bin/python'}"]
    argv += ["-e", "out=ansible"]
    # Its temp folders here: by default they are the login's (`~nobody` is /nonexistent),
    # which ansible-playbook would create on this machine.
    scratch = {"ANSIBLE_REMOTE_TMP": str(folder / ".ansible-remote")}
    env = env | scratch | {"ANSIBLE_LOCAL_TEMP": str(folder / ".ansible-local")}
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return json.loads((folder / "ansible.json").read_text())


def _pctfleet(folder: Path, env: dict) -> dict:
    argv = [sys.executable, "-m", "pctfleet", "run", str(folder / "book.yml"), "--local"]
    argv += ["--json", "--journal-dir", str(folder / "runs"), "-e", "out=pctfleet"]
    # ansible-playbook -c local runs its modules in the playbook's folder; start there.
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=folder, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return json.loads((folder / "pctfleet.json").read_text())


def _true_to_its_epoch(found: dict, tz: str) -> None:
    """Every field of one reading is what its epoch is in `tz` (strftime's formats)."""
    epoch = int(found["epoch"])
    local = datetime.fromtimestamp(epoch, ZoneInfo(tz))
    utc = datetime.fromtimestamp(epoch, UTC)
    micro = found["iso8601_micro"][20:26]
    want = {
        "year": "%Y", "month": "%m", "weekday": "%A", "weekday_number": "%w",
        "weeknumber": "%W", "day": "%d", "hour": "%H", "minute": "%M", "second": "%S",
        "date": "%Y-%m-%d", "time": "%H:%M:%S", "iso8601_basic_short": "%Y%m%dT%H%M%S",
        "tz": "%Z", "tz_offset": "%z",
    }  # fmt: skip
    assert {k: found[k] for k in want} == {k: local.strftime(f) for k, f in want.items()}
    assert found["epoch_int"] == found["epoch"]
    assert found["iso8601"] == utc.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert found["iso8601_micro"] == utc.strftime(f"%Y-%m-%dT%H:%M:%S.{micro}Z")
    assert found["iso8601_basic"] == found["iso8601_basic_short"] + micro


@pytest.mark.parametrize(
    ("tz", "user"),
    [
        ("America/New_York", {}),  # no login name in the environment: the uid's entry
        ("Australia/Sydney", {"USER": "nobody"}),  # $USER names the entry, not the uid
        ("UTC", {"LOGNAME": "daemon", "USER": "nobody"}),  # $LOGNAME first
    ],
)
def test_env_user_and_clock_facts_as_the_setup_module_gathers_them(tmp_path, tz, user):
    (tmp_path / "book.yml").write_text(BOOK)
    env = _environment(tmp_path, tz, user)
    homes = {name: Path(pwd.getpwnam(name).pw_dir) for name in ("nobody", "daemon")}
    there = {name: home.exists() for name, home in homes.items()}
    theirs = _ansible(tmp_path, env)
    ours = _pctfleet(tmp_path, env)
    # Neither tool leaves anything outside the test's folder (a login's home, say).
    assert {name: home.exists() for name, home in homes.items()} == there

    for found in (theirs, ours):
        assert found["env"] == found["facts_env"]
        assert found["date_time"] == found["facts_date_time"]
        assert found["user"] == found["facts_user"]
        assert (found["home"], found["odd"]) == (found["env"]["HOME"], ODD)
    # The environment: the same variables, values and order, but what ansible-playbook
    # puts there for its own (ANSIBLE_*).
    theirs_env = {k: v for k, v in theirs["env"].items() if not k.startswith("ANSIBLE_")}
    assert list(ours["env"].items()) == list(theirs_env.items())
    assert ours["env"]["HOME"] == str(tmp_path)
    assert ours["user"] == theirs["user"]
    # The clock: the same fields in the same order and formats, read seconds apart.
    assert list(ours["date_time"]) == list(theirs["date_time"]) == list(FORMATS)
    for found in (theirs["date_time"], ours["date_time"]):
        odd = {k: v for k, v in found.items() if not re.fullmatch(FORMATS[k], v)}
        assert not odd, odd
        _true_to_its_epoch(found, tz)
    assert ours["date_time"]["tz_dst"] == theirs["date_time"]["tz_dst"]
    assert 0 <= int(ours["date_time"]["epoch"]) - int(theirs["date_time"]["epoch"]) < 60
