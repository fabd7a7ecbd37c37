"""Proof on a real GPU: the doctor's verdict against what flashinfer's JIT really does.

Runs on a machine with an NVIDIA GPU, the CUDA toolkit's nvcc and a venv
holding torch and flashinfer-python (bench/gpu/run.sh installs the wheels
that bench/gpu/fetch.sh downloads). For each toolchain:

- matched: the machine's own CUDA toolkit (plus the three links flashinfer's
  link line needs, in a mirror folder, when the toolkit lacks them);
- nvvm-13.2: the same toolkit with cicc and libdevice from the nvidia-nvvm
  13.2.78 wheel (nvcc and ptxas stay 13.0), the incident's first error;
- cudart-13.2: the same toolkit with the headers of the nvidia-cuda-runtime
  13.2.75 wheel (CUDART_VERSION 13020 against nvcc 13.0), its second error;

it runs `pctfleet doctor --local --json` on that CUDA_HOME, then builds
flashinfer's single-request decode kernel with a fresh JIT cache through the
same CUDA_HOME, runs it on random data and compares it with a float64
reference. Everything is written to `<out>/results.json`; bench/gpu/report.py
turns that file into docs/gpu-proof.md.

Usage:
    python3 bench/gpu/proof.py --out DIR [--parts .whl/parts] [--register-driver]
    python3 bench/gpu/proof.py --out DIR --dry-run   # no GPU: compile only
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import traceback
import zipfile
from collections.abc import Iterable
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src"

# The attention problem: one request decoding against a 2048-token KV cache,
# grouped-query attention (32 query heads over 8 KV heads), head_dim 128.
NUM_QO_HEADS = 32
NUM_KV_HEADS = 8
HEAD_DIM = 128
KV_LEN = 2048
DTYPES = ("float16", "bfloat16")
REL_TOLERANCE = 2e-2
TIMED_CALLS = 50

NVVM_PART = "nvidia_nvvm-13.2.78-cicc.tar.xz"
RUNTIME_PART = "nvidia_cuda_runtime-13.2.75-*.whl"

ERROR_LINE = re.compile(r"error|fatal|cannot find|undefined", re.IGNORECASE)


# --------------------------------------------------------------------------- helpers


def sh(argv: list[str], timeout: float = 60, env: dict | None = None) -> tuple[int, str]:
    """Run a command; (exit status, stdout+stderr). 127 when it is missing."""
    try:
        done = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError as exc:
        return 127, str(exc)
    except subprocess.TimeoutExpired:
        return 124, f"timed out after {timeout:g}s"
    return done.returncode, done.stdout + done.stderr


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def error_lines(text: str, limit: int = 12) -> list[str]:
    """The lines of a build log that say what went wrong (command lines left out)."""
    found: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if len(line) > 500 or line.startswith("[") or not ERROR_LINE.search(line):
            continue
        if line not in found:
            found.append(line)
    return found[:limit]


# --------------------------------------------------------------------------- machine


def machine_facts() -> dict:
    """GPU, driver, nvcc on PATH, python: read the way an operator would."""
    facts: dict = {"python": sys.version.split()[0], "python_executable": sys.executable}
    rc, out = sh(
        [
            "nvidia-smi",
            "--query-gpu=name,compute_cap,driver_version,memory.total",
            "--format=csv,noheader",
        ]
    )
    if rc == 0 and out.strip():
        name, cc, driver, memory = (p.strip() for p in out.splitlines()[0].split(",", 3))
        facts.update(gpu_name=name, gpu_compute_capability=cc, driver=driver, gpu_memory=memory)
    rc, out = sh(["nvidia-smi"])
    hit = re.search(r"CUDA Version:\s*([0-9.]+)", out)
    if hit:
        facts["driver_cuda"] = hit.group(1)
    nvcc = shutil.which("nvcc")
    facts["nvcc_on_path"] = nvcc
    if nvcc:
        rc, out = sh([nvcc, "--version"])
        hit = re.search(r"release [0-9.]+, V([0-9.]+)", out)
        facts["nvcc_on_path_version"] = hit.group(1) if hit else None
    facts["env"] = {
        k: os.environ[k]
        for k in ("CUDA_HOME", "CUDA_PATH", "CPATH", "CPLUS_INCLUDE_PATH", "LD_LIBRARY_PATH")
        if k in os.environ
    }
    rc, out = sh(["ldconfig", "-p"])
    facts["ldconfig_libcuda"] = libcuda_from_ldconfig(out)
    return facts


def torch_facts() -> dict:
    code = (
        "import json, torch; d = {'torch': torch.__version__, 'torch_cuda': torch.version.cuda};"
        "ok = torch.cuda.is_available(); d['cuda_available'] = ok\n"
        "if ok: d['capability'] = '%d.%d' % torch.cuda.get_device_capability(0);"
        " d['device'] = torch.cuda.get_device_name(0)\n"
        "print(json.dumps(d))"
    )
    rc, out = sh([sys.executable, "-c", code], timeout=120)
    try:
        return json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": out[-500:]}


def libcuda_from_ldconfig(text: str) -> str | None:
    for line in text.splitlines():
        hit = re.match(r"\s*libcuda\.so\.1 \(([^)]*)\) => (.*)$", line)
        if hit and "64" in hit.group(1):
            return hit.group(2).strip()
    return None


def find_driver_libcuda() -> str | None:
    """The driver's libcuda.so.1: ldconfig first, then the usual driver folders."""
    found = libcuda_from_ldconfig(sh(["ldconfig", "-p"])[1])
    if found:
        return found
    dirs = [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(":") if d]
    dirs += ["/usr/local/nvidia/lib64", "/usr/local/nvidia/lib", "/usr/lib/x86_64-linux-gnu"]
    for folder in dirs:
        candidate = Path(folder) / "libcuda.so.1"
        if candidate.exists():
            return str(candidate)
    return None


