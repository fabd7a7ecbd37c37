"""Turn the GPU proof's results.json into docs/gpu-proof.md.

    python3 bench/gpu/report.py [bench/gpu/results.json] [docs/gpu-proof.md]

The markdown is generated: change this script or rerun the proof, never the
page by hand.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEFAULT_IN = REPO / "bench" / "gpu" / "results.json"
DEFAULT_OUT = REPO / "docs" / "gpu-proof.md"

OK_MARK = {True: "ok", False: "FAIL", None: "n/a"}
TIMED_CALLS = 50  # as in proof.py


def cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def table(header: list[str], rows: list[list[object]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return lines + [""]


def jit_outcome(jit: dict) -> str:
    if not jit:
        return "not run (doctor only)"
    if jit.get("skipped"):
        return "skipped: " + jit["skipped"]
    kernels = jit.get("kernels", [])
    if not jit.get("ok"):
        return f"build failed: `{short(jit.get('error_lines') or ['(no error line)'])}`"
    if any("max_rel_error" in k for k in kernels):
        worst = max(k["max_rel_error"] for k in kernels)
        return f"built, ran, max rel. error {worst:.2e}"
    return "built (not run)"


def short(lines: list[str]) -> str:
    """The compiler's message from the first error line, without its file and temp paths."""
    line = lines[0]
    for key in ("fatal", "#error", "cannot find", "error"):
        if key in line:
            return line[line.index(key) :][:140]
    return line[:140]


def summary(results: dict) -> list[str]:
    rows = []
    for case in results.get("cases", []):
        if "doctor" not in case:
            rows.append([f"`{case['name']}`", case["toolchain"], "not run", "not run", "-"])
            continue
        diag = case["doctor"]["diagnosis"]
        judgement = case.get("judgement", {})
        agree = "-"
        if judgement:
            agree = "yes" if judgement.get("verdict_matches") else "NO"
            if "cause_matches" in judgement:
                agree += ", same cause" if judgement["cause_matches"] else ", OTHER cause"
        failing = ", ".join(r["rule"] for r in diag.get("rules", []) if r.get("ok") is False)
        rows.append(
            [
                f"`{case['name']}`",
                case["toolchain"],
                diag.get("status", "?") + (f" ({failing})" if failing else ""),
                jit_outcome(case.get("jit", {})),
                agree,
            ]
        )
    return table(["toolchain", "what it is", "doctor", "flashinfer JIT", "agree"], rows)


def machine(results: dict) -> list[str]:
    m, t, kit = results.get("machine", {}), results.get("torch", {}), results.get("toolkit", {})
    jit = next((c["jit"] for c in results.get("cases", []) if c.get("jit", {}).get("kernels")), {})
    rows = [
        ["GPU", f"{m.get('gpu_name', '?')} ({m.get('gpu_memory', '?')})"],
        ["compute capability (nvidia-smi)", m.get("gpu_compute_capability", "?")],
        ["driver", f"{m.get('driver', '?')} (CUDA {m.get('driver_cuda', '?')})"],
        ["python", f"{m.get('python', '?')} ({m.get('python_executable', '?')})"],
        ["torch", f"{t.get('torch', '?')} (CUDA {t.get('torch_cuda', '?')})"],
        ["flashinfer-python", jit.get("flashinfer", "?")],
        ["the machine's toolkit", f"{kit.get('cuda_home')} -> {kit.get('real')}"],
        ["nvcc on PATH", f"{m.get('nvcc_on_path')} ({m.get('nvcc_on_path_version')})"],
        ["CUDART_VERSION of its headers", kit.get("cudart_version")],
        ["driver libcuda.so.1", kit.get("driver_libcuda")],
    ]
    added = kit.get("added_links") or {}
    if added:
        rows.append(
            ["links the toolkit lacked", ", ".join(f"{k} -> {v}" for k, v in added.items())]
        )
    registration = results.get("driver_registration")
    if registration and registration.get("needed"):
        rows.append(["driver folder registered with ldconfig", registration.get("conf")])
    return table(["", ""], rows)


