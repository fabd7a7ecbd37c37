"""The test tree itself: pytest imports test files by their base name (no packages)."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).parent.parent


def test_no_two_test_files_share_a_base_name():
    names: dict[str, list[str]] = {}
    for path in TESTS.rglob("test_*.py"):
        names.setdefault(path.name, []).append(str(path.relative_to(TESTS)))
    assert {n: p for n, p in names.items() if len(p) > 1} == {}