def register_driver() -> dict:
    """Put the driver's folder in the linker cache when ldconfig lacks libcuda.so.1.

    This is the fix the doctor's `libcuda-visible` rule names for a container
    whose driver libraries are mounted but not registered.
    """
    before = libcuda_from_ldconfig(sh(["ldconfig", "-p"])[1])
    if before:
        return {"needed": False, "libcuda": before}
    lib = find_driver_libcuda()
    if not lib:
        return {"needed": True, "done": False, "why": "no libcuda.so.1 found"}
    conf = Path("/etc/ld.so.conf.d/zz-gpu-proof-driver.conf")
    try:
        conf.write_text(str(Path(lib).parent) + "\n")
    except OSError as exc:
        return {"needed": True, "done": False, "why": str(exc)}
    rc, out = sh(["ldconfig"])
    after = libcuda_from_ldconfig(sh(["ldconfig", "-p"])[1])
    return {"needed": True, "done": bool(after), "conf": str(conf), "libcuda": after, "rc": rc}


def base_cuda_home() -> Path:
    """The machine's toolkit: $CUDA_HOME, else the folder above nvcc, else /usr/local/cuda."""
    for key in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(key):
            return Path(os.environ[key])
    nvcc = shutil.which("nvcc")
    if nvcc:
        return Path(nvcc).resolve().parent.parent
    return Path("/usr/local/cuda")


# --------------------------------------------------------------------------- toolchains


