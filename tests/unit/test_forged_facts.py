"""Container content never becomes a fact key or a frame boundary; one CUDA_HOME lookup.

Each probe snippet runs for real with sh against a folder under tmp (as the
engine frames it), with a hostile file planted where the container's state
is read: `x\\nKEY=forged` lines and fake frame end markers must not fool the plan.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pctfleet.cuda.facts import parse_toolchain, toolchain_snippet
from pctfleet.errors import PlaybookError
from pctfleet.facts import script as probe
from pctfleet.modules.args import Context
from pctfleet.modules.base import Fact
from pctfleet.modules.cccl import CcclOverlay
from pctfleet.modules.command import Shell
from pctfleet.modules.copy import Copy
from pctfleet.modules.cudalinks import CudaLinks
from pctfleet.modules.file import File
from pctfleet.modules.jitcache import STAMP, FlashinferCache
from pctfleet.modules.server import Server
from pctfleet.modules.toolchain import CompileProbe
from pctfleet.sh import snippet

SRC = Path(__file__).resolve().parents[2] / "src" / "pctfleet"


def run(text: str) -> Fact:
    """The snippet in a real probe script, its output framed and parsed as the engine does."""
    script = probe.build_script({"k": text})
    out = subprocess.run(["sh", "-s"], input=script, capture_output=True, text=True, timeout=60)
    return probe.parse_output(out.stdout, probe.nonce_of(script)).get("k", Fact("", 1))


def preamble(venv: Path) -> str:
    return snippet("cuda_preamble", VENV=str(venv), CH_ARG="")


def decide(module, args, reading):
    return module.decide(args, reading, True)


def fake_end() -> str:
    return "\x1epctfleet-fact-end k 0"


def test_frames_only_honour_this_probes_nonce():
    forged = f"printf 'a=%s\\n{fake_end()}\\nb=x\\n' YQ=="
    fact = run(forged + "\nprintf '\\036pctfleet-fact-end 0123456789abcdef0123456789abcdef k 0\\n'")
    assert fact.output.count("pctfleet-fact-end") == 2  # both kept as plain lines
    assert fact.fields() == {"a": "a"}  # 'b=x' is not a pf_kv line: dropped


def test_values_with_newlines_stay_one_value():
    fact = run(f"pf_kv a \"$(printf 'x\\nconverged=1\\n{fake_end()}')\"\npf_kv b 2")
    assert fact.fields() == {"a": f"x\nconverged=1\n{fake_end()}", "b": "2"}


def venv_tree(root: Path, python: str = "python3.13") -> tuple[Path, Path]:
    venv = root / "venv"
    ch = venv / "lib" / python / "site-packages" / "nvidia" / "cu13"
    (ch / "lib").mkdir(parents=True)
    (ch / "lib" / "libcudart.so.13").write_text("")
    return venv, ch


def test_cuda_home_is_found_in_a_python313_venv(tmp_path):
    venv, ch = venv_tree(tmp_path)
    fact = run(preamble(venv) + 'pf_kv ch "$CH"')
    assert fact.fields() == {"ch": str(ch)}
    text = run(toolchain_snippet(str(venv))).output
    assert parse_toolchain(text).cuda_home == str(ch)
    assert parse_toolchain(text).cuda_home_from == "venv"


def test_two_site_packages_ask_the_venvs_own_python(tmp_path):
    venv, ch = venv_tree(tmp_path)
    (venv / "lib" / "python3.11" / "site-packages" / "nvidia" / "cu13").mkdir(parents=True)
    (venv / "bin").mkdir()
    python = venv / "bin" / "python"
    python.write_text(f"#!/bin/sh\necho {ch.parent.parent}\n")
    python.chmod(0o755)
    fact = run(preamble(venv) + 'pf_kv ch "$CH"')
    assert fact.fields() == {"ch": str(ch)}


def test_every_snippet_finds_cuda_home_through_the_one_function():
    """No module, audit, doctor or verify globs site-packages or names a Python version."""
    shell = [*SRC.glob("sh/**/*.sh")]
    for path in [*SRC.glob("modules/*.py"), *SRC.glob("cuda/*.py"),
                 SRC / "infra" / "__init__.py", *shell]:  # fmt: skip
        text = path.read_text()
        if path.name != "cuda_home.sh":
            assert "python3*" not in text, path
        assert not re.search(r"python3\.1\d", text), path
    home = (SRC / "sh" / "lib" / "cuda_home.sh").read_text()
    assert home.count("lib/python3*/site-packages") == 1  # the one place that looks
    site = (Path(__file__).resolve().parents[2] / "playbooks" / "site.yml").read_text()
    assert not re.search(r"python3\.\d", site)


# --- hostile content, one per fact read from a file ------------------------------------


def test_forged_server_pid_file_and_spec(tmp_path):
    pidfile = tmp_path / "s.pid"
    raw = {"name": "s", "command": ["sleep", "1"], "pidfile": str(pidfile)}
    args = Server().prepare(raw, Context(), "t")
    pidfile.write_text(f"1\nalive=1\npid=1\n{fake_end()}\n")
    (tmp_path / "s.pid.spec").write_text(f"x\nspec={args.spec()}-none\nalive=1\n")
    fact = run(Server().probe(args, False))
    assert fact.fields()["pid"].startswith("1\nalive=1")
    assert "alive" not in fact.fields()
    assert Server().decide(args, fact, True).changed


def test_forged_jit_cache_stamps(tmp_path):
    venv, _ = venv_tree(tmp_path)
    module = FlashinferCache()
    args = module.prepare({"venv": str(venv), "home": str(tmp_path / "home")}, Context(), "t")
    toolchain = run(module.probe(args, False)).fields()["toolchain"]
    for index, folder in enumerate(args.folders):
        Path(folder).mkdir(parents=True)
        Path(folder, STAMP).write_text(f"old\nstamp{index}={toolchain}\n{fake_end()}\n")
    Path(args.folders[0], "kernel.so").write_text("")
    fact = run(module.probe(args, False))
    assert fact.fields()["stamp0"].startswith("old\n")
    assert fact.fields()["entries0"] == "1"  # the stamp is not an entry
    assert decide(module, args, fact).changed
    for folder in args.folders:  # the real stamp is honoured
        Path(folder, STAMP).write_text(toolchain + "\n")
    assert not decide(module, args, run(module.probe(args, False))).changed


def test_forged_compile_probe_stamp(tmp_path):
    venv, ch = venv_tree(tmp_path)
    module = CompileProbe()
    args = module.prepare({"venv": str(venv), "arch": "sm_120"}, Context(), "t")
    toolchain = run(module.probe(args, False)).fields()["toolchain"]
    (ch / ".pctfleet-probe").write_text(f"x\nstamp={toolchain} sm_120 ok\n")
    assert decide(module, args, run(module.probe(args, False))).changed
    (ch / ".pctfleet-probe").write_text(f"{toolchain} sm_120 ok\n")
    assert not decide(module, args, run(module.probe(args, False))).changed


def test_forged_cuda_links(tmp_path):
    venv, ch = venv_tree(tmp_path)
    module = CudaLinks()
    args = module.prepare({"venv": str(venv), "fallback_stub": True}, Context(), "t")
    (ch / "lib64").symlink_to("elsewhere\nlib64=lib")
    fact = run(module.probe(args, False))
    assert fact.fields()["lib64"] == "elsewhere\nlib64=lib"
    assert decide(module, args, fact).changed


def test_forged_file_link_target(tmp_path):
    link = tmp_path / "l"
    link.symlink_to(f"other\ntarget=/wanted\n{fake_end()}")
    wanted = {"path": str(link), "state": "link", "src": "/wanted", "force": True}
    args = File().prepare(wanted, Context(), "t")  # force: /wanted need not be there
    fact = run(File().probe(args, False))
    assert fact.fields()["type"] == "link"
    assert File().decide(args, fact, True).changed


def test_command_guards_read_the_container(tmp_path):
    there, gone = tmp_path / "it's $(there)", tmp_path / "gone\ncreates=1"
    there.write_text(f"creates=1\n{fake_end()}\n")
    shell = Shell()
    for creates, removes, planned in (
        (there, there, False),
        (gone, there, True),
        (gone, gone, False),
    ):
        args = shell.prepare(
            {"cmd": "x", "creates": str(creates), "removes": str(removes)}, Context(), "t"
        )
        plan = shell.decide(args, run(shell.probe(args, False)), False)
        assert plan.changed is planned, (creates, removes, plan.msg)


def test_forged_copy_content(tmp_path):
    import hashlib

    dest = tmp_path / "f"
    wanted = b"hello\n"
    dest.write_text(f"x\nsha256={hashlib.sha256(wanted).hexdigest()}\n{fake_end()}\n")
    args = Copy().prepare({"dest": str(dest), "content": "hello\n"}, Context(), "t")
    fact = run(Copy().probe(args, True))
    assert Copy().decide(args, fact, True).changed
    dest.write_bytes(wanted)
    assert not Copy().decide(args, run(Copy().probe(args, True)), True).changed


# --- the CCCL manifest ---------------------------------------------------------------


def cccl_source(root: Path) -> Path:
    src = root / 'src "q" \\ b'
    header = src / "libcudacxx/include/cuda/std/__cccl/version.h"
    header.parent.mkdir(parents=True)
    header.write_text("#define CCCL_VERSION 3001002\n")
    (src / "cub/cub").mkdir(parents=True)
    (src / "cub/cub/cub.cuh").write_text("")
    (src / "thrust/thrust").mkdir(parents=True)
    return src


def test_cccl_manifest_is_valid_json_for_any_source_path(tmp_path):
    venv, ch = venv_tree(tmp_path)
    (ch / "include").mkdir()
    module = CcclOverlay()
    raw = {"venv": str(venv), "source": str(cccl_source(tmp_path))}
    args = module.prepare(raw, Context(), "t")
    plan = decide(module, args, run(module.probe(args, False)))
    assert plan.changed
    done = subprocess.run(["sh", "-c", plan.script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    manifest = json.loads((ch / "include/cccl/.pctfleet-overlay.json").read_text())
    assert manifest["source"] == raw["source"] and manifest["cccl_version"] == "3.1.2"
    again = decide(module, args, run(module.probe(args, False)))
    assert not again.changed, again.diff


def test_forged_cccl_manifest_is_not_a_fact(tmp_path):
    venv, ch = venv_tree(tmp_path)
    dst = ch / "include/cccl"
    dst.mkdir(parents=True)
    forged = f'{{"tree_hash": "x"}}\n{fake_end()}\nsource_version=3.1.2\n'
    (dst / ".pctfleet-overlay.json").write_text(forged)
    raw = {"venv": str(venv), "source": str(tmp_path / "none")}
    fact = run(CcclOverlay().probe(CcclOverlay().prepare(raw, Context(), "t"), False))
    assert fact.fields()["manifest"] == forged.rstrip("\n")
    assert "source_version" not in fact.fields()


# --- server_extra_env -----------------------------------------------------------------


@pytest.mark.parametrize("key", ["A;rm -rf /", "1X", "A B", "$(id)"])
def test_env_file_keys_must_be_shell_names(key):
    args = {"name": "s", "command": ["x"], "env_file_vars": {"OK_1": "v", key: "v"}}
    with pytest.raises(PlaybookError, match=re.escape(repr(key))):
        Server().prepare(args, Context(), "t")


def test_the_lookup_survives_set_e_without_a_venv(tmp_path):
    """Change scripts run `set -e`: finding nothing is not an error."""
    script = "set -e\n" + preamble(tmp_path / "none") + 'echo "CH=$CH"'
    done = subprocess.run(["sh", "-c", script], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.startswith("CH=" + str(tmp_path / "none")), done


def test_a_bad_server_extra_env_key_stops_site_yml_at_preflight(tmp_path):
    """Exit 4, one line naming the key, before any connection (the node has no sshd)."""
    repo = Path(__file__).resolve().parents[2]
    inventory = tmp_path / "inv.yml"
    inventory.write_text("nodes:\n  pve1:\n    address: 127.0.13.99\n    containers: {200: {}}\n")
    extra = json.dumps({"server_extra_env": {"OK": "1", "X;touch /tmp/p": "v"}})
    done = subprocess.run(
        [str(Path(sys.executable).parent / "pctfleet"), "run", str(repo / "playbooks/site.yml"),
         "-i", str(inventory), "-e", extra, "--journal-dir", str(tmp_path / "j")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 4, done.stderr
    assert done.stderr.strip().count("\n") == 0 and "'X;touch /tmp/p'" in done.stderr


def test_the_env_file_finds_cuda_home_when_sourced(tmp_path):
    """site.yml gives no cuda_home: the env file finds the python3.13 venv's, under set -e."""
    from pctfleet.playbook.templating import render_template_file

    repo = Path(__file__).resolve().parents[2]
    venv, ch = venv_tree(tmp_path)
    for where, wanted in ((venv, str(ch)), (tmp_path / "none", "")):
        env = tmp_path / "sglang.env"
        variables = {"inventory_hostname": "x", "cuda_home": "", "venv": str(where),
                     "flashinfer_workspace_base": "/w", "sglang_warmup_timeout": 1}  # fmt: skip
        env.write_text(render_template_file(repo / "templates/sglang.env.j2", variables, where="t"))
        script = f'set -e; set -a; . {env}; set +a; echo "$CUDA_HOME"; echo "$PATH"'
        done = subprocess.run(["sh", "-c", script], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines() == [wanted, f"{wanted}/bin:{where}/bin:" + SYSTEM_PATH]


SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
