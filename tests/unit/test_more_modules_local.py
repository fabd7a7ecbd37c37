"""`unarchive` and `pause` run for real on this machine (sh + python3, no root): an archive
from the controller is extracted, and the second probe finds nothing to do."""

from __future__ import annotations

import io
import subprocess
import tarfile
import zipfile
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
