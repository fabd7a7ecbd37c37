"""The pip probe's package listing (modules/pip_list.py) prints byte for byte what
importlib.metadata made it print before, on every CPython it mirrors that is here."""

from __future__ import annotations

import email
import os
import random
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from pctfleet.modules import pip_list
from pctfleet.modules.pip import LIST_INSTALLED

SOURCE = Path(pip_list.__file__).read_text()
# The program the probe ran before this one, as it was sent.
BEFORE = (
    'import base64 as _b64\ndef pf_kv(key, value):\n    print(key + "=" + '
    "_b64.b64encode(str(value).encode()).decode())\n" + pip_list.REFERENCE
)


def _pythons() -> list[str]:
    """This interpreter and every other CPython 3.10-3.13 at hand (PATH, pyenv)."""
    found = [sys.executable]
    for version in ("3.10", "3.11", "3.12", "3.13"):
        found.append(shutil.which(f"python{version}") or "")
        found += sorted(str(p) for p in PYENV.glob(f"{version}.*/bin/python3"))
    seen: dict[str, str] = {}
    for path in filter(None, found):
        seen.setdefault(os.path.realpath(path), path)
    return [path for path in seen.values() if _runs(path)]


def _runs(python: str) -> bool:  # not, say, a pyenv shim for a version it has not selected
    return subprocess.run([python, "-c", ""], capture_output=True).returncode == 0


PYENV = Path(os.environ.get("PYENV_ROOT", "/root/.pyenv")) / "versions"
PYTHONS = _pythons()


def test_the_probe_sends_this_file():
    assert LIST_INSTALLED == SOURCE


# -- the email parser's headers ------------------------------------------------------

TRICKY = [
    "Metadata-Version: 2.1\nName: foo\nVersion: 1.0\n\nName: body\n",
    "Name:foo\nVersion:\t 1.0 \n",
    "name: Foo\nNAME: Bar\nversion: 2\n",
    "From nobody\nName: env\nVersion: 1\n",
    "Name: a\nFrom stray\nVersion: 1\n",
    "Name: a\nVersion: 1\nFrom last",
    "Name: a\n folded\nVersion: 1\n",
    " lead\nName: a\n",
    ":x\n more\nName: b\n",
    "Name : spaced\nVersion: 1\n",
    "Name: a\nnot a header\nVersion: 1\n",
    "\ufeffName: bom\n",
    "Name: tail",
    "Name:\n\tcontinued\n",
    "X\x7f: y\nName: del\n",
    "Name: \x0c form feed \x1c\u2028\nVersion: 1\n",
    "Name: café\nVersion: 1.0\n",
    "",
    "\n\nName: late\n",
]
PIECES = [
    "Name", "name", "Version", "VERSION", "Content-Type", "X", ":", ": ", " ", "\t", "\n",
    "\n", "\n\n", "From ", "foo", "1.0", "é", "\x7f", "\x00", "-", "\x0c", "\u2028", "~",
]  # fmt: skip


def fuzzed(count: int) -> list[str]:
    rng = random.Random(20261202)
    return ["".join(rng.choices(PIECES, k=rng.randint(1, 14))) for _ in range(count)]


def test_headers_are_the_email_parsers():
    for text in TRICKY + fuzzed(5000):
        assert pip_list.headers(text) == email.message_from_string(text).items(), text


# -- whole listings against the program before, in a subprocess per interpreter ------


def metadata(path: Path, text: str, name: str = "METADATA") -> None:
    path.mkdir(parents=True, exist_ok=True)
    (path / name).write_text(text, encoding="utf-8")


@pytest.fixture
def tree(tmp_path) -> tuple[Path, list[str]]:
    """(the working folder, sys.path entries to add): dist-info, egg-info (folder and
    file), an .egg, the same name more than once within a folder and across folders."""
    one, two, cwd = tmp_path / "one", tmp_path / "two", tmp_path / "cwd"
    metadata(one / "Foo_Bar-1.0.dist-info", "Name: Foo_Bar\nVersion: 1.0\n")
    metadata(one / "foo.bar-2.0.dist-info", "Name: foo-bar\nVersion: 2.0\n")
    metadata(one / "zzz-1.dist-info", "Name: Dup\nVersion: 1\n")
    metadata(one / "aaa-1.dist-info", "Name: dup\nVersion: 2\n")
    metadata(one / "Dup-3.dist-info", "Name: DUP\nVersion: 3\n")
    (one / "legacy.egg-info").write_text("Metadata-Version: 1.0\nName: Legacy\nVersion: 0.1\n")
    metadata(one / "old-0.5-py3.11.egg-info", "Name: old\nVersion: 0.5\n", "PKG-INFO")
    metadata(one / "empty-1.dist-info", "")
    metadata(one / "empty-1.dist-info", "Name: from-pkg-info\nVersion: 4\n", "PKG-INFO")
    metadata(one / "noname-1.dist-info", "Version: 3\n")
    metadata(one / "nover-1.dist-info", "Name: NoVer\n")
    metadata(one / "Weird.Case-1.DIST-INFO", "name:   Weird..Case__X  \nVERSION:\t2.0 \n")
    metadata(one / "envelope-1.dist-info", "From nobody\nName: Env\nVersion: 1\n")
    metadata(one / "body-1.dist-info", "Name: Body\nVersion: 1\n\nName: Other\n")
    metadata(one / "cafe-1.dist-info", 'Name: Café\nVersion: 1"\\x\n')
    metadata(one / "crlf-1.dist-info", "Name: CrLf\r\nVersion: 1\rSummary: x\r\n")
    metadata(one / "folded-desc-1.dist-info", "Name: fd\nVersion: 1\nSummary: a\n  b\n")
    (one / "bare-1.dist-info").mkdir()
    for k in range(8):  # one name in two groups: the order Lookup groups them in decides
        metadata(one / f"grp{k}-1.dist-info", f"Name: same{k}\nVersion: 1\n")
        metadata(one / f"other{k}-2.dist-info", f"Name: same{k}\nVersion: 2\n")
        metadata(one / f"grp{k}-3.dist-info", f"Name: same{k}\nVersion: 3\n")
    (one / "not-metadata.txt").write_text("Name: no\n")
    metadata(two / "foo_bar-9.dist-info", "Name: FOO.BAR\nVersion: 9\n")
    egg = tmp_path / "Thing-1.0-py3.11.egg"
    metadata(egg / "EGG-INFO", "Name: Thing\nVersion: 1.0\n", "PKG-INFO")
    metadata(egg / "thing-2.dist-info", "Name: thing\nVersion: 2.0\n")  # before EGG-INFO
    metadata(cwd / "cwd_pkg-1.dist-info", "Name: cwd-pkg\nVersion: 1\n")
    return cwd, [str(one), str(two), str(egg), str(tmp_path / "missing"), str(one) + "/"]