def overlay(
    base: Path,
    dest: Path,
    replace: dict[str, Path],
    copy: Iterable[str] = ("bin/nvcc", "bin/nvcc.profile"),
) -> Path:
    """A CUDA_HOME at `dest`: `base` with the files in `replace` swapped.

    Everything else is a link back into `base`. nvcc and nvcc.profile are real
    copies: nvcc finds cicc, its include folder and libdevice relative to its
    own location (`$(_HERE_)/..` in nvcc.profile), so a linked nvcc would use
    base's.
    """
    copies = set(copy)
    keys = set(replace) | copies

    def walk(src: Path, dst: Path, rel: str) -> None:
        dst.mkdir(parents=True, exist_ok=True)
        names = set(os.listdir(src)) if src.is_dir() else set()
        names |= {k[len(rel) :].split("/", 1)[0] for k in keys if k.startswith(rel)}
        for name in sorted(names):
            path, src_path, dst_path = rel + name, src / name, dst / name
            if path in replace:
                dst_path.symlink_to(replace[path])
            elif path in copies and src_path.exists():
                shutil.copy2(src_path, dst_path)
            elif any(k.startswith(path + "/") for k in keys):
                walk(src_path.resolve() if src_path.exists() else src_path, dst_path, path + "/")
            else:
                dst_path.symlink_to(src_path.resolve())

    walk(base.resolve(), dest, "")
    return dest


def link_fixes(base: Path, libcuda: str | None) -> dict[str, Path]:
    """The links flashinfer's `-L$CUDA_HOME/lib64 -L.../stubs -lcudart -lcuda` needs."""
    fixes: dict[str, Path] = {}
    lib64 = base / "lib64"
    if not (lib64 / "libcudart.so").exists():
        versioned = sorted(lib64.glob("libcudart.so.[0-9]*")) or sorted(
            (base / "lib").glob("libcudart.so.[0-9]*")
        )
        if versioned:
            fixes["lib64/libcudart.so"] = versioned[0].resolve()
    if not (lib64 / "stubs" / "libcuda.so").exists() and libcuda:
        fixes["lib64/stubs/libcuda.so"] = Path(libcuda)
    return fixes


def unpack_nvvm(part: Path, dest: Path) -> dict[str, Path]:
    """cicc and libdevice of the newer nvvm, as overlay replacements."""
    with tarfile.open(part) as tar:
        tar.extractall(dest, filter="data")
    return {
        "nvvm/bin/cicc": dest / "nvvm" / "bin" / "cicc",
        "nvvm/libdevice/libdevice.10.bc": dest / "nvvm" / "libdevice" / "libdevice.10.bc",
    }


def unpack_runtime_headers(wheel: Path, dest: Path, base: Path) -> dict[str, Path]:
    """Every header of the newer nvidia-cuda-runtime wheel, as overlay replacements."""
    prefix = "nvidia/cu13/include/"
    replace: dict[str, Path] = {}
    has_targets = (base / "targets" / "x86_64-linux" / "include").is_dir()
    with zipfile.ZipFile(wheel) as whl:
        for name in whl.namelist():
            if not name.startswith(prefix) or name.endswith("/"):
                continue
            whl.extract(name, dest)
            rel = name[len(prefix) :]
            replace["include/" + rel] = dest / name
            if has_targets:
                replace["targets/x86_64-linux/include/" + rel] = dest / name
    return replace


def header_version(cuda_home: Path) -> str | None:
    header = cuda_home / "include" / "cuda_runtime_api.h"
    if not header.exists():
        return None
    hit = re.search(r"#define\s+CUDART_VERSION\s+(\d+)", header.read_text(errors="replace"))
    return f"{int(hit.group(1)) // 1000}.{int(hit.group(1)) % 1000 // 10}" if hit else None


# --------------------------------------------------------------------------- doctor


def run_doctor(cuda_home: Path, venv: str, work: Path) -> dict:
    """`pctfleet doctor --local --json` with CUDA_HOME from the server's env file."""
    env_file = work / "server.env"
    env_file.write_text(f"CUDA_HOME={shlex.quote(str(cuda_home))}\n")
    env = dict(os.environ)
    env["PYTHONPATH"] = str(SRC) + (os.pathsep + env["PYTHONPATH"] if "PYTHONPATH" in env else "")
    argv = [
        sys.executable,
        "-m",
        "pctfleet",
        "doctor",
        "--local",
        "--venv",
        venv,
        "--env-file",
        str(env_file),
        "--json",
    ]
    started = time.monotonic()
    result: dict = {"command": "pctfleet " + shlex.join(argv[3:])}
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=300, env=env, stdin=subprocess.DEVNULL
        )
        result["exit"] = done.returncode
        result["diagnosis"] = json.loads(done.stdout)["containers"][0]
        result["via"] = "cli"
    except (ValueError, KeyError, IndexError, subprocess.TimeoutExpired) as exc:
        result["cli_output"] = str(exc)[-3000:]
        result.update(_doctor_library(env_file, venv))
    result["seconds"] = round(time.monotonic() - started, 1)
    return result


