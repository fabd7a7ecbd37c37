"""The unit launcher's functions do not follow the probes' shell library."""

from __future__ import annotations

import hashlib
import subprocess

from pctfleet.modules.unitfile import LAUNCHER_LIBRARY
from pctfleet.sh import library

# The launcher's hash is part of a systemd unit's identity: a new one is written and the
# server restarted. Changing this text restarts every unit-managed server on upgrade.
FROZEN = "711f97506b6cc3fb"


def test_the_launcher_library_is_frozen():
    assert hashlib.sha256(LAUNCHER_LIBRARY.encode()).hexdigest()[:16] == FROZEN


def test_a_probe_library_change_does_not_reach_the_launcher():
    # pf_kv no longer forks base64 for plain values; the launcher keeps the old text.
    assert library(["envfile"]) != LAUNCHER_LIBRARY


def test_the_frozen_functions_still_source_an_env_file(tmp_path):
    env = tmp_path / "server.env"
    env.write_text("PORT=30000\nexport NAME='sg x'\n")
    script = LAUNCHER_LIBRARY + f'pctfleet_source_env "{env}"\nsh -c \'echo "$PORT|$NAME"\'\n'
    done = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=30)
    assert done.stdout == "30000|sg x\n", done.stderr
