"""`systemd_service` (also `systemd`) and `service`: a unit started, stopped, enabled, masked.

The probe reads `systemctl show`; a change is one script of `systemctl` calls in
Ansible's order (daemon-reload, mask, enable, then the state). Where systemd is not
the container's init there is nothing to manage, and the task fails saying so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pctfleet.errors import PlaybookError, brief
from pctfleet.modules.args import Args, Context, arg, flag, text
from pctfleet.modules.base import Fact, FactReader, Module, Plan, World, q
from pctfleet.sh import snippet

_UNIT = re.compile(r"[A-Za-z0-9:_.\\@-]+\Z")
# `systemctl is-enabled` exits 0 for these, which is what Ansible calls enabled.
ENABLED = {"enabled", "enabled-runtime", "static", "alias", "indirect", "generated", "transient"}
STATES = {"started", "stopped", "restarted", "reloaded"}
NOT_RUNNING = "systemd is not running in this container"


def unit(value: object, where: str) -> str:
    name = text(value, where)
    if not _UNIT.match(name):
        raise PlaybookError(f"not a valid unit name: {brief(name)}", where=where)
    return name


@dataclass(frozen=True)
class ServiceArgs(Args):
    name: str | None = arg(None, aliases=("service", "unit"), convert=unit)
    state: str | None = arg(None, choices=STATES)
    enabled: bool | None = arg(None, convert=flag)
    masked: bool | None = arg(None, convert=flag)
    daemon_reload: bool = arg(False, aliases=("daemon-reload",), convert=flag)
    daemon_reexec: bool = arg(False, aliases=("daemon-reexec",), convert=flag)
    scope: str = arg("system", choices={"system"})
    no_block: bool = arg(False, convert=flag)

    def check(self, ctx: Context, where: str) -> None:
        asked = (self.state, self.enabled, self.masked)
        if self.name is None and asked != (None, None, None):
            raise self.fail("'name' is required with state, enabled or masked", where)
        if self.name is None and not (self.daemon_reload or self.daemon_reexec):
            raise self.fail("one of name, daemon_reload or daemon_reexec is required", where)


@dataclass(frozen=True)
class ServiceOnlyArgs(Args):
    """`service`: Ansible's generic module; here it always manages systemd."""

    name: str = arg(required=True, convert=unit)
    state: str | None = arg(None, choices=STATES)
    enabled: bool | None = arg(None, convert=flag)
    use: str = arg("auto", choices={"auto", "systemd"})
    masked = None
    daemon_reload = False
    daemon_reexec = False
    no_block = False

    def check(self, ctx: Context, where: str) -> None:
        if self.state is None and self.enabled is None:
            raise self.fail("one of the following is required: state, enabled", where)


@dataclass(frozen=True)
class Unit:
    systemd: bool = True
    props: dict[str, str] = field(default_factory=dict)


class UnitFact(FactReader[Unit]):
    State = Unit

    def command(self, args: ServiceArgs, want_diff: bool) -> str:
        return snippet("systemd_fact", UNIT=args.name or "")

    def parse(self, reading: Fact) -> Unit:
        fields = reading.fields()
        props = dict(
            line.split("=", 1) for line in fields.get("show", "").splitlines() if "=" in line
        )
        return Unit(fields.get("systemd") != "0", props)

    def converged(self, args: ServiceArgs, world: World) -> dict[str, str]:
        active = "inactive" if args.state == "stopped" else "active"
        enabled = "masked" if args.masked else ("enabled" if args.enabled else "disabled")
        show = (
            f"ActiveState={active}\nUnitFileState={enabled}\nLoadState=loaded\nNeedDaemonReload=no"
        )
        return {"systemd": "1", "show": show}


def _steps(args: ServiceArgs, props: dict[str, str]) -> list[str]:
    """The systemctl calls that change something, in Ansible's order."""
    steps: list[str] = []
    name = q(args.name)
    file_state = props.get("UnitFileState", "")
    if args.masked is not None and args.masked != (file_state == "masked"):
        steps.append(f"systemctl {'mask' if args.masked else 'unmask'} -- {name}")
    if args.enabled is not None and args.enabled != (file_state in ENABLED):
        steps.append(f"systemctl {'enable' if args.enabled else 'disable'} -- {name}")
    active = props.get("ActiveState", "") in {"active", "activating", "reloading"}
    verb = {"started": "start", "stopped": "stop", "restarted": "restart", "reloaded": "reload"}
    if (
        args.state in ("restarted", "reloaded")
        or (args.state == "started") != active
        and args.state
    ):
        if args.state == "reloaded" and not active:  # Ansible starts a unit it cannot reload
            steps.append(f"systemctl start -- {name}")
        else:
            steps.append(f"systemctl {'--no-block ' * args.no_block}{verb[args.state]} -- {name}")
    return steps


class SystemdService(Module, name="systemd_service", args=ServiceArgs, fact=UnitFact()):
    """Manage a systemd unit; registers `name`, `state`, `enabled` and `status`."""

    def plan(self, args: ServiceArgs, state: Unit, check: bool) -> Plan:
        if not state.systemd:
            return Plan(False, failed=True, msg=NOT_RUNNING)
        props = state.props
        if args.name and props.get("LoadState") == "not-found" and args.masked is not True:
            return Plan(
                False, failed=True, msg=f"Could not find the requested service {args.name}: host"
            )
        steps = _steps(args, props) if args.name else []
        reload = args.daemon_reload and (
            not args.name or steps or props.get("NeedDaemonReload") == "yes"
        )
        first = ["systemctl daemon-reexec"] * args.daemon_reexec + [
            "systemctl daemon-reload"
        ] * bool(reload)
        result: dict = {"name": args.name} if args.name else {}
        result |= {
            key: getattr(args, key)
            for key in ("state", "enabled")
            if getattr(args, key) is not None
        }
        result["status"] = props
        if not steps and not first:
            return Plan(False, result=result)
        script = "set -e\n" + "".join(f"{line}\n" for line in first + steps)
        # Reloading the daemon alone is not a change in Ansible: it runs, `changed` stays false.
        return Plan(True, script=script, result=result, skip_in_check=not steps)

    def finish(self, args: ServiceArgs, plan: Plan, rc: int, out: str, err: str) -> dict:
        result = super().finish(args, plan, rc, out, err)
        calls = (plan.script or "").splitlines()[1:]
        if rc == 0 and all(call.startswith("systemctl daemon-") for call in calls):
            result["changed"] = False
        return result


@dataclass(frozen=True)
class SystemdArgs(ServiceArgs):
    """The same arguments under the module's older name (errors quote the name used)."""


class Systemd(SystemdService, name="systemd", args=SystemdArgs):
    """`systemd`: the older name of `systemd_service`."""


class Service(SystemdService, name="service", args=ServiceOnlyArgs):
    """`service`: managed through systemd, the only init pctfleet containers run."""
