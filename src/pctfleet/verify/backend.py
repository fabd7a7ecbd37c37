"""A testinfra backend for LXC containers behind a Proxmox node: `pct://`.

    pytest --hosts='pct://root@pve1?container=200' tests/infra
    pytest --hosts='pct://root@127.0.10.1:22?container=200&identity=/k&known_hosts=/kh&accept_new=1'

Every command becomes `pct exec CTID -- /bin/sh -c CMD` through our
`PctTarget`, and every host of one node (with the same connection options)
shares ONE SSH connection for the whole pytest session.

testinfra has no plugin API for backends (pytest-testinfra issue #10), so
importing this module adds "pct" to `testinfra.backend.BACKENDS`; pytest
imports it at startup through our `pytest11` entry point. testinfra's URL
parser keeps only the query keys it knows, so it is wrapped to keep ours, for
pct:// URLs only; every other URL is parsed exactly as before.

Query keys: container (or the path: pct://node/200), node (the name shown in
reports), identity, known_hosts, accept_new, port, timeout (seconds one
command may take), connect_timeout, ssh_config, persist (seconds a login is
kept for the next session: transport/keep.py), and the check settings of
`pctfleet.verify.SETTINGS` (venv, server_port, ...).

`pctfleet-local://?timeout=SECONDS` is this machine (`pctfleet verify --local`):
testinfra's local backend, but a command past the timeout is stopped and the
host reads `timeout`, as a container's would.
"""

from __future__ import annotations

import threading
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pytest
import testinfra.backend
from testinfra.backend import base
from testinfra.backend.local import LocalBackend

from pctfleet.transport import keep
from pctfleet.transport.base import UNREACHED, RunResult, TransportError
from pctfleet.transport.local import LocalTarget
from pctfleet.transport.options import ConnectOptions
from pctfleet.transport.pct import PctTarget
from pctfleet.transport.ssh import NodeConnection
from pctfleet.verify import LOCAL_SCHEME, SETTINGS

SCHEME = "pct"
LOCAL_HOST = "local"  # what testinfra's local backend calls its host
PERSIST_MAX = 7 * 24 * 3600.0  # --persist's own limit
DEFAULT_TIMEOUT = 120.0
# testinfra's own query keys that mean something here; it parses these itself.
TESTINFRA_KEYS = frozenset(
    {"container", "timeout", "ssh_config", "ssh_identity_file", "sudo", "sudo_user"}
)
OUR_KEYS = frozenset(
    {"node", "identity", "known_hosts", "accept_new", "port", "connect_timeout", "persist"}
)
QUERY_KEYS = TESTINFRA_KEYS | OUR_KEYS | SETTINGS.keys()
# Outcomes that hold for the rest of a session: later calls fail at once instead
# of waiting for another connect timeout per test. A timeout may not recur.
STICKY = frozenset(UNREACHED) - {"timeout"}
_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off", ""}


class PctUrlError(ValueError):
    """A pct:// URL that cannot be used; the message names the URL and the fix."""


class ContainerUnavailable(RuntimeError):
    """The container could not be asked at all: never a passed or failed check.

    `status` is the run recap's word for it (unreachable, ct-missing,
    ct-stopped, timeout, failed) and `reason` the precise cause.
    """

    def __init__(self, status: str, reason: str, text: str) -> None:
        self.status = status
        self.reason = reason
        self.text = text
        super().__init__(str(self))

    @classmethod
    def from_transport(cls, exc: TransportError) -> ContainerUnavailable:
        return cls(exc.status, exc.reason, str(exc))

    def __str__(self) -> str:
        label = self.status if self.reason == self.status else f"{self.status} [{self.reason}]"
        return f"{label}: {self.text}"


@dataclass(frozen=True)
class PctSpec:
    """One container as a pct:// URL names it, every connection setting decided."""

    node: str
    address: str
    ctid: int
    options: ConnectOptions
    settings: tuple[tuple[str, str], ...] = ()

    @property
    def key(self) -> str:
        """`node/ctid`, as the rest of pctfleet names a container."""
        return f"{self.node}/{self.ctid}"


def query_of(hostspec: str) -> dict[str, str]:
    """The pct-specific keys of a URL that testinfra's parser drops; validated names.

    >>> query_of("pct://root@pve1/200?identity=/k&accept_new=1")
    {'identity': '/k', 'accept_new': '1', 'container': '200'}
    """
    url = urllib.parse.urlsplit(hostspec)
    query = urllib.parse.parse_qs(url.query, keep_blank_values=True)
    unknown = sorted(set(query) - QUERY_KEYS)
    if unknown:
        raise PctUrlError(
            f"{hostspec}: unknown parameter {unknown[0]!r} (known: {', '.join(sorted(QUERY_KEYS))})"
        )
    found = {key: values[-1] for key, values in query.items() if key not in TESTINFRA_KEYS}
    path = url.path.strip("/")
    if path:
        found["container"] = path
    return found


