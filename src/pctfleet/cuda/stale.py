"""What doctor and audit report that pctfleet did not leave there: processes and JIT objects.

Processes: whatever listens on the serving port, or holds /dev/nvidia* open, without a
PCTFLEET_SERVER marker in its environment: a server any `server` task started carries one,
whatever the task named it, and so do its workers. JIT objects: flashinfer cache entries
whose folder's stamp is another toolchain's id, or that carry no stamp at all, as
`flashinfer_cache` judges them.
Both ride in the command's one probe: one snippet, read as the two modules' facts.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pctfleet.modules.base import Fact
from pctfleet.modules.jitcache import STAMP, CacheFact, CacheState, folders
from pctfleet.modules.server import Holder, ServerProcess
from pctfleet.sh import snippet

# The site playbook's defaults (playbooks/site.yml), for an inventory that sets none.
SITE_DEFAULTS = {
    "venv": "/opt/sglang",
    "server_port": 30000,
    "server_home": "/root",  # whose ~/.cache/flashinfer the server fills
    "flashinfer_workspace_base": "/var/cache/flashinfer-workspace",
}
_PORT = re.compile(r"listening on port (\d+)")


@dataclass(frozen=True)
class StaleCache:
    """One cache folder holding entries another (or no known) toolchain built."""

    folder: str
    entries: int
    stamp: str | None  # None: no stamp (never cleared by pctfleet, or half-built)
    toolchain: str

    def __str__(self) -> str:
        if self.stamp is None:
            return (
                f"{self.folder} holds {self.entries} unstamped entries (built by an unknown "
                f"toolchain or half-built; now {self.toolchain})"
            )
        return (
            f"{self.folder} holds {self.entries} entries built for another toolchain "
            f"(stamp {self.stamp}, now {self.toolchain})"
        )


@dataclass
class Stale:
    processes: list[Holder] = field(default_factory=list)
    cache: list[StaleCache] = field(default_factory=list)

    def lines(self) -> list[str]:
        return [describe(h) for h in self.processes] + [str(c) for c in self.cache]


def _settings(variables: Mapping[str, Any]) -> dict[str, Any]:
    return {key: variables.get(key) or default for key, default in SITE_DEFAULTS.items()}


def _cache_args(settings: Mapping[str, Any]) -> tuple[str, list[str]]:
    return str(settings["venv"]), folders(
        settings["server_home"], settings["flashinfer_workspace_base"]
    )


def stale_snippet(variables: Mapping[str, Any]) -> str:
    """The server's process fact and the JIT cache fact, each in its own subshell."""
    settings = _settings(variables)
    venv, dirs = _cache_args(settings)
    processes = snippet("stale_process", PORT=settings["server_port"])
    cache = snippet("flashinfer_cache_fact", argv=dirs, VENV=venv, CH_ARG="", STAMP=STAMP)
    return f"(\n{processes}\n)\n(\n{cache}\n)\n"


def parse_stale(output: str) -> Stale:
    """What `stale_snippet` printed: the strangers and the folders with foreign objects."""
    reading = Fact(output, 0)
    dirs = reading.fields()
    keys = [k for k in dirs if k.startswith("folder") and k[6:].isdigit()]
    named = [dirs[k] for k in sorted(keys, key=lambda k: int(k[6:]))]
    state = ServerProcess().parse(reading)
    return Stale(state.strangers(), _stale_cache(CacheFact().parse(reading), named))


def _stale_cache(state: CacheState, dirs: list[str]) -> list[StaleCache]:
    found = []
    for i, folder in enumerate(dirs):
        count = state.entries.get(i, "0")
        entries = int(count) if count.isdigit() else 0
        stamp = state.stamps.get(i)
        if entries and state.toolchain and stamp != state.toolchain:
            found.append(StaleCache(folder, entries, stamp, state.toolchain))
    return found


def describe(holder: Holder) -> str:
    """ "port 30000 held by PID 4242 `python -m sglang...`, not started by pctfleet"."""
    port = _PORT.fullmatch(holder.why)
    if port:
        where = f"port {port[1]} held by PID {holder.pid}"
        return f"{where} `{holder.cmdline}`, not started by pctfleet"
    tail = "" if "not started by pctfleet" in holder.why else ", not started by pctfleet"
    return f"PID {holder.pid} `{holder.cmdline}` {holder.why}{tail}"
