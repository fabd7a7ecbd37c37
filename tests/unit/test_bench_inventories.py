"""bench/inventories.py builds fleets that load as the same containers in every format."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import inventories  # noqa: E402

from pctfleet.inventory import load_inventory


@pytest.mark.parametrize("fmt", inventories.FORMATS)
def test_each_format_is_the_same_fleet(tmp_path, fmt):
    inv = load_inventory(inventories.write_fleet(tmp_path, fmt, 100))
    assert len(inv.containers) == 100 and len(inv.nodes) == inventories.NODES
    assert all("everyone" in c.groups for c in inv.containers)
    assert inv.vars_for(inv.containers[-1])["tier"] == "all"


def test_a_measured_document_renders_as_its_section():
    cell = {"load_s": 1.5, "vars_s": 0.1, "peak_mb": 50.0}
    machine = {"nproc": 2, "cpu_model": "cpu", "kernel": "k", "python": "3", "date": "d"}
    document = {"machine": machine, "runs": 3, "nodes": 50, "cells": {"native/1000": cell}}
    page = inventories.markdown(document)
    assert page.startswith(inventories.BEGIN) and page.endswith(inventories.END)
    assert "| native | 1,000 | 1.50 | 0.10 | 50 |" in page
