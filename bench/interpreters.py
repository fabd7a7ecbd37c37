"""How many Python interpreters a converged container's probe starts.

For one no-op run of one container, every python the probe could call (the
container's /usr/local/bin/python3, first on the probe's PATH, and the venv's
python) is a wrapper that appends a line to a log, then becomes the real
interpreter under the name it was called by (so the venv's python still finds
its pyvenv.cfg). The lines in the log are the interpreters started. What was
at those paths is moved aside first and moved back afterwards, whatever
happened in between.
"""

from __future__ import annotations

import base64
import shlex
from collections.abc import Callable

LOG = "/tmp/pctfleet-bench-python-starts.log"
SYSTEM = "/usr/local/bin/python3"
SAVED = ".pctfleet-bench-saved"  # suffix of what a wrapper stands in for


def wrapper(log: str) -> str:
    note = "{ printf '%s ' \"$0\" \"$@\" | tr '\\n' ' ' | head -c 100; echo; }"
    return f"#!/bin/bash\n{note} >> {shlex.quote(log)}\n" + 'exec -a "$0" /usr/bin/python3 "$@"\n'


def wrapped(venv: str) -> tuple[str, str]:
    return SYSTEM, f"{venv}/bin/python"


def install_script(venv: str, log: str = LOG) -> str:
    """Each path moved aside (if anything is there), then the wrapper in its place."""
    encoded = base64.b64encode(wrapper(log).encode()).decode()
    steps = []
    for path in wrapped(venv):
        p, saved = shlex.quote(path), shlex.quote(path + SAVED)
        # A saved copy already there is the original of a run that never restored:
        # what stands at the path then is our wrapper, so it is not saved over it.
        there, kept = f"{{ [ -e {p} ] || [ -L {p} ]; }}", f"{{ [ -e {saved} ] || [ -L {saved} ]; }}"
        steps.append(f"if ! {kept} && {there}; then mv {p} {saved}; fi")
        steps.append(f"echo {encoded} | base64 -d > {p} && chmod 755 {p}")
    return " && ".join([*steps, f": > {shlex.quote(log)}"]) + "\n"


def self_check(venv: str, log: str = LOG) -> str:
    """One start of the wrapped venv python must log one line: the count is real.
    Prints that count, then empties the log for the run to be measured."""
    venv_python, quoted_log = shlex.quote(wrapped(venv)[1]), shlex.quote(log)
    return f"{venv_python} -c pass && wc -l < {quoted_log} && : > {quoted_log}\n"


def restore_script(venv: str, log: str = LOG) -> str:
    """Every path as it was: the wrapper gone, what was moved aside back."""
    quoted_log = shlex.quote(log)
    steps = []
    for path in wrapped(venv):
        p, saved = shlex.quote(path), shlex.quote(path + SAVED)
        # Only ever removes our wrapper (it names the log): an original that was
        # never moved aside stays where it is.
        steps.append(
            f"if [ -e {saved} ] || [ -L {saved} ]; then mv -f {saved} {p}; "
            f"elif [ -f {p} ] && grep -qF -- {quoted_log} {p}; then rm -f {p}; fi"
        )
    return " && ".join([*steps, f"rm -f {quoted_log}"]) + "\n"


def count_starts(
    run_script: Callable[[str], tuple[int, str]],
    venv: str,
    noop: Callable[[], None],
    log: str = LOG,
) -> list[str]:
    """The interpreters started in the container during `noop()`: one line each.
    run_script(sh) runs a script in that container and returns (exit, stdout)."""
    try:
        code, out = run_script(install_script(venv, log) + self_check(venv, log))
        if code != 0 or out.split()[-1:] != ["1"]:
            raise RuntimeError(f"the python wrappers do not count ({code}): {out}")
        noop()
        code, out = run_script(f"cat {shlex.quote(log)}\n")
        if code != 0:
            raise RuntimeError(f"could not read {log} ({code}): {out}")
        return [line for line in out.splitlines() if line.strip()]
    finally:
        code, out = run_script(restore_script(venv, log))
        if code != 0:  # said, without hiding why the count itself may have failed
            print(f"could not put the container's pythons back ({code}): {out}", flush=True)
