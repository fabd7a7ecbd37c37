"""`pctfleet verify`: the checks of `pctfleet.infra` for every selected container.

One child pytest process runs all containers as pct:// hosts: each node is
reached over one SSH connection, and every container's facts are read in
parallel (each node up to its channel limit, `--forks` at most in all) in one
`pct exec` each; the checks then only
judge. The child's own plugin (`Collector`) writes a JSON record of every
check, which is turned here into a table, JSON and an exit code.

The parent never imports pytest or testinfra: the CLI starts fast without them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pctfleet import exitcodes
from pctfleet.inventory.local import LocalNode
from pctfleet.jsonfields import json_fields
from pctfleet.status import ContainerOutcome
from pctfleet.transport.connections import container_limit, node_options
from pctfleet.transport.options import ConnectOptions
from pctfleet.verify import LOCAL_SCHEME, SETTINGS, UNAVAILABLE, events

INFRA = Path(__file__).resolve().parent.parent / "infra"
STATUSES = ("passed", "failed", *UNAVAILABLE)
LOCAL_HOST_ID = "local"  # what testinfra's local backend calls its host


class VerifyUsageError(Exception):
    """The request cannot run as given; `code` is the exit code (5 options, 4 input)."""

    def __init__(self, message: str, code: int = exitcodes.BAD_OPTIONS) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class VerifyRequest:
    inventory: Any
    containers: list
    connect: ConnectOptions
    tests: list[Path] = field(default_factory=list)
    keyword: str | None = None
    junit: Path | None = None
    forks: int | None = None
    extra_vars: dict = field(default_factory=dict)


@dataclass
class CheckResult:
    id: str
    outcome: str  # passed | failed | error | skipped
    message: str = ""
    status: str | None = None  # set when the container itself could not be asked

    def as_json(self) -> dict:
        return json_fields(self, "id outcome message")


@dataclass
class ContainerResult(ContainerOutcome):
    # status: passed | failed | unreachable | ct-missing | ct-stopped | timeout | error
    checks: list[CheckResult] = field(default_factory=list)
    seconds: float | None = None  # reading its facts (the one remote call)
    remote_calls: int | None = None  # commands its checks sent, as its transport counted

    def as_json(self) -> dict:
        return json_fields(self, "container status message seconds remote_calls checks")


@dataclass
class VerifyResult:
    containers: list[ContainerResult]
    seconds: float

    def summary(self) -> dict:
        statuses = Counter(result.status for result in self.containers)
        outcomes = Counter(c.outcome for result in self.containers for c in result.checks)
        return {
            "containers": len(self.containers),
            **{status: statuses.get(status, 0) for status in STATUSES},
            "checks": dict(outcomes),
            "seconds": round(self.seconds, 2),
        }

    def as_json(self) -> dict:
        return json_fields(self, "containers summary", summary=self.summary())


# -- hosts and settings -----------------------------------------------------------------


def container_settings(variables: Mapping[str, Any], where: str) -> dict[str, str]:
    """The check settings of one container: its inventory vars over site.yml's defaults."""
    from pctfleet.playbook.templating import render

    merged = {**SETTINGS, **variables}
    rendered = render({name: merged[name] for name in SETTINGS}, merged, where=where)
    return {name: str(value) for name, value in rendered.items()}


def host_spec(node: Any, ctid: int, options: ConnectOptions, settings: Mapping[str, str]) -> str:
    """The pct:// URL of one container: every connection option and setting in its query.

    >>> host_spec(type("N", (), {"name": "pve1", "address": "10.1.2.6"}), 200,
    ...           ConnectOptions(user="root"), {"server_port": "30100"})
    'pct://root@10.1.2.6?container=200&node=pve1&connect_timeout=10.0&timeout=600.0&server_port=30100'
    """
    address = f"[{node.address}]" if ":" in node.address else node.address
    user = f"{urllib.parse.quote(options.user, safe='')}@" if options.user else ""
    port = f":{options.port}" if options.port else ""
    query: dict[str, Any] = {"container": ctid, "node": node.name}
    optional = {
        "identity": options.identity,
        "known_hosts": options.known_hosts,
        "accept_new": "1" if options.accept_new_host_keys else None,
        "ssh_config": options.ssh_config,
        "connect_timeout": options.connect_timeout,
        "timeout": options.command_timeout,
        "persist": options.persist or None,
    }
    query.update({k: v for k, v in optional.items() if v is not None})
    query.update(settings)
    # quote_plus escapes ',' too: testinfra splits --hosts on commas.
    return f"pct://{user}{address}{port}?{urllib.parse.urlencode(query)}"


