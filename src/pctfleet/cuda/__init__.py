"""The CUDA toolchain flashinfer's JIT needs: facts, rules, known errors, compile probe.

- `facts`: one sh snippet that reads every toolchain fact in a container.
- `rules`: what "matched" means, as checks with evidence and a one-line fix.
- `known_errors`: compiler/linker/server messages mapped to their causes.
- `probe_cu`: a tiny CCCL + link compile that reproduces JIT failures in seconds.
"""

from pctfleet.cuda.compile_probe import PROBE_SOURCE, ProbeResult, parse_probe, probe_script
from pctfleet.cuda.facts import ToolchainFacts, parse_toolchain, toolchain_snippet
from pctfleet.cuda.known_errors import KNOWN_ERRORS, Finding, KnownError, scan
from pctfleet.cuda.rules import RuleResult, check, expected_components, verdict

__all__ = [
    "KNOWN_ERRORS",
    "PROBE_SOURCE",
    "Finding",
    "KnownError",
    "ProbeResult",
    "RuleResult",
    "ToolchainFacts",
    "check",
    "expected_components",
    "parse_probe",
    "parse_toolchain",
    "probe_script",
    "scan",
    "toolchain_snippet",
    "verdict",
]
