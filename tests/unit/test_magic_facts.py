"""Magic variables, `omit` and gather_facts, through prepare + execute on this machine."""

from __future__ import annotations

import json
import os
import platform
import textwrap
from pathlib import Path

import pytest

from pctfleet.errors import InputError
from pctfleet.facts import gathered
from pctfleet.facts.kv import encode_fields
from pctfleet.inventory import inventory_from_text
from pctfleet.run.engine import RunOptions
from pctfleet.run.playbookrun import RunRequest, execute, prepare
from pctfleet.transport.local import LocalTarget
from pctfleet.transport.options import ConnectOptions

ANSIBLE_INVENTORY = """\
all:
  vars: {ansible_user: root, site: lab}
  children:
    gpu:
      vars: {ansible_host: 127.0.0.9}
      hosts:
        web1.example.org: {proxmox_vmid: 200, role: web}
    plain:
      hosts: {}
  hosts:
    db1: {proxmox_vmid: 201, ansible_host: 127.0.0.9}
"""
NATIVE_INVENTORY = "nodes:\n  pve1:\n    address: 10.1.2.6\n    containers: [200]\n"


class _LocalFleet:
    def __init__(self, containers, connect):  # noqa: ANN001, ARG002
        self.targets = [LocalTarget() for _ in containers]

    def close(self) -> None:
        pass


def run_book(tmp_path, book: str, inventory: str = ANSIBLE_INVENTORY, **options):  # noqa: ANN201
    (tmp_path / "site.yml").write_text(textwrap.dedent(book))
    inv = inventory_from_text(inventory)
    request = RunRequest(
        tmp_path / "site.yml", inv, inv.select("all"), ConnectOptions(), RunOptions(**options)
    )
    return execute(prepare(request), fleet_factory=_LocalFleet)


WRITE = """\
- hosts: all
  gather_facts: false
  tasks:
    - name: write what the host knows
      copy:
        dest: "{out}/%s.json"
        mode: "{{{{ file_mode | default(omit) }}}}"
        content: "{{{{ {{%s}} | to_json }}}}"
"""
MAGIC_BOOK = WRITE % (
    "{{{{ inventory_hostname }}}}",
    """'short': inventory_hostname_short, 'host': ansible_host,
          'groups': groups, 'group_names': group_names, 'play_hosts': ansible_play_hosts,
          'batch': ansible_play_batch, 'check': ansible_check_mode, 'diff': ansible_diff_mode,
          'dir': playbook_dir, 'tags': ansible_run_tags, 'skip': ansible_skip_tags,
          'role_of_web': hostvars['web1.example.org'].role,
          'site_of_db': hostvars['db1'].site,
          'name_in_hostvars': hostvars['db1'].inventory_hostname""",
)


def test_magic_variables_as_ansible_names_them(tmp_path):
    runs = run_book(tmp_path, MAGIC_BOOK.format(out=tmp_path), tags={"all"})
    assert [r.status for r in runs] == ["changed", "changed"], [r.message for r in runs]
    web = json.loads((tmp_path / "web1.example.org.json").read_text())
    db = json.loads((tmp_path / "db1.json").read_text())
    assert web["short"] == "web1" and web["host"] == "127.0.0.9"
    assert sorted(web["groups"]["all"]) == ["db1", "web1.example.org"]
    assert {k: v for k, v in web["groups"].items() if k != "all"} == {
        "ungrouped": ["db1"],
        "gpu": ["web1.example.org"],
        "plain": [],
    }
    assert web["group_names"] == ["gpu"] and db["group_names"] == ["ungrouped"]
    assert sorted(web["play_hosts"]) == sorted(web["batch"]) == ["db1", "web1.example.org"]
    assert (web["check"], web["diff"], web["dir"]) == (False, False, str(tmp_path))
    assert (web["tags"], web["skip"]) == (["all"], [])
    assert (web["role_of_web"], web["site_of_db"], web["name_in_hostvars"]) == ("web", "lab", "db1")


NATIVE_BOOK = WRITE % (
    "x",
    "'name': inventory_hostname, 'short': inventory_hostname_short, 'host': ansible_host,"
    " 'groups': groups, 'node': hostvars[inventory_hostname].node_name",
)


