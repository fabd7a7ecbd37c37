"""The `pctfleet` and `provision` programs: the typer app, its commands, our exit codes.

Each command lives in its own module (run, exec, doctor, audit, verify, rollout);
they parse options, call the library and render. Nothing else.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading

import typer

from pctfleet import exitcodes
from pctfleet.cli import coerce
from pctfleet.cli.audit import audit_command
from pctfleet.cli.connections import connections_command
from pctfleet.cli.doctor import doctor_command
from pctfleet.cli.examples import examples_last
from pctfleet.cli.exec import exec_command
from pctfleet.cli.fleetreport import report_command
from pctfleet.cli.rollout import rollout_command
from pctfleet.cli.run import provision_command, run_command
from pctfleet.cli.verify import verify_command
from pctfleet.errors import InputError
from pctfleet.textout import visible

coerce.install()  # option values without pydantic where the answer is certain

UNFLUSHED = 120  # what Python exits with when stdout cannot be flushed at exit
HELP_OPTIONS = {"help_option_names": ["-h", "--help"]}
app = typer.Typer(
    name="pctfleet",
    help="Bring GPU containers on Proxmox VE to a declared state: a matched CUDA toolchain, "
    "the CCCL overlay, link fixes, a clean flashinfer JIT cache and a healthy SGLang server.\n\n"
    "Nodes are reached over SSH (host keys checked), containers through 'pct exec'. "
    "Try it without Proxmox: 'pctfleet lab up'.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings=HELP_OPTIONS,
)
app.command("exec", context_settings={"allow_interspersed_args": False})(exec_command)
app.command("run")(run_command)
app.command("provision")(provision_command)
app.command("doctor")(doctor_command)
app.command("audit")(audit_command)
app.command("verify")(verify_command)
app.command("rollout")(rollout_command)
app.command("report")(report_command)
app.command("connections")(connections_command)


def _register_subcommands() -> None:
    from pctfleet.cli.inventory import inventory_app
    from pctfleet.cli.runs import runs_app
    from pctfleet.lab.cli import lab_app

    app.add_typer(inventory_app, name="inventory", help="Inventories read from the nodes.")
    app.add_typer(lab_app, name="lab", help="A local Proxmox-like lab: sshd nodes, LXC containers.")
    app.add_typer(runs_app, name="runs")


_register_subcommands()
examples_last(app)


def _is_click(exc: BaseException, name: str) -> bool:
    """Typer vendors its own click, so match click's exception classes by name."""
    return any(cls.__name__ == name for cls in type(exc).__mro__)


def _invoke(
    application: typer.Typer, args: list[str] | None = None, prog: str | None = None
) -> int:
    """Run the app with our exit codes: 5 bad options, 4 bad input, 99 interrupted."""
    try:
        result = application(args=args, prog_name=prog, standalone_mode=False)
    except InputError as exc:
        typer.secho(f"error: {visible(exc)}", err=True, fg="red")
        return exitcodes.PARSE_ERROR
    except KeyboardInterrupt:
        typer.secho("interrupted", err=True, fg="red")
        return exitcodes.INTERRUPTED
    except Exception as exc:
        if _is_click(exc, "Abort"):
            return exitcodes.INTERRUPTED
        if _is_click(exc, "ClickException"):
            exc.show()
            return exitcodes.BAD_OPTIONS
        raise
    finally:
        _close_early_logins()
    if result == 130:  # typer's own code for Ctrl-C
        return exitcodes.INTERRUPTED
    return result if isinstance(result, int) else exitcodes.OK


def _close_early_logins() -> None:
    """Logins nobody took (bad input found after they began): closed now, not at exit."""
    early = sys.modules.get("pctfleet.transport.early")
    if early is not None:
        early.close_all()


def main() -> None:
    sys.exit(_invoke(app))


def provision_main() -> None:
    """`provision`: the default playbook against one container (see `provision --help`)."""
    sys.exit(_invoke(provision_app(), prog="provision"))


def console() -> None:
    """The `pctfleet` program: `main`, then the process ends without teardown."""
    leave(_invoke(app))


def provision_console() -> None:
    """The `provision` program, ending as `console` does."""
    leave(_invoke(provision_app(), prog="provision"))


def leave(code: int) -> None:
    """End the process as Python would, minus tearing the interpreter down.

    Freeing every module and object at exit took about 0.1 s of a 1.5 s no-op
    run, for nothing: the process is over. What a normal exit guarantees still
    happens first: threads that are not daemons finish (pools are shut down),
    atexit handlers run, and stdout/stderr are flushed. Only for the console
    scripts: a caller that imported `main` gets SystemExit as before.
    """
    shutdown = getattr(threading, "_shutdown", None)
    if shutdown is None:  # an interpreter without the hook: the usual exit
        sys.exit(code)
    try:
        shutdown()
    except KeyboardInterrupt:  # Ctrl-C while threads finish: the run's own code, no traceback
        code = code or exitcodes.INTERRUPTED
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):  # the reader went away: Python's own code for it
            code = code or UNFLUSHED
    os._exit(code)


def provision_app() -> typer.Typer:
    """The provision command as a program of its own. Reached through `app` its
    usage line would read `provision provision` (program name, then command)."""
    single = typer.Typer(
        add_completion=False, pretty_exceptions_enable=False, context_settings=HELP_OPTIONS
    )
    single.command("provision")(provision_command)
    return examples_last(single)