def case_section(case: dict) -> list[str]:
    doctor, jit = case["doctor"], case.get("jit") or {}
    diag = doctor["diagnosis"]
    lines = [f"### `{case['name']}`: {case['toolchain']}", ""]
    if case.get("error"):
        return lines + ["The proof itself failed here:", "", "```", case["error"], "```", ""]
    home = f"CUDA_HOME: `{case['cuda_home']}`"
    if case.get("swapped_count"):
        shown = ", ".join(f"`{p}`" for p in case.get("swapped", []))
        more = case["swapped_count"] - len(case.get("swapped", []))
        home += f"; swapped in: {shown}" + (f" and {more} more" if more > 0 else "")
    lines.append(home)
    lines += ["", f"`{doctor['command']}` (through the {doctor.get('via')}; exit "]
    lines[-1] += f"{doctor['exit']}, {doctor['seconds']} s): **{diag.get('status')}**, "
    lines[-1] += f"verdict: {diag.get('verdict')}"
    lines.append("")
    lines += table(
        ["rule", "result", "evidence"],
        [[r["rule"], OK_MARK.get(r.get("ok"), r.get("ok")), r["evidence"]] for r in diag["rules"]],
    )
    probe = diag.get("probe")
    if probe:
        link = OK_MARK[probe["link_ok"]] if probe["compile_ok"] else "not run"
        lines.append(
            f"Compile probe: compile {OK_MARK[probe['compile_ok']]}, link {link}"
            + (f", NEEDED {', '.join(probe['needed'])}" if probe.get("needed") else "")
        )
        lines.append("")
    for finding in diag.get("findings", []):
        lines.append(f"- probe log: `{finding['line']}` -> {finding['cause']} ({finding['rule']})")
    if diag.get("findings"):
        lines.append("")
    if not jit:
        return lines
    lines += jit_section(case, jit)
    return lines


def jit_section(case: dict, jit: dict) -> list[str]:
    lines = ["flashinfer JIT, fresh cache, same CUDA_HOME:", ""]
    if jit.get("skipped"):
        return lines + [f"skipped: {jit['skipped']}", ""]
    lines.append(
        f"flashinfer {jit.get('flashinfer')} sees CUDA_HOME `{jit.get('cuda_home')}`, "
        f"nvcc release {jit.get('nvcc_release')}, target archs {jit.get('target_archs')}"
    )
    lines.append("")
    rows = []
    for k in jit.get("kernels", []):
        rows.append(
            [
                k["dtype"],
                k.get("compile_seconds", "-"),
                ", ".join(k.get("sass", [])) or "-",
                k.get("first_call_seconds", "-"),
                _fmt(k.get("max_rel_error")),
                _fmt(k.get("rel_l2_error")),
                _fmt(k.get("max_abs_error")),
                k.get("mean_call_us", "-"),
                k.get("kv_read_gb_per_s", "-"),
                OK_MARK.get(k.get("accurate"), "-"),
            ]
        )
    lines += table(
        [
            "dtype",
            "compile s",
            "SASS",
            "first call s",
            "max rel. err",
            "rel. L2 err",
            "max abs err",
            "us/call",
            "KV GB/s",
            "within tol.",
        ],
        rows,
    )
    if any("mean_call_us" in k for k in jit.get("kernels", [])):
        lines += [
            f"us/call: mean of {TIMED_CALLS} calls after 5 warm-ups (CUDA events); one request "
            "of this size is launch-bound, so KV GB/s is no bandwidth ceiling.",
            "",
        ]
    ninja = next((k.get("ninja") for k in jit.get("kernels", []) if k.get("ninja")), None)
    if ninja:
        lines += [
            f"build.ninja: cuda_home = `{ninja.get('cuda_home')}`, nvcc = `{ninja.get('nvcc')}`",
            "",
        ]
    if jit.get("error_lines"):
        lines += ["(compile s: until the build failed.) The JIT's own error, from its ninja "]
        lines[-1] += "output:"
        lines += ["", "```"]
        lines += jit["error_lines"][:6]
        lines += ["```", ""]
    for finding in case.get("jit_findings", []):
        rule = finding["rule"] or "no single rule"
        lines.append(f"- known error: {finding['cause']} (rule: {rule})")
    if case.get("jit_findings"):
        lines.append("")
    judgement = case.get("judgement", {})
    if judgement:
        lines.append(
            f"Doctor said {'healthy' if judgement['doctor_healthy'] else 'problem'}, "
            f"the JIT {'worked' if judgement['jit_ok'] else 'failed'}: "
            + ("**the verdict held**" if judgement["verdict_matches"] else "**they disagree**")
            + (
                "; the JIT's error maps to a rule the doctor flagged"
                if judgement.get("cause_matches")
                else ""
            )
            + "."
        )
        lines.append("")
    return lines


