"""`copy` of a folder and `remote_src`, run for real on this machine (sh, dash and bash,
no root): the controller's walk with ansible-core's link rules, the probe snippets read
back, a copy applied through push.sh and its script, and the second probe finding
nothing to do. The comparison with ansible-core itself is
tests/integration/test_copy_tree_differential.py."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from pctfleet.errors import PlaybookError
from pctfleet.facts import script as probe
from pctfleet.modules import REGISTRY, copytree, known_args
from pctfleet.modules.args import Context
from pctfleet.modules.base import Fact
from pctfleet.transport.files import push
from pctfleet.transport.local import LocalTarget

COPY = REGISTRY["copy"]
SHELLS = ["dash", "bash"]


def _source(root: Path) -> Path:
    """files/conf: a file, a folder, an empty one, and links of every kind."""
    conf = root / "files/conf"
    (conf / "sub/deep").mkdir(parents=True)
    (conf / "empty").mkdir()
    (conf / "a.txt").write_text("a\n")
    (conf / "sub/b.txt").write_text("b\n")
    (conf / "sub/b.txt").chmod(0o600)
    (conf / "sub/deep/c.txt").write_text("c\n")
    (root / "outside").mkdir()
    (root / "outside/o.txt").write_text("o\n")
    (conf / "link_in").symlink_to("a.txt")
    (conf / "link_out").symlink_to("../../outside/o.txt")
    (conf / "dangling").symlink_to("nowhere")
    (conf / "dirlink").symlink_to("sub")
    (conf / "sub/deep/up").symlink_to("../..")  # back into the copy: a loop
    return conf


def _prepare(root: Path, **args) -> object:
    return COPY.prepare(args, Context(str(root)), "task")


def test_the_walk_follows_links_as_ansible_core_does(tmp_path: Path) -> None:
    _source(tmp_path)
    tree = _prepare(tmp_path, src="conf/", dest="/x").tree
    files = {f.rel: f.data for f in tree.files}
    assert files["link_in"] == b"a\n" and files["link_out"] == b"o\n"  # followed
    assert files["dirlink/b.txt"] == b"b\n"  # a linked folder is walked
    assert dict(tree.links) == {
        "dangling": "nowhere",
        "sub/deep/up": "../..",
        "dirlink/deep/up": "../..",
    }
    assert set(tree.dirs) == {"sub", "sub/deep", "empty", "dirlink", "dirlink/deep"}
    assert {f.rel: f.mode for f in tree.files}["sub/b.txt"] == "0600"  # for preserve
    assert tree.top == "" and tree.shown == str(tmp_path / "files/conf") + "/"


def test_without_a_final_slash_the_folder_itself_is_copied(tmp_path: Path) -> None:
    _source(tmp_path)
    tree = _prepare(tmp_path, src="conf", dest="/x").tree
    assert tree.top == "conf" and "conf/sub/b.txt" in {f.rel for f in tree.files}
    found = [(s.path, s.role) for s in copytree.slots(tree, "/x/")]
    assert found[:2] == [("/x", "above"), ("/x/conf", "top")]  # made once, then left alone


def test_local_follow_false_keeps_every_link_a_link(tmp_path: Path) -> None:
    _source(tmp_path)
    tree = _prepare(tmp_path, src="conf/", dest="/x", local_follow=False).tree
    assert dict(tree.links)["link_in"] == "a.txt" and dict(tree.links)["dirlink"] == "sub"
    assert "dirlink/b.txt" not in {f.rel for f in tree.files}


def test_a_fifo_in_the_source_is_refused_in_one_line(tmp_path: Path) -> None:
    conf = tmp_path / "files/conf"
    conf.mkdir(parents=True)
    os.mkfifo(conf / "pipe")
    with pytest.raises(PlaybookError) as error:
        _prepare(tmp_path, src="conf/", dest="/x")
    assert "pipe is not a regular file, a folder or a link" in str(error.value)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ({"remote_src": "maybe"}, "expected a boolean"),
        ({"directory_mode": "0999"}, "mode must be in octal or symbolic form"),
        ({"local_follow": "sometimes"}, "expected a boolean"),
    ],
)
def test_bad_values_are_one_line_errors(tmp_path: Path, args: dict, words: str) -> None:
    (tmp_path / "files").mkdir()
    (tmp_path / "files/f").write_text("x")
    with pytest.raises(PlaybookError) as error:
        _prepare(tmp_path, src="f", dest="/x", **args)
    assert words in str(error.value) and "\n" not in str(error.value)


def test_the_new_arguments_are_known() -> None:
    assert {"directory_mode", "remote_src", "local_follow"} <= known_args()["copy"]


def test_a_file_written_in_the_folder_makes_a_new_parse_key(tmp_path: Path) -> None:
    conf = _source(tmp_path)
    raw = {"src": "conf/", "dest": "/x"}
    first = COPY.Args.context_key(raw, {}, str(tmp_path))
    assert COPY.Args.context_key(raw, {}, str(tmp_path)) == first
    (conf / "sub/deep/c.txt").write_text("changed\n")
    assert COPY.Args.context_key(raw, {}, str(tmp_path)) != first


def _facts(shell: str, text: str) -> Fact:
    built = probe.build_script({"k": text})
    done = subprocess.run([shell, "-s"], input=built, capture_output=True, text=True, timeout=30)
    return probe.parse_output(done.stdout, probe.nonce_of(built))["k"]


@pytest.mark.parametrize("shell", SHELLS)
def test_the_tree_probe_reads_each_path_in_order(shell: str, tmp_path: Path) -> None:
    (tmp_path / "d").mkdir(mode=0o750)
    odd = tmp_path / "d/a name\nwith a line"
    odd.write_text("x\n")
    (tmp_path / "d/l").symlink_to("target\nline")
    paths = [tmp_path / "d", odd, tmp_path / "d/l", tmp_path / "none", tmp_path / "d/f"]
    (tmp_path / "d/f").write_text("y\n")
    text = copytree.snippet("copy_tree_fact", argv=list(map(str, paths)), KINDS_ONLY=0)
    seen = copytree.parse(_facts(shell, text)).seen
    assert [s.kind for s in seen] == ["d", "f", "l", "a", "f"]
    assert seen[0].mode == "0750" and seen[2].target == "target\nline"
    assert seen[1].sha256.startswith("73cb3858") and seen[4].sha256.startswith("3bb2abb6")


@pytest.mark.parametrize("shell", SHELLS)
def test_names_holding_other_line_separators_keep_each_path_s_sum(shell: str, tmp_path: Path):
    """sha256sum and stat end each line with a line feed only: a name holding U+2028,
    \\f or \\x1c must not split a line (every file would be written on every run)."""
    names = ["u\u2028v", "form\ffeed", "sep\x1cx", "plain"]
    for number, name in enumerate(names):
        (tmp_path / name).write_text(f"{number}\n")
    text = copytree.snippet("copy_tree_fact", argv=[str(tmp_path / n) for n in names], KINDS_ONLY=0)
    seen = copytree.parse(_facts(shell, text)).seen
    sums = [hashlib.sha256(f"{n}\n".encode()).hexdigest() for n in range(len(names))]
    assert [s.sha256 for s in seen] == sums and all(s.mode for s in seen)


def _run(args, target: LocalTarget, shell: str = "sh"):
    """Probe, plan and apply one copy here; the plan."""
    plan = COPY.decide(args, _facts(shell, COPY.probe(args, False)), False)
    assert not plan.failed, plan.msg
    for item in plan.pushes:
        push(target, item.content, item.dest, mode=item.mode, owner=item.owner)
    if plan.script:
        done = subprocess.run(["sh", "-c", plan.script], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    return plan


def _listing(root: Path) -> dict[str, tuple]:
    found = {}
    for here, dirs, names in os.walk(root):
        for name in [*dirs, *names]:
            path = Path(here) / name
            kind = "l" if path.is_symlink() else "d" if path.is_dir() else "f"
            what = os.readlink(path) if kind == "l" else path.read_text() if kind == "f" else ""
            mode = path.lstat().st_mode & 0o7777
            found[str(path.relative_to(root))] = (kind, f"{mode:o}" if kind != "l" else "", what)
    return found


def test_a_folder_copied_then_converged_in_one_probe(tmp_path: Path) -> None:
    _source(tmp_path)
    dest = tmp_path / "out/new/"
    (tmp_path / "out").mkdir()
    args = _prepare(tmp_path, src="conf/", dest=str(dest), directory_mode="0750", mode="0640")
    target = LocalTarget()
    first = _run(args, target)
    assert first.changed and len(first.pushes) == 7  # links to files are files
    tree = _listing(dest)
    assert tree["sub"] == ("d", "750", "") and tree["empty"] == ("d", "750", "")
    assert tree["sub/b.txt"] == ("f", "640", "b\n") and tree["dangling"] == ("l", "", "nowhere")
    assert tree["sub/deep/up"] == ("l", "", "../..")
    assert _listing(tmp_path / "out")["new"][1] == "750"  # made by the copy
    again = _run(args, target, "dash")
    assert not again.changed and not again.pushes and again.script is None
    (dest / "sub/b.txt").write_text("changed\n")
    (dest / "keep").write_text("not in the source\n")
    third = _run(args, target)
    assert [p.dest for p in third.pushes] == [str(dest / "sub/b.txt")]
    assert (dest / "keep").read_text() == "not in the source\n"


def test_remote_src_file_and_folder_copied_then_converged(tmp_path: Path) -> None:
    (tmp_path / "in/tree/sub").mkdir(parents=True)
    (tmp_path / "in/f").write_text("f\n")
    (tmp_path / "in/f").chmod(0o600)
    (tmp_path / "in/tree/sub/b").write_text("b\n")
    (tmp_path / "in/tree/sub").chmod(0o700)
    (tmp_path / "in/tree/l").symlink_to("sub/b")
    (tmp_path / "out").mkdir()
    target = LocalTarget()
    for src, dest in (("in/f", "out/made/"), ("in/tree", "out")):
        args = _prepare(
            tmp_path, src=f"{tmp_path}/{src}", dest=f"{tmp_path}/{dest}", remote_src=True
        )
        assert _run(args, target).changed
        for shell in SHELLS:
            assert not _run(args, target, shell).changed
    out = _listing(tmp_path / "out")
    assert out["made/f"] == ("f", "644", "f\n")  # a new file: 0644, as ansible-core's
    assert out["tree/sub"] == ("d", "700", "") and out["tree/l"] == ("l", "", "sub/b")
