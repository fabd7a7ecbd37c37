"""`cuda_toolchain` and `compile_probe`: a matched CUDA toolchain, proven by a real compile.

The toolchain is installed only as the pinned set `cuda-toolkit[nvcc,nvvm,crt,
cudart,cccl]==X` (never `nvidia-cuda-nvcc` alone, whose dependencies are not
pinned, and never with `-U`). Whether it is matched is judged from pip
metadata *and* from the binaries and headers (DOMAIN rules), so a tree that
was patched by hand is found too.
"""

from __future__ import annotations

from typing import Any

from pctfleet.cuda.facts import parse_toolchain, toolchain_snippet
from pctfleet.cuda.rules import check, expected_components
from pctfleet.errors import PlaybookError
from pctfleet.modules.base import Fact, LegacyModule, Plan, q
from pctfleet.modules.cudashell import preamble

EXTRAS = "nvcc,nvvm,crt,cudart,cccl"
# What reinstalling the pinned set can repair; the other rules need the operator.
REPAIRABLE = {
    "toolkit-pinned",
    "nvcc-ptxas",
    "nvcc-cicc",
    "nvcc-cudart",
    "ptx-isa",
    "cccl-present",
    "torch-cuda",
}
NEEDS_OPERATOR = {"no-stray-headers", "arch-supported"}
DEFAULT_TOOLKIT = "13.0.2"  # what torch 2.11 (cu130) pins; used when no torch is installed
COMPONENT_WHEELS = (
    "nvidia-cuda-nvcc",
    "nvidia-nvvm",
    "nvidia-cuda-crt",
    "nvidia-cuda-runtime",
    "nvidia-cuda-cccl",
)


PINS_OF_TOOLKIT = """import importlib.metadata as m
wanted = ("nvcc", "nvvm", "crt", "cudart", "cccl")
pins = set()
for req in m.requires("cuda-toolkit") or []:
    spec, _, marker = req.partition(";")
    if any(f"extra == '{extra}'" in marker for extra in wanted):
        pins.add(spec.replace(" ", ""))
print(" ".join(sorted(pins)))"""


def env_file_prefix(path: str | None) -> str:
    """Read the server's environment first: stray include paths live there."""
    if not path:
        return ""
    return f"if [ -f {q(path)} ]; then set -a; . {q(path)}; set +a; fi\n"


def facts_snippet(args: dict[str, Any]) -> str:
    return env_file_prefix(args.get("env_file")) + toolchain_snippet(
        str(args.get("venv") or "/opt/sglang"), args.get("cuda_home") or None
    )


