"""What "a matched CUDA toolchain" means, as checks over `ToolchainFacts`.

Each rule answers ok (True), broken (False) or unknown / not applicable
(None), with the evidence it used and one line an operator can act on.
The rule ids are stable: JSON output and tests use them.

Example:
    >>> from pctfleet.cuda.facts import parse_toolchain
    >>> facts = parse_toolchain("nvcc_version=13.0.88\\nptxas_version=13.0.88\\n")
    >>> [r.ok for r in check(facts, arch=None, expected_toolkit=None) if r.rule == "nvcc-ptxas"]
    [True]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

from pctfleet.cuda.facts import ToolchainFacts, major_minor, version_tuple

COMPONENTS = (
    "nvidia-cuda-nvcc",
    "nvidia-nvvm",
    "nvidia-cuda-crt",
    "nvidia-cuda-runtime",
    "nvidia-cuda-cccl",
    "nvidia-curand",
)
# cuRAND is numbered as a library (10.4), not as the CUDA release it ships with.
LIBRARIES = {"nvidia-curand"}
# curand: cutlass's tensor_fill.h (flashinfer's prefill JIT) includes curand_kernel.h.
EXTRAS = "nvcc,nvvm,crt,cudart,cccl,curand"

# Read from each cuda-toolkit wheel's metadata: the extras pin every component
# as `==X.*`. 13.0.3 pins the same components as 13.0.2.
_PINS_130 = {
    "nvidia-cuda-nvcc": "13.0.88",
    "nvidia-nvvm": "13.0.88",
    "nvidia-cuda-crt": "13.0.88",
    "nvidia-cuda-runtime": "13.0.96",
    "nvidia-cuda-cccl": "13.0.85",
    "nvidia-curand": "10.4.0.35",
}
PINS = {
    "13.0.2": _PINS_130,
    "13.0.3": _PINS_130,
    "13.2.1": {
        "nvidia-cuda-nvcc": "13.2.78",
        "nvidia-nvvm": "13.2.78",
        "nvidia-cuda-crt": "13.2.78",
        "nvidia-cuda-runtime": "13.2.75",
        "nvidia-cuda-cccl": "13.2.75",
        "nvidia-curand": "10.4.2.55",
    },
}

# Highest PTX ISA each CUDA release emits and accepts (CUDA 13.y: 9.y).
PTX_ISA = {"12.8": "8.7", "12.9": "8.8"}

LINKS_FIX = "run: provision --tags toolchain,links"


@dataclass
class RuleResult:
    rule: str
    ok: bool | None  # None: not applicable, or the facts to decide are missing
    evidence: str
    fix: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


def expected_components(toolkit: str) -> dict[str, str]:
    """The component versions `cuda-toolkit[...]==toolkit` pins; {} when not measured."""
    return dict(PINS.get(_canonical(toolkit), {}))


def check(
    facts: ToolchainFacts, *, arch: str | None, expected_toolkit: str | None
) -> list[RuleResult]:
    """Every rule, in the order a root cause is most likely to be found."""
    # What the container should have: the operator's pin, else torch's, else
    # the meta-package already there (its components must still match it).
    want = (
        expected_toolkit or facts.torch_requires_cuda_toolkit or facts.versions.get("cuda-toolkit")
    )
    rules: list[Callable[[], RuleResult]] = [
        lambda: toolkit_pinned(facts, want),
        lambda: nvcc_ptxas(facts, want),
        lambda: nvcc_cicc(facts, want),
        lambda: nvcc_cudart(facts, want),
        lambda: torch_cuda(facts),
        lambda: ptx_isa(facts, want),
        lambda: no_stray_headers(facts),
        lambda: arch_supported(facts, arch, want),
        lambda: driver(facts),
        lambda: libcuda_visible(facts),
        lambda: links(facts),
        lambda: build_tools(facts),
        lambda: cccl_present(facts, want),
        lambda: curand_headers(facts, want),
    ]
    return [rule() for rule in rules]


def verdict(results: list[RuleResult]) -> str:
    """'healthy', or the first failing rule and its evidence."""
    for result in results:
        if result.ok is False:
            return f"{result.rule}: {result.evidence}"
    if not any(result.ok for result in results):
        return "unknown: no rule could be checked"
    return "healthy"


def pinned_fix(facts: ToolchainFacts, toolkit: str | None) -> str:
    """The one reinstall line that fixes any mismatch among the pip components."""
    pip = f"{facts.venv}/bin/pip" if facts.venv else "pip"
    version = toolkit or "<the version torch requires>"
    return (
        f'reinstall the pinned set: {pip} install "cuda-toolkit[{EXTRAS}]=={version}" '
        "(never nvidia-cuda-nvcc alone)"
    )


def toolkit_pinned(facts: ToolchainFacts, want: str | None) -> RuleResult:
    """The pip components are exactly the set `cuda-toolkit==want` pins."""
    rule, fix = "toolkit-pinned", pinned_fix(facts, want)
    installed = {name: facts.versions[name] for name in COMPONENTS if name in facts.versions}
    meta = facts.versions.get("cuda-toolkit")
    # torch's own cuda-toolkit deps (runtime, cublas...) are in every cu13 venv:
    # they only count as the compiler when CUDA_HOME is the wheels' folder.
    if not _pip_layout(facts) or not (installed or meta):
        return _toolkit_not_from_pip(facts, want, fix)
    want = want or meta
    if not want:
        return _components_agree(installed, fix)
    problems = _pin_problems(want, meta, installed)
    if problems:
        return RuleResult(rule, False, f"expected cuda-toolkit {want}: {'; '.join(problems)}", fix)
    return RuleResult(rule, True, f"cuda-toolkit {meta} with its pinned components", fix)


def _toolkit_not_from_pip(facts: ToolchainFacts, want: str | None, fix: str) -> RuleResult:
    rule = "toolkit-pinned"
    if not facts.nvcc_version:
        where = f"{facts.cuda_home}/bin/nvcc" if facts.cuda_home else "no CUDA_HOME"
        return RuleResult(rule, False, f"no toolkit: no nvcc ({where}), no CUDA wheels", fix)
    evidence = f"toolkit not from pip wheels: nvcc {facts.nvcc_version} at {facts.cuda_home}"
    if not want:
        return RuleResult(rule, None, evidence + "; no expected version", fix)
    ok = major_minor(facts.nvcc_version) == major_minor(want)
    return RuleResult(rule, ok, f"{evidence}; expected {major_minor(want)}", fix)


def _pip_layout(facts: ToolchainFacts) -> bool:
    return "/site-packages/nvidia/" in (facts.cuda_home or "")


def _components_agree(installed: dict[str, str], fix: str) -> RuleResult:
    # Components without the meta-package were installed one by one: that is
    # how the unpinned nvvm/runtime of the incident got in.
    found = ", ".join(f"{name} {version}" for name, version in installed.items())
    releases = {major_minor(v) for name, v in installed.items() if name not in LIBRARIES}
    if len(releases) > 1 or len(installed) < len(COMPONENTS):
        return RuleResult("toolkit-pinned", False, f"no cuda-toolkit meta-package: {found}", fix)
    return RuleResult("toolkit-pinned", True, f"components agree (no meta-package): {found}", fix)


def _pin_problems(want: str, meta: str | None, installed: dict[str, str]) -> list[str]:
    problems = []
    if meta is None:
        problems.append("cuda-toolkit not installed")
    elif _canonical(meta) != _canonical(want):
        problems.append(f"cuda-toolkit is {meta}")
    pins = expected_components(want)
    for name in COMPONENTS:
        have = installed.get(name)
        if have is None:
            problems.append(f"{name} missing")
        elif pins and not _matches_pin(have, pins[name]):
            problems.append(f"{name} {have} (pinned {pins[name]})")
        elif not pins and name not in LIBRARIES and major_minor(have) != major_minor(want):
            problems.append(f"{name} {have} (want {major_minor(want)}.x)")
    return problems


def nvcc_ptxas(facts: ToolchainFacts, want: str | None) -> RuleResult:
    """nvcc and ptxas come from one release."""
    fix = pinned_fix(facts, want)
    return _same_release("nvcc-ptxas", facts, "ptxas", facts.ptxas_version, fix)


def nvcc_cicc(facts: ToolchainFacts, want: str | None) -> RuleResult:
    """cicc (nvidia-nvvm) matches nvcc: a newer cicc writes PTX ptxas rejects."""
    cicc, source = facts.cicc_release, "cicc (PTX header)"
    if facts.cicc_release_from == "binary":
        source = "cicc (binary string)"
    if not cicc and "nvidia-nvvm" in facts.versions:
        cicc, source = facts.versions["nvidia-nvvm"], "nvidia-nvvm (pip)"
    return _same_release("nvcc-cicc", facts, source, cicc, pinned_fix(facts, want))


def nvcc_cudart(facts: ToolchainFacts, want: str | None) -> RuleResult:
    """CUDART_VERSION of the headers the compile finds == nvcc (CCCL's cuda_toolkit.h check)."""
    header = facts.cudart_header or "cuda_runtime_api.h"
    label = f"CUDART_VERSION ({header})"
    return _same_release("nvcc-cudart", facts, label, facts.cudart_version, pinned_fix(facts, want))


def _same_release(
    rule: str, facts: ToolchainFacts, label: str, other: str | None, fix: str
) -> RuleResult:
    nvcc = major_minor(facts.nvcc_version)
    if nvcc is None:
        return RuleResult(rule, None, "nvcc not found", fix)
    if major_minor(other) is None:
        return RuleResult(rule, None, f"{label} not found", fix)
    ok = major_minor(other) == nvcc
    return RuleResult(rule, ok, f"nvcc {facts.nvcc_version}, {label} {other}", fix)


def torch_cuda(facts: ToolchainFacts) -> RuleResult:
    """torch was built for the CUDA release nvcc compiles for."""
    rule, torch = "torch-cuda", facts.versions.get("torch")
    if torch is None:
        return RuleResult(rule, None, "torch not installed")
    fix = _torch_fix(facts)
    if facts.torch_cuda == "cpu":
        return RuleResult(rule, False, f"torch {torch} is a CPU-only build", fix)
    if major_minor(facts.torch_cuda) is None or major_minor(facts.nvcc_version) is None:
        return RuleResult(rule, None, f"torch {torch}: torch.version.cuda or nvcc unknown", fix)
    ok = major_minor(facts.torch_cuda) == major_minor(facts.nvcc_version)
    evidence = f"torch {torch} built for CUDA {facts.torch_cuda}, nvcc {facts.nvcc_version}"
    return RuleResult(rule, ok, evidence, fix)


def _torch_fix(facts: ToolchainFacts) -> str:
    if facts.torch_requires_cuda_toolkit:
        return pinned_fix(facts, facts.torch_requires_cuda_toolkit)
    if facts.torch_cuda == "cpu":
        return "install a CUDA build of torch (cu130 wheels) in the venv"
    release = f"CUDA {facts.torch_cuda}" if facts.torch_cuda else "torch's CUDA"
    return f"install a {release} toolkit (apt/conda: CUDA 12 has no pip nvcc), set CUDA_HOME"


def ptx_isa(facts: ToolchainFacts, want: str | None) -> RuleResult:
    """The PTX cicc writes has a .version ptxas accepts."""
    rule, fix = "ptx-isa", pinned_fix(facts, want)
    emitted = facts.ptx_version or _isa_of(facts.cicc_release)
    accepted = facts.ptxas_max_ptx or _isa_of(facts.ptxas_version)
    if not emitted or not accepted:
        return RuleResult(rule, None, "PTX version or ptxas limit unknown", fix)
    ok = version_tuple(emitted) <= version_tuple(accepted)
    evidence = f"cicc emits PTX {emitted}, ptxas accepts up to {accepted}"
    return RuleResult(rule, ok, evidence, fix)


def _isa_of(release: str | None) -> str | None:
    parts = version_tuple(release)
    if len(parts) >= 2 and parts[0] == 13:
        return f"9.{parts[1]}"
    return PTX_ISA.get(major_minor(release) or "")


def no_stray_headers(facts: ToolchainFacts) -> RuleResult:
    """No other CUDA header tree reaches the compile, and no check is disabled."""
    rule = "no-stray-headers"
    problems = [f"{facts.stray_origins.get(d, '?')} adds {d}" for d in facts.stray_includes]
    disabling = [k for k, v in facts.env.items() if _disables_check(k, v)]
    problems += [f"{k} disables CCCL's toolkit check (hides the mismatch)" for k in disabling]
    if problems:
        return RuleResult(rule, False, "; ".join(problems), _stray_fix(facts, disabling))
    return RuleResult(rule, True, "no other CUDA headers on CPATH/*_INCLUDE_PATH/NVCC_*_FLAGS")


def _disables_check(key: str, value: str) -> bool:
    flag = "CCCL_DISABLE_CTK_COMPATIBILITY_CHECK"
    return key == flag or flag in value


def _stray_fix(facts: ToolchainFacts, disabling: list[str]) -> str:
    names = sorted(set(facts.stray_origins.values()) | set(disabling))
    return f"remove {', '.join(names)} from the server's environment (CUDA_HOME alone is enough)"


def arch_supported(facts: ToolchainFacts, arch: str | None, want: str | None) -> RuleResult:
    """nvcc can compile for the GPU's architecture (SM120 needs CUDA >= 12.8)."""
    rule, fix = "arch-supported", pinned_fix(facts, want)
    digits, suffix = arch_parts(arch) if arch else arch_parts(facts.gpu_cc or "")
    if not digits:
        return RuleResult(rule, None, "no arch given and no GPU visible", fix)
    if not facts.gpu_archs:
        return RuleResult(rule, None, "nvcc --list-gpu-arch unavailable", fix)
    nvcc = facts.nvcc_version
    if f"compute_{digits}" not in facts.gpu_archs:
        return RuleResult(rule, False, f"nvcc {nvcc} does not list compute_{digits}", fix)
    if suffix == "f" and version_tuple(nvcc) < (12, 9):
        return RuleResult(rule, False, f"sm_{digits}f needs CUDA >= 12.9, nvcc is {nvcc}", fix)
    gpu, _ = arch_parts(facts.gpu_cc or "")
    if gpu and gpu != digits:
        evidence = f"arch sm_{digits} given but the GPU is sm_{gpu}"
        return RuleResult(rule, False, evidence, f"set the container's arch to sm_{gpu}")
    return RuleResult(rule, True, f"nvcc {nvcc} lists compute_{digits}", fix)


def arch_parts(arch: str) -> tuple[str, str]:
    """'sm_120a' / '120f' / '12.0' / 'compute_90' -> ('120', 'a'), ('120', 'f'), ('120', '')."""
    text = arch.strip().lower()
    for prefix in ("sm_", "compute_"):
        text = text.removeprefix(prefix)
    suffix = text[-1] if text[-1:] in ("a", "f") else ""
    body = text[: len(text) - len(suffix)]
    if "." in body:
        major, _, minor = body.partition(".")
        body = major + minor
    return (body, suffix) if body.isdigit() else ("", "")


def driver(facts: ToolchainFacts) -> RuleResult:
    """The driver supports the CUDA release torch and nvcc target (cu13 needs >= 580)."""
    rule = "driver"
    if not facts.gpu_visible:
        return RuleResult(rule, None, "no GPU visible")
    wanted = [v for v in (facts.nvcc_version, facts.torch_cuda) if major_minor(v)]
    need = max((version_tuple(major_minor(v)) for v in wanted), default=())
    have = version_tuple(facts.driver_cuda)
    if not need or not have:
        return RuleResult(rule, None, f"driver CUDA {facts.driver_cuda}, nothing to compare")
    need_text = ".".join(map(str, need))
    evidence = f"driver {facts.driver_version} supports CUDA {facts.driver_cuda}, need {need_text}"
    fix = f"upgrade the node's NVIDIA driver to one that reports CUDA Version >= {need_text}"
    return RuleResult(rule, have >= need, evidence, fix)


def libcuda_visible(facts: ToolchainFacts) -> RuleResult:
    """The driver's libcuda.so.1 is in the container's linker cache."""
    rule = "libcuda-visible"
    if facts.libcuda:
        return RuleResult(rule, True, f"libcuda.so.1 at {facts.libcuda}")
    if not facts.gpu_visible:
        return RuleResult(rule, None, "no GPU visible and no libcuda.so.1 in ldconfig -p")
    fix = "bind-mount the driver libraries into the container, then run ldconfig in it"
    return RuleResult(rule, False, "GPU visible but libcuda.so.1 is not in ldconfig -p", fix)


def links(facts: ToolchainFacts) -> RuleResult:
    """lib64, libcudart.so and lib64/stubs/libcuda.so exist (flashinfer's -L/-l line)."""
    rule = "links"
    if not facts.cuda_home:
        return RuleResult(rule, None, "no CUDA_HOME", LINKS_FIX)
    names = ("lib64", "libcudart", "libcuda_stub")
    missing = [name for name in names if name not in facts.exists]
    shown = ", ".join(f"{n} -> {facts.links[n]}" for n in names if n in facts.links)
    if missing:
        return RuleResult(rule, False, f"missing: {', '.join(missing)}", LINKS_FIX)
    return RuleResult(rule, True, f"all resolve ({shown or 'real files'})", LINKS_FIX)


def build_tools(facts: ToolchainFacts) -> RuleResult:
    """g++ for nvcc, ninja on PATH for flashinfer's JIT, Python.h for its includes."""
    missing, fixes = [], []
    if not facts.gxx_version:
        missing.append("g++")
        fixes.append("apt-get install -y g++")
    if not facts.python_h:
        missing.append(f"Python.h ({facts.python_include or 'no venv python'})")
        fixes.append("apt-get install -y python3-dev")
    if not facts.ninja_version:
        missing.append("ninja")
        fixes.append("apt-get install -y ninja-build")
    elif not facts.ninja_on_path:
        # flashinfer runs plain `ninja`: the venv's copy counts only via PATH.
        missing.append(f"ninja on PATH (only {facts.ninja_path})")
        fixes.append(f"put {facts.venv}/bin on the server's PATH")
    if missing:
        return RuleResult("build-tools", False, "missing: " + ", ".join(missing), "; ".join(fixes))
    evidence = f"g++ {facts.gxx_version}, ninja {facts.ninja_version}, Python.h"
    return RuleResult("build-tools", True, evidence)


def cccl_present(facts: ToolchainFacts, want: str | None) -> RuleResult:
    """CCCL headers exist: flashinfer 0.5.x bundles none and needs the toolkit's."""
    rule, fix = "cccl-present", pinned_fix(facts, want)
    bundled = facts.flashinfer_cccl_version
    if facts.cccl_version:
        extra = f"; flashinfer bundles {bundled}" if bundled else ""
        return RuleResult(rule, True, f"toolkit CCCL {facts.cccl_version}{extra}", fix)
    if bundled:
        evidence = f"no toolkit CCCL; flashinfer bundles {bundled} (other consumers have none)"
        return RuleResult(rule, True, evidence, fix)
    return RuleResult(rule, False, "no CCCL headers (cuda/std/type_traits) anywhere", fix)


def curand_headers(facts: ToolchainFacts, want: str | None) -> RuleResult:
    """curand_kernel.h is in $CUDA_HOME/include: flashinfer's prefill JIT includes it."""
    rule, fix = "curand-headers", pinned_fix(facts, want)
    if not facts.cuda_home:
        return RuleResult(rule, None, "no CUDA_HOME", fix)
    header = f"{facts.cuda_home}/include/curand_kernel.h"
    if "curand_kernel" in facts.exists:
        return RuleResult(rule, True, header, fix)
    missing = f"no {header} (nvidia-curand not installed)"
    if "nvidia-curand" in facts.versions:
        missing = f"no {header} (nvidia-curand {facts.versions['nvidia-curand']} lacks it)"
    return RuleResult(rule, False, missing, fix)


def same_version(version: str | None, other: str | None) -> bool:
    """One release, however PEP 440 pads it (13.0.3 == 13.0.3.0); False when either is None."""
    return bool(version and other) and _canonical(version or "") == _canonical(other or "")


def _canonical(version: str) -> str:
    """'13.0.3.0' and '13.0.3' are one version (PEP 440 pads with zeros)."""
    parts = list(version_tuple(version))
    while len(parts) > 3 and parts[-1] == 0:
        parts.pop()
    return ".".join(map(str, parts))


def _matches_pin(installed: str, pin: str) -> bool:
    """`==13.0.88.*`: the installed release starts with the pin's."""
    want = version_tuple(pin)
    return version_tuple(installed)[: len(want)] == want
