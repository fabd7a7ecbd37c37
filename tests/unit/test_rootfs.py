"""The lab's rootfs mirror comes from this machine's apt sources, never a built-in host."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pctfleet.lab import rootfs
from pctfleet.lab.model import LabError

DEB822 = """\
Types: deb
# a comment naming http://example.invalid/commented
URIs: http://mirror.example.test/debian/
Suites: bookworm bookworm-updates
Components: main

Types: deb
URIs: http://mirror.example.test/debian-security
Suites: bookworm-security
Components: main

Types: deb-src
URIs: http://src.example.test/debian
Suites: bookworm

Enabled: no
Types: deb
URIs: http://off.example.test/debian
Suites: bookworm
"""

ONE_LINE = """\
# deb http://commented.example.test/debian bookworm main
deb-src http://src.example.test/debian bookworm main
deb [arch=amd64 signed-by=/usr/share/keyrings/k.gpg] https://one.example.test/debian bookworm main
deb http://two.example.test/debian bookworm-updates main  # trailing comment
"""


def apt_dir(tmp_path: Path, files: dict[str, str]) -> Path:
    (tmp_path / "sources.list.d").mkdir()
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return tmp_path


def test_deb822_sources_give_the_enabled_binary_uris(tmp_path):
    apt = apt_dir(tmp_path, {"sources.list.d/debian.sources": DEB822})
    assert rootfs.apt_source_urls(apt) == [
        "http://mirror.example.test/debian/",
        "http://mirror.example.test/debian-security",
    ]
    assert rootfs.read_mirror(apt) == "http://mirror.example.test/debian"


def test_one_line_sources_in_both_places(tmp_path):
    extra = "deb http://three.example.test/x sid main\n"
    apt = apt_dir(tmp_path, {"sources.list": ONE_LINE, "sources.list.d/extra.list": extra})
    assert rootfs.apt_source_urls(apt) == [
        "https://one.example.test/debian",
        "http://two.example.test/debian",
        "http://three.example.test/x",
    ]
    assert rootfs.read_mirror(apt) == "https://one.example.test/debian"


def test_a_list_file_in_the_parts_folder_alone_is_enough(tmp_path):
    apt = apt_dir(tmp_path, {"sources.list.d/mirror.list": ONE_LINE})
    assert rootfs.read_mirror(apt) == "https://one.example.test/debian"


@pytest.mark.parametrize(
    "files",
    [
        {},
        {
            "sources.list": "# deb http://x.example.test/debian bookworm main\n",
            "sources.list.d/off.sources": "Enabled: no\nTypes: deb\nURIs: http://y.example.test/d\n",
        },
        {
            "sources.list.d/security.sources": "Types: deb\n"
            "URIs: http://s.example.test/debian-security\nSuites: bookworm-security\n"
        },
    ],
)
def test_no_mirror_is_one_line_naming_the_file_to_fix(tmp_path, files):
    apt = apt_dir(tmp_path, files)
    with pytest.raises(LabError) as err:
        rootfs.read_mirror(apt)
    message = str(err.value)
    assert "\n" not in message
    assert str(apt / "sources.list") in message and str(apt / "sources.list.d") in message


def test_no_mirror_host_is_built_in():
    source = Path(rootfs.__file__).read_text(encoding="utf-8")
    assert not re.findall(r"[a-z]+://[\w-]+\.[\w.-]+", source)