class CudaToolchain(LegacyModule):
    name = "cuda_toolchain"
    args = {
        "venv",
        "cuda_home",
        "cuda_toolkit",
        "fallback_toolkit",
        "arch",
        "env_file",
        "build_tools",
        "extra_args",
    }

    def validate(self, args: dict[str, Any], where: str) -> None:
        if not args.get("venv"):
            raise PlaybookError("cuda_toolchain needs 'venv'", where=where)
        wanted = str(args.get("cuda_toolkit") or "auto")
        if wanted != "auto" and not all(p.isdigit() for p in wanted.split(".")):
            raise PlaybookError(
                f"cuda_toolchain: 'cuda_toolkit' must be a version like 13.0.2 "
                f"or 'auto', got {wanted!r}",
                where=where,
            )
        args["cuda_toolkit"] = wanted

    def probe(self, args: dict[str, Any], want_diff: bool) -> str:
        return facts_snippet(args)

    def plan(self, args: dict[str, Any], fact: Fact | None, check_mode: bool) -> Plan:
        facts = parse_toolchain(fact.output if fact else "")
        target = self._target(args, facts)
        results = check(facts, arch=args.get("arch"), expected_toolkit=target)
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
        tools = self._missing_tools(facts, args)
        if not broken and not tools:
            return Plan(
                False,
                msg=f"CUDA {target} matched (nvcc {facts.nvcc_version}, "
                f"cicc {facts.cicc_release}, cudart {facts.cudart_version})",
            )
        reason = "; ".join(f"{r.rule}: {r.evidence}" for r in broken) or "build tools missing"
        pinned = not any(r.rule == "toolkit-pinned" for r in broken)
        script = self._script(args, target, bool(broken), bool(broken) and pinned, tools)
        return Plan(True, script=script, msg=reason, diff=self._diff(facts, target, tools))

    @staticmethod
    def _target(args: dict[str, Any], facts: Any) -> str:
        """An explicit version, else the one torch pins, else the fallback."""
        if args["cuda_toolkit"] != "auto":
            return args["cuda_toolkit"]
        fallback = str(args.get("fallback_toolkit") or DEFAULT_TOOLKIT)
        return facts.torch_requires_cuda_toolkit or fallback

    @staticmethod
    def _missing_tools(facts: Any, args: dict[str, Any]) -> list[str]:
        if args.get("build_tools") is False:
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
        self, args: dict[str, Any], target: str, reinstall: bool, force: bool, tools: list
    ) -> str:
        py = q(f"{args['venv']}/bin/python")
        pip = f"{py} -m pip install --no-input --disable-pip-version-check"
        extra = " ".join(q(a) for a in str(args.get("extra_args") or "").split())
        lines = ["set -e", "export DEBIAN_FRONTEND=noninteractive"]
        apt = [t for t in tools if t in {"g++", "python3-dev"}]
        if apt:
            lines.append(
                "apt-get update -q >/dev/null && apt-get install -y -q "
                "--no-install-recommends " + " ".join(apt) + " >/dev/null"
            )
        if reinstall:
            lines.append(f"{pip} {extra} {q(f'cuda-toolkit[{EXTRAS}]=={target}')}")
        if force:
            # Metadata already says "matched" but the files disagree: they were changed by
            # hand. Reinstall exactly the component versions cuda-toolkit pins.
            lines.append(f"pins=$({py} - <<'PCTFLEET_PY'\n{PINS_OF_TOOLKIT}\nPCTFLEET_PY\n)")
            lines.append(f"{pip} {extra} --force-reinstall --no-deps $pins")
        if "ninja" in tools:
            lines.append(f"{pip} {extra} ninja")
        return "\n".join(lines) + "\n"

    @staticmethod
    def _diff(facts: Any, target: str, tools: list) -> dict:
        before = "".join(
            f"{name}=={facts.versions.get(name, '(absent)')}\n"
            for name in ("cuda-toolkit", *COMPONENT_WHEELS)
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


class CompileProbe(LegacyModule):
    """Compile and link a CCCL+CUB kernel the way flashinfer's JIT does (no GPU needed).

    A passing probe leaves a stamp with the toolchain id and arch, so a
    converged container does not compile again; `force: true` always compiles.
    """

    name = "compile_probe"
    args = {"venv", "cuda_home", "arch", "force"}

    def validate(self, args: dict[str, Any], where: str) -> None:
        from pctfleet.cuda.rules import arch_parts

        if args.get("arch") and not arch_parts(str(args["arch"]))[0]:
            raise PlaybookError(
                f"compile_probe: 'arch' must be a GPU architecture like sm_120 or 120f, "
                f"got {args['arch']!r}",
                where=where,
            )

    def probe(self, args: dict[str, Any], want_diff: bool) -> str:
        return preamble(args) + (
            'pf_kv toolchain "$(pctfleet_toolchain_id "$VENV" "$CH")"\n'
            '[ -f "$CH/.pctfleet-probe" ] && pf_kv stamp "$(cat "$CH/.pctfleet-probe")"\n'
            'FI="$(pctfleet_site "$VENV")/flashinfer/data/cccl"\n'
            'pf_kv fi_cccl "$FI"\n'
            '[ -d "$FI" ] && pf_kv fi_present 1\n'
            'pf_kv cuda_home "$CH"\n'
        )

    def plan(self, args: dict[str, Any], fact: Fact | None, check_mode: bool) -> Plan:
        facts = fact.fields() if fact else {}
        arch = str(args.get("arch") or "sm_120")
        stamp = f"{facts.get('toolchain')} {arch} ok"
        if facts.get("stamp") == stamp and not args.get("force"):
            return Plan(False, msg=f"probe passed for {arch} with this toolchain")
        from pctfleet.cuda.compile_probe import probe_script

        cccl = facts.get("fi_cccl") if facts.get("fi_present") else None
        script = probe_script(facts.get("cuda_home", ""), arch, cccl, "/tmp")
        record = (
            f'\nprobe_rc=$?\nif [ "$probe_rc" -eq 0 ]; then echo {q(stamp)} > '
            f"{q(facts.get('cuda_home', '/nonexistent') + '/.pctfleet-probe')}; fi\n"
            "exit $probe_rc\n"
        )
        return Plan(
            True,
            script=f"(\n{script}\n)" + record,
            msg=f"compiling for {arch}",
            skip_in_check=True,
        )

    def finish(self, args: dict[str, Any], plan: Plan, rc: int, out: str, err: str) -> dict:
        from pctfleet.cuda.compile_probe import parse_probe
        from pctfleet.cuda.known_errors import scan

        probe = parse_probe(out)
        result = {
            "rc": rc,
            "compile_ok": probe.compile_ok,
            "link_ok": probe.link_ok,
            "needed": probe.needed,
            "log": probe.log,
        }
        if rc == 0:
            result["msg"] = (
                f"compiled and linked for {args.get('arch')} ({', '.join(probe.needed)})"
            )
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
