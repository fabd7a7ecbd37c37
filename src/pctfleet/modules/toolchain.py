"""`cuda_toolchain` and `compile_probe`: a matched CUDA toolchain, proven by a real compile.

The toolchain is installed only as the pinned set `cuda-toolkit[nvcc,nvvm,crt,
cudart,cccl,curand]==X` (never `nvidia-cuda-nvcc` alone, whose dependencies are not
pinned, and never with `-U`). Whether it is matched is judged from pip
metadata *and* from the binaries and headers (DOMAIN rules), so a tree that
was patched by hand is found too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from pctfleet.cuda.compile_probe import parse_probe, probe_script
from pctfleet.cuda.facts import ToolchainFacts, major_minor, parse_toolchain, toolchain_snippet
from pctfleet.cuda.known_errors import scan, symptom
from pctfleet.cuda.rules import (
    COMPONENTS,
    EXTRAS,
    arch_parts,
    check,
    expected_components,
    same_version,
)
from pctfleet.errors import PlaybookError, brief
from pctfleet.modules.args import Args, arg, flag, text
from pctfleet.modules.base import Fact, FactReader, Module, Plan, World, from_fields
from pctfleet.modules.pip import installer
from pctfleet.sh import snippet

# What reinstalling the pinned set can repair; the other rules need the operator.
REPAIRABLE = {
    "toolkit-pinned",
    "nvcc-ptxas",
    "nvcc-cicc",
    "nvcc-cudart",
    "ptx-isa",
    "cccl-present",
    "curand-headers",
    "torch-cuda",
}
NEEDS_OPERATOR = {"no-stray-headers", "arch-supported"}
DEFAULT_TOOLKIT = "13.0.2"  # what torch 2.11 (cu130) pins; used when no torch is installed
DEFAULT_VENV = "/opt/sglang"
DEFAULT_ARCH = "sm_120"


@dataclass(frozen=True)
class CudaArgs(Args):
    """What every CUDA module takes: the venv and, optionally, an explicit CUDA home."""

    venv: str = arg(DEFAULT_VENV, convert=text)
    cuda_home: str = arg("", convert=text)

    def cuda_inputs(self) -> dict[str, str]:
        """The inputs of the sh/ snippets that find $CH (lib/cuda_env.sh)."""
        return {"VENV": self.venv or DEFAULT_VENV, "CH_ARG": self.cuda_home or ""}

    def inputs(self) -> dict[str, str]:
        """What the module's fact snippet takes (a module with more inputs adds them)."""
        return self.cuda_inputs()


S = TypeVar("S")


class CudaFact(FactReader[S]):
    """A fact read by one sh/ snippet (`snippet_name`) from the task's `inputs()`."""

    snippet_name: ClassVar[str]

    def command(self, args: CudaArgs, want_diff: bool) -> str:
        return snippet(self.snippet_name, **args.inputs())


def env_file_prefix(path: str | None) -> str:
    """Read the server's environment first: stray include paths live there."""
    return snippet("source_env", ENV_FILE=path) + "\n" if path else ""


def toolkit_version(value: Any, where: str) -> str:
    wanted = text(value, where) or "auto"
    if wanted != "auto" and not all(p.isdigit() for p in wanted.split(".")):
        raise PlaybookError(
            f"cuda_toolchain: 'cuda_toolkit' must be a version like 13.0.2 "
            f"or 'auto', got {wanted!r}",
            where=where,
        )
    return wanted


def gpu_arch(value: Any, where: str) -> str:
    found = text(value, where)
    if found and not arch_parts(found)[0]:
        raise PlaybookError(
            f"compile_probe: 'arch' must be a GPU architecture like sm_120 or 120f, "
            f"got {brief(value)}",
            where=where,
        )
    return found or DEFAULT_ARCH


@dataclass(frozen=True)
class ToolchainArgs(CudaArgs):
    venv: str = arg(required=True, convert=text)
    cuda_toolkit: str = arg("auto", convert=toolkit_version)
    fallback_toolkit: str | None = arg(None, convert=text)
    arch: str | None = arg(None, convert=text)
    env_file: str | None = arg(None, convert=text)
    build_tools: bool = arg(True, convert=flag)
    extra_args: str | None = arg(None, convert=text)

    def target(self, facts: ToolchainFacts) -> str:
        """An explicit version, else the one torch pins, else the fallback."""
        if self.cuda_toolkit != "auto":
            return self.cuda_toolkit
        return facts.torch_requires_cuda_toolkit or self.fallback

    @property
    def fallback(self) -> str:
        return self.fallback_toolkit or DEFAULT_TOOLKIT