def spec_from(hostname: str, kw: Mapping[str, Any]) -> PctSpec:
    """Turn testinfra's (netloc, keyword arguments) into a PctSpec, or say what is wrong."""
    where = f"pct://{hostname}"
    host = base.BaseBackend.parse_hostspec(hostname)
    if not host.name:
        raise PctUrlError(f"{where}: no node address (pct://root@NODE?container=200)")
    if host.password is not None:
        raise PctUrlError(f"{where}: no passwords in URLs; use a key (identity=) or ssh-agent")
    options = ConnectOptions(
        user=host.user or None,
        port=_number(where, "port", kw.get("port") or host.port, int),
        identity=kw.get("identity") or kw.get("ssh_identity_file") or None,
        known_hosts=kw.get("known_hosts") or None,
        accept_new_host_keys=_flag(where, "accept_new", kw.get("accept_new")),
        connect_timeout=_number(where, "connect_timeout", kw.get("connect_timeout"), float) or 10.0,
        command_timeout=_number(where, "timeout", kw.get("timeout"), float) or DEFAULT_TIMEOUT,
        ssh_config=kw.get("ssh_config") or None,
        persist=_persist(where, kw.get("persist")),
    )
    settings = tuple((k, str(kw[k])) for k in SETTINGS if kw.get(k) not in (None, ""))
    return PctSpec(
        node=kw.get("node") or host.name,
        address=host.name,
        ctid=_ctid(where, kw.get("container")),
        options=options,
        settings=settings,
    )


def _ctid(where: str, value: Any) -> int:
    text = str(value or "")
    if not text.isdigit() or not 100 <= int(text) <= 999_999_999:
        shown = f"container={text!r} is not" if text else "no container: add ?container=200, for"
        raise PctUrlError(f"{where}: {shown} a Proxmox CT id (100 or more)")
    return int(text)


def _number(where: str, key: str, value: Any, kind: type) -> Any:
    if value in (None, ""):
        return None
    try:
        number = kind(value)
    except ValueError:
        raise PctUrlError(f"{where}: {key}={value!r} is not a number") from None
    if number <= 0 or (key == "port" and number > 65535):
        raise PctUrlError(f"{where}: {key}={value!r} is out of range")
    return number


def _persist(where: str, value: Any) -> float:
    """Seconds a login is kept: as --persist, at most a week (inf and nan are not numbers here)."""
    seconds = _number(where, "persist", value, float) or 0.0
    if not seconds <= PERSIST_MAX:
        raise PctUrlError(f"{where}: persist={value!r} is out of range (at most {PERSIST_MAX:g})")
    return seconds


def _flag(where: str, key: str, value: Any) -> bool:
    text = str(value if value is not None else "").lower()
    if text not in _TRUE | _FALSE:
        raise PctUrlError(f"{where}: {key}={value!r} must be 1 or 0")
    return text in _TRUE


# -- one SSH connection per node for the whole session ---------------------------

_POOL: dict[tuple[str, str, ConnectOptions], NodeConnection] = {}
_POOL_LOCK = threading.Lock()


def node_connection(spec: PctSpec) -> NodeConnection:
    """The shared connection to the spec's node (opened lazily on the first command)."""
    key = (spec.node, spec.address, spec.options)
    with _POOL_LOCK:
        conn = _POOL.get(key)
        if conn is None:
            conn = _POOL[key] = _connection(key)
        return conn


def _connection(key: tuple[str, str, ConnectOptions]) -> NodeConnection:
    """Under `persist`, the keeper's login when it holds one (transport/keep.py)."""
    path = keep.keeper_socket() if key[2].persist > 0 else None
    if path is None:
        return NodeConnection(*key)
    return keep.kept_or_own(path, key, keep.lookup(path, [key]).get(key))


def connections_opened() -> dict[str, int]:
    """SSH logins made so far, by node: a session should show one per node."""
    with _POOL_LOCK:
        return {key[0]: conn.connections_opened for key, conn in _POOL.items()}


def close_all() -> None:
    with _POOL_LOCK:
        conns = list(_POOL.values())
        _POOL.clear()
    path = keep.keeper_socket() if any(c.options.persist > 0 for c in conns) else None
    if path is not None:
        keep.close_and_keep(path, conns)
        return
    for conn in conns:
        conn.close()


# -- the backend ------------------------------------------------------------------


