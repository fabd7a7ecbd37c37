"""docs/benchmarks.md keeps bench/installers.py's section across both generators."""

from __future__ import annotations

import copy
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import tables  # noqa: E402

DOC = {
    "machine": {"nproc": 2, "cpu_model": "CPU", "kernel": "6.1", "python": "3.11", "date": "D"},
    "container": "node2/201",
    "requirement": "cuda-toolkit[nvcc]==13.0.2",
    "versions": {"pip": "23.0.1", "uv": "0.13.9"},
    "cache_mb": {"pip": 0.0, "uv": 271.0},
    "runs": 3,
    "cells": {
        f"{i}/{m}": {"samples": [s, s + 1, s + 2], "median_s": s + 1}
        for i, m, s in [
            ("pip", "cold", 7),
            ("uv", "cold", 1),
            ("pip", "warm", 5),
            ("uv", "warm", 0),
        ]
    },
}


def test_the_section_is_appended_once_then_replaced_in_place():
    page = "# Benchmarks\n\nold numbers\n"
    once = tables.splice_installers(page, DOC)
    assert once.startswith(page.rstrip("\n")) and "| cold | 8.00 (7.00-9.00) | 2.00" in once
    slower = copy.deepcopy(DOC)
    slower["cells"]["uv/cold"]["median_s"] = 4
    twice = tables.splice_installers(once + "tail\n", slower)
    assert twice.count(tables.INSTALLERS_BEGIN) == 1 and twice.endswith("tail\n")
    assert "| 4.0x |" in once and "| 2.0x |" in twice and "| 4.0x |" not in twice


def test_a_rewritten_page_carries_every_old_section_over():
    other = "<!-- section: other (bench/x.py) -->\n## X\n<!-- end of section: other -->"
    old = tables.splice_section(tables.splice_installers("# old page\n", DOC), other)
    kept = tables.kept_sections(old)
    assert [k.splitlines()[0] for k in kept] == [tables.INSTALLERS_BEGIN, other.splitlines()[0]]
    page = "# new page\n"
    for section in kept:
        page = tables.splice_section(page, section)
    assert page == "# new page\n\n" + kept[0] + "\n\n" + other + "\n"
    assert tables.kept_sections("# no section\n") == []


def test_an_empty_warm_cache_is_named():
    page = tables.installers_markdown(DOC)
    assert "pip's cache held nothing after its warm-up run" in page
    assert "uv's cache held nothing" not in page