class ToolchainFact(FactReader[ToolchainFacts]):
    """Every toolchain fact (cuda/facts.py), read in the server's environment."""

    def command(self, args: ToolchainArgs, want_diff: bool) -> str:
        return env_file_prefix(args.env_file) + toolchain_snippet(
            args.venv or DEFAULT_VENV, args.cuda_home or None
        )

    def parse(self, reading: Fact) -> ToolchainFacts:
        return parse_toolchain(reading.output)

    def converged(self, args: ToolchainArgs, world: World) -> dict[str, str]:
        """The target release installed as its pinned set, with the build tools."""
        target = args.cuda_toolkit if args.cuda_toolkit != "auto" else args.fallback
        pins = expected_components(target)
        nvcc = pins.get("nvidia-cuda-nvcc", target)
        digits, _ = arch_parts(args.arch or DEFAULT_ARCH)
        return {
            "cuda_home": f"{args.venv}/nvidia/cu13",
            "pip.cuda-toolkit": target,
            **{f"pip.{name}": version for name, version in pins.items()},
            "nvcc_version": nvcc,
            "ptxas_version": nvcc,
            "cicc_release": pins.get("nvidia-nvvm", nvcc),
            "cudart_version": major_minor(nvcc) or "",
            "gpu_archs": f"compute_90,compute_{digits}",
            "cccl_version": "3.0.1",
            "exists.curand_kernel": "1",
            "gxx_version": "13.3.0",
            "python_h": "1",
            "ninja_version": "1.11.1",
            "ninja_on_path": "1",
        }


class CudaToolchain(Module, name="cuda_toolchain", args=ToolchainArgs, fact=ToolchainFact()):
    def plan(self, args: ToolchainArgs, state: ToolchainFacts | None, check_mode: bool) -> Plan:
        facts = state or parse_toolchain("")
        target = args.target(facts)
        results = check(facts, arch=args.arch, expected_toolkit=target)
        blocking = [
            r
            for r in results
            if r.ok is False
            and (
                r.rule in NEEDS_OPERATOR
                or (r.rule == "torch-cuda" and not _same_minor(target, facts.torch_cuda))
            )
        ]
        if blocking:
            first = blocking[0]
            return Plan(False, failed=True, msg=f"{first.rule}: {first.evidence}; fix: {first.fix}")
        broken = [r for r in results if r.ok is False and r.rule in REPAIRABLE]
        tools = _missing_tools(facts, args)
        if not broken and not tools:
            return Plan(
                False,
                msg=f"CUDA {target} matched (nvcc {facts.nvcc_version}, "
                f"cicc {facts.cicc_release}, cudart {facts.cudart_version})",
            )
        reason = "; ".join(_explained(r.rule, r.evidence) for r in broken) or "build tools missing"
        # uv takes an installed cuda-toolkit==target as satisfied and does not re-check
        # the components it pins: while it stays, they are reinstalled by force.
        force = bool(broken) and same_version(facts.versions.get("cuda-toolkit"), target)
        script = _script(args, facts, target, bool(broken), force, tools)
        return Plan(True, script=script, msg=reason, diff=_diff(facts, target, tools))


def _explained(rule: str, evidence: str) -> str:
    """A broken rule, with the error it makes flashinfer's JIT print (as doctor explains)."""
    known = symptom(rule)
    if known is None:
        return f"{rule}: {evidence}"
    return f"{rule}: {evidence} (flashinfer's JIT would fail: {known.example}: {known.cause})"


def _missing_tools(facts: ToolchainFacts, args: ToolchainArgs) -> list[str]:
    if not args.build_tools:
        return []
    missing = []
    if not facts.gxx_version:
        missing.append("g++")
    if not facts.python_h:
        missing.append("python3-dev")
    if not facts.ninja_version:
        missing.append("ninja")
    return missing


def _script(
    args: ToolchainArgs,
    facts: ToolchainFacts,
    target: str,
    reinstall: bool,
    force: bool,
    tools: list,
) -> str:
    """sh/cuda_toolchain.sh: apt tools, the pinned set, a forced reinstall of its pins, ninja."""
    return snippet(
        "cuda_toolchain",
        argv=(args.extra_args or "").split(),
        INSTALLER=installer(facts.raw.get("uv", ""), facts.raw.get("venv_pip") == "1"),
        PYTHON=f"{args.venv}/bin/python",
        APT=" ".join(t for t in tools if t in {"g++", "python3-dev"}),
        TOOLKIT=f"cuda-toolkit[{EXTRAS}]=={target}" if reinstall else "",
        FORCE="1" if force else "",
        EXTRAS=EXTRAS,
        NINJA="1" if "ninja" in tools else "",
    )


