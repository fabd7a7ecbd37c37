"""`flashinfer_cache`: no JIT object built by another toolchain survives a change.

flashinfer's cache key has no toolchain version in it, so after any change to
the compiler, runtime, links or CCCL its cached objects are reused wrongly.
Each cache folder gets a stamp with the toolchain id it was cleared for; when
the id changes, the server is stopped (by its PID file) and the folders are
cleared. This survives interrupted runs, unlike a handler that was never run.
The shell is in sh/flashinfer_cache*.sh.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pctfleet.modules.args import arg, text
from pctfleet.modules.base import Fact, FactReader, Module, Plan, World, number
from pctfleet.modules.toolchain import CudaArgs
from pctfleet.sh import snippet

STAMP = ".pctfleet-toolchain"


def folders(home: str | None, workspace_base: str | None) -> list[str]:
    """Both places flashinfer caches: its own default and SGLang's workspace base."""
    home = str(home or "/root").rstrip("/")
    dirs = [f"{home}/.cache/flashinfer", f"{home}/.cache/sglang/.cache/flashinfer"]
    if workspace_base:
        dirs.append(f"{str(workspace_base).rstrip('/')}/.cache/flashinfer")
    return list(dict.fromkeys(dirs))


def cache_dirs(settings: Mapping[str, Any]) -> list[str]:
    """`folders` of a mapping with `home` and `workspace_base` (audit's settings)."""
    return folders(settings.get("home"), settings.get("workspace_base"))


def whole_seconds(value: Any, where: str) -> int:
    number({"stop_grace": value}, "stop_grace", where, "flashinfer_cache", integer=True)
    return int(value)


@dataclass(frozen=True)
class CacheArgs(CudaArgs):
    home: str | None = arg(None, convert=text)
    workspace_base: str | None = arg(None, convert=text)
    server_pidfile: str | None = arg(None, convert=text)
    stop_grace: int = arg(30, convert=whole_seconds)

    @property
    def folders(self) -> list[str]:
        return folders(self.home, self.workspace_base)


@dataclass(frozen=True)
class CacheState:
    """The toolchain id now, and by folder index (args.folders) its stamp and entry count."""

    toolchain: str = ""
    stamps: Mapping[int, str] = field(default_factory=dict)
    entries: Mapping[int, str] = field(default_factory=dict)


class CacheFact(FactReader[CacheState]):
    State = CacheState

    def command(self, args: CacheArgs, want_diff: bool) -> str:
        inputs = {**args.cuda_inputs(), "STAMP": STAMP}
        return snippet("flashinfer_cache_fact", argv=list(args.folders), **inputs)

    def parse(self, reading: Fact) -> CacheState:
        fields = reading.fields()
        return CacheState(
            toolchain=fields.get("toolchain", ""),
            stamps=_numbered(fields, "stamp"),
            entries=_numbered(fields, "entries"),
        )

    def converged(self, args: CacheArgs, world: World) -> dict[str, str]:
        toolchain = "0123456789abcdef"
        stamps = {f"stamp{i}": toolchain for i in range(len(args.folders))}
        return {"toolchain": toolchain, **stamps}


def _numbered(fields: Mapping[str, str], prefix: str) -> dict[int, str]:
    """`stamp0`, `stamp1`... as {0: ..., 1: ...}."""
    found = {}
    for key, value in fields.items():
        if key.startswith(prefix) and key[len(prefix) :].isdigit():
            found[int(key[len(prefix) :])] = value
    return found


class FlashinferCache(Module, name="flashinfer_cache", args=CacheArgs, fact=CacheFact()):
    def plan(self, args: CacheArgs, state: CacheState, check: bool) -> Plan:
        toolchain, folders = state.toolchain, args.folders
        stale = [f for i, f in enumerate(folders) if state.stamps.get(i) != toolchain]
        if not stale:
            return Plan(False, msg=f"cache matches toolchain {toolchain}")
        counts = (state.entries.get(i, "0") for i in range(len(folders)))
        objects = sum(int(count) for count in counts if count.isdigit())
        before = "".join(
            f"{f}: toolchain {state.stamps.get(i, 'unknown')}\n" for i, f in enumerate(folders)
        )
        return Plan(
            True,
            script=_script(args, stale),
            msg=f"cleared {len(stale)} cache folder(s) ({objects} entries) for toolchain "
            f"{toolchain}",
            diff={
                "path": "flashinfer JIT cache",
                "before": before,
                "after": "".join(f"{f}: toolchain {toolchain}\n" for f in folders),
            },
        )


def _script(args: CacheArgs, stale: list[str]) -> str:
    clear = snippet("flashinfer_cache", argv=list(stale), STAMP=STAMP, **args.cuda_inputs())
    if not args.server_pidfile:
        return clear
    stop = snippet("flashinfer_cache_stop", PIDFILE=args.server_pidfile, GRACE=args.stop_grace)
    return "set -e\n" + stop + clear
