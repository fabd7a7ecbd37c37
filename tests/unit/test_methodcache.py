"""The dataclass method cache: same classes, compiled once, and only from a trusted file."""

from __future__ import annotations

import dataclasses
import importlib.util
import marshal
import os
import sys
from dataclasses import InitVar, field

import pytest

from pctfleet.cli import methodcache

pytestmark = pytest.mark.skipif(
    not methodcache._hookable() or sys.version_info >= (3, 13),
    reason="this Python builds dataclass methods without _create_fn",
)


@pytest.fixture
def cached(monkeypatch, tmp_path):
    """install() on a file of the test's own; dataclasses is restored afterwards."""
    monkeypatch.setattr(dataclasses, "_create_fn", dataclasses._create_fn)
    path = tmp_path / "methods.marshal"

    def start() -> methodcache.MethodCache:
        monkeypatch.setattr(dataclasses, "_create_fn", dataclasses._create_fn)
        cache = methodcache.install(path)
        assert cache is not None
        return cache

    return start


def _classes():
    @dataclasses.dataclass(frozen=True, order=True)
    class Point:
        x: int
        y: int = 2
        tags: list = field(default_factory=list, compare=False)

    @dataclasses.dataclass(kw_only=True, slots=True)
    class Job:
        name: str
        scale: InitVar[int] = 1
        size: int = 0

        def __post_init__(self, scale: int) -> None:
            self.size = len(self.name) * scale

    return Point, Job


def _behaviour(point_cls, job_cls) -> list:
    a, b = point_cls(1), point_cls(1, 3, ["t"])
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.x = 5  # type: ignore[misc]
    with pytest.raises(TypeError):
        job_cls("positional")  # type: ignore[misc]
    return [
        repr(a),
        a == point_cls(1, 2, ["other"]),
        a < b,
        hash(a) == hash(point_cls(1)),
        repr(job_cls(name="abc", scale=2)),
    ]


def test_classes_behave_as_without_the_cache(cached):
    plain = _behaviour(*_classes())
    cache = cached()
    first = _behaviour(*_classes())
    assert cache.missed > 0
    cache.save()
    again = cached()
    second = _behaviour(*_classes())
    assert again.missed == 0  # every method came from the file
    assert plain == first == second
    assert plain[0].endswith("Point(x=1, y=2, tags=[])")


def test_a_changed_class_is_compiled_not_taken_from_the_file(cached):
    cache = cached()
    _classes()
    cache.save()
    again = cached()

    @dataclasses.dataclass
    class Point:  # same name, other fields: other source
        x: int
        z: int = 9

    assert again.missed > 0
    assert repr(Point(1)).endswith("Point(x=1, z=9)")


@pytest.mark.parametrize("damage", ["group-writable", "other magic", "garbage", "empty"])
def test_a_file_that_cannot_be_trusted_or_read_is_ignored(cached, tmp_path, damage):
    cache = cached()
    _classes()
    cache.save()
    path = tmp_path / "methods.marshal"
    if damage == "group-writable":
        os.chmod(path, 0o664)
    elif damage == "other magic":
        path.write_bytes(marshal.dumps((b"\0\0\r\n", cache.codes)))
    elif damage == "garbage":
        path.write_bytes(b"\x00not marshal at all")
    else:
        path.write_bytes(b"")
    os.chmod(path, 0o664 if damage == "group-writable" else 0o600)
    assert methodcache.MethodCache(path).codes == {}
    assert importlib.util.MAGIC_NUMBER != b"\0\0\r\n"


def test_nothing_is_written_when_nothing_was_missing(cached, tmp_path):
    cache = cached()
    _classes()
    cache.save()
    path = tmp_path / "methods.marshal"
    stamp = path.stat().st_mtime_ns
    os.utime(path, ns=(stamp - 10**9, stamp - 10**9))
    again = cached()
    _classes()
    again.save()
    assert path.stat().st_mtime_ns == stamp - 10**9
    assert oct(path.stat().st_mode & 0o777) == "0o600"


def test_a_read_only_folder_is_not_an_error(monkeypatch, tmp_path):
    monkeypatch.setattr(dataclasses, "_create_fn", dataclasses._create_fn)
    cache = methodcache.install(tmp_path / "missing-folder" / "methods.marshal")
    _classes()
    cache.save()  # cannot write there: compiled as before, nothing raised
    assert not (tmp_path / "missing-folder").exists()