def _fmt(value: object) -> str:
    return f"{value:.2e}" if isinstance(value, float) else "-"


def render(results: dict) -> str:
    problem = results.get("problem", {})
    lines = [
        "# Proof on a real GPU: the doctor's verdict against flashinfer's JIT",
        "",
        "Generated by `bench/gpu/report.py` from `bench/gpu/results.json`; do not edit.",
        "",
        f"Measured {results.get('when')} on the GPU machine"
        + (" (dry run: compiled, nothing run on a GPU)" if results.get("dry_run") else "")
        + f", {results.get('seconds', '?')} s in all.",
        "",
        "For each toolchain, `pctfleet doctor --local --json` judges the CUDA_HOME first;",
        "then flashinfer's JIT, with a fresh cache, builds "
        f"`{problem.get('kernel')}` through the same CUDA_HOME and runs it on random data "
        f"({problem.get('num_qo_heads')} query heads over {problem.get('num_kv_heads')} KV "
        f"heads, head_dim {problem.get('head_dim')}, kv_len {problem.get('kv_len')}), "
        f"compared with {problem.get('reference')} (tolerance: max relative error < "
        f"{problem.get('tolerance')}). The mismatched toolchains are the machine's own "
        "toolkit with one newer CUDA 13.2 component swapped in, as a hand-assembled pip "
        "toolchain gets them.",
        "",
        "## Summary",
        "",
    ]
    lines += summary(results)
    lines += ["## The machine", ""] + machine(results)
    lines += ["## Each toolchain", ""]
    for case in results.get("cases", []):
        lines += case_section(case)
    lines += reproduce(results)
    return "\n".join(lines).rstrip() + "\n"


def reproduce(results: dict) -> list[str]:
    lines = [
        "## Reproduce",
        "",
        "```sh",
        "bench/gpu/fetch.sh .whl          # where pip can download",
        "bench/gpu/run.sh /tmp/proof      # on the GPU machine, with .whl copied along",
        "python3 bench/gpu/report.py /tmp/proof/results.json docs/gpu-proof.md",
        "```",
        "",
        "Installed wheels: " + ", ".join(f"`{w}`" for w in results.get("wheels", [])) + ".",
        "",
        "Swapped-in parts (never installed):",
        "",
    ]
    for name, part in results.get("parts", {}).items():
        lines.append(f"- `{name}`: {part['bytes']} bytes, sha256 `{part['sha256']}`")
    return lines + [""]


KEEP = "<!-- written by hand from bench/gpu/local/: report.py keeps it -->"


def main(argv: list[str]) -> int:
    source = Path(argv[0]) if argv else DEFAULT_IN
    target = Path(argv[1]) if len(argv) > 1 else DEFAULT_OUT
    # A hand-written section after KEEP (the `--local` proof) survives regeneration.
    old = target.read_text() if target.exists() else ""
    kept = old[old.index(KEEP) :] if KEEP in old else ""
    target.write_text(render(json.loads(source.read_text())) + ("\n" + kept if kept else ""))
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
