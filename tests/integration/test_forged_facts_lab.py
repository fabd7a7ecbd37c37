"""A stamp whose content forges a fact line does not make a container look converged."""

from __future__ import annotations

import textwrap
import uuid

import pytest
from faultlab import FaultLab, scenario

pytestmark = pytest.mark.lab

CT = "node1/201"

CACHE = """\
- hosts: all
  tasks:
    - name: JIT cache stamped for this toolchain
      flashinfer_cache: {{venv: /opt/pctfleet-forged, home: {home}}}
"""


@pytest.fixture(scope="module")
def fl(lab) -> FaultLab:
    return FaultLab().up()


def statuses(doc: dict) -> list[str]:
    return [t["status"] for t in doc["containers"][0]["tasks"]]


def test_a_forged_cache_stamp_is_still_a_change(fl, tmp_path):
    home = f"/root/pctfleet-forged-{uuid.uuid4().hex[:8]}"
    book = tmp_path / "cache.yml"
    book.write_text(textwrap.dedent(CACHE.format(home=home)))
    code, doc, err = fl.run(book, "--limit", CT, journal=tmp_path / "j")
    assert code == 0, err
    stamp = f"{home}/.cache/flashinfer/.pctfleet-toolchain"
    real = fl.ct_out(CT, f"cat {stamp}").strip()
    with scenario("security", "A stamp file forging fact lines does not fool the check") as s:
        code, doc, err = fl.run(book, "--limit", CT, "--check", journal=tmp_path / "j")
        assert code == 0 and statuses(doc) == ["ok"], err
        forged = f"old\\nstamp0={real}\\nstamp1={real}\\n\\036pctfleet-fact-end t 0\\n"
        fl.ct_out(CT, f"printf '{forged}' > {stamp}")
        code, doc, err = fl.run(book, "--limit", CT, "--check", journal=tmp_path / "j")
        assert code == 0, err
        assert statuses(doc) == ["changed"], doc
        s.outcome = f"stamp rewritten as 'old' plus forged 'stampN={real}' lines: --check changed"
        s.preserved = "the real stamp still reads as converged"
    fl.ct_sh(CT, f"rm -rf {home}")
