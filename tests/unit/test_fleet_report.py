"""`pctfleet report`: the page built from fakes, read back as Chromium's DOM and as Markdown."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pctfleet.cuda.audit import MATRIX
from pctfleet.report import html, markdown
from pctfleet.report.gather import Inputs, build, write_page
from pctfleet.status import Status
from tests import browser

EVIL = "<script>alert(1)</script> {{ x }} [bold]"
BASE = {"nvcc": "13.0.88", "torch": "2.9.0", "sglang": "0.5.5"}


def audit(key: str, status: str = "clean", **versions: str) -> dict:
    return {
        "container": key,
        "status": status,
        "message": "",
        "drift": [],
        "versions": {**BASE, **versions},
        "remote_calls": 1,
        "a_field_added_later": {"ignored": True},
    }


def fleet(tmp_path: Path | None = None) -> Inputs:
    drifted = audit("pve1/202", "drift", torch=EVIL)
    drifted["drift"] = [
        {"kind": "task", "what": "pin | `torch`", "expected": "2.9.0", "actual": EVIL}
    ]
    inputs = Inputs(
        [audit("pve1/200"), audit("pve1/201"), drifted, audit("pve2/300", "unreachable")],
        verified=[{"container": "pve1/200", "status": "passed", "checks": []}],
        runs=[{"id": "20261201T101010-abc", "command": "run", "started": 1.7e9, "exit_code": 0}],
    )
    inputs.audits[3]["versions"] = {}
    if tmp_path is not None:
        inputs.journals = [journal(tmp_path)]
    return inputs


def journal(tmp_path: Path) -> Path:
    path = tmp_path / "20261201T101010-abc.jsonl"
    records = [
        {"t": 1.7e9, "run": "20261201T101010-abc", "kind": "start", "command": "run"},
        {"t": 1.7e9, "kind": "task", "container": "pve1/202", "name": EVIL, "status": "changed"},
        {"t": 1.7e9, "kind": "container", "container": "pve1/202", "status": "changed"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records) + '{"torn')
    return path


def page(tmp_path: Path, inputs: Inputs | None = None) -> Path:
    out = tmp_path / "report.html"
    write_page(str(out), html.render(build(inputs or fleet(tmp_path), MATRIX)))
    return out


def test_outlier_row_and_journal_in_the_page(tmp_path):
    dom = browser.Dom(page(tmp_path).read_text())
    assert [r.container for r in dom.rows] == ["pve1/200", "pve1/201", "pve1/202", "pve2/300"]
    assert dom.row("pve1/202").outliers() == [EVIL]
    assert dom.row("pve1/200").outliers() == []
    assert dom.row("pve2/300").outliers() == []  # not read: no version to compare
    text = "".join(dom.text)
    assert "20261201T101010-abc" in text and "truncated record skipped" in text


def test_every_value_is_text_never_markup(tmp_path):
    markup = page(tmp_path).read_text()
    assert "<script" not in markup and "http" not in markup.replace('lang="en"', "")
    dom = browser.Dom(markup)
    assert "script" not in dom.tags
    assert EVIL in "".join(dom.text)


@pytest.mark.skipif(not browser.available(), reason="chromium is not installed")
def test_chromium_renders_rows_outlier_and_escaped_values(tmp_path):
    dom = browser.Dom(browser.dump_dom(page(tmp_path)))
    assert [r.container for r in dom.rows] == ["pve1/200", "pve1/201", "pve1/202", "pve2/300"]
    assert dom.row("pve1/202").outliers() == [EVIL]
    assert "script" not in dom.tags
    assert "".join(dom.text).count(EVIL) >= 3  # the matrix, the drift item, the timeline


def test_markdown_tables_escape_pipes_and_backticks():
    text = markdown.render(build(fleet(), MATRIX))
    assert "| node | ct | audit | nvcc |" in text
    (row,) = [line for line in text.splitlines() if line.startswith("| pve1 | 202 |")]
    assert row.count(" | ") == len(MATRIX) + 2  # no value split the row
    assert "pin \\| \\`torch\\`" in text
    assert "**\\<script\\>alert(1)\\</script\\> {{ x }} \\[bold\\]** (!)" in row
    assert "<script>" not in text


def test_exit_statuses_follow_audit_policy():
    from pctfleet.status import exit_code

    report = build(fleet(), MATRIX)
    assert exit_code("audit", report.statuses()) == 1  # pve2/300 could not be read
    clean = Inputs(
        [audit("a/1"), audit("a/2")], verified=[{"container": "a/1", "status": "failed"}]
    )
    assert build(clean, MATRIX).statuses().count(Status.DRIFT) == 1


def test_write_page_is_atomic(tmp_path):
    out = tmp_path / "report.html"
    out.write_text("old")
    with pytest.raises(OSError):
        write_page(str(tmp_path / "no-such-dir" / "r.html"), "new")
    write_page(str(out), "new")
    assert out.read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]


def test_a_journal_time_that_is_not_a_number_shows_as_unknown(tmp_path):
    path = tmp_path / "20261202T101010-bad.jsonl"
    records = [
        {"t": "yesterday", "run": "20261202T101010-bad", "kind": "start", "command": "run"},
        {"t": "yesterday", "kind": "container", "container": "pve1/200", "status": "ok"},
        {"t": 1e300, "kind": "container", "container": "pve1/201", "status": "ok"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    inputs = fleet()
    inputs.journals = [path]
    inputs.runs = [{"id": "20261202T101010-bad", "command": "run", "started": "yesterday"}]
    report = build(inputs, MATRIX)
    text = markdown.render(report)
    assert "1. ? 20261202T101010-bad run: ok" in text
    dom = browser.Dom(html.render(report))
    assert "? " in "".join(dom.text) and "yesterday" not in "".join(dom.text)


def test_drift_items_show_their_fix_escaped(tmp_path):
    inputs = fleet()
    inputs.audits[2]["drift"][0]["fix"] = f"add to /etc/pve/lxc/202.conf: {EVIL} | `x`"
    report = build(inputs, MATRIX)
    markup = html.render(report)
    assert "<script" not in markup
    assert f"add to /etc/pve/lxc/202.conf: {EVIL} | `x`" in "".join(browser.Dom(markup).text)
    text = markdown.render(report)
    assert "| kind | what | expected | actual | fix |" in text
    assert "\\<script\\>alert(1)\\</script\\> {{ x }} \\[bold\\] \\| \\`x\\` |" in text
