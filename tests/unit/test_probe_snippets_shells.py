"""Probe snippets read the same facts in dash and in bash (either may be /bin/sh)."""

from __future__ import annotations

import grp
import os
import pwd
import subprocess
import time
from pathlib import Path

import pytest

from pctfleet.facts import script as probe
from pctfleet.facts.kv import decode_fields
from pctfleet.modules.file import PathState, path_state, stat_probe
from pctfleet.sh import library

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
        "uid": str(st.st_uid),
        "gid": str(st.st_gid),
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
        assert facts(shell, stat_probe(str(tmp_path / name))) == fields


def _kinds(state: PathState) -> set[tuple]:
    return {(e.count, e.type, f"{e.mode:o}", e.user) for e in state.tree}


@pytest.mark.parametrize("shell", SHELLS)
def test_path_stat_sums_a_tree_up_in_one_pass(shell: str, tmp_path: Path) -> None:
    top, outside = tmp_path / "t", tmp_path / "o"
    (top / "s").mkdir(parents=True)
    (outside / "d").mkdir(parents=True)
    for name, mode in (("f", 0o644), ("g", 0o644), ("s/h", 0o600), ("name\nf 1 0 0 x y", 0o644)):
        (top / name).write_text("x")
        (top / name).chmod(mode)
    (outside / "d" / "in").write_text("x")
    (outside / "d" / "in").chmod(0o400)
    (top / "l").symlink_to("f")
    (top / "out").symlink_to(outside / "d")
    (top / "gone").symlink_to("nowhere")
    me = pwd.getpwuid(os.getuid()).pw_name
    not_followed = path_state(facts(shell, stat_probe(str(top), tree="P")))
    assert _kinds(not_followed) == {
        (3, "f", "644", me), (1, "f", "600", me), (1, "d", "755", me), (3, "l", "777", me)
    }  # fmt: skip
    followed = path_state(facts(shell, stat_probe(str(top), tree="L")))
    assert _kinds(followed) == {
        (4, "f", "644", me), (1, "f", "600", me), (1, "f", "400", me), (2, "d", "755", me),
        (3, "l", "777", me),
    }  # fmt: skip
    assert not followed.tree_errors and not followed.tree_more
    (outside / "d" / "up").symlink_to(top)  # a loop: find reports it, the plan fails on it
    looped = path_state(facts(shell, stat_probe(str(top), tree="L")))
    assert looped.tree_errors and "loop" in looped.tree_errors[0]


@pytest.mark.parametrize("shell", SHELLS)
def test_path_stat_reads_a_hard_link_s_src_and_times(shell: str, tmp_path: Path) -> None:
    src, folder = tmp_path / "a", tmp_path / "dir"
    src.write_text("x")
    folder.mkdir()
    os.utime(src, (1_600_000_000, 1_700_000_000.5))
    os.link(src, folder / "a")
    read = path_state(facts(shell, stat_probe(str(folder), times=True, src=str(src))))
    st = src.stat()
    assert read.at == str(folder / "a")  # a folder stands for the entry of src's name in it
    assert (read.type, read.links, read.id) == ("file", "2", f"{st.st_dev}:{st.st_ino}")
    assert read.src is not None and read.src.id == read.id and read.src.type == "file"
    local = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(1_700_000_000))
    assert read.mtime.startswith(f"{local}.500000000 ") and read.src.mtime == read.mtime
    gone = path_state(facts(shell, stat_probe(str(tmp_path / "b"), src=str(tmp_path / "no"))))
    assert (gone.type, gone.src.type if gone.src else None) == ("absent", "absent")


def run(shell: str, libs: list[str], body: str, *args: str) -> dict[str, str]:
    """`body` after the `libs`, with `args` as $1..., its pf_kv lines read back."""
    script = library(["kv", *libs]) + body
    argv = [shell, "-c", script, "sh", *args]
    return decode_fields(subprocess.run(argv, capture_output=True, text=True, timeout=30).stdout)


