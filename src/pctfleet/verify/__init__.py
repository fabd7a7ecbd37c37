"""Prove a container's end state with testinfra, over `pct exec`.

- `backend`: the `pct://` testinfra backend (a pytest plugin, registered by entry point).
- `runner`: `pctfleet verify`: runs the checks in `pctfleet.infra` for a fleet.

This module stays free of pytest and testinfra imports, so the CLI starts
without them; only the backend and the child pytest process load them.
"""

from __future__ import annotations

from pctfleet.transport.base import UNREACHED

# What the checks need to know about a container, with playbooks/site.yml's
# defaults. Each can be set per container in the inventory (`pctfleet verify`),
# in a pct:// URL's query, with `--pct-<name>` or with PCTFLEET_<NAME>.
SETTINGS: dict[str, str] = {
    "venv": "/opt/sglang",
    "cuda_toolkit": "auto",
    "server_host": "0.0.0.0",
    "server_port": "30000",
    "server_env_file": "/etc/pctfleet/sglang.env",
    "server_pidfile": "/run/pctfleet/sglang.pid",
    "flashinfer_workspace_base": "/var/cache/flashinfer-workspace",
}

# This machine as a testinfra host (`verify --local`): testinfra's local backend with
# a limit on each command (verify/backend.py's LocalTimedBackend).
LOCAL_SCHEME = "pctfleet-local"

# A container is in one of these when its checks could not run at all: it is
# never "passed" and never "failed" (the checks said nothing about it).
UNAVAILABLE = (*UNREACHED, "error")
