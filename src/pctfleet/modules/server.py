"""Long-running servers: launch detached and wait until ready; stop by PID file.

A server is identified only by its PID file and process group, never by a
name pattern: `pkill -f sglang` would also kill a neighbour's server. The
launch records a hash of its command line and environment beside the PID
file, so a second run knows whether the running server is the one wanted.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Self
from urllib.parse import urlsplit

from pctfleet.errors import PlaybookError
from pctfleet.modules.args import Args, Context, arg, text, text_list
from pctfleet.modules.base import Fact, FactReader, Module, Plan, World, number, words
from pctfleet.modules.unitfile import files_sha, launcher_text, unit_text
from pctfleet.sh import library, snippet

# The stop function alone, for other modules' change scripts.
STOP_FUNCTION = library(["stop"])

# The env file is sourced by sh as root: a key is written unquoted, so it must be a name.
SHELL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _number(module: str, key: str, *, integer: bool = False) -> Any:
    """A converter: the value as given, once it is a (whole) number >= 0."""

    def convert(value: Any, where: str) -> Any:
        number({key: value}, key, where, module, integer=integer)
        return value

    return convert


def _mapping(key: str) -> Any:
    """A converter: a mapping (empty when not given) with its keys and values as text."""

    def convert(value: Any, where: str) -> dict[str, str]:
        if not value:
            return {}
        if not isinstance(value, Mapping):
            raise PlaybookError(f"server: {key!r} must be a mapping", where=where)
        return {str(k): str(v) for k, v in value.items()}

    return convert


def _argv(value: Any, where: str) -> tuple[str, ...]:
    """A command line: a list as it is, a string split like sh would."""
    if not value:
        return ()
    if isinstance(value, str):
        return tuple(words(value, "command", where, "server"))
    return tuple(str(c) for c in value)


@dataclass(frozen=True)
class ServerArgs(Args):
    name: str = arg("", convert=text)
    command: tuple[str, ...] = arg((), convert=_argv)
    env: Mapping[str, str] | None = arg(None, convert=_mapping("env"))
    chdir: str | None = arg(None, convert=text)
    pidfile: str = arg("", convert=text)  # default /run/pctfleet/NAME.pid
    logfile: str = arg("", convert=text)  # default /var/log/pctfleet/NAME.log
    state: str = arg("started", choices={"started", "stopped", "restarted"})
    stop_grace: Any = arg(10, convert=_number("server", "stop_grace", integer=True))
    ready_url: str | None = arg(None, convert=text)
    ready_status: str = arg("200", convert=text)
    ready_port: Any = arg(None, convert=_number("server", "ready_port", integer=True))
    ready_host: str | None = arg(None, convert=text)
    ready_log: str | None = arg(None, convert=text)
    ready_timeout: Any = arg(300, convert=_number("server", "ready_timeout"))
    fail_log: tuple[str, ...] = arg((), convert=text_list)
    env_file: str | None = arg(None, convert=text)
    env_file_vars: Mapping[str, str] | None = arg(None, convert=_mapping("env_file_vars"))
    # The serving port: default ready_port, else ready_url's port. What else holds it, or
    # lives by a `stale_pidfiles` file, is a server we did not start: stopped, or `fail`.
    port: Any = arg(None, convert=_number("server", "port", integer=True))
    stale_pidfiles: tuple[str, ...] = arg((), convert=text_list)
    stale: str = arg("stop", choices={"stop", "fail"})
    # auto: a systemd unit where systemd is PID 1, else detached with a PID file.
    manager: str = arg("auto", choices={"auto", "systemd", "pidfile"})

    @classmethod
    def parse(cls, raw: Mapping[str, Any], ctx: Context, where: str) -> Self:
        parsed = super().parse(raw, ctx, where)
        return dataclasses.replace(
            parsed,
            pidfile=parsed.pidfile or f"/run/pctfleet/{parsed.name}.pid",
            logfile=parsed.logfile or f"/var/log/pctfleet/{parsed.name}.log",
        )

    def check(self, ctx: Context, where: str) -> None:
        if not self.name or not self.name.replace("-", "").replace("_", "").isalnum():
            raise self.fail("'name' must be letters, digits, '-' or '_'", where)
        if not self.command:
            raise self.fail("'command' is required", where)
        if "\n" in self.logfile:
            raise self.fail("'logfile' must be one line", where)
        for key in (*(self.env or {}), *(self.env_file_vars or {})):
            if not SHELL_NAME.match(key):
                raise self.fail(
                    f"environment variable name {key!r} is not a shell identifier "
                    "([A-Za-z_][A-Za-z0-9_]*)",
                    where,
                )

    def spec(self) -> str:
        """Fingerprint of what is launched: a change in any of it means restart."""
        wanted = {
            "argv": list(self.command),
            "env": dict(self.env or {}),
            "chdir": self.chdir or "",
        }
        return hashlib.sha256(json.dumps(wanted, sort_keys=True).encode()).hexdigest()[:16]

    def environment(self) -> list[str]:
        """`NAME=value` words for `env`; the marker says the process is this server."""
        return [f"{k}={v}" for k, v in {**(self.env or {}), "PCTFLEET_SERVER": self.name}.items()]

    def serving_port(self) -> int | None:
        if self.port is not None:
            return int(self.port)
        if self.ready_port is not None:
            return int(self.ready_port)
        try:
            url = urlsplit(self.ready_url or "")
            port = url.port
        except ValueError:
            return None
        # Only a URL answered inside the container says which port our server holds there.
        local = (url.hostname or "").startswith("127.") or url.hostname in {"localhost", "::1"}
        return port if local else None


@dataclass(frozen=True)
class Holder:
    """A process holding the serving port, or named by a stale PID file."""

    pid: int
    start: str  # /proc/PID/stat starttime: the PID still names this process when it matches
    group: int
    why: str
    cmdline: str

    @classmethod
    def parse(cls, line: str) -> Holder | None:
        parts = line.split("\t", 4)
        if len(parts) != 5 or not parts[0].isdigit():
            return None
        group = int(parts[2]) if parts[2].isdigit() else -1
        return cls(int(parts[0]), parts[1], group, parts[3], parts[4])

    def to_dict(self) -> dict[str, Any]:
        return {"pid": self.pid, "cmdline": self.cmdline, "why": self.why}

    def __str__(self) -> str:
        return f"pid {self.pid} ({self.cmdline}; {self.why})"


@dataclass(frozen=True)
class ProcessState:
    """What a PID file says. `pid` is None without a PID file (as written otherwise)."""

    pid: str | None = None
    alive: bool = False
    ours: bool = False
    spec: str = ""
    envfile_sha: str = "none"
    health: str = ""
    holders: tuple[Holder, ...] = ()
    init: str = ""  # "systemd" where systemd is PID 1
    unit: str = ""  # the enablement of the unit pctfleet wrote for this server; "" for none
    unit_sha: str = ""  # hash of that unit file and its launcher as they are now

    @property
    def running(self) -> bool:
        """The PID file names a live process that carries our launch's marker."""
        return self.alive and self.ours and (self.pid or "").strip().isdigit()

    def mine(self, holder: Holder) -> bool:
        """Our server is a setsid leader: its group is the PID its file names."""
        return self.running and holder.group == int((self.pid or "").strip())

    def strangers(self) -> list[Holder]:
        """Processes we did not start, once each (a PID found twice joins its reasons)."""
        found: dict[int, Holder] = {}
        for holder in self.holders:
            if self.mine(holder):
                continue
            if holder.pid in found:
                why = f"{found[holder.pid].why}, {holder.why}"
                holder = dataclasses.replace(found[holder.pid], why=why)
            found[holder.pid] = holder
        return list(found.values())

    def listening(self, port: int) -> bool:
        """Our process group holds the port."""
        return any(self.mine(h) and h.why == f"listening on port {port}" for h in self.holders)


