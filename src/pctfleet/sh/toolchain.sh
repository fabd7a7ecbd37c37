# shellcheck shell=sh
# Every CUDA toolchain fact of one container, as pf_kv lines (cuda/facts.py parses them).
# inputs: PCTFLEET_ENV_FILE PCTFLEET_VENV PCTFLEET_CUDA_HOME PCTFLEET_PIP_NAMES
# uses: kv pykv cuda_home envfile libcuda pip
# "$@": NAME=VALUE assignments exported first (the server's environment), after the env file.
# `t` bounds every tool call (a wedged driver can hang nvidia-smi forever).
# The python program reads metadata only: importing torch takes seconds and
# wants GPU libraries, so torch.version.cuda is parsed from torch/version.py.
pctfleet_source_env "$PCTFLEET_ENV_FILE"
for pf_env; do export "${pf_env?}"; done
# After the env file: it may set any short name.
V=$PCTFLEET_VENV
CH=$PCTFLEET_CUDA_HOME
PIPS=$PCTFLEET_PIP_NAMES
t() { if command -v timeout >/dev/null 2>&1; then timeout 30 "$@"; else "$@"; fi; }
kv() { [ -n "$2" ] && pf_kv "$1" "$2"; return 0; }
one() { printf '%s' "$1" | tr '\n' ' '; }
rel() { sed -n 's/.*release [0-9.]*, V\([0-9.]*\).*/\1/p' | head -n 1; }
define() { sed -n "s/^#define[[:space:]]*$1[[:space:]]*\([0-9][0-9]*\).*/\1/p" "$2" | head -n 1; }
maxptx() { sed -n "s/.*current version is '\([0-9.]*\)'.*/\1/p" | head -n 1; }
cudahdrs() { [ -f "$1/cuda_runtime_api.h" ] || [ -f "$1/cuda_runtime.h" ] || [ -d "$1/cuda/std" ]; }
pctfleet_find_cuda_home "$V" "$CH"
kv venv "$V"
kv cuda_home "$CH"
kv uv "$(pctfleet_uv)"
[ -n "$CH" ] && kv cuda_home_from "$CH_FROM"
[ -n "$CH" ] && [ -d "$CH" ] && kv cuda_home_real "$(cd "$CH" && pwd -P)"
PY="$V/bin/python"
if [ -x "$PY" ]; then
pf_py "$PY" "$PIPS" <<'PCTFLEET_PY'
import importlib.metadata as m, os, re, sys, sysconfig
try:
    pf_kv("venv_pip", int(bool(m.version("pip"))))  # which installer a change can use
except Exception:
    pass
for name in sys.argv[1].split():
    try:
        pf_kv("pip." + name, m.version(name))
    except Exception:
        pass
try:
    dist = m.distribution("torch")
except Exception:
    dist = None
if dist is not None:
    for req in dist.requires or []:
        hit = re.match(r"\s*cuda[-_.]toolkit\s*(\[[^\]]*\])?\s*==\s*([0-9][^\s;,]*)", req, re.I)
        if hit:
            pf_kv("torch_requires_cuda_toolkit", hit.group(2))
            break
    try:
        with open(str(dist.locate_file("torch/version.py"))) as fh:
            text = fh.read()
        hit = re.search(r"^cuda\s*(?::[^=\n]*)?=\s*(?:['\"]([^'\"]*)['\"]|None)", text, re.M)
        if hit:
            pf_kv("torch_cuda", hit.group(1) or "cpu")
    except OSError:
        pass
inc = sysconfig.get_paths().get("include") or ""
if inc:
    pf_kv("python_include", inc)
    if os.path.isfile(os.path.join(inc, "Python.h")):
        pf_kv("python_h", 1)
PCTFLEET_PY
fi
NVCC="$CH/bin/nvcc"
PTXAS="$CH/bin/ptxas"
if [ -n "$CH" ] && [ -x "$NVCC" ]; then
  kv nvcc_version "$(t "$NVCC" --version | rel)"
  kv gpu_archs "$(t "$NVCC" --list-gpu-arch | tr '\n' ',' | sed 's/,*$//')"