def test_a_native_inventory_keeps_the_key_as_inventory_hostname(tmp_path):
    runs = run_book(tmp_path, NATIVE_BOOK.format(out=tmp_path), inventory=NATIVE_INVENTORY)
    assert runs[0].status == "changed", runs[0].message
    seen = json.loads((tmp_path / "x.json").read_text())
    assert seen["groups"] == {"all": ["pve1/200"], "ungrouped": ["pve1/200"]}
    assert (seen["name"], seen["short"], seen["host"]) == ("pve1/200", "pve1/200", "10.1.2.6")
    assert seen["node"] == "pve1"


def test_a_parameter_rendered_to_omit_is_dropped(tmp_path):
    os.umask(0o022)
    book = NATIVE_BOOK.format(out=tmp_path)
    (run,) = run_book(tmp_path, book, inventory=NATIVE_INVENTORY)
    assert run.status == "changed", run.message
    assert oct((tmp_path / "x.json").stat().st_mode & 0o777) == "0o644"
    run_book(tmp_path, book, inventory=NATIVE_INVENTORY, extra_vars={"file_mode": "0600"})
    assert oct((tmp_path / "x.json").stat().st_mode & 0o777) == "0o600"


FACTS_BOOK = """\
- hosts: all
  tasks:
    - name: record the facts
      copy:
        dest: "{out}/facts.json"
        content: "{{{{ {{'d': ansible_facts.distribution, 'v': ansible_distribution_version,
          'family': ansible_os_family, 'arch': ansible_architecture,
          'py': ansible_python.version_info[:3], 'pyv': ansible_python_version,
          'cpus': ansible_processor_nproc, 'kernel': ansible_kernel,
          'host': ansible_hostname}} | to_json }}}}"
"""


def test_gathered_facts_are_this_machine_s(tmp_path):
    (run,) = run_book(tmp_path, FACTS_BOOK.format(out=tmp_path), inventory=NATIVE_INVENTORY)
    assert run.status == "changed", run.message
    (again,) = run_book(tmp_path, FACTS_BOOK.format(out=tmp_path), inventory=NATIVE_INVENTORY)
    seen = json.loads((tmp_path / "facts.json").read_text())
    lines = Path("/etc/os-release").read_text().splitlines()
    release = dict(line.split("=", 1) for line in lines if "=" in line)
    assert seen["d"] == release["ID"].strip('"').capitalize()
    assert seen["v"].split(".")[0] == release["VERSION_ID"].strip('"')
    assert seen["arch"] == platform.machine() and seen["kernel"] == platform.release()
    assert seen["cpus"] == os.cpu_count() and seen["host"] == platform.node().split(".")[0]
    # converged: the facts, then the copy's own probe: one call more than without facts
    assert (again.status, again.remote_calls) == ("ok", 2), again.message


def test_facts_cost_no_call_when_no_task_reads_them(tmp_path):
    book = f"- hosts: all\n  tasks:\n    - file: {{path: {tmp_path}/d, state: directory}}\n"
    for _ in range(2):
        (run,) = run_book(tmp_path, book, inventory=NATIVE_INVENTORY)
    assert (run.status, run.remote_calls) == ("ok", 1), run.message
    (run,) = run_book(
        tmp_path, "- hosts: all\n  tasks:\n    - debug: {msg: hi}\n", NATIVE_INVENTORY
    )
    assert (run.status, run.remote_calls) == ("ok", 0), run.message


def test_gather_facts_false_collects_nothing(tmp_path):
    book = FACTS_BOOK.format(out=tmp_path).replace("tasks:", "gather_facts: false\n  tasks:", 1)
    with pytest.raises(InputError, match="ansible_facts"):
        run_book(tmp_path, book, inventory=NATIVE_INVENTORY)


def _readings(**raw: str) -> str:
    return encode_fields(raw)


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        (
            {"os_release": 'ID=debian\nVERSION_ID="12"\nVERSION_CODENAME=bookworm\n',
             "debian_version": "12.7\n"},
            ("Debian", "bookworm", "12.7", "12", "Debian"),
        ),
        (
            {"os_release": 'ID=ubuntu\nVERSION_ID="22.04"\nVERSION="22.04.4 LTS (Jammy)"\n'
             "UBUNTU_CODENAME=jammy\n", "debian_version": "bookworm/sid\n"},
            ("Ubuntu", "jammy", "22.04", "22", "Debian"),
        ),
        (
            {"os_release": 'ID="rocky"\nVERSION_ID="9.3"\n'},
            ("Rocky", "NA", "9.3", "9", "RedHat"),
        ),
    ],
)  # fmt: skip
def test_distribution_facts_as_ansible_derives_them(raw, want):
    facts = gathered.parse(_readings(**raw))
    names = "distribution distribution_release distribution_version"
    names += " distribution_major_version os_family"
    assert tuple(facts[n] for n in names.split()) == want


