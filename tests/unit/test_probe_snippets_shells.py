"""Probe snippets read the same facts in dash and in bash (either may be /bin/sh)."""

from __future__ import annotations

import grp
import os
import pwd
import subprocess
from pathlib import Path

import pytest

from pctfleet.facts import script as probe
from pctfleet.facts.kv import decode_fields
from pctfleet.sh import snippet

SHELLS = ["dash", "bash"]


def facts(shell: str, text: str) -> dict[str, str]:
    script = probe.build_script({"k": text})
    out = subprocess.run([shell, "-s"], input=script, capture_output=True, text=True, timeout=30)
    return decode_fields(probe.parse_output(out.stdout, probe.nonce_of(script))["k"].output)


def _lstat(path: Path) -> dict[str, str]:
    st = os.lstat(path)
    return {
        "mode": format(st.st_mode & 0o7777, "o"),
        "owner": pwd.getpwuid(st.st_uid).pw_name,
        "group": grp.getgrgid(st.st_gid).gr_name,
    }


@pytest.mark.parametrize("shell", SHELLS)
def test_path_stat_reads_type_target_mode_owner_and_group(shell: str, tmp_path: Path) -> None:
    (tmp_path / "d").mkdir(mode=0o750)
    (tmp_path / "f").write_text("x")
    (tmp_path / "f").chmod(0o4640)
    (tmp_path / "l").symlink_to("/no such/target\nline")
    want = {
        "d": {"type": "directory", **_lstat(tmp_path / "d")},
        "f": {"type": "file", "mode": "4640", **_lstat(tmp_path / "f")},
        "l": {"type": "link", "target": "/no such/target\nline", **_lstat(tmp_path / "l")},
        "gone": {"type": "absent"},
    }
    for name, fields in want.items():
        assert facts(shell, snippet("path_stat", STAT_PATH=str(tmp_path / name))) == fields
