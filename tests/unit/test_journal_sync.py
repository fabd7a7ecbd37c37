"""Which journal records are fsynced: those that close something, not each task."""

from __future__ import annotations

import os

from pctfleet.run import journal as journal_module
from pctfleet.run.journal import Journal, read


def test_task_records_are_flushed_and_made_durable_by_the_container_record(tmp_path, monkeypatch):
    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(journal_module.os, "fsync", lambda fd: synced.append(fd) or real_fsync(fd))
    journal = Journal(tmp_path)
    journal.write("start", playbook="site.yml")
    assert len(synced) == 1
    for task in ("venv", "packages", "server"):
        journal.write("task", container="n1/200", name=task)
    assert len(synced) == 1  # flushed only ...
    assert [r["name"] for r in read(journal.path)[1:]] == [
        "venv",
        "packages",
        "server",
    ]  # ... but there
    journal.write("container", container="n1/200", status="ok")
    assert len(synced) == 2
    journal.close()