class PidFileProcess(FactReader[ProcessState]):
    """The process a PID file names; for a server, also its env file's hash and health."""

    State = ProcessState

    def command(self, args: Any, want_diff: bool) -> str:
        server = isinstance(args, ServerArgs)
        return snippet(
            "server_process",
            PIDFILE=args.pidfile,
            NAME=args.name if server else "",
            ENV_FILE=(args.env_file or "") if server else "",
            READY_URL=(args.ready_url or "") if server else "",
            PORT=(args.serving_port() or "") if server else "",
            STALE_PIDFILES="\n".join(args.stale_pidfiles) if server else "",
        )

    def parse(self, reading: Fact) -> ProcessState:
        fields = reading.fields()
        return ProcessState(
            pid=fields.get("pid"),
            alive=bool(fields.get("alive")),
            ours=bool(fields.get("ours")),
            spec=fields.get("spec", ""),
            envfile_sha=fields.get("envfile_sha", "none"),
            health=fields.get("health", ""),
            init=fields.get("init", ""),
            unit=fields.get("unit", ""),
            unit_sha=fields.get("unit_sha", ""),
            holders=tuple(
                h
                for key, line in fields.items()
                if key.startswith("holder") and (h := Holder.parse(line))
            ),
        )

    def converged(self, args: Any, world: World) -> dict[str, str]:
        return {}  # no PID file: nothing to stop