def test_processor_and_service_manager_rules():
    facts = gathered.parse(_readings(cpuinfo="8 2 2 4", proc1="systemd", has_dnf="yes"))
    assert (facts["processor_count"], facts["processor_cores"]) == (2, 2)
    assert (facts["processor_threads_per_core"], facts["processor_vcpus"]) == (2, 8)
    assert (facts["service_mgr"], facts["pkg_mgr"]) == ("systemd", "dnf")
    facts = gathered.parse(_readings(cpuinfo="4 0 0 0", proc1="bash", initd="yes"))
    assert (facts["processor_count"], facts["processor_vcpus"]) == (4, 4)
    assert facts["service_mgr"] == "sysvinit"
    top = gathered.variables(facts)
    assert top["ansible_facts"] is facts and top["ansible_processor_count"] == 4


GUESSED = """\
- hosts: all
  tasks:
    - copy: {{dest: "{out}/%s", content: "%s\\n"}}
"""


@pytest.mark.parametrize(
    ("dest", "content", "calls"),
    [
        ("plain.txt", "{{{{ ansible_facts.distribution }}}}", 1),  # copy's probe reads dest only
        ("{{{{ ansible_distribution }}}}.txt", "x", 2),  # the guessed path was wrong: read again
    ],
)
def test_a_probe_that_does_not_depend_on_the_facts_is_read_with_them(
    tmp_path, dest, content, calls
):
    book = (GUESSED % (dest, content)).format(out=tmp_path)
    for _ in range(2):
        (run,) = run_book(tmp_path, book, inventory=NATIVE_INVENTORY)
    assert (run.status, run.remote_calls) == ("ok", calls), run.message
    lines = Path("/etc/os-release").read_text().splitlines()
    name = next(line[3:].strip('"').capitalize() for line in lines if line.startswith("ID="))
    written = {"plain.txt": f"{name}\n"} if calls == 1 else {f"{name}.txt": "x\n"}
    found = {p.name: p.read_text() for p in tmp_path.glob("*.txt")}
    assert found == written


ANSIBLE = Path("/var/cache/pctfleet/bench-ansible-venv/bin/ansible")


@pytest.mark.skipif(
    not (ANSIBLE.parent.parent / ".pctfleet-bench").exists(),
    reason="no whole Ansible venv (bench/ansible_env.py)",
)
def test_this_machine_s_facts_are_ansible_s(tmp_path):
    """ansible-core's setup module on this machine says what we say (free memory moves)."""
    import subprocess

    from pctfleet.facts import script

    argv = [str(ANSIBLE), "localhost", "-c", "local", "-m", "setup", "-o"]
    argv += ["-e", "ansible_python_interpreter=/usr/bin/python3"]
    env = {**os.environ, "ANSIBLE_LOCAL_TEMP": str(tmp_path), "HOME": str(tmp_path)}
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=env)
    theirs = json.loads(done.stdout.split("=>", 1)[1])["ansible_facts"]
    reading = script.run_probe(LocalTarget(), {"g": gathered.snippet()})["g"].output
    ours = gathered.parse(reading)
    differ = {
        k: (v, theirs.get(f"ansible_{k}"))
        for k, v in ours.items()
        if k != "memfree_mb" and v != theirs.get(f"ansible_{k}")
    }
    assert not differ


def _walked(hosts: int, monkeypatch) -> int:
    """How many values redaction looks at for one container of a fleet of `hosts`."""
    from pctfleet.playbook import templating
    from pctfleet.playbook.magic import PlayMagic

    lines = "".join(f"      {200 + i}: {{}}\n" for i in range(hosts))
    inv = inventory_from_text(f"nodes:\n  pve1:\n    address: 10.1.2.6\n    containers:\n{lines}")
    magic = PlayMagic(inv, inv.containers, RunOptions(), "/p")
    variables = {**inv.vars_for(inv.containers[0]), **magic.for_container(inv.containers[0])}
    seen = [0]
    walk = templating._scalars

    def counted(value, depth=0):  # noqa: ANN001, ANN202
        seen[0] += 1
        return walk(value, depth)

    monkeypatch.setattr(templating, "_scalars", counted)
    templating.secret_values(variables)
    return seen[0]


def test_redaction_does_not_walk_the_fleet_for_every_container(monkeypatch):
    assert _walked(5, monkeypatch) == _walked(500, monkeypatch)