def _doctor_library(env_file: Path, venv: str) -> dict:
    """The same diagnosis through the library, when the CLI cannot start here."""
    sys.path.insert(0, str(SRC))
    from pctfleet.cuda.doctor import DoctorRequest, diagnose
    from pctfleet.transport.local import LocalTarget

    request = DoctorRequest(venv=venv, env_file=str(env_file), server_log=None)
    return {"diagnosis": diagnose(LocalTarget(), request).as_json(), "via": "library"}


def failing_rules(diagnosis: dict) -> list[str]:
    return [r["rule"] for r in diagnosis.get("rules", []) if r.get("ok") is False]


# --------------------------------------------------------------------------- flashinfer JIT


def run_jit(cuda_home: Path, work: Path, dry_run: bool, timeout: float) -> dict:
    """Build and run the decode kernel in a fresh process with a fresh JIT cache."""
    workspace = work / "flashinfer-workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env["CUDA_HOME"] = str(cuda_home)
    env["FLASHINFER_WORKSPACE_BASE"] = str(workspace)
    env.pop("FLASHINFER_NVCC", None)
    if dry_run:
        env.setdefault("FLASHINFER_CUDA_ARCH_LIST", "9.0")
    report = work / "jit.json"
    argv = [sys.executable, str(Path(__file__).resolve()), "jit", "--json", str(report)]
    if dry_run:
        argv.append("--dry-run")
    started = time.monotonic()
    rc, out = sh(argv, timeout=max(timeout, 30), env=env)
    result: dict = {}
    if report.exists():
        result = json.loads(report.read_text())
    result["process_exit"] = rc
    result["process_seconds"] = round(time.monotonic() - started, 1)
    if rc != 0 and "error" not in result:
        result["error"] = out[-4000:]
        result.setdefault("ok", False)
    result["workspace"] = str(workspace)
    return result


def jit_worker(report: Path, dry_run: bool) -> int:
    """The child process: import, compile (timed), load, run, compare with float64."""
    result: dict = {"ok": False, "stage": "import"}

    def save() -> None:
        report.write_text(json.dumps(result, indent=2, default=str))

    save()
    started = time.monotonic()
    import flashinfer
    import torch
    from flashinfer.compilation_context import CompilationContext
    from flashinfer.jit import cpp_ext
    from flashinfer.jit import env as jit_env
    from flashinfer.jit.attention.modules import gen_single_decode_module

    result.update(
        import_seconds=round(time.monotonic() - started, 2),
        flashinfer=flashinfer.__version__,
        flashinfer_path=str(Path(flashinfer.__file__).parent),
        torch=torch.__version__,
        cuda_home=cpp_ext.get_cuda_path(),
        nvcc_release=str(cpp_ext.get_cuda_version()),
        target_archs=sorted(f"{a}{b}" for a, b in CompilationContext().TARGET_CUDA_ARCHS),
        jit_dir=str(jit_env.FLASHINFER_JIT_DIR),
        kernels=[],
    )
    for name in DTYPES:
        dtype = getattr(torch, name)
        spec = gen_single_decode_module(dtype, dtype, dtype, HEAD_DIM, HEAD_DIM, 0, False, False)
        kernel = {"dtype": name, "module": spec.name, "cached_before": spec.is_compiled}
        result["kernels"].append(kernel)
        result["stage"] = f"compile {name}"
        save()
        begin = time.monotonic()
        try:
            spec.build(verbose=False)
        except Exception as exc:  # noqa: BLE001 - the build's own message is the evidence
            kernel["compile_seconds"] = round(time.monotonic() - begin, 2)
            result["error"] = str(exc)
            result["error_lines"] = error_lines(str(exc))
            save()
            return 1
        kernel["compile_seconds"] = round(time.monotonic() - begin, 2)
        kernel["ninja"] = _ninja_vars(spec.ninja_path)
        kernel["sass"] = _elf_archs(Path(result["cuda_home"]), spec.jit_library_path)
        save()
        if dry_run:
            continue
        result["stage"] = f"run {name}"
        kernel.update(_run_decode(torch, flashinfer, dtype, spec))
        save()
    result["stage"] = "done"
    result["ok"] = dry_run or all(k.get("accurate") for k in result["kernels"])
    save()
    return 0 if result["ok"] else 1


