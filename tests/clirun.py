"""The CLI run in the test's own process, so the test's monkeypatched spies and fakes
see every call it makes (a subprocess would escape them)."""

from __future__ import annotations

import contextlib
import io


def invoke(*args: str) -> tuple[int, str, str]:
    """`pctfleet ARGS...` through the CLI's own entry point: exit code, stdout, stderr."""
    from pctfleet.cli import main as cli

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli._invoke(cli.app, list(args))
        except SystemExit as exc:  # typer's own usage errors
            code = exc.code if isinstance(exc.code, int) else 1
    return code, out.getvalue(), err.getvalue()
