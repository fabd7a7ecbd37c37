"""The doctor's table: each known message is named with its cause and rule.

The log lines are real: captured from nvcc 13.0 with mismatched pip wheels
(nvvm 13.2, runtime 13.2), flashinfer 0.7.4's bundled CCCL 3.6.0, GNU ld,
and SGLang's warm-up code; the rest are the messages named in DOMAIN.md.
"""

from __future__ import annotations

import re

import pytest

from pctfleet.cuda.facts import ToolchainFacts
from pctfleet.cuda.gpu_rules import RULES as GPU_RULES
from pctfleet.cuda.known_errors import KNOWN_ERRORS, MAX_LINE, scan
from pctfleet.cuda.rules import check

# (log line, rule, a word the cause must contain)
CASES = {
    "ptxas rejects newer PTX": (
        "ptxas /tmp/tmpxft_00007b0e_00000000-6_probe.ptx, line 9; fatal   : "
        "Unsupported .version 9.2; current version is '9.0'",
        "nvcc-cicc",
        "cicc",
    ),
    "CCCL 3.0 toolkit check (line 39)": (
        "/opt/venv/lib/python3.11/site-packages/nvidia/cu13/include/cccl/cuda/std/__cccl/"
        'cuda_toolkit.h:39:6: error: #error "CUDA compiler and CUDA toolkit headers are '
        'incompatible, please check your include paths"',
        "nvcc-cudart",
        "CUDART_VERSION",
    ),
    "CCCL 3.6 toolkit check (line 41)": (
        "/opt/venv/lib/python3.11/site-packages/flashinfer/data/cccl/libcudacxx/include/cuda/"
        'std/__cccl/cuda_toolkit.h:41:8: error: #error "CUDA compiler and CUDA toolkit '
        'headers are incompatible, please check your include paths"',
        "nvcc-cudart",
        "CUDART_VERSION",
    ),
    "NVML against another kernel module": (
        "Failed to initialize NVML: Driver/library version mismatch",
        "driver-match",
        "kernel module",
    ),
    "the incident's wording": (
        'cuda/std/__cccl/cuda_toolkit.h:41: #error "CUDA compiler and CUDA toolkit headers '
        'are incompatible, please check your include paths"',
        "nvcc-cudart",
        "nvcc",
    ),
    "no CCCL (flashinfer 0.5.x)": (
        "sampling.cu:17:10: fatal error: cuda/std/type_traits: No such file or directory",
        "cccl-present",
        "CCCL",
    ),
    "no CUB headers, cuda/std there (the probe includes block_reduce.cuh)": (
        "probe.cu:3:10: fatal error: cub/block/block_reduce.cuh: No such file or directory",
        "cccl-present",
        "CCCL",
    ),
    "no cuRAND headers (flashinfer 0.6.10's prefill JIT, seen on an H200)": (
        "/opt/local-proof/venv/lib/python3.12/site-packages/flashinfer/data/cutlass/tools/util/"
        "include/cutlass/util/reference/device/tensor_fill.h:52:10: fatal error: "
        "curand_kernel.h: No such file or directory",
        "curand-headers",
        "curand",
    ),
    "no libcudart.so": (
        "/usr/bin/ld: cannot find -lcudart: No such file or directory",
        "links",
        "libcudart",
    ),
    "no libcuda stub": (
        "/usr/bin/ld: cannot find -lcuda: No such file or directory",
        "links",
        "libcuda",
    ),
    "stub without symbols": (
        "ImportError: /root/.cache/flashinfer/0.7.4/120f/cached_ops/sampling/sampling.so: "
        "undefined symbol: cuDriverGetVersion",
        "links",
        "stub",
    ),
    "host gcc too new": (
        "/usr/local/cuda/include/crt/host_config.h:137:2: error: #error -- unsupported GNU "
        "version! gcc versions later than 15 are not supported! The nvcc flag "
        "'-allow-unsupported-compiler' can be used to override this version check",
        "build-tools",
        "g++",
    ),
    "no host compiler": (
        "nvcc fatal   : Failed to preprocess host compiler properties.",
        "build-tools",
        "g++",
    ),
    "toolkit too old for SM120": (
        "nvcc fatal   : Unsupported gpu architecture 'compute_120'",
        "arch-supported",
        "SM120",
    ),
    "no Python headers": (
        "/root/.cache/flashinfer/0.7.4/csrc/tvm_ffi_utils.h:20:10: fatal error: Python.h: "
        "No such file or directory",
        "build-tools",
        "Python",
    ),
    "no ninja on PATH": (
        "FileNotFoundError: [Errno 2] No such file or directory: 'ninja'",
        "build-tools",
        "PATH",
    ),
    "driver too old": (
        "RuntimeError: CUDA error: CUDA driver version is insufficient for CUDA runtime version",
        "driver",
        "driver",
    ),
    "kernels for another arch": (
        "RuntimeError: CUDA error: no kernel image is available for execution on the device",
        "arch-supported",
        "architecture",
    ),
    "stale JIT module": (
        "ImportError: sampling.so: undefined symbol: _ZN3c1017RegisterOperatorsD1Ev",
        "",
        "stale JIT cache",
    ),
    "warm-up request timed out": (
        "requests.exceptions.ReadTimeout: HTTPConnectionPool(host='127.0.0.1', port=30000): "
        "Read timed out. (read timeout=600)",
        "",
        "warm-up timeout",
    ),
    "warm-up timed out": (
        "Warmup forward batch timed out after 600 s",
        "",
        "warm-up timeout",
    ),
    "warm-up timeout hint": (
        "Consider raising SGLANG_WARMUP_TIMEOUT for slow first compiles",
        "",
        "warm-up timeout",
    ),
    "flashinfer's ninja failure": (
        "RuntimeError: Ninja build failed. Ninja output:",
        "",
        "first compiler error",
    ),
    "ninja stopped": ("ninja: build stopped: subcommand failed.", "", "first compiler error"),
    "venv without python3-venv": (
        "The virtual environment was not created successfully because ensurepip is not",
        "",
        "python3-venv",
    ),
    "ensurepip missing": ("/usr/bin/python3: No module named ensurepip", "", "python3-venv"),
    "SGLang warm-up failure": (
        "[2026-09-14 23:19:59] Initialization failed. warmup error: Traceback (most recent "
        "call last):",
        "",
        "warm-up request failed",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_each_known_error_is_recognised(case):
    line, rule, word = CASES[case]
    findings = scan(f"some build output\n{line}\nmore output\n")
    assert len(findings) == 1, findings
    finding = findings[0]
    assert (finding.rule, finding.lineno, finding.line) == (rule, 2, line.strip()[:MAX_LINE])
    assert word.lower() in finding.cause.lower()
    assert finding.fix and "\n" not in finding.fix


def test_every_entry_has_a_case_and_a_known_rule():
    causes = {scan(line)[0].cause for line, _, _ in CASES.values()}
    assert causes == {entry.cause for entry in KNOWN_ERRORS}
    rule_ids = {result.rule for result in check(ToolchainFacts(), arch=None, expected_toolkit=None)}
    assert {entry.rule for entry in KNOWN_ERRORS} <= rule_ids | set(GPU_RULES) | {""}
    for entry in KNOWN_ERRORS:
        re.compile(entry.pattern)


def test_findings_are_deduplicated_per_cause_in_order_of_appearance():
    # A real failing link, then SGLang's reaction: gcc repeats the #error line
    # in its source excerpt, and -lcuda follows -lcudart.
    log = "\n".join(
        [
            "/usr/bin/ld: cannot find -lcudart: No such file or directory",
            "/usr/bin/ld: cannot find -lcuda: No such file or directory",
            "/usr/bin/ld: cannot find -lcudart: No such file or directory",
            "collect2: error: ld returned 1 exit status",
            "ninja: build stopped: subcommand failed.",
            "RuntimeError: Ninja build failed. Ninja output:",
            "[2026-09-14 23:19:59] Initialization failed. warmup error: Traceback",
        ]
    )
    findings = scan(log)
    assert [f.lineno for f in findings] == [1, 2, 5, 7]
    assert [f.rule for f in findings] == ["links", "links", "", ""]


def test_a_line_counts_for_its_most_specific_cause_only():
    findings = scan("sampling.so: undefined symbol: cuTensorMapEncodeTiled")
    assert [f.rule for f in findings] == ["links"]


def test_the_cccl_source_excerpt_does_not_repeat_the_finding():
    log = (
        'cuda_toolkit.h:39:6: error: #error "CUDA compiler and CUDA toolkit headers are '
        'incompatible, please check your include paths"\n'
        '   39 | #    error "CUDA compiler and CUDA toolkit headers are incompatible, please '
        'check your include paths"\n'
    )
    assert [f.lineno for f in scan(log)] == [1]


def test_long_lines_are_cut_and_stripped():
    line = "   " + "x" * 400 + " cannot find -lcudart" + "   "
    finding = scan(line)[0]
    assert len(finding.line) == MAX_LINE and finding.line.startswith("x")


def test_healthy_output_has_no_findings():
    log = (
        "[1/3] /usr/local/cuda/bin/nvcc --generate-dependencies-with-compile -c sampling.cu\n"
        "[3/3] c++ sampling.cuda.o -shared -L/usr/local/cuda/lib64 -lcudart -lcuda -o x.so\n"
        "requests.exceptions.ReadTimeout: HTTPConnectionPool: Read timed out. "
        "(read timeout=5)\n"
        "export SGLANG_WARMUP_TIMEOUT=1800\n"
        "The server is fired up and ready to roll!\n"
    )
    assert scan(log) == []


def test_findings_serialise():
    finding = scan("nvcc fatal   : Unsupported gpu architecture 'compute_120'")[0]
    assert finding.to_dict()["rule"] == "arch-supported"


def test_each_example_is_found_by_its_own_entry_and_names_its_rule():
    from pctfleet.cuda.known_errors import KNOWN_ERRORS, symptom

    examples = [k for k in KNOWN_ERRORS if k.example]
    assert {k.rule for k in examples} >= {"nvcc-cicc", "nvcc-cudart", "links", "driver"}
    for known in examples:
        (found,) = scan(known.example)
        assert (found.cause, found.rule) == (known.cause, known.rule), known.example
    assert symptom("nvcc-cudart").example.endswith("please check your include paths")
    assert symptom("no-stray-headers") is None