class TargetCommands:
    """testinfra's `run` (and a whole script's `run_script`) through one of our Targets,
    so its transport's limits and outcomes hold: a transport failure is never a check's."""

    _fatal: ContainerUnavailable | None = None
    target: Any  # a Target: commands go through it

    @property
    def calls(self) -> int:
        """Commands sent so far (on pct://, each one `pct exec`): verify's measured cost."""
        return self.target.calls

    def run(self, command: str, *args: str, **kwargs: Any) -> base.CommandResult:
        """testinfra's entry point: `command % quoted(args)`, run by /bin/sh in the container."""
        cmd = self.get_command(command, *args)
        out = self._call(lambda target: target.run(["/bin/sh", "-c", cmd]))
        return self.result(out.exit_code, self.encode(cmd), out.stdout, out.stderr)

    def run_script(self, script: str) -> base.CommandResult:
        """A whole sh script sent on stdin (`/bin/sh -s`): no quoting, no argv size limit."""
        out = self._call(lambda target: target.run_script(script))
        return self.result(out.exit_code, b"/bin/sh -s", out.stdout, out.stderr)

    def _call(self, action: Callable[[PctTarget], RunResult]) -> RunResult:
        if self._fatal is not None:
            raise self._fatal
        try:
            return action(self.target)
        except TransportError as exc:
            error = ContainerUnavailable.from_transport(exc)
            if error.status in STICKY:
                self._fatal = error
            raise error from None


class PctBackend(TargetCommands, base.BaseBackend):
    """Commands in one container: `pct exec CTID -- /bin/sh -c CMD` on its node."""

    NAME = SCHEME

    def __init__(self, hostname: str, *args: Any, **kwargs: Any) -> None:
        self.spec = spec_from(hostname, kwargs)
        self.settings = dict(self.spec.settings)
        self._target: PctTarget | None = None
        sudo = {k: kwargs[k] for k in ("sudo", "sudo_user") if k in kwargs}
        super().__init__(self.spec.key, *args, **sudo)

    @property
    def target(self) -> PctTarget:
        if self._target is None:
            self._target = PctTarget(node_connection(self.spec), self.spec.ctid)
        return self._target

    @property
    def calls(self) -> int:
        return self._target.calls if self._target is not None else 0  # no login just to count

    def get_pytest_id(self) -> str:
        return f"{SCHEME}://{self.spec.key}"


class LocalTimedBackend(TargetCommands, LocalBackend):
    """This machine, as testinfra's `local://`, each command limited to the URL's
    `timeout` seconds (`pctfleet verify --local --timeout`). testinfra's own local
    backend waits on a command forever; a command past the limit is killed and the
    host reads `timeout`, as on pct://."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.target = LocalTarget(LOCAL_HOST, local_timeout(kwargs.pop("timeout", None)))
        super().__init__(*args, **kwargs)


def local_timeout(value: Any) -> float | None:
    """A pctfleet-local:// URL's `timeout` in seconds (None: no limit), or what is wrong."""
    return _number(f"{LOCAL_SCHEME}://", "timeout", value, float)


# -- registration and pytest hooks ---------------------------------------------------


def register() -> None:
    """Make testinfra know pct:// and pctfleet-local:// (idempotent: the entry point and
    conftests both call it)."""
    testinfra.backend.BACKENDS[SCHEME] = f"{__name__}.PctBackend"
    testinfra.backend.BACKENDS[LOCAL_SCHEME] = f"{__name__}.LocalTimedBackend"
    parse = testinfra.backend.parse_hostspec
    if getattr(parse, "pctfleet", False):
        return

    def parse_hostspec(hostspec: str) -> tuple[str, dict[str, Any]]:
        host, kw = parse(hostspec)
        if kw.get("connection") == SCHEME:
            kw.update(query_of(hostspec))
        return host, kw

    parse_hostspec.pctfleet = True  # type: ignore[attr-defined]
    testinfra.backend.parse_hostspec = parse_hostspec


register()


def pytest_configure(config: pytest.Config) -> None:
    """A bad pct:// URL in --hosts is a one-line usage error, not a collection traceback."""
    for hostspec in (getattr(config.option, "hosts", None) or "").split(","):
        if hostspec.strip().startswith((f"{SCHEME}://", f"{LOCAL_SCHEME}://")):
            try:
                host, kw = testinfra.backend.parse_hostspec(hostspec.strip())
                if kw.get("connection") == SCHEME:
                    spec_from(host, kw)
                else:
                    local_timeout(kw.get("timeout"))
            except PctUrlError as exc:
                raise pytest.UsageError(str(exc)) from None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Any:
    """An unreachable container reads as one line naming the cause, not a traceback."""
    report = yield
    excinfo = call.excinfo
    if excinfo is not None and isinstance(excinfo.value, ContainerUnavailable):
        report.longrepr = str(excinfo.value)
        report.pctfleet_status = excinfo.value.status
    return report


def pytest_unconfigure(config: pytest.Config) -> None:
    close_all()
