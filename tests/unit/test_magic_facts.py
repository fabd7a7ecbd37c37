"""Magic variables, `omit` and gather_facts, through prepare + execute on this machine."""

from __future__ import annotations

import base64
import getpass
import json
import os
import platform
import pwd
import subprocess
import textwrap
import time
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


TEMPLATED_INVENTORY = """\
all:
  vars: {url: "http://{{ inventory_hostname }}:{{ port }}", broken: "{{ nowhere }}"}
  hosts:
    a: {proxmox_vmid: 200, ansible_host: 127.0.0.9, port: 1}
    b: {proxmox_vmid: 201, ansible_host: 127.0.0.9, port: 2}
"""
TEMPLATED_BOOK = WRITE % (
    "{{{{ inventory_hostname }}}}",
    """'own': hostvars[inventory_hostname].url, 'b': hostvars['b'].url,
          'all': groups.all | map('extract', hostvars, 'url') | list,
          'broken': hostvars['b'].broken | default('undefined')""",
)


def test_a_template_in_another_host_s_vars_renders_with_that_host_s_vars(tmp_path):
    # As ansible-core (measured): hostvars[h].url is h's url, not the template text.
    runs = run_book(tmp_path, TEMPLATED_BOOK.format(out=tmp_path), TEMPLATED_INVENTORY)
    assert [r.status for r in runs] == ["changed", "changed"], [r.message for r in runs]
    a = json.loads((tmp_path / "a.json").read_text())
    assert (a["own"], a["b"], a["broken"]) == ("http://a:1", "http://b:2", "undefined")
    assert a["all"] == ["http://a:1", "http://b:2"]


def test_inventory_files_and_the_play_name_as_ansible_names_them(tmp_path):
    from pctfleet.inventory import load_inventory

    (tmp_path / "inv").mkdir()
    (tmp_path / "inv" / "hosts.yml").write_text(TEMPLATED_INVENTORY)
    book = WRITE % (
        "{{{{ inventory_hostname }}}}",
        "'dir': inventory_dir, 'file': inventory_file, 'sources': ansible_inventory_sources,"
        " 'play': ansible_play_name",
    )
    (tmp_path / "site.yml").write_text(
        book.format(out=tmp_path).replace("- hosts: all", "- name: p\n  hosts: all")
    )
    inv = load_inventory(tmp_path / "inv" / "hosts.yml")
    request = RunRequest(
        tmp_path / "site.yml", inv, inv.select("all"), ConnectOptions(), RunOptions()
    )
    runs = execute(prepare(request), fleet_factory=_LocalFleet)
    assert [r.status for r in runs] == ["changed", "changed"], [r.message for r in runs]
    a = json.loads((tmp_path / "a.json").read_text())
    hosts = str(tmp_path / "inv" / "hosts.yml")
    assert a == {"dir": str(tmp_path / "inv"), "file": hosts, "sources": [hosts], "play": "p"}


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


def _env0(*entries: str) -> str:
    return base64.b64encode("".join(f"{e}\0" for e in entries).encode()).decode()


