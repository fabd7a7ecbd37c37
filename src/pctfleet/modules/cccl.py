"""`cccl_overlay`: put one CCCL tree over $CUDA_HOME/include/cccl, atomically.

The new tree is staged beside the old one, its manifest written inside it,
and the two directories are swapped with renameat2(RENAME_EXCHANGE), so a
reader (or an interrupted run) sees the old tree or the new one, never a mix.
The tree the wheel shipped is kept as `cccl.pctfleet-orig` for `state: absent`.
"""

from __future__ import annotations

import json
from typing import Any

from pctfleet.errors import PlaybookError
from pctfleet.modules.base import Fact, LegacyModule, Plan, q
from pctfleet.modules.cudashell import preamble

MANIFEST = ".pctfleet-overlay.json"

# Hash of a CCCL tree, manifest excluded: what the manifest promises and audit checks.
TREE_HASH = r"""
pctfleet_tree_hash() {
  (cd "$1" && find . -type f ! -name '.pctfleet-overlay.json' | LC_ALL=C sort |
    xargs -d '\n' sha256sum | sha256sum | cut -c1-64)
}
pctfleet_cccl_version() {  # a tree with cuda/std/__cccl/version.h below it
  v=$(sed -n 's/^#define CCCL_VERSION \([0-9]*\).*/\1/p' "$1/cuda/std/__cccl/version.h" 2>/dev/null)
  [ -n "$v" ] && echo "$((v / 1000000)).$((v / 1000 % 1000)).$((v % 1000))"
}
"""

SOURCE_LOOKUP = r"""
SRC={source}
if [ -z "$SRC" ]; then SRC="$(pctfleet_site "$VENV")/flashinfer/data/cccl"; fi
"""

# Atomic directory swap; python3 is present wherever a venv is.
EXCHANGE = r"""
pctfleet_exchange() {
  python3 - "$1" "$2" <<'PCTFLEET_PY'
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.renameat2(-100, os.fsencode(sys.argv[1]), -100, os.fsencode(sys.argv[2]), 2) != 0:
    err = ctypes.get_errno()
    sys.exit(f"cannot swap {sys.argv[1]} and {sys.argv[2]}: {os.strerror(err)}")
PCTFLEET_PY
}
"""


class CcclOverlay(LegacyModule):
    name = "cccl_overlay"
    args = {"venv", "cuda_home", "source", "state"}

    def validate(self, args: dict[str, Any], where: str) -> None:
        state = args.setdefault("state", "present")
        if state not in {"present", "absent"}:
            raise PlaybookError("cccl_overlay: 'state' must be present or absent", where=where)

    def _head(self, args: dict[str, Any]) -> str:
        return (
            preamble(args)
            + TREE_HASH
            + SOURCE_LOOKUP.format(source=q(args.get("source") or ""))
            + 'DST="$CH/include/cccl"\nORIG="$CH/include/cccl.pctfleet-orig"\n'
        )

    def probe(self, args: dict[str, Any], want_diff: bool) -> str:
        return (
            self._head(args)
            + r"""
pf_kv cuda_home "$CH"
pf_kv source "$SRC"
if [ -d "$SRC/libcudacxx/include" ]; then
  pf_kv source_version "$(pctfleet_cccl_version "$SRC/libcudacxx/include")"
fi
[ -d "$DST" ] && pf_kv dst_version "$(pctfleet_cccl_version "$DST")"
[ -d "$ORIG" ] && pf_kv orig 1
if [ -f "$DST/.pctfleet-overlay.json" ]; then
  pf_kv manifest "$(cat "$DST/.pctfleet-overlay.json")"
  pf_kv tree_hash "$(pctfleet_tree_hash "$DST")"
fi"""
        )

    def plan(self, args: dict[str, Any], fact: Fact | None, check: bool) -> Plan:
        facts = fact.fields() if fact else {}
        manifest = _manifest(facts)
        if args["state"] == "absent":
            if manifest is None:
                return Plan(False, msg="no overlay in place")
            return Plan(
                True,
                script=self._head(args) + EXCHANGE + RESTORE,
                msg="restoring",
                diff=_diff(manifest, None),
            )
        if not facts.get("source_version"):
            return Plan(
                False,
                failed=True,
                msg=f"no CCCL source tree at {facts.get('source')} "
                "(install flashinfer-python, or give 'source')",
            )
        wanted = {"source": facts["source"], "cccl_version": facts["source_version"]}
        if manifest and _matches(manifest, wanted, facts.get("tree_hash")):
            return Plan(
                False, msg=f"CCCL {wanted['cccl_version']} overlaid from {wanted['source']}"
            )
        script = self._head(args) + EXCHANGE + OVERLAY
        return Plan(
            True,
            script=script,
            msg=f"overlay CCCL {wanted['cccl_version']}",
            diff=_diff(manifest, wanted, facts),
        )