def _diff(facts: ToolchainFacts, target: str, tools: list) -> dict:
    before = "".join(
        f"{name}=={facts.versions.get(name, '(absent)')}\n"
        for name in ("cuda-toolkit", *COMPONENTS)
    )
    pins = expected_components(target)
    after = f"cuda-toolkit=={target}\n" + "".join(f"{k}=={v}\n" for k, v in pins.items())
    if tools:
        after += "build tools: " + ", ".join(tools) + "\n"
    return {"path": "CUDA toolchain", "before": before, "after": after}


def _same_minor(version: str | None, other: str | None) -> bool:
    """13.0.2 and 13.0 are one CUDA release as far as torch is concerned."""
    if not version or not other:
        return False
    return version.split(".")[:2] == other.split(".")[:2]


# -- compile_probe ------------------------------------------------------------------------


@dataclass(frozen=True)
class ProbeArgs(CudaArgs):
    arch: str = arg(DEFAULT_ARCH, convert=gpu_arch)
    force: bool = arg(False, convert=flag)


@dataclass(frozen=True)
class ProbeState:
    """The toolchain id, the stamp a passing probe left, and where the headers are."""

    toolchain: str = ""
    stamp: str = ""
    cuda_home: str = ""
    fi_cccl: str | None = None  # flashinfer's bundled CCCL, when it is there


class ProbeFact(CudaFact[ProbeState]):
    State = ProbeState
    snippet_name = "compile_probe_fact"

    def parse(self, reading: Fact) -> ProbeState:
        fields = reading.fields()
        fi_cccl = fields.get("fi_cccl") if fields.get("fi_present") else None
        return from_fields(ProbeState, fields, fi_cccl=fi_cccl)

    def converged(self, args: ProbeArgs, world: World) -> dict[str, str]:
        toolchain = "0123456789abcdef"
        return {"toolchain": toolchain, "stamp": _stamp(toolchain, args), "cuda_home": "/ch"}


def _stamp(toolchain: str, args: ProbeArgs) -> str:
    return f"{toolchain} {args.arch} ok"


class CompileProbe(Module, name="compile_probe", args=ProbeArgs, fact=ProbeFact()):
    """Compile and link a CCCL+CUB kernel the way flashinfer's JIT does (no GPU needed).

    A passing probe leaves a stamp with the toolchain id and arch, so a
    converged container does not compile again; `force: true` always compiles.
    """

    def plan(self, args: ProbeArgs, state: ProbeState, check_mode: bool) -> Plan:
        stamp = _stamp(state.toolchain or "None", args)
        if state.stamp == stamp and not args.force:
            return Plan(False, msg=f"probe passed for {args.arch} with this toolchain")
        script = probe_script(state.cuda_home, args.arch, state.fi_cccl, "/tmp")
        stamp_file = (state.cuda_home or "/nonexistent") + "/.pctfleet-probe"
        record = snippet("compile_probe_stamp", STAMP=stamp, STAMP_FILE=stamp_file)
        return Plan(
            True,
            script=f"(\n{script}\n)\nPROBE_RC=$?\n{record}",
            msg=f"compiling for {args.arch}",
            skip_in_check=True,
        )

    def finish(self, args: ProbeArgs, plan: Plan, rc: int, out: str, err: str) -> dict:
        probe = parse_probe(out)
        result = {
            "rc": rc,
            "compile_ok": probe.compile_ok,
            "link_ok": probe.link_ok,
            "needed": probe.needed,
            "log": probe.log,
        }
        if rc == 0:
            result["msg"] = f"compiled and linked for {args.arch} ({', '.join(probe.needed)})"
            return result
        findings = scan(probe.log + "\n" + err)
        result["failed"] = True
        result["findings"] = [f.__dict__ for f in findings]
        if findings:
            first = findings[0]
            result["msg"] = f"{first.cause}: {first.line} (fix: {first.fix})"
        else:
            tail = [line for line in probe.log.splitlines() if line.strip()][-1:] or [err.strip()]
            result["msg"] = f"probe failed: {tail[0]}"
        return result
