"""gather_facts against the lab's base containers: the facts a playbook writes are the
container's own (and ansible-core's setup module's), and they cost no extra call."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from bench import ansible_env  # noqa: E402

pytestmark = pytest.mark.lab

CONTAINERS = ["node1/200", "node1/201", "node2/200", "node2/201"]
BASE = ",".join(CONTAINERS)
OUT = "/root/pctfleet-facts.json"
NAMES = [
    "distribution",
    "distribution_release",
    "distribution_version",
    "distribution_major_version",
    "os_family",
    "architecture",
    "python_version",
    "memtotal_mb",
    "processor_count",
    "processor_vcpus",
    "hostname",
    "kernel",
    "pkg_mgr",
    "service_mgr",
    "user_id",
    "user_uid",
    "user_gid",
    "user_dir",
    "user_shell",
]
BOOK = f"""\
- hosts: all
  vars:
    names: {json.dumps(NAMES)}
  tasks:
    - name: write the gathered facts
      copy:
        dest: {OUT}
        content: |
          {{% for n in names %}}{{{{ n }}}}={{{{ ansible_facts[n] }}}}
          {{% endfor %}}top={{{{ ansible_distribution }}}}
          py={{{{ ansible_python.version.major }}}}
          host={{{{ inventory_hostname }}}}
          home={{{{ ansible_env.HOME }}}}
          path={{{{ ansible_facts.env.PATH }}}}
          tz={{{{ ansible_date_time.tz }}}}
          tz_offset={{{{ ansible_date_time.tz_offset }}}}
"""
# What the container says itself, in the facts' own terms.
TRUTH = (
    "cat /etc/debian_version; uname -m; uname -r; uname -n; nproc; "
    "python3 -c 'import platform; print(platform.python_version())'; "
    "sed -n 's/^MemTotal: *\\([0-9]*\\) kB$/\\1/p' /proc/meminfo"
)


@pytest.fixture(scope="module")
def info(lab):
    return lab.up(nodes=2, containers=2)


def pctfleet(*args: str) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "pctfleet", *args]
    return subprocess.run(argv, capture_output=True, timeout=600, text=True)


def run_book(info, book: Path, journal: Path) -> dict[str, dict]:
    proc = pctfleet(
        "run", str(book), "-i", str(info.inventory), "--json", "--limit", BASE,
        "--journal-dir", str(journal),
    )  # fmt: skip
    assert proc.stdout, proc.stderr
    doc = json.loads(proc.stdout)
    return {f"{c['node']}/{c['ctid']}": c for c in doc["containers"]}


def in_ct(info, key: str, script: str) -> str:
    proc = pctfleet("exec", "-i", str(info.inventory), "--limit", key, "--", "sh", "-c", script)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.fixture(scope="module")
def written(info, tmp_path_factory):
    """The playbook run twice: (first run, converged rerun, the files it wrote)."""
    work = tmp_path_factory.mktemp("facts")
    book = work / "facts.yml"
    book.write_text(BOOK)
    on = ",".join(CONTAINERS)
    pctfleet("exec", "-i", str(info.inventory), "--limit", on, "--", "rm", "-f", OUT)
    first, second = run_book(info, book, work), run_book(info, book, work)
    files = {key: _fields(in_ct(info, key, f"cat {OUT}")) for key in CONTAINERS}
    return first, second, files, work


def _fields(text: str) -> dict[str, str]:
    lines = [line.partition("=") for line in text.splitlines()]
    return {key: value for key, sep, value in lines if sep}


def test_facts_written_are_the_container_s_own(info, written):
    first, _, files, _ = written
    assert all(run["status"] == "changed" for run in first.values()), first
    for key in CONTAINERS:
        seen = files[key]
        lines = in_ct(info, key, TRUTH).splitlines()
        debian, machine, kernel, node, nproc, python, mem_kb = lines[-7:]
        assert (seen["distribution"], seen["top"], seen["os_family"]) == ("Debian",) * 3
        assert (seen["distribution_version"], seen["distribution_release"]) == (debian, "bookworm")
        assert seen["distribution_major_version"] == debian.split(".")[0]
        assert (seen["architecture"], seen["kernel"]) == (machine, kernel)
        assert seen["hostname"] == node.split(".")[0] and seen["host"] == key
        assert int(seen["processor_vcpus"]) >= 1 and seen["python_version"] == python
        assert seen["py"] == "3" and seen["memtotal_mb"] == str(int(mem_kb) // 1024)
        assert seen["pkg_mgr"] == "apt", seen
        assert int(nproc) >= 1
        said = in_ct(info, key, "date +'%Z %z'; id -un; echo \"$HOME\"").splitlines()[-3:]
        assert [f"{seen['tz']} {seen['tz_offset']}", seen["user_id"], seen["home"]] == said


def test_a_converged_rerun_costs_one_call(written):
    """The copy's probe reads `dest` only: guessed before the facts, read with them."""
    _, second, _, _ = written
    for key, run in second.items():
        assert run["status"] == "ok", (key, run["message"])
        assert run["remote_calls"] == 1, key


def test_facts_nobody_reads_cost_no_call(info, written):
    book = written[3] / "quiet.yml"
    book.write_text(f"- hosts: all\n  tasks:\n    - file: {{path: {OUT}, state: file}}\n")
    for key, run in run_book(info, book, written[3]).items():
        assert (run["status"], run["remote_calls"]) == ("ok", 1), (key, run["message"])


def test_facts_match_ansible_s_setup_module(lab, info, written, tmp_path):
    """ansible-core's own setup module on node1/200, through proxmox_pct_remote."""
    ansible_env.ensure_venv()
    ansible_env.write_lab_plugin()
    node = lab.info.node("node1")
    identity = str(lab.info.identity)
    inventory = {
        "all": {
            "vars": {"ansible_user": "root", "ansible_ssh_private_key_file": identity},
            "hosts": {"ct": {"ansible_host": node.address, "proxmox_vmid": 200}},
        }
    }
    (tmp_path / "inv.yml").write_text(yaml.safe_dump(inventory))
    env = ansible_env.environment(tmp_path, lab.info.known_hosts)
    argv = [str(ansible_env.VENV / "bin/ansible"), "-i", str(tmp_path / "inv.yml"), "ct"]
    argv += ["-m", "setup", "-o"]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)
    assert "SUCCESS" in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]
    theirs = json.loads(done.stdout.split("=>", 1)[1])["ansible_facts"]
    ours = written[2]["node1/200"]
    mismatched = {n: (ours[n], str(theirs.get(f"ansible_{n}"))) for n in NAMES}
    env, clock = theirs["ansible_env"], theirs["ansible_date_time"]
    for name, value in (("home", env["HOME"]), ("path", env["PATH"])):
        mismatched[name] = (ours[name], value)
    for name in ("tz", "tz_offset"):
        mismatched[name] = (ours[name], clock[name])
    mismatched = {n: pair for n, pair in mismatched.items() if pair[0] != pair[1]}
    assert not mismatched, mismatched
