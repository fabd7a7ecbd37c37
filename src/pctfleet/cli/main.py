"""The `pctfleet` and `provision` programs: the typer app, its commands, our exit codes.

Each command lives in its own module (run, exec, doctor, audit, verify, rollout);
they parse options, call the library and render. Nothing else.
"""

from __future__ import annotations

import atexit
import functools
import importlib
import os
import sys
import threading

import typer

from pctfleet import exitcodes
from pctfleet.cli import coerce
from pctfleet.cli.examples import examples_last
from pctfleet.errors import InputError
from pctfleet.textout import visible

coerce.install()  # option values without pydantic where the answer is certain

UNFLUSHED = 120  # what Python exits with when stdout cannot be flushed at exit
HELP_OPTIONS = {"help_option_names": ["-h", "--help"]}
HELP = (
    "Bring GPU containers on Proxmox VE to a declared state: a matched CUDA toolchain, "
    "the CCCL overlay, link fixes, a clean flashinfer JIT cache and a healthy SGLang server.\n\n"
    "Nodes are reached over SSH (host keys checked), containers through 'pct exec'. "
    "Try it without Proxmox: 'pctfleet lab up'."
)
# Each command's module is imported only when the app that has it is built: a
# `pctfleet run` loads run's module, not rollout's, verify's or the lab's (about
# 0.1 s of CPU at start-up). In the order --help lists them.
COMMANDS: dict[str, tuple[str, str, dict]] = {
    "exec": ("pctfleet.cli.exec", "exec_command", {"allow_interspersed_args": False}),
    "run": ("pctfleet.cli.run", "run_command", {}),
    "provision": ("pctfleet.cli.run", "provision_command", {}),
    "doctor": ("pctfleet.cli.doctor", "doctor_command", {}),
    "audit": ("pctfleet.cli.audit", "audit_command", {}),
    "verify": ("pctfleet.cli.verify", "verify_command", {}),
    "rollout": ("pctfleet.cli.rollout", "rollout_command", {}),
    "report": ("pctfleet.cli.fleetreport", "report_command", {}),
    "connections": ("pctfleet.cli.connections", "connections_command", {}),
}
GROUPS: dict[str, tuple[str, str, str | None]] = {
    "inventory": (
        "pctfleet.cli.inventory",
        "inventory_app",
        "What an inventory selects; what the nodes hold.",
    ),
    "lab": ("pctfleet.lab.cli", "lab_app", "A local Proxmox-like lab: sshd nodes, LXC containers."),
    "runs": ("pctfleet.cli.runs", "runs_app", None),
}


def _loaded(module: str, attribute: str):  # noqa: ANN202 - a command function or a Typer
    return getattr(importlib.import_module(module), attribute)


def build_app(only: str | None = None) -> typer.Typer:
    """The `pctfleet` app with every command, or with the one command or group
    named `only` (what `pctfleet ONLY ...` runs: the same command, options and help)."""
    application = typer.Typer(
        name="pctfleet",
        help=HELP,
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        context_settings=HELP_OPTIONS,
    )
    for name, (module, attribute, settings) in COMMANDS.items():
        if only in (None, name):
            extra = {"context_settings": settings} if settings else {}
            application.command(name, **extra)(_loaded(module, attribute))
    for name, (module, attribute, text) in GROUPS.items():
        if only in (None, name):
            application.add_typer(_loaded(module, attribute), name=name, help=text)
    if only is not None:
        # One command and no callback would make typer run it as the program itself
        # (`pctfleet ARGS`); a callback keeps `pctfleet NAME ARGS`.
        application.callback()(_group)
    return examples_last(application)


def _group() -> None:
    """Run one command."""


def app_for(args: list[str]) -> typer.Typer:
    """The app for this command line: only its command's when it starts with one."""
    completing = any(key.endswith("_COMPLETE") for key in os.environ if key.startswith("_"))
    if args and not completing and (args[0] in COMMANDS or args[0] in GROUPS):
        return build_app(only=args[0])
    return full_app()


@functools.cache
def full_app() -> typer.Typer:
    return build_app()


def __getattr__(name: str) -> typer.Typer:
    """`app`: the whole app, built on first use (tests and scripts import it)."""
    if name == "app":
        return full_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
        return getattr(exc, "exit_code", exitcodes.PARSE_ERROR)
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
    sys.exit(_invoke(app_for(sys.argv[1:])))


def provision_main() -> None:
    """`provision`: the default playbook against one container (see `provision --help`)."""
    sys.exit(_invoke(provision_app(), prog="provision"))


def console() -> None:
    """The `pctfleet` program: `main`, then the process ends without teardown."""
    leave(_invoke(app_for(sys.argv[1:])))


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
    single.command("provision")(_loaded(*COMMANDS["provision"][:2]))
    return examples_last(single)