def _manifest(facts: dict[str, str]) -> dict | None:
    if "manifest" not in facts:
        return None
    try:
        manifest = json.loads(facts["manifest"])
    except ValueError:
        return {}
    return manifest if isinstance(manifest, dict) else {}


def _matches(manifest: dict, wanted: dict, tree_hash: str | None) -> bool:
    same_source = all(manifest.get(k) == v for k, v in wanted.items())
    return same_source and manifest.get("tree_hash") == tree_hash


def _diff(manifest: dict | None, wanted: dict | None, facts: dict | None = None) -> dict:
    def show(item: dict | None) -> str:
        if item is None:
            return "wheel's own CCCL tree\n"
        if not item:  # a manifest is there: the tree is an overlay all the same
            return "CCCL overlay with an unreadable manifest\n"
        return f"CCCL {item.get('cccl_version')} from {item.get('source')}\n"

    before = show(manifest)
    if manifest and facts and manifest.get("tree_hash") != facts.get("tree_hash"):
        before += f"tree modified since overlay (hash {str(facts.get('tree_hash'))[:12]})\n"
    return {"path": "include/cccl", "before": before, "after": show(wanted)}


OVERLAY = r"""set -e
STAGE="$CH/include/.cccl.pctfleet-stage"
rm -rf "$STAGE"
trap 'rm -rf "$STAGE"' EXIT
mkdir -p "$STAGE"
cp -a "$SRC/libcudacxx/include/." "$STAGE/"
cp -a "$SRC/cub/cub" "$STAGE/cub"
cp -a "$SRC/thrust/thrust" "$STAGE/thrust"
hash=$(pctfleet_tree_hash "$STAGE")
version=$(pctfleet_cccl_version "$STAGE")
# Written by json.dump: a source path holding a quote or a backslash stays valid JSON.
python3 - "$SRC" "$version" "$hash" "$STAGE/.pctfleet-overlay.json" <<'PCTFLEET_PY'
import json, sys, time
source, version, tree_hash, path = sys.argv[1:5]
written = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
manifest = {"source": source, "cccl_version": version, "tree_hash": tree_hash, "written": written}
with open(path, "w") as fh:
    json.dump(manifest, fh)
    fh.write("\n")
PCTFLEET_PY
sync -f "$STAGE/.pctfleet-overlay.json" 2>/dev/null || true
if [ ! -d "$DST" ]; then mv "$STAGE" "$DST"; exit 0; fi
pctfleet_exchange "$STAGE" "$DST"
# $STAGE now holds the replaced tree: keep the wheel's original once, drop later overlays.
if [ ! -d "$ORIG" ] && [ ! -f "$STAGE/.pctfleet-overlay.json" ]; then
  mv "$STAGE" "$ORIG"
fi
echo "overlaid CCCL $version ($hash)"
"""

RESTORE = r"""set -e
if [ ! -d "$ORIG" ]; then
  echo "no saved original tree at $ORIG: reinstall nvidia-cuda-cccl" >&2; exit 1
fi
pctfleet_exchange "$ORIG" "$DST"
rm -rf "$ORIG"
echo "restored the wheel's CCCL tree"
"""