class ServerProcess(PidFileProcess):
    def converged(self, args: ServerArgs, world: World) -> dict[str, str]:
        if args.state == "stopped":
            return {}
        envsha = "none"
        if args.env_file:
            # Written by an earlier task of the play, or (unknown here) by something else.
            content = world.files.get(args.env_file, b"written outside the play")
            envsha = hashlib.sha256(content).hexdigest()[:16]
        fields = {"pid": "4242", "alive": "1", "ours": "1", "spec": f"{args.spec()}-{envsha}"}
        if args.manager == "systemd":
            fields |= {"init": "systemd", "unit": "enabled", "unit_sha": files_sha(args)}
        fields["envfile_sha"] = envsha
        if args.ready_url:
            fields["health"] = args.ready_status
        if args.serving_port():
            port = args.serving_port()
            fields["holder1"] = f"4242\t1\t4242\tlistening on port {port}\t{args.command[0]}"
        return fields


def _stale_msg(verb: str, strangers: list[Holder]) -> str:
    """One line naming every process we did not start: PID, command line and why."""
    return f"{verb} {len(strangers)} process(es) we did not start: " + ", ".join(
        str(h) for h in strangers
    )


def _manager(args: ServerArgs, state: ProcessState) -> str | None:
    """How the server is run here: "systemd" or "pidfile"; None when it cannot be."""
    if args.manager == "auto":
        return "systemd" if state.init == "systemd" else "pidfile"
    if args.manager == "systemd" and state.init != "systemd":
        return None
    return args.manager


def _unmanaged(manager: str, state: ProcessState) -> str:
    if manager == "pidfile":
        return "running as a systemd unit, wanted with a PID file"
    if state.unit == "enabled":
        return "its systemd unit or launcher is not what pctfleet writes (edited, or older)"
    if state.unit:
        return f"running as a systemd unit that is {state.unit}, not enabled"
    return "running, but not as a systemd unit (it would not come back after a restart)"


def stop_script(pidfile: str, grace: Any, expect: str) -> str:
    """Stop what `pidfile` names: TERM to its process group, `grace` seconds, then KILL."""
    return snippet("server_stop", PIDFILE=pidfile, GRACE=int(grace), EXPECT=expect)


