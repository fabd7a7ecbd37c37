"""`cuda_links`: the three links flashinfer's JIT needs on a pip-wheel toolkit.

flashinfer links with `-L$CUDA_HOME/lib64 -L$CUDA_HOME/lib64/stubs -lcudart
-lcuda`, but the wheels ship only `lib/libcudart.so.13` and no libcuda at all:

- `$CUDA_HOME/lib64 -> lib`
- `lib/libcudart.so -> libcudart.so.13`
- `lib/stubs/libcuda.so -> ` the driver's `libcuda.so.1` (from `ldconfig -p`)

Without a driver (a machine with no GPU) there is no real libcuda. Then, and
only then, a symbol-less stub with soname libcuda.so.1 is built so the link
step works; the result says so, and on a GPU node the next run replaces the
stub with the driver's library.
"""

from __future__ import annotations

from typing import Any

from pctfleet.modules.base import Fact, LegacyModule, Plan, q
from pctfleet.modules.cudashell import preamble

PROBE = r"""
pf_kv cuda_home "$CH"
for f in "$CH"/lib/libcudart.so.[0-9]*; do [ -e "$f" ] && pf_kv cudart "${f##*/}" && break; done
pf_kv lib64 "$(readlink "$CH/lib64")"
pf_kv libcudart "$(readlink "$CH/lib/libcudart.so")"
pf_kv libcuda "$(readlink "$CH/lib/stubs/libcuda.so")"
[ -f "$CH/lib/stubs/.pctfleet-fallback" ] && pf_kv fallback 1
pf_kv driver "$(ldconfig -p 2>/dev/null | sed -n 's/.*libcuda\.so\.1 .*=> \(.*\)/\1/p' | head -n 1)"
"""

FALLBACK = "libcuda.so.fallback"
FALLBACK_NOTE = (
    "no driver libcuda.so.1 on this machine: linked a symbol-less stub "
    "(soname libcuda.so.1) so builds link; it is replaced by the driver's "
    "library once a GPU driver is visible"
)


class CudaLinks(LegacyModule):
    name = "cuda_links"
    args = {"venv", "cuda_home", "fallback_stub"}

    def probe(self, args: dict[str, Any], want_diff: bool) -> str:
        return preamble(args) + PROBE

    def plan(self, args: dict[str, Any], fact: Fact | None, check: bool) -> Plan:
        facts = fact.fields() if fact else {}
        if not facts.get("cudart"):
            return Plan(
                False,
                failed=True,
                msg=f"no lib/libcudart.so.* under "
                f"{facts.get('cuda_home')}: install the toolchain first",
            )
        wanted = self._wanted(facts, args)
        if wanted is None:
            return Plan(False, failed=True, msg="no driver libcuda.so.1 and fallback_stub is off")
        fallback = wanted["libcuda"] == FALLBACK
        current = {k: facts.get(k, "") for k in wanted}
        note = FALLBACK_NOTE if fallback else ""
        if current == wanted and (facts.get("fallback") == "1") == fallback:
            return Plan(False, msg=note)
        before = "".join(f"{k} -> {v or '(missing)'}\n" for k, v in current.items())
        after = "".join(f"{k} -> {v}\n" for k, v in wanted.items())
        return Plan(
            True,
            script=preamble(args) + self._script(wanted),
            msg=note,
            diff={"path": "$CUDA_HOME links", "before": before, "after": after},
        )

    @staticmethod
    def _wanted(facts: dict[str, str], args: dict[str, Any]) -> dict[str, str] | None:
        driver = facts.get("driver", "")
        if not driver and args.get("fallback_stub") is False:
            return None
        return {"lib64": "lib", "libcudart": facts["cudart"], "libcuda": driver or FALLBACK}

    @staticmethod
    def _script(wanted: dict[str, str]) -> str:
        lines = [
            "set -e",
            'mkdir -p "$CH/lib/stubs"',
            'ln -sfn lib "$CH/lib64.pctfleet-tmp" && mv -Tf "$CH/lib64.pctfleet-tmp" "$CH/lib64"',
            f'ln -sfn {q(wanted["libcudart"])} "$CH/lib/libcudart.so.pctfleet-tmp"',
            'mv -Tf "$CH/lib/libcudart.so.pctfleet-tmp" "$CH/lib/libcudart.so"',
        ]
        if wanted["libcuda"] == FALLBACK:
            lines += [FALLBACK_BUILD]
        else:
            lines += [
                'rm -f "$CH/lib/stubs/.pctfleet-fallback" "$CH/lib/stubs/libcuda.so.fallback"',
                f'ln -sfn {q(wanted["libcuda"])} "$CH/lib/stubs/libcuda.so.pctfleet-tmp"',
                'mv -Tf "$CH/lib/stubs/libcuda.so.pctfleet-tmp" "$CH/lib/stubs/libcuda.so"',
            ]
        return "\n".join(lines) + "\n"


# An empty shared object named like the driver library: enough for `-lcuda` to
# resolve at link time, honest about having no symbols (recorded in the marker).
FALLBACK_BUILD = r"""if ! command -v gcc >/dev/null 2>&1; then
  echo "gcc is needed to build the libcuda stub" >&2; exit 1
fi
tmp=$(mktemp -d)
printf 'void pctfleet_libcuda_stub(void) {}\n' > "$tmp/stub.c"
gcc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$CH/lib/stubs/libcuda.so.fallback.tmp" "$tmp/stub.c"
rm -rf "$tmp"
mv -f "$CH/lib/stubs/libcuda.so.fallback.tmp" "$CH/lib/stubs/libcuda.so.fallback"
ln -sfn libcuda.so.fallback "$CH/lib/stubs/libcuda.so.pctfleet-tmp"
mv -Tf "$CH/lib/stubs/libcuda.so.pctfleet-tmp" "$CH/lib/stubs/libcuda.so"
echo "no driver libcuda.so.1: built a symbol-less stub" > "$CH/lib/stubs/.pctfleet-fallback"
"""