def _ninja_vars(path: Path) -> dict:
    """cuda_home and nvcc as the generated build.ninja names them."""
    wanted = {}
    for line in path.read_text().splitlines():
        key, sep, value = line.partition(" = ")
        if sep and key in ("cuda_home", "nvcc", "cxx"):
            wanted[key] = value
    return wanted


def _elf_archs(cuda_home: Path, library: Path) -> list[str]:
    """The SASS targets inside the built module (cuobjdump --list-elf)."""
    tool = cuda_home / "bin" / "cuobjdump"
    rc, out = sh([str(tool) if tool.exists() else "cuobjdump", "--list-elf", str(library)])
    found = sorted(set(re.findall(r"\.(sm_\w+)\.cubin", out)))
    return found or [out.strip()[-200:]]


def _run_decode(torch, flashinfer, dtype, spec) -> dict:  # noqa: ANN001
    """One decode step on random data against softmax(q k^T / sqrt(d)) v in float64."""
    gen = torch.Generator(device="cuda").manual_seed(2024)
    shape_kv = (KV_LEN, NUM_KV_HEADS, HEAD_DIM)
    q = torch.randn(NUM_QO_HEADS, HEAD_DIM, device="cuda", dtype=dtype, generator=gen)
    k = torch.randn(*shape_kv, device="cuda", dtype=dtype, generator=gen)
    v = torch.randn(*shape_kv, device="cuda", dtype=dtype, generator=gen)
    library = Path(spec.jit_library_path)
    built_at = library.stat().st_mtime_ns
    begin = time.monotonic()
    out = flashinfer.single_decode_with_kv_cache(q, k, v)
    torch.cuda.synchronize()
    first_call = time.monotonic() - begin
    rebuilt = library.stat().st_mtime_ns != built_at

    group = NUM_QO_HEADS // NUM_KV_HEADS
    q64 = q.double()
    k64 = k.double().repeat_interleave(group, dim=1)  # [kv_len, qo_heads, d]
    v64 = v.double().repeat_interleave(group, dim=1)
    scores = torch.einsum("hd,nhd->hn", q64, k64) / math.sqrt(HEAD_DIM)
    ref = torch.einsum("hn,nhd->hd", torch.softmax(scores, dim=-1), v64)
    diff = (out.double() - ref).abs()
    max_abs = diff.max().item()
    rel_inf = max_abs / ref.abs().max().item()
    rel_l2 = (torch.linalg.vector_norm(out.double() - ref) / torch.linalg.vector_norm(ref)).item()

    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(5):
        flashinfer.single_decode_with_kv_cache(q, k, v)
    start.record()
    for _ in range(TIMED_CALLS):
        flashinfer.single_decode_with_kv_cache(q, k, v)
    stop.record()
    torch.cuda.synchronize()
    mean_us = start.elapsed_time(stop) * 1000 / TIMED_CALLS
    kv_bytes = 2 * KV_LEN * NUM_KV_HEADS * HEAD_DIM * q.element_size()
    return {
        "shape": {
            "num_qo_heads": NUM_QO_HEADS,
            "num_kv_heads": NUM_KV_HEADS,
            "head_dim": HEAD_DIM,
            "kv_len": KV_LEN,
        },
        "first_call_seconds": round(first_call, 3),
        "rebuilt_on_first_call": rebuilt,
        "max_abs_error": max_abs,
        "max_rel_error": rel_inf,
        "rel_l2_error": rel_l2,
        "tolerance": REL_TOLERANCE,
        "accurate": rel_inf < REL_TOLERANCE and math.isfinite(rel_inf),
        "mean_call_us": round(mean_us, 2),
        "kv_read_gb_per_s": round(kv_bytes / (mean_us * 1e-6) / 1e9, 1),
    }


