"""`pctfleet report --html` on a real lab, read back from the DOM headless Chromium built."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pctfleet.lab import Lab
from tests import browser

pytestmark = [
    pytest.mark.lab,
    pytest.mark.skipif(not browser.available(), reason="chromium is not installed"),
]

VENV = "/opt/report-venv"
OUTLIER = "node1/202"
PLAYBOOK = """\
- name: hello
  hosts: all
  tasks:
    - name: say where
      command: "echo hello from {{ inventory_hostname }}"
"""
# A venv whose only package is a `torch` of the given version (metadata is what is read).
FAKE_TORCH = """set -e
V=/opt/report-venv; [ -x $V/bin/python ] || python3 -m venv --without-pip $V
SP=$($V/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
rm -rf "$SP"/torch-*.dist-info; mkdir -p "$SP/torch-{v}.dist-info"
printf 'Metadata-Version: 2.1\\nName: torch\\nVersion: {v}\\n' > "$SP/torch-{v}.dist-info/METADATA"
"""


def pctfleet(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pctfleet", *args], capture_output=True, text=True, timeout=600
    )


@pytest.fixture(scope="module")
def inventory(lab) -> str:  # the shared lab fixture checks the machine can run labs at all
    report_lab = Lab(Path("/var/lib/pctfleet-lab-report"), address_base="127.0.17")
    inv = str(report_lab.up(nodes=1, containers=3).inventory)
    for key, version in (("node1/200,node1/201", "2.9.0"), (OUTLIER, "2.8.0")):
        script = FAKE_TORCH.replace("{v}", version)
        proc = pctfleet("exec", "-i", inv, "--limit", key, "--", "sh", "-c", script)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return inv


def test_lab_report_shows_rows_outlier_and_runs(inventory, tmp_path):
    book = tmp_path / "hello.yml"
    book.write_text(PLAYBOOK)
    journals = tmp_path / "runs"
    ran = pctfleet("run", "-i", inventory, str(book), "--journal-dir", str(journals))
    assert ran.returncode == 0, ran.stderr
    out = tmp_path / "report.html"
    proc = pctfleet(
        "report", "-i", inventory, "-p", str(book), "-e", f"venv={VENV}",
        "--journal-dir", str(journals), "--baseline-file", str(tmp_path / "b.json"),
        "--html", str(out),
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr  # verify's checks fail: no toolchain here
    dom = browser.Dom(browser.dump_dom(out))
    assert [r.container for r in dom.rows] == ["node1/200", "node1/201", OUTLIER]
    assert dom.row(OUTLIER).outliers() == ["2.8.0"]
    assert dom.row("node1/200").outliers() == dom.row("node1/201").outliers() == []
    text = "".join(dom.text)
    assert "(audit 1, verify 1, doctor 0" in text  # one pct exec per container for the audit
    assert text.count("changed say where") == 3  # each container's timeline has the run
    png = tmp_path / "report.png"
    browser.screenshot(out, png)
    if os.environ.get("PCTFLEET_REPORT_PNG"):  # how docs/report.png is made
        shutil.copy(png, os.environ["PCTFLEET_REPORT_PNG"])