def test_environment_readings():
    # NUL-separated: a value keeps its newlines and `=`; PATH is the one the probe was
    # given, without the directories the probe script puts before it.
    path = gathered.PROBE_PATH_HEAD + "/opt/bin:/usr/bin"
    env0 = _env0("HOME=/home/ann", f"PATH={path}", "ODD={{ x }}\nb=c", "EMPTY=")
    facts = gathered.parse(_readings(env0=env0))
    want = {"HOME": "/home/ann", "PATH": "/opt/bin:/usr/bin", "ODD": "{{ x }}\nb=c", "EMPTY": ""}
    assert list(facts["env"].items()) == list(want.items())
    assert gathered.variables(facts)["ansible_env"] is facts["env"]
    # `env`'s lines where there is no `env -0`: a line without NAME= goes on the value before
    facts = gathered.parse(_readings(env="HOME=/root\nODD=a\n b\nPATH=/bin"))
    assert facts["env"] == {"HOME": "/root", "ODD": "a\n b", "PATH": "/bin"}
    # nothing read (a simulated container): no ansible_env rather than a made-up one
    assert "env" not in gathered.parse("") and "date_time" not in gathered.parse("")


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        (  # no login name in the environment: the real uid's entry
            {"user": "", "ids": "0,0,0", "passwd": "root:x:0:0:root:/root:/bin/bash"},
            ("root", 0, 0, "root", "/root", "/bin/bash", 0, 0, 0, 0),
        ),
        (  # $USER's name and its entry, whatever the uid; effective_group_id is the real gid
            {"user": "ann", "ids": "0,1000,5",
             "passwd": "ann:x:1000:100:Ann B,,,:/home/ann:/bin/sh"},
            ("ann", 1000, 100, "Ann B,,,", "/home/ann", "/bin/sh", 0, 1000, 5, 5),
        ),
    ],
)  # fmt: skip
def test_user_readings_as_ansible_derives_them(raw, want):
    facts = gathered.parse(_readings(**raw))
    names = "user_id user_uid user_gid user_gecos user_dir user_shell real_user_id"
    names += " effective_user_id real_group_id effective_group_id"
    assert tuple(facts[n] for n in names.split()) == want
    assert gathered.variables(facts)["ansible_user_dir"] == want[4]


# One `date` reading: %s,%N,%Y,%m,%d,%H,%M,%S,%A,%w,%W,%z,%Z.
SYDNEY = "1796373146,730616123,2026,12,04,19,32,26,Friday,5,48,+1100,AEDT"


def test_clock_reading_as_ansible_derives_it():
    raw = {"date": SYDNEY, "zone_jan": "+1100,AEDT", "zone_jul": "+1000,AEST"}
    facts = gathered.parse(_readings(**raw))
    assert list(facts["date_time"].items()) == [
        ("year", "2026"), ("month", "12"), ("weekday", "Friday"), ("weekday_number", "5"),
        ("weeknumber", "48"), ("day", "04"), ("hour", "19"), ("minute", "32"),
        ("second", "26"), ("epoch", "1796373146"), ("epoch_int", "1796373146"),
        ("date", "2026-12-04"), ("time", "19:32:26"),
        ("iso8601_micro", "2026-12-04T08:32:26.730616Z"), ("iso8601", "2026-12-04T08:32:26Z"),
        ("iso8601_basic", "20261204T193226730616"), ("iso8601_basic_short", "20261204T193226"),
        ("tz", "AEDT"), ("tz_dst", "AEDT"), ("tz_offset", "+1100"),
    ]  # fmt: skip
    assert gathered.variables(facts)["ansible_date_time"] is facts["date_time"]


@pytest.mark.parametrize(
    ("jan", "jul", "dst"),
    [
        ("-0500,EST", "-0400,EDT", "EDT"),
        ("+1100,AEDT", "+1000,AEST", "AEDT"),  # south: January is the summer
        ("+0000,GMT", "+0100,IST", "IST"),  # Dublin: CPython's pick, not glibc's tzname
        ("+0900,JST", "+0900,JST", "JST"),
        ("", "", "AEDT"),  # no `date -d`: the zone's name now
    ],
)
def test_the_zone_s_daylight_name_as_cpython_makes_time_tzname(jan, jul, dst):
    facts = gathered.parse(_readings(date=SYDNEY, zone_jan=jan, zone_jul=jul))
    assert facts["date_time"]["tz_dst"] == dst


def test_a_clock_without_nanoseconds_has_no_fraction():
    facts = gathered.parse(_readings(date=SYDNEY.replace("730616123", "%N")))
    assert facts["date_time"]["iso8601_micro"] == "2026-12-04T08:32:26.000000Z"
    assert facts["date_time"]["iso8601_basic"] == "20261204T193226000000"
    assert "date_time" not in gathered.parse(_readings(date="not a clock"))


