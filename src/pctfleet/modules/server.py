"""Long-running servers: launch detached and wait until ready; stop by PID file.

A server is identified only by its PID file and process group, never by a
name pattern: `pkill -f sglang` would also kill a neighbour's server. The
launch records a hash of its command line and environment beside the PID
file, so a second run knows whether the running server is the one wanted.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from typing import Any

from pctfleet.errors import PlaybookError
from pctfleet.modules.base import Fact, LegacyModule, Plan, number, q, words
from pctfleet.sh import library

STOP_FUNCTION = library(["stop"])

PROCESS_PROBE = r"""pf={pidfile}
if [ -f "$pf" ]; then
  pid=$(cat "$pf"); pf_kv pid "$pid"
  case $pid in ''|*[!0-9]*) ;; *)
    if kill -0 "$pid" 2>/dev/null && [ "$(cut -d' ' -f3 /proc/$pid/stat)" != Z ]; then
      pf_kv alive 1
      tr '\0' '\n' < /proc/$pid/environ 2>/dev/null |
        grep -qx "PCTFLEET_SERVER={name}" && pf_kv ours 1
    fi ;;
  esac
  [ -f "$pf.spec" ] && pf_kv spec "$(cat "$pf.spec")"
fi"""

# The server's environment file is part of what it was launched with.
ENV_FILE_SHA = (
    'if [ -f {path} ]; then pf_kv envfile_sha "$(sha256sum < {path} | cut -c1-16)"; '
    "else pf_kv envfile_sha none; fi"
)

# Readiness checks that run inside the container; python3 is on every target we serve.
HTTP_STATUS = library(["http"])


# The env file is sourced by sh as root: a key is written unquoted, so it must be a name.
SHELL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _mapping(args: dict[str, Any], key: str, where: str) -> dict:
    value = args.get(key) or {}
    if not isinstance(value, dict):
        raise PlaybookError(f"server: {key!r} must be a mapping", where=where)
    return value


def _defaults(args: dict[str, Any]) -> None:
    name = args["name"]
    args.setdefault("pidfile", f"/run/pctfleet/{name}.pid")
    args.setdefault("logfile", f"/var/log/pctfleet/{name}.log")
    args.setdefault("state", "started")
    args.setdefault("stop_grace", 10)
    args.setdefault("ready_timeout", 300)
    args.setdefault("ready_status", 200)


class Server(LegacyModule):
    """Run a server detached (setsid, env, PID file, log) and wait until it is ready.

    Ready means every given check holds: `ready_url` answers `ready_status`,
    `ready_port` accepts TCP, `ready_log` appears in the log. A line from
    `fail_log` in the log, or the process dying, fails at once with the log tail.
    """

    name = "server"
    args = {
        "name",
        "command",
        "env",
        "chdir",
        "pidfile",
        "logfile",
        "state",
        "stop_grace",
        "ready_url",
        "ready_status",
        "ready_port",
        "ready_host",
        "ready_log",
        "ready_timeout",
        "fail_log",
        "env_file",
        "env_file_vars",
    }

    def validate(self, args: dict[str, Any], where: str) -> None:
        if (
            not args.get("name")
            or not str(args["name"]).replace("-", "").replace("_", "").isalnum()
        ):
            raise PlaybookError("server: 'name' must be letters, digits, '-' or '_'", where=where)
        if not args.get("command"):
            raise PlaybookError("server: 'command' is required", where=where)
        command = args["command"]
        args["_argv"] = (
            words(command, "command", where, self.name)
            if isinstance(command, str)
            else [str(c) for c in command]
        )
        _defaults(args)
        number(args, "stop_grace", where, self.name, integer=True)
        number(args, "ready_timeout", where, self.name)
        number(args, "ready_port", where, self.name, integer=True)
        if args["state"] not in {"started", "stopped", "restarted"}:
            raise PlaybookError(
                "server: 'state' must be started, stopped or restarted", where=where
            )
        env = args.get("env") or {}
        if not isinstance(env, dict):
            raise PlaybookError("server: 'env' must be a mapping", where=where)
        args["_env"] = {str(k): str(v) for k, v in env.items()}
        for key in (*args["_env"], *_mapping(args, "env_file_vars", where)):
            if not SHELL_NAME.match(str(key)):
                raise PlaybookError(
                    f"server: environment variable name {str(key)!r} is not a shell "
                    "identifier ([A-Za-z_][A-Za-z0-9_]*)",
                    where=where,
                )
        args["_spec"] = self.spec(args)

    @staticmethod
    def spec(args: dict[str, Any]) -> str:
        """Fingerprint of what is launched: a change in any of it means restart."""
        wanted = {"argv": args["_argv"], "env": args["_env"], "chdir": args.get("chdir") or ""}
        return hashlib.sha256(json.dumps(wanted, sort_keys=True).encode()).hexdigest()[:16]

    def probe(self, args: dict[str, Any], want_diff: bool) -> str:
        lines = [PROCESS_PROBE.format(pidfile=q(args["pidfile"]), name=args["name"])]
        if args.get("env_file"):
            lines.append(ENV_FILE_SHA.format(path=q(args["env_file"])))
        if args.get("ready_url"):
            lines += [
                HTTP_STATUS,
                'if [ -n "${pid:-}" ] && kill -0 "$pid" 2>/dev/null; then',
                f'pf_kv health "$(pctfleet_http {q(args["ready_url"])})"; fi',
            ]
        return "\n".join(lines)

    def plan(self, args: dict[str, Any], fact: Fact | None, check: bool) -> Plan:
        facts = fact.fields() if fact else {}
        running = bool(facts.get("alive"))
        state = args["state"]
        if state == "stopped":
            if not running and "pid" not in facts:
                return Plan(False)
            return Plan(True, script=self._stop_script(args), msg="stopping")
        healthy = not args.get("ready_url") or facts.get("health") == str(args["ready_status"])
        wanted_spec = f"{args['_spec']}-{facts.get('envfile_sha', 'none')}"
        if state == "started" and running and facts.get("spec") == wanted_spec and healthy:
            return Plan(
                False, msg=f"running, pid {facts.get('pid')}", result={"pid": int(facts["pid"])}
            )
        reason = self._why(facts, running, healthy, state)
        diff = {
            "path": args["pidfile"],
            "before": f"{reason}\n",
            "after": f"running {shlex.join(args['_argv'])}\n",
        }
        return Plan(True, script=self._start_script(args), msg=reason, diff=diff)

    @staticmethod
    def _why(facts: dict, running: bool, healthy: bool, state: str) -> str:
        if state == "restarted":
            return "restart requested"
        if not running:
            return "not running"
        if not healthy:
            return f"running but unhealthy (health {facts.get('health')})"
        return "running with a different command line or environment"

    def _stop_script(self, args: dict[str, Any]) -> str:
        return STOP_FUNCTION + f"pctfleet_stop {q(args['pidfile'])} {int(args['stop_grace'])} ''\n"

    def _start_script(self, args: dict[str, Any]) -> str:
        pf, log = q(args["pidfile"]), q(args["logfile"])
        env = " ".join(
            q(f"{k}={v}") for k, v in {**args["_env"], "PCTFLEET_SERVER": args["name"]}.items()
        )
        chdir = f"cd {q(args['chdir'])}\n" if args.get("chdir") else ""
        source = ""
        if args.get("env_file"):
            path = q(args["env_file"])
            source = f"if [ -f {path} ]; then set -a; . {path}; set +a; fi\n"
        launch = " ".join(q(a) for a in args["_argv"])
        return (
            "set -e\n"
            + STOP_FUNCTION
            + HTTP_STATUS
            + f"pctfleet_stop {pf} {int(args['stop_grace'])} ''\n"
            + f'mkdir -p "$(dirname {pf})" "$(dirname {log})"\n'
            + f"[ -f {log} ] && mv -f {log} {log}.1\n"
            + chdir
            + source
            + f"env {env} setsid {launch} </dev/null >{log} 2>&1 &\n"
            + f'pid=$!\necho "$pid" > {pf}.tmp && mv -f {pf}.tmp {pf}\n'
            + self._env_file_lines(args)
            + f'echo {q(args["_spec"])}-"$envsha" > {pf}.spec\n'
            + self._wait_script(args)
        )

    @staticmethod
    def _env_file_lines(args: dict[str, Any]) -> str:
        if not args.get("env_file"):
            return "envsha=none\n"
        path = q(args["env_file"])
        return f"envsha=none\n[ -f {path} ] && envsha=$(sha256sum < {path} | cut -c1-16)\n"

    def _wait_script(self, args: dict[str, Any]) -> str:
        log = q(args["logfile"])
        checks = []
        if args.get("ready_url"):
            checks.append(
                f'[ "$(pctfleet_http {q(args["ready_url"])})" = {q(str(args["ready_status"]))} ]'
            )
        if args.get("ready_port"):
            host = q(args.get("ready_host") or "127.0.0.1")
            checks.append(f"pctfleet_port {host} {int(args['ready_port'])}")
        if args.get("ready_log"):
            checks.append(f"grep -qF -- {q(args['ready_log'])} {log}")
        ready = " && ".join(checks) or "true"
        fails = (
            [args["fail_log"]]
            if isinstance(args.get("fail_log"), str)
            else (args.get("fail_log") or [])
        )
        fail_test = " || ".join(f"grep -qF -- {q(f)} {log}" for f in fails) or "false"
        limit = int(float(args["ready_timeout"]) * 10)
        return f"""set +e