fi
if [ -n "$CH" ] && [ -x "$PTXAS" ]; then
  kv ptxas_version "$(t "$PTXAS" --version | rel)"
fi
TMP=$(mktemp -d 2>/dev/null)
if [ -n "$CH" ] && [ -n "$TMP" ] && [ -d "$TMP" ]; then
  # The PTX header names cicc's release: cicc has no --version of its own.
  printf '__global__ void pctfleet_k(int *p) { p[0] = 1; }\n' > "$TMP/k.cu"
  if [ -x "$NVCC" ] && t "$NVCC" -ptx -o "$TMP/k.ptx" "$TMP/k.cu" >/dev/null 2>&1; then
    kv cicc_release "$(grep '^// Cuda compilation tools' "$TMP/k.ptx" | rel)"
    kv ptx_version "$(sed -n 's/^\.version \([0-9.]*\).*/\1/p' "$TMP/k.ptx" | head -n 1)"
  elif [ -f "$CH/nvvm/bin/cicc" ]; then
    # No host compiler, so no PTX: the same release string is in the binary.
    cicc_s='Cuda compilation tools, release [0-9.]*, V[0-9.]*'
    kv cicc_release "$(grep -a -o -m 1 "$cicc_s" "$CH/nvvm/bin/cicc" | rel)"
    pf_kv cicc_release_from binary
  fi
  if [ -x "$PTXAS" ]; then
    printf '.version 99.9\n.target sm_90\n.address_size 64\n' > "$TMP/v.ptx"
    kv ptxas_max_ptx "$(t "$PTXAS" -arch=sm_90 -o "$TMP/v.o" "$TMP/v.ptx" 2>&1 | maxptx)"
  fi
fi
[ -n "$TMP" ] && rm -rf "$TMP"
H="$CH/include/cuda_runtime_api.h"
if [ -n "$CH" ] && [ -f "$H" ]; then
  kv cudart_header "$H"
  cv=$(define CUDART_VERSION "$H")
  [ -n "$cv" ] && kv cudart_version "$((cv / 1000)).$((cv % 1000 / 10))"
fi
CHI=
[ -n "$CH" ] && [ -d "$CH/include" ] && CHI=$(cd "$CH/include" && pwd -P)
stray() {
  [ -n "$2" ] && [ -d "$2" ] || return 0
  if cudahdrs "$2" || [ -d "$2/cub" ]; then
    sr=$(cd "$2" && pwd -P)
    case "$sr" in "$CHI"|"$CHI/cccl") return 0 ;; esac
    pf_kv stray_include "$1:$2"
  fi
}
pathlist() {
  pl_rest=$2
  while [ -n "$pl_rest" ]; do
    pl_dir=${pl_rest%%:*}
    case "$pl_rest" in *:*) pl_rest=${pl_rest#*:} ;; *) pl_rest= ;; esac
    stray "$1" "$pl_dir"
  done
}
flagdirs() {
  fd_next=
  set -f
  for fd_w in $2; do
    if [ -n "$fd_next" ]; then stray "$1" "$fd_w"; fd_next=; continue; fi
    case "$fd_w" in
      -I|-isystem|-idirafter|--include-path|--system-include) fd_next=1 ;;
      --include-path=*|--system-include=*) stray "$1" "${fd_w#*=}" ;;
      -isystem*) stray "$1" "${fd_w#-isystem}" ;;
      -I*) stray "$1" "${fd_w#-I}" ;;
    esac
  done
  set +f
}
pathlist CPATH "${CPATH:-}"
pathlist CPLUS_INCLUDE_PATH "${CPLUS_INCLUDE_PATH:-}"
pathlist C_INCLUDE_PATH "${C_INCLUDE_PATH:-}"
flagdirs NVCC_PREPEND_FLAGS "${NVCC_PREPEND_FLAGS:-}"
flagdirs NVCC_APPEND_FLAGS "${NVCC_APPEND_FLAGS:-}"
flagdirs FLASHINFER_EXTRA_CUDAFLAGS "${FLASHINFER_EXTRA_CUDAFLAGS:-}"
# Variables that change which headers, flags or compilers a JIT compile sees.
for ev in CPATH CPLUS_INCLUDE_PATH C_INCLUDE_PATH NVCC_PREPEND_FLAGS NVCC_APPEND_FLAGS \
  NVCC_CCBIN CCCL_DISABLE_CTK_COMPATIBILITY_CHECK CUDA_HOME CUDA_PATH FLASHINFER_NVCC \
  FLASHINFER_EXTRA_CUDAFLAGS FLASHINFER_CUDA_ARCH_LIST CXX CC; do
  ev_val=
  eval "ev_set=\${$ev+x}"
  eval "ev_val=\${$ev-}"
  [ -n "$ev_set" ] && pf_kv "env.$ev" "$(one "$ev_val")"