def local_spec(options: ConnectOptions) -> str:
    """This machine's host URL: testinfra's local backend, each command under --timeout.

    >>> local_spec(ConnectOptions(command_timeout=5.0))
    'pctfleet-local://?timeout=5.0'
    """
    return f"{LOCAL_SCHEME}://?{urllib.parse.urlencode({'timeout': options.command_timeout})}"


def local_options(settings: Mapping[str, str]) -> list[str]:
    """A local host carries no settings in its URL: they go as --pct-NAME options.

    >>> local_options({"venv": "/opt/v"})
    ['--pct-venv=/opt/v']
    """
    return [f"--pct-{name.replace('_', '-')}={value}" for name, value in settings.items()]


def _specs(request: VerifyRequest) -> tuple[list[str], list[str]]:
    """Each container's host URL, and the options this machine's host needs for its settings."""
    specs: list[str] = []
    settings_options: list[str] = []
    for container in request.containers:
        variables = request.inventory.vars_for(container, request.extra_vars)
        settings = container_settings(variables, where=container.key)
        if isinstance(container.node, LocalNode):
            specs.append(local_spec(request.connect))
            settings_options = local_options(settings)
            continue
        options = node_options(container.node, request.connect)
        specs.append(host_spec(container.node, container.ctid, options, settings))
    return specs, settings_options


# -- the child pytest run ----------------------------------------------------------------


def fact_readers(request: VerifyRequest) -> int:
    """Fact reads at once: each node up to its channel limit, under --forks when given."""
    from pctfleet.run.scheduler import worker_count

    return worker_count(request.containers, request.forks, container_limit)


def pytest_args(
    request: VerifyRequest, specs: Sequence[str], settings: Sequence[str] = ()
) -> list[str]:
    """What the child pytest gets: our checks, the user's tests, every container as a host."""
    paths = [INFRA, *(path.resolve() for path in request.tests)]
    args = [str(path) for path in paths]
    args += settings
    args += [
        f"--hosts={','.join(specs)}",
        f"--pct-forks={fact_readers(request)}",
        # The user's own pytest config (addopts, plugins) has no say over verify.
        "-c",
        os.devnull,
        f"--rootdir={os.path.commonpath([str(p) for p in paths])}",
        "-p",
        "no:cacheprovider",
        "-q",
    ]
    if request.keyword:
        args += ["-k", request.keyword]
    if request.junit:
        args += [f"--junitxml={request.junit}"]
    return args


def run_verify(request: VerifyRequest, observer: Any = None) -> VerifyResult:
    """Run the checks for every container; raise VerifyUsageError for a request that cannot.

    `observer` (pctfleet.run.observe.Observer, e.g. a progress display) hears each
    container start, the check it is at, and its end, as the child gets there."""
    for path in request.tests:
        if not path.exists():
            raise VerifyUsageError(f"--tests: no such file or folder: {path}")
    started = time.monotonic()
    specs, settings = _specs(request)
    local = [c.key for c in request.containers if isinstance(c.node, LocalNode)]
    feed = events.Feed(observer, {LOCAL_HOST_ID: local[0]} if local else {}) if observer else None
    with tempfile.TemporaryDirectory(prefix="pctfleet-verify-") as tmp:
        record = Path(tmp) / "results.json"
        proc = _run_child(record, pytest_args(request, specs, settings), feed)
        data = _read_record(record, proc, request)
    keys = [container.key for container in request.containers]
    for record in data["checks"] if local else ():
        if record.get("container") == LOCAL_HOST_ID:
            record["container"] = local[0]
    calls = data.get("calls") or {}
    if local and LOCAL_HOST_ID in calls:
        calls[local[0]] = calls.pop(LOCAL_HOST_ID)
    results = [container_result(key, data["checks"], calls.get(key)) for key in keys]
    return VerifyResult(results, time.monotonic() - started)


def _run_child(
    record: Path, args: list[str], feed: events.Feed | None = None
) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    argv = [sys.executable, "-m", __name__, str(record), *args]
    if feed is None:
        return subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    read_end, write_end = os.pipe()
    env[events.ENV] = str(write_end)
    try:
        proc = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            pass_fds=(write_end,),
        )
    finally:
        os.close(write_end)  # the child's copy is the only writer: its exit ends the reader
    reader = threading.Thread(target=_follow, args=(read_end, feed), daemon=True)
    reader.start()
    try:
        out, err = proc.communicate()
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    reader.join(timeout=5)
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def _follow(read_end: int, feed: events.Feed) -> None:
    with open(read_end, encoding="utf-8", errors="replace") as lines:
        for text in lines:
            feed.line(text)


