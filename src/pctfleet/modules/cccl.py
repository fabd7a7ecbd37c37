"""`cccl_overlay`: put one CCCL tree over $CUDA_HOME/include/cccl, atomically.

The new tree is staged beside the old one, its manifest written inside it,
and the two directories are swapped with renameat2(RENAME_EXCHANGE), so a
reader (or an interrupted run) sees the old tree or the new one, never a mix.
The tree the wheel shipped is kept as `cccl.pctfleet-orig` for `state: absent`.
The shell is in sh/cccl_overlay*.sh, sh/cccl_restore.sh and sh/lib/cccl*.sh.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from pctfleet.modules.args import arg, text
from pctfleet.modules.base import Fact, Module, Plan, World, from_fields
from pctfleet.modules.toolchain import CudaArgs, CudaFact
from pctfleet.sh import library, snippet

MANIFEST = ".pctfleet-overlay.json"

# pctfleet_tree_hash and pctfleet_cccl_version, for audit and the fault tests.
TREE_HASH = library(["cccl"])


@dataclass(frozen=True)
class CcclArgs(CudaArgs):
    source: str = arg("", convert=text)
    state: str = arg("present", choices={"present", "absent"})

    def inputs(self) -> dict[str, str]:
        return {**self.cuda_inputs(), "SOURCE": self.source or ""}


@dataclass(frozen=True)
class OverlayState:
    """The source tree and its version, and the overlay in place (manifest None: none)."""

    source: str | None = None
    source_version: str = ""
    manifest: dict | None = None  # {} when there is one but it cannot be read
    tree_hash: str | None = None


class OverlayFact(CudaFact[OverlayState]):
    State = OverlayState
    snippet_name = "cccl_overlay_fact"

    def parse(self, reading: Fact) -> OverlayState:
        fields = reading.fields()
        return from_fields(OverlayState, fields, manifest=_manifest(fields))

    def converged(self, args: CcclArgs, world: World) -> dict[str, str]:
        if args.state == "absent":
            return {"cuda_home": "/ch"}
        source = args.source or "/site/flashinfer/data/cccl"
        manifest = {"source": source, "cccl_version": "3.1.0", "tree_hash": "ab12"}
        return {
            "source": source,
            "source_version": "3.1.0",
            "manifest": json.dumps(manifest),
            "tree_hash": "ab12",
        }


class CcclOverlay(Module, name="cccl_overlay", args=CcclArgs, fact=OverlayFact()):
    def plan(self, args: CcclArgs, state: OverlayState, check: bool) -> Plan:
        manifest = state.manifest
        if args.state == "absent":
            if manifest is None:
                return Plan(False, msg="no overlay in place")
            script = snippet("cccl_restore", **args.inputs())
            return Plan(True, script=script, msg="restoring", diff=_diff(manifest, None))
        if not state.source_version:
            return Plan(
                False,
                failed=True,
                msg=f"no CCCL source tree at {state.source} "
                "(install flashinfer-python, or give 'source')",
            )
        wanted = {"source": state.source, "cccl_version": state.source_version}
        if manifest and _matches(manifest, wanted, state.tree_hash):
            return Plan(
                False, msg=f"CCCL {wanted['cccl_version']} overlaid from {wanted['source']}"
            )
        return Plan(
            True,
            script=snippet("cccl_overlay", **args.inputs()),
            msg=f"overlay CCCL {wanted['cccl_version']}",
            diff=_diff(manifest, wanted, state),
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


def _diff(manifest: dict | None, wanted: dict | None, state: OverlayState | None = None) -> dict:
    def show(item: dict | None) -> str:
        if item is None:
            return "wheel's own CCCL tree\n"
        if not item:  # a manifest is there: the tree is an overlay all the same
            return "CCCL overlay with an unreadable manifest\n"
        return f"CCCL {item.get('cccl_version')} from {item.get('source')}\n"

    before = show(manifest)
    if manifest and state and manifest.get("tree_hash") != state.tree_hash:
        before += f"tree modified since overlay (hash {str(state.tree_hash)[:12]})\n"
    return {"path": "include/cccl", "before": before, "after": show(wanted)}
