"""`unarchive`, `uri` and `pause` run for real on this machine (sh + python3, no root): an archive
from the controller is extracted, and the second probe finds nothing to do."""

from __future__ import annotations

import io
import json
import subprocess
import tarfile
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from pctfleet.facts.kv import KV_FUNCTION
from pctfleet.modules import REGISTRY
from pctfleet.modules.args import Context
from pctfleet.modules.base import Fact

MODULE = REGISTRY["unarchive"]


def _sh(script: str, stdin: bytes = b"") -> subprocess.CompletedProcess:
    return subprocess.run(
        ["sh", "-c", KV_FUNCTION + "\n" + script], input=stdin, capture_output=True, check=False
    )


def _plan(args):
    out = _sh(MODULE.probe(args, False)).stdout.decode()
    return MODULE.decide(args, Fact(out, 0), False)


def _apply(args, plan) -> None:
    for push in plan.pushes:
        Path(push.dest).write_bytes(push.content)
    done = _sh(plan.script)
    assert done.returncode == 0, done.stderr
    assert MODULE.finish(args, plan, 0, done.stdout.decode(), "")["changed"] is True


def _tar(path: Path) -> None:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in (("tool/bin/run", b"#!/bin/sh\necho hi\n"), ("tool/README", b"x\n")):
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), 1_700_000_000, 0o755
            tar.addfile(info, io.BytesIO(data))


def _zip(path: Path) -> None:
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("tool/bin/run", "#!/bin/sh\necho hi\n")
        z.writestr("tool/README", "x\n")


@pytest.mark.parametrize(("name", "make"), [("tool.tar.gz", _tar), ("tool.zip", _zip)])
def test_extracted_once_then_converged(tmp_path: Path, name: str, make) -> None:
    make(tmp_path / name)
    dest = tmp_path / "out"
    dest.mkdir()
    raw = {"src": name, "dest": str(dest), "mode": "0750"}
    args = MODULE.prepare(raw, Context(str(tmp_path)), "test")
    first = _plan(args)
    assert first.changed and not first.failed, first
    _apply(args, first)
    assert (dest / "tool/bin/run").read_bytes() == b"#!/bin/sh\necho hi\n"
    assert (dest / "tool/README").stat().st_mode & 0o7777 == 0o750
    assert not Path(args.archive).exists()  # the pushed copy is removed
    second = _plan(args)
    assert not second.changed and not second.failed, second


def test_a_changed_member_is_extracted_again(tmp_path: Path) -> None:
    _tar(tmp_path / "t.tar.gz")
    (tmp_path / "out").mkdir()
    raw = {"src": str(tmp_path / "t.tar.gz"), "dest": str(tmp_path / "out"), "remote_src": True}
    args = MODULE.prepare(raw, Context(str(tmp_path)), "test")
    _apply(args, _plan(args))
    assert not _plan(args).changed
    (tmp_path / "out/tool/README").write_text("edited, longer\n")
    again = _plan(args)
    assert again.changed and "1 members differ" in again.diff["before"]
    assert Path(args.archive).exists()  # a remote archive is the user's: kept


def test_pause_waits_the_minutes_given(monkeypatch: pytest.MonkeyPatch) -> None:
    from pctfleet.modules import pause

    waited: list[float] = []
    monkeypatch.setattr(pause, "sleep", waited.append)
    module = REGISTRY["pause"]
    plan = module.decide(module.prepare({"minutes": 0.5}, Context(), "t"), None, False)
    assert waited == [30.0] and plan.result["stdout"] == "Paused for 0.5 minutes"


class _Api(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        code = 404 if self.path == "/missing" else 200
        self._send(code, b'{"ok": true}', "application/json")

    def do_POST(self) -> None:  # noqa: N802
        sent = self.rfile.read(int(self.headers["Content-Length"]))
        answer = {"got": json.loads(sent), "type": self.headers["Content-Type"]}
        self._send(201, json.dumps(answer).encode(), "application/json")

    def _send(self, code: int, body: bytes, kind: str) -> None:
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("X-Served-By", "test")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def api():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Api)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


def _request(raw: dict) -> dict:
    uri = REGISTRY["uri"]
    args = uri.prepare(raw, Context(), "test")
    plan = uri.decide(args, None, False)
    done = _sh(plan.script, plan.stdin)
    assert done.returncode == 0, done.stderr
    return uri.finish(args, plan, 0, done.stdout.decode(), "")


def test_uri_posts_json_and_registers_status_json_and_headers(api: str) -> None:
    raw = {"url": f"{api}/api", "method": "POST", "body_format": "json", "body": {"n": 1}}
    result = _request(raw | {"status_code": [201], "return_content": True})
    assert result["status"] == 201 and not result.get("failed")
    assert result["json"] == {"got": {"n": 1}, "type": "application/json"}
    assert json.loads(result["content"]) == result["json"]
    assert result["x_served_by"] == "test" and result["changed"] is False


def test_uri_fails_on_an_unexpected_status(api: str) -> None:
    result = _request({"url": f"{api}/missing"})
    assert result["failed"] and result["status"] == 404
    assert result["msg"].startswith("Status code was 404 and not [200]")


def test_uri_writes_dest_once(api: str, tmp_path: Path) -> None:
    dest = tmp_path / "out.json"
    assert _request({"url": f"{api}/x", "dest": str(dest)})["changed"] is True
    assert dest.read_bytes() == b'{"ok": true}'
    assert _request({"url": f"{api}/x", "dest": str(dest)})["changed"] is False


def test_uri_unreachable_is_status_minus_one() -> None:
    result = _request({"url": "http://127.0.0.1:9/x", "timeout": 2})
    assert result["status"] == -1 and "Request failed" in result["msg"]


def test_fetch_writes_the_controller_copy_once(tmp_path: Path) -> None:
    fetch = REGISTRY["fetch"]
    (tmp_path / "remote.txt").write_bytes(b"from the container\n")
    ctx = Context(str(tmp_path), {"inventory_hostname": "node1/200"})
    args = fetch.prepare({"src": str(tmp_path / "remote.txt"), "dest": "got"}, ctx, "test")

    def plan():
        return fetch.decide(args, Fact(_sh(fetch.probe(args, False)).stdout.decode(), 0), False)

    first = plan()
    assert first.changed
    assert fetch.finish(args, first, 0, "", "")["changed"] is True
    copy = tmp_path / "got/node1/200" / str(tmp_path).lstrip("/") / "remote.txt"
    assert copy.read_bytes() == b"from the container\n"
    assert not plan().changed