done
cccl_ver() {
  cc_v=$(define CCCL_VERSION "$1")
  [ -n "$cc_v" ] && echo "$((cc_v / 1000000)).$((cc_v / 1000 % 1000)).$((cc_v % 1000))"
}
for cc_f in "$CH/include/cccl/cuda/std/__cccl/version.h" "$CH/include/cuda/std/__cccl/version.h"; do
  if [ -n "$CH" ] && [ -f "$cc_f" ]; then kv cccl_version "$(cccl_ver "$cc_f")"; break; fi
done
FI_TAIL=libcudacxx/include/cuda/std/__cccl/version.h
cc_f="$(pctfleet_site "$V")/flashinfer/data/cccl/$FI_TAIL"
if [ -f "$cc_f" ]; then
    kv flashinfer_cccl_version "$(cccl_ver "$cc_f")"
    kv flashinfer_cccl "${cc_f%/"$FI_TAIL"}"
fi
if command -v nvidia-smi >/dev/null 2>&1; then
  pf_kv nvidia_smi 1
  q=$(t nvidia-smi --query-gpu=compute_cap,driver_version,name --format=csv,noheader)
  q1=$(printf '%s\n' "$q" | head -n 1)
  kv gpu_cc "$(printf '%s' "$q1" | cut -d, -f1 | tr -d ' ')"
  kv driver_version "$(printf '%s' "$q1" | cut -d, -f2 | tr -d ' ')"
  kv gpu_name "$(printf '%s' "$q1" | cut -d, -f3- | sed 's/^ *//')"
  kv gpu_count "$(printf '%s\n' "$q" | grep -c '^[0-9]')"
  kv driver_cuda "$(t nvidia-smi | sed -n 's/.*CUDA Version: *\([0-9.]*\).*/\1/p' | head -n 1)"
fi
kv libcuda "$(pctfleet_libcuda)"
if [ -n "$CH" ]; then
  # Through lib64: that is the folder flashinfer's link line hard-codes.
  for lk in lib64=lib64 libcudart=lib64/libcudart.so libcuda_stub=lib64/stubs/libcuda.so; do
    lk_name=${lk%%=*}
    lk_path="$CH/${lk#*=}"
    [ -L "$lk_path" ] && kv "link.$lk_name" "$(readlink "$lk_path")"
    [ -e "$lk_path" ] && pf_kv "exists.$lk_name" 1
  done
  # cutlass's tensor_fill.h (flashinfer's prefill JIT) includes it.
  [ -f "$CH/include/curand_kernel.h" ] && pf_kv exists.curand_kernel 1
fi
kv gxx_version "$(g++ -dumpfullversion 2>/dev/null || g++ -dumpversion 2>/dev/null)"
kv cxx "$(command -v "${CXX:-c++}")"
if command -v ninja >/dev/null 2>&1; then
  kv ninja_version "$(ninja --version)"
  kv ninja_path "$(command -v ninja)"
  pf_kv ninja_on_path 1
elif [ -x "$V/bin/ninja" ]; then
  kv ninja_version "$("$V/bin/ninja" --version)"
  kv ninja_path "$V/bin/ninja"
fi