class Server(Module, name="server", args=ServerArgs, fact=ServerProcess()):
    """Run a server detached (setsid, env, PID file, log) and wait until it is ready.

    Ready means every given check holds: `ready_url` answers `ready_status`,
    `ready_port` accepts TCP, `ready_log` appears in the log. A line from
    `fail_log` in the log, or the process dying, fails at once with the log tail.

    With a serving port (`port`, else `ready_port`, else `ready_url`'s), ready also
    means the listener on it is in our launch's process group. Whatever else holds that
    port, or lives by a `stale_pidfiles` file, is a server we did not start: `stale: stop`
    stops it by PID before the launch, `stale: fail` refuses; both name PID and command line.
    """

    def plan(self, args: ServerArgs, state: ProcessState, check: bool) -> Plan:
        manager = _manager(args, state)
        if manager is None:
            return Plan(False, failed=True, msg="manager: systemd, but systemd is not PID 1 here")
        if args.state == "stopped":
            return self._stopping(args, state)
        strangers = state.strangers()
        if strangers and args.stale == "fail":
            return Plan(False, failed=True, msg=_stale_msg("refusing to start: held by", strangers))
        healthy = not args.ready_url or state.health == args.ready_status
        port = args.serving_port()
        listening = port is None or state.listening(port)
        managed = not state.unit
        if manager == "systemd":
            # Edits to the unit or launcher (or an older pctfleet's) are undone as well.
            managed = state.unit == "enabled" and state.unit_sha == files_sha(args)
        running = state.running
        same = state.spec == f"{args.spec()}-{state.envfile_sha}"
        done = running and same and healthy and listening and managed and not strangers
        if args.state == "started" and done:
            pid = int(state.pid or 0)
            return Plan(False, msg=f"running, pid {pid}", result={"pid": pid})
        reason = self._why(state, healthy and listening, args.state)
        if running and healthy and not listening:
            reason = f"running but not listening on port {port}"
        if running and same and healthy and listening and not managed:
            reason = _unmanaged(manager, state)
        return self._launch(args, manager, strangers, reason)

    def _launch(self, args: ServerArgs, manager: str, strangers: list[Holder], why: str) -> Plan:
        if strangers:
            why = f"{why}; {_stale_msg('stopping', strangers)}"
        diff = {
            "path": args.pidfile,
            "before": "".join(f"{h}\n" for h in strangers) + f"{why}\n",
            "after": f"running {shlex.join(args.command)}\n",
        }
        result: dict[str, Any] = {"manager": manager}
        if strangers:
            result["stale"] = [h.to_dict() for h in strangers]
        script = self._start_script(args, strangers, manager)
        return Plan(True, script=script, msg=why, diff=diff, result=result)

    @staticmethod
    def _stopping(args: ServerArgs, state: ProcessState) -> Plan:
        if not state.alive and state.pid is None and not state.unit:
            return Plan(False)
        script = stop_script(args.pidfile, args.stop_grace, "")
        if state.unit:
            script = snippet("server_unit_remove", NAME=args.name) + "\n" + script
        return Plan(True, script=script, msg="stopping")

    @staticmethod
    def _why(state: ProcessState, healthy: bool, wanted: str) -> str:
        if wanted == "restarted":
            return "restart requested"
        if not state.alive:
            return "not running"
        if not state.ours:
            return "its PID file names a process pctfleet did not start"
        if not healthy:
            return f"running but unhealthy (health {state.health})"
        return "running with a different command line or environment"

    def _start_script(self, args: ServerArgs, strangers: list[Holder], manager: str) -> str:
        inputs = {
            "SRV_PIDFILE": args.pidfile,
            "SRV_LOG": args.logfile,
            "SRV_GRACE": int(args.stop_grace),
            "SRV_WORKDIR": args.chdir or "",
            "SRV_ENV_FILE": args.env_file or "",
            "SRV_SPEC": args.spec(),
            "SRV_URL": args.ready_url or "",
            "SRV_STATUS": args.ready_status,
            "SRV_TCP_ADDRESS": args.ready_host or "127.0.0.1",
            "SRV_TCP_PORT": int(args.ready_port) if args.ready_port else "",
            "SRV_READY_LOG": args.ready_log or "",
            # One newline-separated list for grep -F; an empty pattern matches every line.
            "SRV_FAIL_CHECK": "1" if args.fail_log else "",
            "SRV_FAIL_LOG": "\n".join(args.fail_log),
            "SRV_TIMEOUT": args.ready_timeout,
            "SRV_TICKS": int(float(args.ready_timeout) * 10),
            "SRV_PORT": args.serving_port() or "",
            "SRV_STALE": "".join(f"{h.pid} {h.start}\n" for h in strangers),
            "SRV_NAME": args.name,
        }
        if manager == "systemd":
            return snippet(
                "server_unit",
                SRV_UNIT_TEXT=unit_text(args),
                SRV_LAUNCHER_TEXT=launcher_text(args),
                **inputs,
            )
        return snippet(
            "server_start", argv=[*args.environment(), "setsid", *args.command], **inputs
        )

    def finish(self, args: dict[str, Any], plan: Plan, rc: int, out: str, err: str) -> dict:
        result = super().finish(args, plan, rc, out, err)
        for line in out.splitlines():
            if line.startswith("pid="):
                result["pid"] = int(line[4:])
        if rc != 0:
            from pctfleet.cuda.known_errors import scan

            findings = scan(err)
            if findings:
                cause = findings[0]
                result["msg"] = f"{cause.cause}: {cause.line} (fix: {cause.fix})"
                result["findings"] = [f.to_dict() for f in findings]
                result["log_tail"] = err
                return result
            lines = [line for line in err.splitlines() if line.strip()]
            result["msg"] = (
                ": ".join(dict.fromkeys([lines[0], lines[-1]])) if lines else f"exit {rc}"
            )
            result["log_tail"] = err
        return result


@dataclass(frozen=True)
class ServerStopArgs(Args):
    pidfile: str = arg(required=True, convert=text)
    grace: Any = arg(10, convert=_number("server_stop", "grace", integer=True))
    expect: str | None = arg(None, convert=text)


class ServerStop(Module, name="server_stop", args=ServerStopArgs, fact=PidFileProcess()):
    """Stop whatever a PID file names: TERM to its process group, a grace period, then KILL.

    `expect` (optional) is a piece of the command line the process must have,
    so a PID reused by an unrelated process is left alone.
    """

    def plan(self, args: ServerStopArgs, state: ProcessState, check: bool) -> Plan:
        if state.pid is None:
            return Plan(False, msg="no PID file")
        what = f"stop pid {state.pid}" if state.alive else "remove stale PID file"
        return Plan(
            True,
            script=stop_script(args.pidfile, args.grace, args.expect or ""),
            msg=what,
            diff={"path": args.pidfile, "before": f"pid {state.pid}\n", "after": "stopped\n"},
        )
