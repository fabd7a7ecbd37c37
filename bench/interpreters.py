"""How many Python interpreters a converged container's probe starts.

For one no-op run of one container, every python the probe could call (the
container's /usr/local/bin/python3, first on the probe's PATH, and the venv's
python) is a wrapper that appends a line to a log, then becomes the real
interpreter under the name it was called by (so the venv's python still finds
its pyvenv.cfg). The lines in the log are the interpreters started. Afterwards
the venv's python is a link to /usr/bin/python3 again, as `python3 -m venv`
made it, and the wrapper in /usr/local/bin is gone.
"""

from __future__ import annotations

import base64
import shlex
from collections.abc import Callable

LOG = "/tmp/pctfleet-bench-python-starts.log"
SYSTEM = "/usr/local/bin/python3"


def wrapper(log: str) -> str:
    note = "{ printf '%s ' \"$0\" \"$@\" | tr '\\n' ' ' | head -c 100; echo; }"
    return f"#!/bin/bash\n{note} >> {shlex.quote(log)}\n" + 'exec -a "$0" /usr/bin/python3 "$@"\n'


def wrapped(venv: str) -> tuple[str, str]:
    return SYSTEM, f"{venv}/bin/python"


def install_script(venv: str, log: str = LOG) -> str:
    encoded = base64.b64encode(wrapper(log).encode()).decode()
    paths = [shlex.quote(p) for p in wrapped(venv)]
    steps = [f"rm -f {p} && echo {encoded} | base64 -d > {p} && chmod 755 {p}" for p in paths]
    return " && ".join([*steps, f": > {shlex.quote(log)}"]) + "\n"


def self_check(venv: str, log: str = LOG) -> str:
    """One start of the wrapped venv python must log one line: the count is real.
    Prints that count, then empties the log for the run to be measured."""
    venv_python, quoted_log = shlex.quote(wrapped(venv)[1]), shlex.quote(log)
    return f"{venv_python} -c pass && wc -l < {quoted_log} && : > {quoted_log}\n"


def restore_script(venv: str, log: str = LOG) -> str:
    system, venv_python = (shlex.quote(p) for p in wrapped(venv))
    link = f"ln -s /usr/bin/python3 {venv_python}"
    return f"rm -f {system} {venv_python} {shlex.quote(log)}; {link}\n"


def count_starts(
    run_script: Callable[[str], tuple[int, str]],
    venv: str,
    noop: Callable[[], None],
    log: str = LOG,
) -> list[str]:
    """The interpreters started in the container during `noop()`: one line each.
    run_script(sh) runs a script in that container and returns (exit, stdout)."""
    code, out = run_script(install_script(venv, log) + self_check(venv, log))
    if code != 0 or out.split()[-1:] != ["1"]:
        raise RuntimeError(f"the python wrappers do not count ({code}): {out}")
    try:
        noop()
        code, out = run_script(f"cat {shlex.quote(log)}\n")
        if code != 0:
            raise RuntimeError(f"could not read {log} ({code}): {out}")
        return [line for line in out.splitlines() if line.strip()]
    finally:
        run_script(restore_script(venv, log))