def _read_record(record: Path, proc: subprocess.CompletedProcess, request: VerifyRequest) -> dict:
    """The child's record, or the one-line reason it has none."""
    output = (proc.stdout + proc.stderr).strip()
    data = json.loads(record.read_text()) if record.exists() else None
    if data and data.get("collect_errors"):
        first = data["collect_errors"][0]
        raise VerifyUsageError(f"cannot load tests: {first}", exitcodes.PARSE_ERROR)
    if proc.returncode == 5:  # pytest: no tests collected
        what = f"-k {request.keyword!r} selects no checks" if request.keyword else "no checks"
        raise VerifyUsageError(what)
    if proc.returncode == 4:  # pytest: usage error (a bad -k expression, ...)
        raise VerifyUsageError(_usage_line(output))
    if data is None or proc.returncode not in (0, 1):
        tail = " | ".join(output.splitlines()[-5:])
        raise VerifyUsageError(
            f"the checks did not run (pytest exit {proc.returncode}): {tail}", exitcodes.ERROR
        )
    return data


def _usage_line(output: str) -> str:
    errors = [line.removeprefix("ERROR: ") for line in output.splitlines() if "ERROR" in line]
    return (errors or output.splitlines()[-1:] or ["pytest refused the options"])[0]


def container_result(
    key: str, records: Sequence[Mapping[str, Any]], calls: int | None = None
) -> ContainerResult:
    """One container's row: its checks (and fleet-wide ones), judged into one status."""
    mine = [r for r in records if r.get("container") in (key, None)]
    checks = [
        CheckResult(r["id"], r["outcome"], r.get("message", ""), r.get("status")) for r in mine
    ]
    seconds = max((r["seconds"] for r in mine if r.get("seconds") is not None), default=None)
    status, message = judge(checks)
    return ContainerResult(key, status, message, checks, seconds, calls)


def judge(checks: Sequence[CheckResult]) -> tuple[str, str]:
    """passed only when every check passed; a container that could not be asked says why."""
    for check in checks:
        if check.status:
            status = check.status if check.status in UNAVAILABLE else "error"
            return status, check.message
    if not checks:
        return "error", "no check ran for this container"
    bad = [check for check in checks if check.outcome in ("failed", "error")]
    if bad:
        return "failed", f"{len(bad)} of {len(checks)} checks failed"
    return "passed", ""


# -- rendering ---------------------------------------------------------------------------

STYLE = {"passed": "green", "skipped": "yellow"}


def render(console: Any, result: VerifyResult) -> None:
    """A table (a row per container and check), what went wrong in full, a summary line.

    A container that could not be asked gets one row saying so, not one per check.
    Many containers: a summary by node first, and rows only for those that did not pass.
    """
    from rich.table import Table

    from pctfleet.cli.progress import COMPACT_OVER, outcome_summary
    from pctfleet.textout import line

    compact = len(result.containers) > COMPACT_OVER
    if compact:
        for text in outcome_summary(result.containers, "passed"):
            console.print(line(text))
    table = Table(show_edge=False, pad_edge=False, header_style="bold")
    for name in ("container", "check", "outcome"):
        table.add_column(name, no_wrap=True)
    for row in result.containers:
        if compact and row.status == "passed":
            continue
        rows = [("-", row.status)] if row.status in UNAVAILABLE else []
        rows = rows or [(check.id, check.outcome) for check in row.checks]
        for index, (check_id, outcome) in enumerate(rows):
            label = row.container if index == 0 else ""
            outcome_cell = line((outcome, STYLE.get(outcome, "bold red")))
            table.add_row(line(label), line(check_id), outcome_cell)
        table.add_section()
    console.print(table)
    for problem in problem_lines(result):
        console.print(line(problem))
    console.print(line(summary_line(result)))


def problem_lines(result: VerifyResult) -> list[str]:
    """`container check: evidence` for every check that did not pass; one line each."""
    lines = []
    for row in result.containers:
        if row.status in UNAVAILABLE:
            # The message names the container already unless the whole node failed.
            named = f" {row.container}: " in row.message
            lines.append(row.message if named else f"{row.container}: {row.message}")
            continue
        for check in row.checks:
            if check.outcome in ("failed", "error"):
                lines.append(f"{row.container} {check.id}: {check.message}")
    return lines


def summary_line(result: VerifyResult) -> str:
    summary = result.summary()
    statuses = ", ".join(f"{summary[s]} {s}" for s in STATUSES if summary[s])
    outcomes = ", ".join(f"{n} {o}" for o, n in summary["checks"].items())
    times = [row.seconds for row in result.containers if row.seconds is not None]
    slowest = f"; facts read in {max(times):.1f}s at most per container" if times else ""
    return (
        f"{summary['containers']} container(s): {statuses or 'none'}; checks: "
        f"{outcomes or 'none'}; {summary['seconds']:.1f}s{slowest}"
    )


def to_json(result: VerifyResult) -> str:
    return json.dumps(result.as_json(), indent=2)


# -- inside the child ----------------------------------------------------------------------