# --------------------------------------------------------------------------- the proof


def scan_findings(text: str) -> list[dict]:
    sys.path.insert(0, str(SRC))
    from pctfleet.cuda.known_errors import scan

    return [f.to_dict() for f in scan(text)]


def judge(case: dict) -> dict:
    """Did the doctor's verdict say what the JIT then did, for the reason it gave?"""
    diagnosis = case["doctor"]["diagnosis"]
    jit = case.get("jit") or {}
    predicted_ok = bool(diagnosis.get("healthy"))
    jit_ok = bool(jit.get("ok"))
    failing = failing_rules(diagnosis)
    jit_rules = [f["rule"] for f in case.get("jit_findings", [])]
    probe_rules = [f["rule"] for f in diagnosis.get("findings", [])]
    verdict = {
        "doctor_healthy": predicted_ok,
        "jit_ok": jit_ok,
        "verdict_matches": predicted_ok == jit_ok,
        "failing_rules": failing,
        "jit_error_rules": jit_rules,
        "probe_error_rules": probe_rules,
    }
    if not jit_ok:
        verdict["cause_matches"] = bool(set(jit_rules) & set(failing))
    return verdict


def write(out: Path, results: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=2, default=str) + "\n")


def prove(args: argparse.Namespace) -> int:
    begin = time.monotonic()
    out = Path(args.out).resolve()
    work = Path(tempfile.mkdtemp(prefix="gpu-proof-"))
    parts = Path(args.parts).resolve()
    results: dict = {
        "when": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "dry_run": args.dry_run,
        "problem": {
            "kernel": "flashinfer.single_decode_with_kv_cache",
            "num_qo_heads": NUM_QO_HEADS,
            "num_kv_heads": NUM_KV_HEADS,
            "head_dim": HEAD_DIM,
            "kv_len": KV_LEN,
            "dtypes": list(DTYPES),
            "reference": "torch float64: softmax(q k^T / sqrt(d)) v",
            "tolerance": REL_TOLERANCE,
        },
    }
    if args.register_driver:
        results["driver_registration"] = register_driver()
    results["machine"] = machine_facts()
    results["torch"] = torch_facts()
    results["parts"] = {
        p.name: {"bytes": p.stat().st_size, "sha256": sha256(p)}
        for p in sorted(parts.glob("*"))
        if p.is_file()
    }
    wheels = Path(args.wheels).resolve()
    results["wheels"] = sorted(p.name for p in wheels.glob("*.whl"))
    base = Path(args.cuda_home) if args.cuda_home else base_cuda_home()
    libcuda = find_driver_libcuda()
    fixes = link_fixes(base, libcuda)
    results["toolkit"] = {
        "cuda_home": str(base),
        "real": str(base.resolve()),
        "cudart_version": header_version(base),
        "driver_libcuda": libcuda,
        "added_links": {k: str(v) for k, v in fixes.items()},
    }
    write(out, results)

    toolchains: list[tuple[str, str, dict[str, Path] | None]] = []
    if fixes:
        # The toolkit as found, judged only: the links it lacks break the link step.
        toolchains.append(("as-found", "the machine's toolkit exactly as installed", None))
    matched = "the machine's CUDA toolkit" + (" with the three links added" if fixes else "")
    toolchains.append(("matched", matched, {}))
    nvvm_part = parts / NVVM_PART
    if nvvm_part.exists():
        swap = unpack_nvvm(nvvm_part, work / "nvvm-13.2")
        toolchains.append(("nvvm-13.2", "cicc + libdevice from nvidia-nvvm 13.2.78", swap))
    for runtime_part in sorted(parts.glob(RUNTIME_PART))[:1]:
        swap = unpack_runtime_headers(runtime_part, work / "cudart-13.2", base)
        toolchains.append(("cudart-13.2", "headers from nvidia-cuda-runtime 13.2.75", swap))

    results["cases"] = []
    for name, description, swap in toolchains:
        case: dict = {"name": name, "toolchain": description}
        results["cases"].append(case)
        try:
            run_case(case, base, fixes, swap, work, args, begin)
        except Exception:  # noqa: BLE001 - record it, go on with the next toolchain
            case["error"] = traceback.format_exc()[-3000:]
            print(case["error"], flush=True)
        write(out, results)
    results["seconds"] = round(time.monotonic() - begin, 1)
    write(out, results)
    shutil.rmtree(work, ignore_errors=True)
    return 0


