"""The systemd unit and launcher the `server` module writes where systemd is PID 1.

The unit runs a small sh launcher rather than the command itself, so the server sees
exactly the environment of the detached mode: the env file sourced by sh (systemd's
`EnvironmentFile=` parses quotes differently, and would override `env`), then `env`
words, then the command. Every value is quoted by `q`, the shell layer's only quoting.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from pctfleet.sh import q, source

if TYPE_CHECKING:
    from pctfleet.modules.server import ServerArgs


def unit_name(server: str) -> str:
    return f"pctfleet-{server}.service"


def launcher_path(server: str) -> str:
    return f"/etc/pctfleet/server-{server}.sh"


# The functions the launcher carries, frozen: the launcher's hash is part of the unit's
# identity (a different one is rewritten and the server restarted), so a change to the
# probes' shell library must not reach running servers. This is `library(["envfile"])`
# as it was when it was frozen; change it only together with a reason to restart.
LAUNCHER_LIBRARY = source("launcher_lib").body


def launcher_text(args: ServerArgs) -> str:
    """The sh script the unit's ExecStart runs: chdir, env file, then exec the command."""
    lines = [
        "#!/bin/sh",
        f"# Written by pctfleet: how {unit_name(args.name)} starts the server {args.name}.",
        LAUNCHER_LIBRARY.rstrip("\n"),
        # systemd restarts the unit after a failure or a reboot without pctfleet, and /run
        # is a tmpfs: the PID file (read by verify, the cache's server stop) must come from
        # here. `exec` keeps this PID, so it is the unit's main PID. Best effort: a PID
        # file that cannot be written is no reason not to serve.
        f"pctfleet_pf={q(args.pidfile)}",
        'mkdir -p "$(dirname "$pctfleet_pf")" &&',
        '  echo $$ > "$pctfleet_pf.$$" && mv -f "$pctfleet_pf.$$" "$pctfleet_pf"',
        "set -e",
    ]
    if args.chdir:
        lines.append(f"cd {q(args.chdir)}")
    if args.env_file:
        lines.append(f"pctfleet_source_env {q(args.env_file)}")
    words = " ".join(q(word) for word in [*args.environment(), *args.command])
    lines.append(f"exec env {words} </dev/null")
    return "\n".join(lines)


def unit_text(args: ServerArgs) -> str:
    """The unit: restarted on failure, enabled for boot, its output appended to the log."""
    # In unit files `%` starts a specifier; the log path is the operator's, taken literally.
    log = args.logfile.replace("%", "%%")
    return "\n".join(
        [
            f"# Written by pctfleet for the server {args.name}; the next run undoes edits.",
            "[Unit]",
            f"Description=pctfleet server {args.name}",
            "After=network.target",
            "",
            "[Service]",
            "Type=simple",
            f"ExecStart=/bin/sh {launcher_path(args.name)}",
            f"StandardOutput=append:{log}",
            "StandardError=inherit",
            "Restart=on-failure",
            "RestartSec=5",
            f"TimeoutStopSec={int(args.stop_grace)}",
            "",
            "[Install]",
            "WantedBy=multi-user.target",
        ]
    )


def files_sha(args: ServerArgs) -> str:
    """Hash of the unit file and the launcher as the `server_unit` script writes them
    (printf '%s\\n': each text and a newline); server_process.sh hashes them the same way."""
    written = f"{unit_text(args)}\n{launcher_text(args)}\n"
    return hashlib.sha256(written.encode()).hexdigest()[:16]
