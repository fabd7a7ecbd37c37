"""What `pctfleet exec` hands a command as stdin, and in what form."""

from __future__ import annotations

import io
import os

import pytest

from pctfleet.cli import exec as exec_cli


class Stdin:
    """sys.stdin with a real descriptor under it."""

    def __init__(self, handle) -> None:  # noqa: ANN001
        self.buffer = handle

    def isatty(self) -> bool:
        return False


@pytest.fixture
def stdin_from(monkeypatch):
    opened = []

    def use(path) -> None:  # noqa: ANN001
        handle = open(path, "rb")  # noqa: SIM115
        opened.append(handle)
        monkeypatch.setattr(exec_cli.sys, "stdin", Stdin(handle))

    yield use
    for handle in opened:
        handle.close()


def test_a_small_file_and_dev_null_are_read_first(stdin_from, tmp_path):
    (tmp_path / "small").write_bytes(b"abc")
    stdin_from(tmp_path / "small")
    assert exec_cli.command_stdin(False, 1) == b"abc"
    stdin_from(os.devnull)
    assert exec_cli.command_stdin(False, 1) == b""


def test_a_large_file_and_a_pipe_stream_in(stdin_from, tmp_path):
    (tmp_path / "large").write_bytes(b"x" * (exec_cli.SMALL_STDIN + 1))
    stdin_from(tmp_path / "large")
    assert isinstance(exec_cli.command_stdin(False, 1), io.BufferedReader)
    read_end, write_end = os.pipe()
    os.close(write_end)
    stdin_from(f"/proc/self/fd/{read_end}")
    assert isinstance(exec_cli.command_stdin(False, 1), io.BufferedReader)
    os.close(read_end)


def test_several_containers_get_the_same_bytes_and_no_stdin_gets_none(stdin_from, tmp_path):
    (tmp_path / "large").write_bytes(b"y" * (exec_cli.SMALL_STDIN + 1))
    stdin_from(tmp_path / "large")
    assert exec_cli.command_stdin(False, 2) == b"y" * (exec_cli.SMALL_STDIN + 1)
    assert exec_cli.command_stdin(True, 1) is None


def test_a_file_grown_past_the_limit_streams_whole(stdin_from, tmp_path, monkeypatch):
    (tmp_path / "growing").write_bytes(b"z" * (exec_cli.SMALL_STDIN + 10))
    monkeypatch.setattr(exec_cli, "_small_file", lambda stream: True)  # as fstat said
    stdin_from(tmp_path / "growing")
    got = exec_cli.command_stdin(False, 1)
    assert not isinstance(got, bytes)
    data = b"".join(iter(lambda: got.read(64 * 1024), b""))
    assert data == b"z" * (exec_cli.SMALL_STDIN + 10)
    stdin_from(tmp_path / "growing")
    assert exec_cli.command_stdin(False, 1).read() == data  # read() at once: all of it