i=0
while :; do
  if ! kill -0 "$pid" 2>/dev/null || [ "$(cut -d' ' -f3 /proc/$pid/stat 2>/dev/null)" = Z ]; then
    echo "server exited before it was ready; log tail:" >&2; tail -n 40 {log} >&2; exit 1
  fi
  if {fail_test}; then
    echo "server reported a failure; log tail:" >&2; tail -n 40 {log} >&2; exit 1
  fi
  if {ready}; then echo "pid=$pid"; exit 0; fi
  i=$((i + 1))
  if [ "$i" -gt {limit} ]; then
    echo "not ready after {args["ready_timeout"]}s; log tail:" >&2; tail -n 40 {log} >&2; exit 1
  fi
  sleep 0.1
done
"""

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


class ServerStop(LegacyModule):
    """Stop whatever a PID file names: TERM to its process group, a grace period, then KILL.

    `expect` (optional) is a piece of the command line the process must have,
    so a PID reused by an unrelated process is left alone.
    """

    name = "server_stop"
    args = {"pidfile", "grace", "expect"}

    def validate(self, args: dict[str, Any], where: str) -> None:
        if not args.get("pidfile"):
            raise PlaybookError("server_stop: 'pidfile' is required", where=where)
        args.setdefault("grace", 10)
        number(args, "grace", where, self.name, integer=True)

    def probe(self, args: dict[str, Any], want_diff: bool) -> str:
        return PROCESS_PROBE.format(pidfile=q(args["pidfile"]), name="")

    def plan(self, args: dict[str, Any], fact: Fact | None, check: bool) -> Plan:
        facts = fact.fields() if fact else {}
        if "pid" not in facts:
            return Plan(False, msg="no PID file")
        expect = q(args.get("expect") or "")
        script = (
            STOP_FUNCTION + f"pctfleet_stop {q(args['pidfile'])} {int(args['grace'])} {expect}\n"
        )
        what = f"stop pid {facts['pid']}" if facts.get("alive") else "remove stale PID file"
        return Plan(
            True,
            script=script,
            msg=what,
            diff={"path": args["pidfile"], "before": f"pid {facts['pid']}\n", "after": "stopped\n"},
        )
