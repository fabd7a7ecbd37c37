"""`get_url`'s change script, run for real with sh and python3 against a 127.0.0.1 server."""

from __future__ import annotations

import functools
import hashlib
import http.server
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from pctfleet.modules import REGISTRY
from pctfleet.modules.args import Context
from pctfleet.modules.base import Fact
from pctfleet.sh import library

BODY = b"tool v1\n"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    root = tmp_path / "www"
    root.mkdir()
    (root / "tool.txt").write_bytes(BODY)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def _run(args: dict, tmp_path: Path) -> tuple[bool, dict]:
    """Probe, plan and apply one get_url task on this machine; (planned a change, result)."""
    module = REGISTRY["get_url"]
    parsed = module.prepare(args, Context(str(tmp_path)), "test")
    probe = subprocess.run(
        ["sh", "-c", library(["kv"]) + module.probe(parsed, False)], capture_output=True
    )
    plan = module.decide(parsed, Fact(probe.stdout.decode(), probe.returncode), False)
    if not plan.changed:
        return False, plan.result
    done = subprocess.run(["sh", "-c", plan.script], capture_output=True, text=True)
    return True, module.finish(parsed, plan, done.returncode, done.stdout, done.stderr)


def test_download_verified_then_converged(server: str, tmp_path: Path) -> None:
    dest = tmp_path / "tool.txt"
    digest = hashlib.sha256(BODY).hexdigest()
    args = {"url": f"{server}/tool.txt", "dest": str(dest), "checksum": f"sha256:{digest}"}
    planned, result = _run(args, tmp_path)
    assert planned and result["changed"] and not result.get("failed"), result
    assert dest.read_bytes() == BODY and result["status_code"] == 200
    assert result["checksum_src"] == hashlib.sha1(BODY).hexdigest()
    assert not list(tmp_path.glob(".get_url.*"))  # no temporary file left
    assert _run(args, tmp_path)[0] is False  # second run: nothing to do


def test_bad_checksum_fails_and_keeps_the_old_file(server: str, tmp_path: Path) -> None:
    dest = tmp_path / "tool.txt"
    dest.write_bytes(b"old\n")
    args = {"url": f"{server}/tool.txt", "dest": str(dest), "checksum": "sha1:" + "0" * 40}
    planned, result = _run(args, tmp_path)
    assert planned and result["failed"] and "did not match" in result["msg"], result
    assert dest.read_bytes() == b"old\n" and not list(tmp_path.glob(".get_url.*"))


def test_force_with_same_content_is_unchanged(server: str, tmp_path: Path) -> None:
    dest = tmp_path / "tool.txt"
    dest.write_bytes(BODY)
    planned, result = _run(
        {"url": f"{server}/tool.txt", "dest": str(dest), "force": True}, tmp_path
    )
    assert planned and result["changed"] is False, result


def test_missing_url_is_a_one_line_failure(server: str, tmp_path: Path) -> None:
    args = {"url": f"{server}/nope", "dest": str(tmp_path / "x")}
    planned, result = _run(args, tmp_path)
    assert result["failed"] and result["msg"].startswith("Request failed: HTTP Error 404"), result
    assert not (tmp_path / "x").exists()
