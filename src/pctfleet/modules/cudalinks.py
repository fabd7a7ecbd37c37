"""`cuda_links`: the three links flashinfer's JIT needs on a pip-wheel toolkit.

flashinfer links with `-L$CUDA_HOME/lib64 -L$CUDA_HOME/lib64/stubs -lcudart
-lcuda`, but the wheels ship only `lib/libcudart.so.13` and no libcuda at all:

- `$CUDA_HOME/lib64 -> lib`
- `lib/libcudart.so -> libcudart.so.13`
- `lib/stubs/libcuda.so -> ` the driver's `libcuda.so.1` (from `ldconfig -p`)

Without a driver (a machine with no GPU) there is no real libcuda. Then, and
only then, a symbol-less stub with soname libcuda.so.1 is built so the link
step works; the result says so, and on a GPU node the next run replaces the
stub with the driver's library. The shell is in sh/cuda_links*.sh.
"""

from __future__ import annotations

from dataclasses import dataclass

from pctfleet.modules.args import arg, flag
from pctfleet.modules.base import Fact, Module, Plan, World, from_fields
from pctfleet.modules.toolchain import CudaArgs, CudaFact
from pctfleet.sh import snippet

FALLBACK = "libcuda.so.fallback"
FALLBACK_NOTE = (
    "no driver libcuda.so.1 on this machine: linked a symbol-less stub "
    "(soname libcuda.so.1) so builds link; it is replaced by the driver's "
    "library once a GPU driver is visible"
)
LINKS = ("lib64", "libcudart", "libcuda")


@dataclass(frozen=True)
class LinksArgs(CudaArgs):
    fallback_stub: bool = arg(True, convert=flag)


@dataclass(frozen=True)
class LinksState:
    """The runtime's soname, the three links as they are, the stub marker, the driver."""

    cuda_home: str | None = None
    cudart: str = ""  # libcudart.so.13; '' when the toolkit is not installed
    links: tuple[tuple[str, str], ...] = ()
    fallback: bool = False
    driver: str = ""


class LinksFact(CudaFact[LinksState]):
    State = LinksState
    snippet_name = "cuda_links_fact"

    def parse(self, reading: Fact) -> LinksState:
        fields = reading.fields()
        links = tuple((name, fields.get(name, "")) for name in LINKS)
        return from_fields(LinksState, fields, links=links, fallback=fields.get("fallback") == "1")

    def converged(self, args: LinksArgs, world: World) -> dict[str, str]:
        """On a GPU node: every link in place, to the driver's library."""
        driver = "/usr/lib/x86_64-linux-gnu/libcuda.so.1"
        cudart = "libcudart.so.13"
        return {"cudart": cudart, "lib64": "lib", "libcudart": cudart, "libcuda": driver,
                "driver": driver}  # fmt: skip


class CudaLinks(Module, name="cuda_links", args=LinksArgs, fact=LinksFact()):
    def plan(self, args: LinksArgs, state: LinksState, check: bool) -> Plan:
        if not state.cudart:
            return Plan(
                False,
                failed=True,
                msg=f"no lib/libcudart.so.* under {state.cuda_home}: install the toolchain first",
            )
        if not state.driver and not args.fallback_stub:
            return Plan(False, failed=True, msg="no driver libcuda.so.1 and fallback_stub is off")
        wanted = {"lib64": "lib", "libcudart": state.cudart, "libcuda": state.driver or FALLBACK}
        current = dict(state.links) or dict.fromkeys(LINKS, "")
        fallback = not state.driver
        note = FALLBACK_NOTE if fallback else ""
        if current == wanted and state.fallback == fallback:
            return Plan(False, msg=note)
        before = "".join(f"{k} -> {v or '(missing)'}\n" for k, v in current.items())
        after = "".join(f"{k} -> {v}\n" for k, v in wanted.items())
        return Plan(
            True,
            script=_script(args, state),
            msg=note,
            diff={"path": "$CUDA_HOME links", "before": before, "after": after},
        )


def _script(args: LinksArgs, state: LinksState) -> str:
    links = snippet("cuda_links", CUDART=state.cudart, **args.cuda_inputs())
    if state.driver:
        return links + snippet("cuda_links_driver", DRIVER=state.driver)
    return links + snippet("cuda_links_stub")