def run(python: str, program: str, cwd: Path, entries: list[str]) -> tuple[int, str]:
    # -S: sys.path is '' (the working folder), the entries, then the standard library.
    env = {"PYTHONPATH": ":".join(entries), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run(
        [python, "-S", "-c", program], cwd=cwd, env=env, capture_output=True, text=True
    )
    return proc.returncode, proc.stdout


def fast(python: str, cwd: Path, entries: list[str]) -> str:
    """What listing() says: its dict, or `fallback` and why (main() falls back on any error)."""
    probe = "ns = {'__name__': 'x'}\nexec(SOURCE, ns)\ntry:\n print(ns['listing']())\n"
    probe += "except Exception as exc:\n print('fallback', repr(exc))\n"
    return run(python, f"SOURCE = {SOURCE!r}\n{probe}", cwd, entries)[1]


@pytest.mark.parametrize("python", PYTHONS)
def test_the_listing_is_what_importlib_metadata_listed(python, tree):
    cwd, entries = tree
    assert fast(python, cwd, entries).startswith("{")
    before, after = run(python, BEFORE, cwd, entries), run(python, SOURCE, cwd, entries)
    assert after == before
    assert before[0] == 0 and before[1].startswith("pkgs=")


@pytest.mark.parametrize(
    "case",
    ["zip", "content-type", "folded-name", "not-utf8", "not-a-folder"],
)
@pytest.mark.parametrize("python", PYTHONS)
def test_what_it_cannot_read_the_same_way_importlib_metadata_answers(python, tree, case):
    cwd, entries = tree
    odd = cwd.parent / "odd"
    if case == "zip":
        odd = cwd.parent / "odd.zip"
        with zipfile.ZipFile(odd, "w") as archive:
            archive.writestr("zipped-1.dist-info/METADATA", "Name: zipped\nVersion: 1\n")
    elif case == "content-type":
        text = "Name: mime\nVersion: 1\nContent-Type: multipart/mixed; boundary=x\n\n--x\n"
        metadata(odd / "mime-1.dist-info", text)
    elif case == "folded-name":
        metadata(odd / "folded-1.dist-info", "Name: fol\n ded\nVersion: 1\n")
    elif case == "not-utf8":
        metadata(odd / "bad-1.dist-info", "")
        (odd / "bad-1.dist-info" / "METADATA").write_bytes(b"Name: bad\nSummary: \xff\n")
    else:
        odd.write_text("a file on sys.path\n")
    entries = [*entries, str(odd)]
    assert fast(python, cwd, entries).startswith("fallback")
    assert run(python, SOURCE, cwd, entries) == run(python, BEFORE, cwd, entries)


def test_another_finder_of_distributions_is_left_to_importlib_metadata(monkeypatch, tree):
    class Finder:
        @staticmethod
        def find_distributions(context=None):
            return iter(())

    cwd, entries = tree
    monkeypatch.chdir(cwd)
    monkeypatch.setattr(sys, "path", entries)
    path_finder = sys.modules["_frozen_importlib_external"].PathFinder
    monkeypatch.setattr(sys, "meta_path", [path_finder])
    assert pip_list.listing()["thing"] == "1.0"
    monkeypatch.setattr(sys, "meta_path", [path_finder, Finder])
    with pytest.raises(pip_list.Unsure):
        pip_list.listing()


@pytest.mark.parametrize(
    "name",
    ["Foo_Bar", "foo..bar", "-lead", "trail_", "a-_.-b", "ÄÖ.x", "A" * 3, "", "_", "x__y"],
)
def test_names_are_normalised_as_pep_503_says(name):
    import re

    assert pip_list.normalize(name) == re.sub(r"[-_.]+", "-", name).lower()


def test_the_json_is_json_dumps(tmp_path):
    import json

    seen = {"b": "1", "a": None, "é": '"\\\n\x7f\U0001f600', "": ""}
    assert pip_list.dump(seen) == json.dumps(seen, sort_keys=True)
    assert pip_list.dump({}) == json.dumps({}, sort_keys=True)
