"""The lab's direct lxc-attach calls survive lxc-attach dying at its own start."""

from __future__ import annotations

import sys

from pctfleet.lab import system

# Dies as LXC 5.0's lxc-attach does when its memfd re-exec fails, until `left` is 0.
CRASHING = """
import os, sys
path = sys.argv[1]
left = int(open(path).read())
if left:
    open(path, "w").write(str(left - 1))
    print("Device or resource busy - Failed to rexec as memfd", file=sys.stderr, flush=True)
    os.abort()
print("attached")
"""


def command(tmp_path, crashes: int) -> list[str]:
    counter = tmp_path / "left"
    counter.write_text(str(crashes))
    return [sys.executable, "-c", CRASHING, str(counter)]


def test_a_crash_at_lxc_attachs_start_is_run_again(tmp_path):
    done = system.attach(command(tmp_path, 2), text=True)
    assert (done.returncode, done.stdout) == (0, "attached\n")
    assert (tmp_path / "left").read_text() == "0"


def test_it_gives_up_after_its_tries_and_returns_the_crash(tmp_path):
    done = system.attach(command(tmp_path, system.ATTACH_TRIES + 1))
    assert system.died_before_attaching(done)
    assert (tmp_path / "left").read_text() == "1"


def test_any_other_failure_is_returned_as_it_is(tmp_path):
    script = "import sys; print('Failed to rexec as memfd', file=sys.stderr); sys.exit(1)"
    done = system.attach([sys.executable, "-c", script], text=True)
    assert done.returncode == 1 and not system.died_before_attaching(done)