class Collector:
    """A pytest plugin: one record per (container, check), written when the session ends.

    Only plain hooks (no pytest import here), so the CLI can import this module
    without pytest; the child registers an instance with `pytest.main`.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.items: dict[str, dict] = {}
        self.records: dict[str, dict] = {}
        self.collect_errors: list[str] = []
        self.left: Counter[str | None] = Counter()
        self.backends: dict[str, Any] = {}  # container -> its testinfra backend

    def pytest_collection_modifyitems(self, items: list) -> None:
        self.items = {item.nodeid: _new_record(item) for item in items}
        for item in items:
            host = _host_of(item)
            if host is not None:
                self.backends[events.container_of(host)] = host.backend

    def pytest_collection_finish(self, session: Any) -> None:
        # After -k deselected: each container's checks that will run, to tell its end.
        self.left = Counter(self._container(item.nodeid) for item in session.items)

    def _container(self, nodeid: str) -> str | None:
        return self.items.get(nodeid, {}).get("container")

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        template = self.items.get(nodeid)
        if template and template["container"]:
            events.emit("task", template["container"], name=template["id"])

    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        container = self._container(nodeid)
        if not container:
            return
        self.left[container] -= 1
        if self.left[container] <= 0:
            status = container_result(container, list(self.records.values())).status
            events.emit("finish", container, status=status)

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed:
            lines = str(report.longrepr).strip().splitlines() or [""]
            where = report.nodeid or "collection"
            self.collect_errors.append(f"{where}: {lines[-1].removeprefix('E').strip()}")

    def pytest_runtest_logreport(self, report: Any) -> None:
        template = self.items.get(report.nodeid)
        if template is None:
            return
        record = self.records.setdefault(report.nodeid, dict(template))
        props = dict(report.user_properties)
        record["message"] = props.get("message", record["message"])
        record["seconds"] = props.get("gather_seconds", record["seconds"])
        if report.passed:
            if report.when == "call" and record["outcome"] == "pending":
                record["outcome"] = "passed"
        elif record["outcome"] in ("pending", "passed"):
            record["status"] = getattr(report, "pctfleet_status", None)
            record["outcome"] = _outcome(report, record["status"])
            record["message"] = _message(report)

    def write(self, exitstatus: int) -> None:
        checks = [r for r in self.records.values() if r["outcome"] != "pending"]
        calls = {key: getattr(backend, "calls", None) for key, backend in self.backends.items()}
        document = {
            "exitstatus": exitstatus,
            "checks": checks,
            "collect_errors": self.collect_errors,
            "calls": {key: n for key, n in calls.items() if isinstance(n, int)},
        }
        Path(self.path).write_text(json.dumps(document))


def _new_record(item: Any) -> dict:
    host = _host_of(item)
    container, host_id = None, ""
    if host is not None:
        container = events.container_of(host)
        host_id = host.backend.get_pytest_id()
    return {
        "container": container,
        "id": _check_id(item.name, host_id),
        "outcome": "pending",
        "message": "",
        "status": None,
        "seconds": None,
    }


def _host_of(item: Any) -> Any:
    callspec = getattr(item, "callspec", None)
    return callspec.params.get("_testinfra_host") if callspec else None


def _check_id(name: str, host_id: str) -> str:
    """`test_x[pct://pve1/200]` -> `test_x`; other parameters stay: `test_y[3]`."""
    if host_id:
        name = name.replace(host_id, "")
    for junk, clean in (("[-", "["), ("-]", "]"), ("--", "-"), ("[]", "")):
        name = name.replace(junk, clean)
    return name


def _outcome(report: Any, status: str | None) -> str:
    """A failing check is `failed`; a broken setup, teardown or container is `error`."""
    if report.skipped:
        return "skipped"
    return "failed" if report.when == "call" and not status else "error"


def _message(report: Any) -> str:
    """The first line of what went wrong, without 'AssertionError: '."""
    longrepr = report.longrepr
    if isinstance(longrepr, tuple):  # a skip: (path, line, reason)
        text = str(longrepr[2])
    else:
        crash = getattr(longrepr, "reprcrash", None)
        text = crash.message if crash is not None else str(longrepr)
    first = (text.strip().splitlines() or [""])[0]
    for prefix in ("AssertionError: ", "Failed: ", "Skipped: "):
        first = first.removeprefix(prefix)
    return first


def child_main(argv: list[str]) -> int:
    """`python -m pctfleet.verify.runner RECORD PYTEST_ARGS...`: pytest, plus the record."""
    import pytest

    collector = Collector(argv[0])
    code = int(pytest.main(argv[1:], plugins=[collector]))
    collector.write(code)
    return code


if __name__ == "__main__":
    sys.exit(child_main(sys.argv[1:]))