PIDFILES = [
    "4242\n",
    "4242",
    " 4242\n",
    "12\n34\n",
    "12 ; rm -rf /\n",
    "",
    "\n",
    "42\n\n",
    "42\r\n",
    "9" * 32 + "\n",
    "9" * 33 + "\n",
    "abc\n",
    "spec-\\x  y \n",
]
PIDFILE_READS = """ref=$(head -c 32 "$1" | tr -d ' \\n'); case $ref in '' | *[!0-9]*) ref= ;; esac
pf_kv pid "$(pctfleet_pidfile_pid "$1")"; pf_kv ref "$ref"
pctfleet_file_read "$1"; pf_kv text "$ft_text"; pf_kv cat "$(cat "$1")"
"""


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize("content", PIDFILES, ids=ascii)
def test_a_pid_file_reads_as_the_pipelines_read_it(shell: str, content: str, tmp_path) -> None:
    (tmp_path / "p").write_text(content)
    got = run(shell, ["pidfile"], PIDFILE_READS, str(tmp_path / "p"))
    assert got["pid"] == got["ref"] and got["text"] == got["cat"], got


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize("name", ["true", "a b) Z x"])
def test_a_zombie_is_not_alive_whatever_its_name(shell: str, name: str, tmp_path: Path) -> None:
    (tmp_path / name).symlink_to("/bin/true")
    child = subprocess.Popen([str(tmp_path / name)])  # not reaped until the end: a zombie
    try:
        stat = Path(f"/proc/{child.pid}/stat")
        for _ in range(200):
            if stat.read_text().rsplit(") ", 1)[1].startswith("Z"):
                break
            time.sleep(0.01)
        (tmp_path / "pid").write_text(f"{child.pid}\n")
        body = 'pf_kv live "$(pctfleet_live_pid "$1")"; pf_kv pid "$(pctfleet_pidfile_pid "$1")"\n'
        got = run(shell, ["pidfile"], body, str(tmp_path / "pid"))
        assert got == {"live": "", "pid": str(child.pid)}
    finally:
        child.wait()


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize("grep_z", [True, False], ids=["grep -z", "a grep without -z"])
def test_the_server_marker_is_read_from_the_environment(
    shell: str, grep_z: bool, tmp_path: Path
) -> None:
    if not grep_z:  # a grep that refuses -z, as a small one may: the tr way is taken
        fake = tmp_path / "bin" / "grep"
        fake.parent.mkdir()
        fake.write_text('#!/bin/sh\ncase "$1" in -*z*) exit 2 ;; esac\nexec /bin/grep "$@"\n')
        fake.chmod(0o755)
    env = {**os.environ, "PCTFLEET_SERVER": "sg", "PATH": f"{tmp_path}/bin:{os.environ['PATH']}"}
    ours = subprocess.Popen(["sleep", "30"], env=env)
    other = subprocess.Popen(["sleep", "30"], env={**env, "PCTFLEET_SERVER": "sg\nX=1"})
    try:
        body = (
            'pctfleet_pid_marked "$1" sg && pf_kv ours_sg 1\n'
            'pctfleet_pid_marked "$1" s && pf_kv ours_s 1\n'
            'pctfleet_pid_started "$1" && pf_kv started 1\n'
            'pctfleet_pid_marked "$2" sg && pf_kv other_sg 1\n'
        )
        script = library(["kv", "pidfile"]) + body
        argv = [shell, "-c", script, "sh", str(ours.pid), str(other.pid)]
        out = subprocess.run(argv, capture_output=True, text=True, timeout=30, env=env).stdout
        want = {"ours_sg": "1", "started": "1"}
        if not grep_z:
            want["other_sg"] = "1"  # lines made by tr: an entry holding a newline counts
        assert decode_fields(out) == want
    finally:
        ours.kill(), other.kill(), ours.wait(), other.wait()
