"""The transport pieces that need no node: local target, transfers, stream filters."""

from __future__ import annotations

import io
import threading

import pytest

from pctfleet.run.adhoc import LinePrefixer
from pctfleet.transport.base import UNREACHED, CommandTimeout, TransferError, TransportError
from pctfleet.transport.files import pull, push
from pctfleet.transport.local import LocalTarget
from pctfleet.transport.pct import MARKER, MarkerFilter


def test_local_run_passes_exit_code_stdin_and_binary_output():
    target = LocalTarget()
    result = target.run(["/bin/sh", "-c", "cat; printf '\\377\\000'; exit 3"], stdin=b"hello ")
    assert result.exit_code == 3
    assert result.stdout == b"hello \xff\x00"
    assert target.calls == 1


def test_local_run_script_keeps_arguments_literal(tmp_path):
    canary = tmp_path / "pwned"
    name = f"a b; $(touch {canary}) `touch {canary}`"
    result = LocalTarget().run_script('printf "%s" "$1"', [name])
    assert result.stdout.decode() == name
    assert not canary.exists()


def test_local_timeout_kills_the_command():
    with pytest.raises(CommandTimeout):
        LocalTarget().run(["sleep", "5"], timeout=0.3)


def test_an_empty_command_is_refused_before_anything_runs():
    target = LocalTarget()
    with pytest.raises(ValueError, match="empty command"):
        target.run([])
    assert target.calls == 0


def test_every_unreached_status_has_an_outcome_and_no_outcome_invents_one():
    outcomes = TransportError.__subclasses__()
    assert set(UNREACHED) <= {o.status for o in outcomes}
    assert {o.status for o in outcomes} <= {*UNREACHED, "failed"}
    with pytest.raises(TypeError, match="unknown status 'gone'"):
        type("Gone", (TransportError,), {}, reason="gone", status="gone")


def test_push_is_verified_and_sets_mode(tmp_path):
    dest = tmp_path / "file.bin"
    dest.write_bytes(b"old")
    payload = bytes(range(256)) * 4000
    push(LocalTarget(), payload, str(dest), mode="0640")
    assert dest.read_bytes() == payload
    assert oct(dest.stat().st_mode & 0o777) == "0o640"
    assert [p.name for p in tmp_path.iterdir()] == ["file.bin"]  # no temp left behind


def test_push_creates_missing_folders(tmp_path):
    push(LocalTarget(), b"x", str(tmp_path / "new" / "dir" / "f"))
    assert (tmp_path / "new" / "dir" / "f").read_bytes() == b"x"


def test_push_where_a_file_blocks_the_folder_fails_and_names_it(tmp_path):
    (tmp_path / "blocker").write_text("")
    with pytest.raises(TransferError, match="push to .*blocker/f failed"):
        push(LocalTarget(), b"x", str(tmp_path / "blocker" / "f"))


def test_pull_round_trip_and_missing_source(tmp_path):
    src = tmp_path / "src.bin"
    src.write_bytes(b"\x00data\xff" * 1000)
    out = pull(LocalTarget(), str(src), tmp_path / "copy.bin")
    assert out.read_bytes() == src.read_bytes()
    with pytest.raises(TransferError, match="no such file"):
        pull(LocalTarget(), str(tmp_path / "missing"), tmp_path / "copy2.bin")
    assert not (tmp_path / "copy2.bin").exists()


@pytest.mark.parametrize("split", [1, 5, 17, 100])
def test_marker_filter_passes_on_the_commands_output_only(split):
    """What precedes the marker is the node's (its root's ~/.bashrc greeting, pct):
    the command's output starts after it, however the stream is cut."""
    sink = io.BytesIO()
    stream = b"Welcome to node1\n" + MARKER + b"the command's\noutput\n"
    marker = MarkerFilter(sink)
    for i in range(0, len(stream), split):
        marker.write(stream[i : i + split])
    assert marker.finish() == b""
    assert marker.entered
    assert sink.getvalue() == b"the command's\noutput\n"


def test_without_a_marker_what_is_held_can_be_kept_from_the_sink():
    sink = io.BytesIO()
    marker = MarkerFilter(sink)
    marker.write(b"Welcome to node1\n")
    assert marker.finish(pass_on=False) == b"Welcome to node1\n"
    assert sink.getvalue() == b""


def test_marker_filter_without_marker_returns_pct_message():
    sink = io.BytesIO()
    marker = MarkerFilter(sink)
    marker.write(b"container '200' not running!\n")
    assert marker.finish() == b"container '200' not running!\n"
    assert not marker.entered


def test_line_prefixer_emits_whole_lines_only():
    stream = io.BytesIO()
    sink = LinePrefixer("n1/200", stream, threading.Lock())
    sink.write(b"one\ntw")
    sink.write(b"o\nthree")
    sink.close()
    assert stream.getvalue() == b"n1/200 | one\nn1/200 | two\nn1/200 | three\n"