def run_case(
    case: dict,
    base: Path,
    fixes: dict[str, Path],
    swap: dict[str, Path] | None,
    work: Path,
    args: argparse.Namespace,
    begin: float,
) -> None:
    """Doctor, then (unless `swap` is None) the real JIT, on one toolchain."""
    name = case["name"]
    case_dir = work / name
    case_dir.mkdir(parents=True, exist_ok=True)
    if swap is None or (not swap and not fixes):
        home = base
    else:
        home = overlay(base, case_dir / "cuda", {**fixes, **swap})
    case["cuda_home"] = str(home)
    case["swapped"] = sorted(swap or {})[:4]
    case["swapped_count"] = len(swap or {})
    case["cudart_version"] = header_version(home)
    print(f"[{name}] doctor on {home}", flush=True)
    case["doctor"] = run_doctor(home, args.venv, case_dir)
    diag = case["doctor"]["diagnosis"]
    print(f"[{name}] doctor: {diag.get('status')} - {diag.get('verdict')}", flush=True)
    if swap is None:
        return
    left = args.budget - (time.monotonic() - begin)
    if left < 60:
        case["jit"] = {"ok": False, "skipped": f"time budget: {left:.0f}s left"}
        return
    print(f"[{name}] flashinfer JIT through {home}", flush=True)
    case["jit"] = run_jit(home, case_dir, args.dry_run, timeout=min(left - 30, 420))
    case["jit_findings"] = scan_findings(case["jit"].get("error", ""))
    case["judgement"] = judge(case)
    jit = case["jit"]
    print(f"[{name}] jit ok={jit.get('ok')} {json.dumps(case['judgement'])}", flush=True)
    for kernel in jit.get("kernels", []):
        shown = {k: kernel.get(k) for k in ("dtype", "compile_seconds", "max_rel_error", "sass")}
        print(f"[{name}]   {shown}", flush=True)
    for line in jit.get("error_lines", [])[:4]:
        print(f"[{name}]   {line}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command")
    worker = sub.add_parser("jit", help="(internal) build and run the kernel in this process")
    worker.add_argument("--json", required=True)
    worker.add_argument("--dry-run", action="store_true")
    parser.add_argument("--out", default="bench/gpu/out")
    parser.add_argument("--venv", default=sys.prefix, help="venv with torch and flashinfer")
    parser.add_argument("--cuda-home", default=None, help="the machine's toolkit [nvcc's]")
    parser.add_argument("--parts", default=".whl/parts", help="the 13.2 parts (fetch.sh)")
    parser.add_argument("--wheels", default=".whl", help="the wheels run.sh installed")
    parser.add_argument("--budget", type=float, default=540, help="seconds for the whole run")
    parser.add_argument("--register-driver", action="store_true", help="ldconfig the driver")
    parser.add_argument("--dry-run", action="store_true", help="no GPU: compile, do not run")
    args = parser.parse_args(argv)
    if args.command == "jit":
        return jit_worker(Path(args.json), args.dry_run)
    return prove(args)


if __name__ == "__main__":
    sys.exit(main())
