"""`gather_facts`: a subset of Ansible's setup facts, read in a play's first probe.

The container prints raw readings (sh/gather_facts.sh); the Ansible names and
values are derived here, as ansible-core's fact collectors derive them, so a
playbook reads `ansible_facts.distribution` or `ansible_distribution` alike.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from datetime import UTC, datetime
from typing import Any

import jinja2

from pctfleet.facts.kv import decode_fields
from pctfleet.facts.script import build_script
from pctfleet.playbook.templating import names_reached
from pctfleet.sh import snippet as sh_snippet

KEY = "gather_facts"  # the probe key the readings come back under

FACT_NAMES = (
    "architecture", "date_time", "distribution", "distribution_major_version",
    "distribution_release", "distribution_version", "effective_group_id",
    "effective_user_id", "env", "hostname", "kernel", "kernel_version", "machine",
    "memfree_mb", "memtotal_mb", "nodename", "os_family", "pkg_mgr", "processor_cores",
    "processor_count", "processor_nproc", "processor_threads_per_core", "processor_vcpus",
    "python", "python_version", "real_group_id", "real_user_id", "service_mgr", "system",
    "user_dir", "user_gecos", "user_gid", "user_id", "user_shell", "user_uid",
)  # fmt: skip
# Every name gathering defines at the top level: what preflight must wait for.
NAMES = frozenset({"ansible_facts", *(f"ansible_{name}" for name in FACT_NAMES)})
_PLACEHOLDERS = {name: jinja2.ChainableUndefined(name=name) for name in NAMES}

# The interpreter's own description, as ansible-core's python collector gives it.
_PY_FACTS = (
    "import json, platform, sys\n"
    "v = sys.version_info\n"
    "print(json.dumps({'version': platform.python_version(), 'python': {"
    "'version': {'major': v[0], 'minor': v[1], 'micro': v[2], 'releaselevel': v[3],"
    " 'serial': v[4]}, 'version_info': list(v), 'executable': sys.executable,"
    " 'has_sslcontext': True, 'type': sys.implementation.name}}))"
)
_NAMES_BY_ID = {
    "rhel": "RedHat", "centos": "CentOS", "almalinux": "AlmaLinux", "rocky": "Rocky",
    "ol": "OracleLinux", "amzn": "Amazon", "arch": "Archlinux", "sles": "SLES",
    "opensuse-leap": "openSUSE Leap", "opensuse-tumbleweed": "openSUSE Tumbleweed",
    "linuxmint": "Linux Mint",
}  # fmt: skip
_FAMILIES = {
    "Debian": ("Debian", "Ubuntu", "Raspbian", "Linux Mint", "Devuan", "Kali", "Pop!_OS"),
    "RedHat": ("RedHat", "CentOS", "Fedora", "AlmaLinux", "Rocky", "OracleLinux", "Amazon"),
    "Suse": ("SLES", "openSUSE Leap", "openSUSE Tumbleweed", "Suse"),
    "Archlinux": ("Archlinux", "Manjaro"),
    "Alpine": ("Alpine",),
}
# Which package manager each family uses, first found wins (ansible-core's order).
_PKG_MGRS = {
    "Debian": ("apt-get",),
    "RedHat": ("dnf", "yum"),
    "Suse": ("zypper",),
    "Archlinux": ("pacman",),
    "Alpine": ("apk",),
}
_ALL_PKG_MGRS = ("apt-get", "dnf", "yum", "zypper", "pacman", "apk")
# The probe script puts the usual directories before the PATH it was given
# (facts/script.py); `ansible_env.PATH` is the one given, as the tasks' commands get it.
_PROBE_PATH = re.match(r"PATH=(.*:)\$PATH\n", build_script({}))
if _PROBE_PATH is None:  # pragma: no cover - the probe script changed its first line
    raise RuntimeError("facts/script.py's probe no longer starts with PATH=...:$PATH")
PROBE_PATH_HEAD = _PROBE_PATH.group(1)


def snippet(variables: dict | None = None) -> str:
    """The probe snippet (RunOptions.extra_probes' shape: variables in, sh out)."""
    return sh_snippet("gather_facts", PY_FACTS=_PY_FACTS)


def parse(output: str) -> dict[str, Any]:
    """`ansible_facts` from the snippet's output."""
    raw = decode_fields(output)
    facts: dict[str, Any] = {"system": "Linux"}
    facts.update(_distribution(raw))
    facts.update(_machine(raw))
    facts.update(_processors(raw.get("cpuinfo", ""), raw.get("nproc", "")))
    facts.update(_python(raw.get("python", "")))
    facts["pkg_mgr"] = _pkg_mgr(facts["os_family"], raw)
    facts["service_mgr"] = _service_mgr(raw)
    if "env0" in raw or "env" in raw:
        facts["env"] = _env(raw)
    facts.update(_user(raw))
    date_time = _date_time(raw)
    if date_time:
        facts["date_time"] = date_time
    return facts


def variables(facts: dict[str, Any]) -> dict[str, Any]:
    """`ansible_facts` and the `ansible_<name>` copies Ansible injects beside it."""
    return {"ansible_facts": facts, **{f"ansible_{k}": v for k, v in facts.items()}}


def speculative(scope: dict) -> dict:
    """`scope` with every fact name rendering as empty (attributes too), to build the
    probe snippet of a task whose arguments read facts before they are read.

    The guess is safe: the engine reuses a reading only for the very snippet the
    task renders once the facts are known, so a probe that does not depend on the
    facts (copy's and template's read `dest`, whatever the content) is read once,
    and any other is read again when the task is reached.
    """
    return {**_PLACEHOLDERS, **scope}


# Arguments that are expressions, not templates (assert's `that`, debug's `var`).
_EXPRESSION_ARGS = {"assert": ("that",), "debug": ("var",)}


def reads_facts(task: Any, scope: dict) -> bool:
    """Whether the task's arguments, `when`, other conditions or loop read a gathered
    name."""
    reached = names_reached(dict(task.args), scope)
    expressions = [task.args[k] for k in _EXPRESSION_ARGS.get(task.module, ()) if k in task.args]
    expressions += [*task.when, *(task.changed_when or []), *(task.failed_when or [])]
    expressions += [task.until] if task.until else []
    for expression in expressions:
        reached |= names_reached(expression, scope, expression=True)
    if task.loop is not None:
        reached |= names_reached(task.loop.terms, scope)
    return not reached.isdisjoint(NAMES)


def _os_release(text: str) -> dict[str, str]:
    """KEY=value lines of /etc/os-release, quotes removed (never run as shell)."""
    fields = {}
    for line in text.splitlines():
        key, sep, value = line.strip().partition("=")
        if sep and key.isidentifier():
            fields[key] = value.strip().strip("'\"")
    return fields


def _distribution(raw: dict[str, str]) -> dict[str, Any]:
    release = _os_release(raw.get("os_release", ""))
    ident = release.get("ID", "").lower()
    name = _NAMES_BY_ID.get(ident) or ident.capitalize() or "OtherLinux"
    version = release.get("VERSION_ID", "")
    debian = raw.get("debian_version", "").strip()
    # distro's "best" version: Debian's os-release has no minor version, debian_version has.
    if ident == "debian" and re.fullmatch(r"\d+(\.\d+)+", debian):
        version = debian
    codename = release.get("VERSION_CODENAME") or release.get("UBUNTU_CODENAME")
    if not codename:
        found = re.search(r"\(([^)]+)\)", release.get("VERSION", ""))
        codename = found.group(1) if found else "NA"
    family = next((f for f, names in _FAMILIES.items() if name in names), name)
    return {
        "distribution": name,
        "distribution_release": codename,
        "distribution_version": version,
        "distribution_major_version": version.split(".")[0] if version else "NA",
        "os_family": family,
    }


def _machine(raw: dict[str, str]) -> dict[str, Any]:
    machine = raw.get("machine", "").strip()
    nodename = raw.get("nodename", "").strip()
    return {
        "architecture": machine,
        "machine": machine,
        "kernel": raw.get("kernel", "").strip(),
        "kernel_version": raw.get("kernel_version", "").strip(),
        "nodename": nodename,
        "hostname": nodename.split(".")[0],
        "memtotal_mb": _int(raw.get("memtotal_kb")) // 1024,
        "memfree_mb": _int(raw.get("memfree_kb")) // 1024,
    }


def _processors(cpuinfo: str, nproc: str) -> dict[str, Any]:
    """ansible-core's x86 rule: sockets from `physical id`, cores per socket from
    `cpu cores`, threads from `siblings`; without sockets, one per `processor`."""
    entries, sockets, cores, siblings = ([_int(w) for w in cpuinfo.split()] + [0] * 4)[:4]
    if sockets:
        per_socket = cores or 1
        threads = max(1, siblings // per_socket) if siblings else 1
        count, vcpus = sockets, threads * sockets * per_socket
    else:
        count, per_socket, threads, vcpus = entries, 1, 1, entries
    return {
        "processor_count": count,
        "processor_cores": per_socket,
        "processor_threads_per_core": threads,
        "processor_vcpus": vcpus,
        "processor_nproc": _int(nproc) or vcpus,
    }


def _python(text: str) -> dict[str, Any]:
    try:
        found = json.loads(text)
        return {"python_version": str(found["version"]), "python": dict(found["python"])}
    except (ValueError, KeyError, TypeError):
        return {"python_version": "", "python": {}}  # no python in the container


def _pkg_mgr(family: str, raw: dict[str, str]) -> str:
    order = _PKG_MGRS.get(family, ()) + _ALL_PKG_MGRS
    found = next((m for m in order if raw.get(f"has_{m}")), "unknown")
    return "apt" if found == "apt-get" else found


def _service_mgr(raw: dict[str, str]) -> str:
    """ansible-core's rule: PID 1's name unless it is `init` or a shell, else
    systemd when it runs, openrc, sysvinit when /etc/init.d exists, else `service`."""
    proc1 = raw.get("proc1", "").strip().rsplit("/", 1)[-1]
    if proc1 and proc1 != "init" and not proc1.endswith("sh"):
        return "runit" if proc1.startswith("runit") else proc1
    for flag, name in (("systemd_running", "systemd"), ("openrc", "openrc"), ("initd", "sysvinit")):
        if raw.get(flag):
            return name
    return "service"


def _env(raw: dict[str, str]) -> dict[str, str]:
    """The environment the snippet ran with, in its order (os.environ's, as ansible-core's
    env collector reads it), PATH as it was before the probe script put its own first."""
    env: dict[str, str] = {}
    if "env0" in raw:
        try:
            entries = base64.b64decode(raw["env0"], validate=True).split(b"\0")
        except (binascii.Error, ValueError):
            entries = []
        for entry in entries:
            key, sep, value = entry.decode("utf-8", "replace").partition("=")
            if sep and key:
                env[key] = value
    else:  # `env`'s lines: a line that is no NAME=value continues the value before it
        key = None
        for line in raw["env"].split("\n"):
            name, sep, value = line.partition("=")
            if sep and name:
                key, env[name] = name, value
            elif key is not None:
                env[key] += "\n" + line
    path = env.get("PATH")
    if path is not None and path.startswith(PROBE_PATH_HEAD):
        env["PATH"] = path[len(PROBE_PATH_HEAD) :]
    return env


def _user(raw: dict[str, str]) -> dict[str, Any]:
    """ansible-core's user collector: the name getpass.getuser() gives, that name's passwd
    entry (else the real uid's), the real and effective ids (its effective_group_id is
    the real gid, as there)."""
    ids = [_int(word) for word in raw.get("ids", "").split(",")]
    if len(ids) != 3:
        return {}
    real_uid, euid, real_gid = ids
    fields = raw.get("passwd", "").strip().split(":")
    found: dict[str, Any] = {"user_id": raw.get("user") or (fields[0] if len(fields) == 7 else "")}
    if len(fields) == 7:
        found |= {
            "user_uid": _int(fields[2]),
            "user_gid": _int(fields[3]),
            "user_gecos": fields[4],
            "user_dir": fields[5],
            "user_shell": fields[6],
        }
    return found | {
        "real_user_id": real_uid,
        "effective_user_id": euid,
        "real_group_id": real_gid,
        "effective_group_id": real_gid,
    }


def _date_time(raw: dict[str, str]) -> dict[str, str]:
    """ansible-core's date_time collector, from one reading of the container's clock:
    local fields as its `date` printed them, the UTC ones from the same epoch second."""
    # `date +%s,%N,%Y,%m,%d,%H,%M,%S,%A,%w,%W,%z,%Z`: the weekday's name is what is left
    # between the first eight fields and the last four.
    fields = raw.get("date", "").split(",")
    if len(fields) < 13 or not fields[0].isdigit():
        return {}
    epoch, nanos, y, m, d, hh, mm, ss = fields[:8]
    weekday_number, weeknumber, offset, zone = fields[-4:]
    micro = nanos.ljust(9, "0")[:6] if nanos.isdigit() else "000000"  # %N is GNU's
    utc = datetime.fromtimestamp(int(epoch), UTC)
    return {
        "year": y,
        "month": m,
        "weekday": ",".join(fields[8:-4]),
        "weekday_number": weekday_number,
        "weeknumber": weeknumber,
        "day": d,
        "hour": hh,
        "minute": mm,
        "second": ss,
        "epoch": epoch,
        "epoch_int": str(int(epoch)),
        "date": f"{y}-{m}-{d}",
        "time": f"{hh}:{mm}:{ss}",
        "iso8601_micro": utc.strftime("%Y-%m-%dT%H:%M:%S.") + micro + "Z",
        "iso8601": utc.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "iso8601_basic": f"{y}{m}{d}T{hh}{mm}{ss}{micro}",
        "iso8601_basic_short": f"{y}{m}{d}T{hh}{mm}{ss}",
        "tz": zone,
        "tz_dst": _dst_name(raw, zone),
        "tz_offset": offset,
    }


def _dst_name(raw: dict[str, str], now: str) -> str:
    """time.tzname[1] as CPython makes it on glibc: of the zone at the year's start and
    half a year on, the name of the one further east (July's when they are even). Where
    `date -d` could not say, the zone's name now."""
    jan, jul = raw.get("zone_jan", "").split(",", 1), raw.get("zone_jul", "").split(",", 1)
    if len(jan) != 2 or len(jul) != 2:
        return now
    return jan[1] if _offset(jan[0]) > _offset(jul[0]) else jul[1]


def _offset(text: str) -> int:
    """Minutes east of UTC from %z's [+-]HHMM."""
    found = re.fullmatch(r"([+-])(\d\d)(\d\d)", text)
    if not found:
        return 0
    minutes = int(found.group(2)) * 60 + int(found.group(3))
    return -minutes if found.group(1) == "-" else minutes


def _int(text: str | None) -> int:
    try:
        return int(str(text).strip())
    except ValueError:
        return 0
