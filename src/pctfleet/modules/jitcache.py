"""`flashinfer_cache`: no JIT object built by another toolchain survives a change.

flashinfer's cache key has no toolchain version in it, so after any change to
the compiler, runtime, links or CCCL its cached objects are reused wrongly.
Each cache folder gets a stamp with the toolchain id it was cleared for; when
the id changes, the server is stopped (by its PID file) and the folders are
cleared. This survives interrupted runs, unlike a handler that was never run.
"""

from __future__ import annotations

from typing import Any

from pctfleet.modules.base import Fact, LegacyModule, Plan, number, q
from pctfleet.modules.cudashell import preamble
from pctfleet.modules.server import STOP_FUNCTION

STAMP = ".pctfleet-toolchain"


def cache_dirs(args: dict[str, Any]) -> list[str]:
    """Both places flashinfer caches: its own default and SGLang's workspace base."""
    home = str(args.get("home") or "/root").rstrip("/")
    dirs = [f"{home}/.cache/flashinfer", f"{home}/.cache/sglang/.cache/flashinfer"]
    if args.get("workspace_base"):
        dirs.append(f"{str(args['workspace_base']).rstrip('/')}/.cache/flashinfer")
    return list(dict.fromkeys(dirs))


class FlashinferCache(LegacyModule):
    name = "flashinfer_cache"
    args = {"venv", "cuda_home", "home", "workspace_base", "server_pidfile", "stop_grace"}

    def validate(self, args: dict[str, Any], where: str) -> None:
        number(args, "stop_grace", where, self.name, integer=True)

    def probe(self, args: dict[str, Any], want_diff: bool) -> str:
        lines = [preamble(args), 'pf_kv toolchain "$(pctfleet_toolchain_id "$VENV" "$CH")"']
        for index, folder in enumerate(cache_dirs(args)):
            lines.append(
                f"[ -f {q(folder + '/' + STAMP)} ] && "
                f'pf_kv stamp{index} "$(cat {q(folder + "/" + STAMP)})"'
            )
            lines.append(
                f'[ -d {q(folder)} ] && pf_kv entries{index} "$(ls -A {q(folder)} | '
                f"grep -vc '^{STAMP}$')\""
            )
        return "\n".join(lines)

    def plan(self, args: dict[str, Any], fact: Fact | None, check: bool) -> Plan:
        facts = fact.fields() if fact else {}
        toolchain = facts.get("toolchain", "")
        folders = cache_dirs(args)
        stale = [f for i, f in enumerate(folders) if facts.get(f"stamp{i}") != toolchain]
        if not stale:
            return Plan(False, msg=f"cache matches toolchain {toolchain}")
        objects = sum(int(facts.get(f"entries{i}", "0") or 0) for i in range(len(folders)))
        before = "".join(
            f"{f}: toolchain {facts.get(f'stamp{i}', 'unknown')}\n" for i, f in enumerate(folders)
        )
        return Plan(
            True,
            script=self._script(args, stale),
            msg=f"cleared {len(stale)} cache folder(s) ({objects} entries) for toolchain "
            f"{toolchain}",
            diff={
                "path": "flashinfer JIT cache",
                "before": before,
                "after": "".join(f"{f}: toolchain {toolchain}\n" for f in folders),
            },
        )

    @staticmethod
    def _script(args: dict[str, Any], stale: list[str]) -> str:
        lines = ["set -e", preamble(args), 'id=$(pctfleet_toolchain_id "$VENV" "$CH")']
        if args.get("server_pidfile"):
            # Never clear a cache under a running server: it would rebuild from a mix.
            lines += [
                STOP_FUNCTION,
                f"pctfleet_stop {q(args['server_pidfile'])} {int(args.get('stop_grace', 30))} ''",
            ]
        for folder in stale:
            old = q(folder + ".pctfleet-old")
            lines += [
                f"rm -rf {old}",
                f"[ -d {q(folder)} ] && mv {q(folder)} {old}",
                f"mkdir -p {q(folder)}",
                f"rm -rf {old}",
                f'echo "$id" > {q(folder + "/" + STAMP)}',
            ]
        return "\n".join(lines) + "\n"