ENV_BOOK = """\
- hosts: all
  tasks:
    - name: record what the facts say
      copy:
        dest: "{out}/env.json"
        content: "{{{{ {{'odd': ansible_env.PF_ODD, 'home': ansible_facts.env.HOME,
          'path': ansible_env.PATH, 'env': ansible_env, 'user': ansible_user_id,
          'uid': ansible_user_uid, 'gid': ansible_facts.user_gid, 'dir': ansible_user_dir,
          'shell': ansible_user_shell, 'euid': ansible_effective_user_id,
          'dt': ansible_date_time, 'epoch': ansible_facts.date_time.epoch}} | to_json }}}}"
"""


def test_env_user_and_clock_facts_are_this_machine_s(tmp_path, monkeypatch):
    odd = "{{ 1 + 1 }}\nsecond=line"  # data: never rendered
    monkeypatch.setenv("PF_ODD", odd)
    started = time.time()
    (run,) = run_book(tmp_path, ENV_BOOK.format(out=tmp_path), inventory=NATIVE_INVENTORY)
    assert run.status == "changed", run.message
    seen = json.loads((tmp_path / "env.json").read_text())
    assert (seen["odd"], seen["home"], seen["path"]) == (
        odd,
        os.environ["HOME"],
        os.environ["PATH"],
    )
    # Run where the playbook is, as ansible-playbook -c local runs: the shell says so.
    assert seen["env"] == _inherited() | {"PWD": str(tmp_path)}
    entry = pwd.getpwnam(getpass.getuser())
    assert (seen["user"], seen["uid"], seen["gid"]) == (entry.pw_name, entry.pw_uid, entry.pw_gid)
    assert (seen["dir"], seen["shell"], seen["euid"]) == (
        entry.pw_dir,
        entry.pw_shell,
        os.geteuid(),
    )
    # read while the run ran, to the microsecond (the same clock)
    fraction = int(seen["dt"]["iso8601_micro"][20:26])
    assert started <= int(seen["epoch"]) + fraction / 1e6 <= time.time()
    assert seen["dt"]["tz_offset"] == time.strftime("%z")
    assert seen["dt"]["date"] == time.strftime("%Y-%m-%d", time.localtime(int(seen["epoch"])))


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


def _inherited() -> dict[str, str]:
    """The environment a child process gets: os.environ misses what C code set."""
    listed = subprocess.run(["env", "-0"], capture_output=True, check=True).stdout.decode()
    return dict(entry.split("=", 1) for entry in listed.split("\0") if entry)


@pytest.mark.skipif(
    not (ANSIBLE.parent.parent / ".pctfleet-bench").exists(),
    reason="no whole Ansible venv (bench/ansible_env.py)",
)
def test_this_machine_s_facts_are_ansible_s(tmp_path):
    """ansible-core's setup module on this machine says what we say (free memory moves)."""
    from pctfleet.facts import script

    argv = [str(ANSIBLE), "localhost", "-c", "local", "-m", "setup", "-o"]
    argv += ["-e", "ansible_python_interpreter=/usr/bin/python3"]
    env = {**_inherited(), "ANSIBLE_LOCAL_TEMP": str(tmp_path), "HOME": str(tmp_path)}
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=env)
    theirs = json.loads(done.stdout.split("=>", 1)[1])["ansible_facts"]
    reading = script.run_probe(LocalTarget(), {"g": gathered.snippet()})["g"].output
    ours = gathered.parse(reading)
    moving = ("memfree_mb", "date_time", "env")  # free memory and the clock move; HOME is set
    differ = {
        k: (v, theirs.get(f"ansible_{k}"))
        for k, v in ours.items()
        if k not in moving and v != theirs.get(f"ansible_{k}")
    }
    assert not differ
    theirs_env = {k: v for k, v in theirs["ansible_env"].items() if k != "ANSIBLE_LOCAL_TEMP"}
    assert theirs_env.pop("HOME") == str(tmp_path)
    assert {k: v for k, v in ours["env"].items() if k != "HOME"} == theirs_env
    clock, their_clock = ours["date_time"], theirs["ansible_date_time"]
    assert sorted(clock) == sorted(their_clock)
    zone = ("tz", "tz_dst", "tz_offset")
    assert [clock[k] for k in zone] == [their_clock[k] for k in zone]
    assert 0 <= int(clock["epoch"]) - int(their_clock["epoch"]) < 60


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
