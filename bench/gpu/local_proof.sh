#!/bin/bash
# `provision --local` on a GPU machine with no package index, then flashinfer's JIT.
#
#   bench/gpu/local_fetch.sh .whl/lp          # here: the wheels, in carry chunks
#   bench/gpu/local_proof.sh STAGE OUT base   # there: fresh venv, provision x2, doctor, JIT
#   bench/gpu/local_proof.sh STAGE OUT incidents   # there: three mismatches, each repaired
#
# STAGE holds every wheel flat (local_fetch.sh's DEST/all, the chunks untarred);
# STAGE/incident the 13.2 wheels of the nvcc incident, out of uv's sight. The venv sees the
# machine's torch (a .pth to its site-packages) but none of /usr/local/cuda:
# every command here runs without CUDA_HOME, LIBRARY_PATH, CPATH or
# /usr/local/cuda/bin, and pip/uv see only STAGE. OUT gets proof.log and
# results.jsonl (one line per step) and details.tgz (every JSON document).
set -u
STAGE=$(cd "${1:?STAGE}" && pwd)
OUT=${2:?OUT}
PHASE=${3:-base}
TREE=$(cd "$(dirname "$0")/../.." && pwd)
BASEPY=${BASEPY:-/opt/torch/.venv/bin/python3}
W=${WORK:-/opt/local-proof}
V=$W/venv
ENVF=$W/sglang.env
LOG=$OUT/proof.log
RES=$OUT/results.jsonl
mkdir -p "$OUT" "$W/json"
# uv (which pctfleet prefers when it is on PATH) reads no index, only STAGE.
printf 'no-index = true\nfind-links = ["%s"]\n' "$STAGE" >"$W/uv.toml"
TAGS=toolchain,overlay,links,cache
VARS=(-e "venv=$V" -e "server_env_file=$ENVF" -e gpu_arch=sm_90
  -e "flashinfer_workspace_base=$W/serving-ws")

say() { echo "== $(date -u +%T) $*" | tee -a "$LOG"; }
clean() {
  env -u CUDA_HOME -u LIBRARY_PATH -u CPATH -u CUDAHOSTCXX -u C_INCLUDE_PATH \
    -u CPLUS_INCLUDE_PATH PATH=/usr/local/nvidia/bin:/usr/local/bin:/usr/bin:/bin \
    PYTHONPATH="$W/pf-site:$TREE/src" PYTHONUNBUFFERED=1 \
    PIP_NO_INDEX=1 PIP_FIND_LINKS="$STAGE" UV_NO_INDEX=1 UV_FIND_LINKS="$STAGE" \
    UV_OFFLINE=1 UV_CONFIG_FILE="$W/uv.toml" "$@"
}
record() {  # step rc seconds json-file
  "$BASEPY" - "$@" >>"$RES" <<'PY'
import json, sys
step, rc, secs, path = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]) / 1000, sys.argv[4]
row = {"step": step, "rc": rc, "seconds": secs}
try:
    doc = json.load(open(path))
except Exception:
    doc = None
if isinstance(doc, dict) and doc.get("containers") and "checks" in doc["containers"][0]:
    c = doc["containers"][0]
    row.update(status=c["status"], checks=[(k["id"].split("::")[-1], k["outcome"],
                                            k.get("message", "")[:300]) for k in c["checks"]])
elif isinstance(doc, dict) and "summary" in doc and doc.get("containers"):
    c = doc["containers"][0]
    row.update(status=c["status"], calls=c["remote_calls"], changed=c["stats"]["changed"],
               failed=c["stats"]["failed"],
               tasks=[(t["name"], t["status"], t["msg"][:300]) for t in c["tasks"]])
elif isinstance(doc, dict) and doc.get("containers") and "verdict" in doc["containers"][0]:
    d = doc["containers"][0]
    row.update(status=d["status"], verdict=d["verdict"], cuda_home=d.get("cuda_home"),
               failing=[r["rule"] for r in d.get("rules", []) if r.get("ok") is False],
               probe=d.get("probe"), findings=[f.get("cause") for f in d.get("findings", [])])
elif isinstance(doc, dict) and "decode" in doc:
    row.update({k: doc.get(k) for k in ("ok", "CUDA_HOME", "nvcc_on_path", "decode",
                                       "prefill", "ninja", "flashinfer", "torch")})
print(json.dumps(row, default=str))
PY
}
pf() {  # step pctfleet-args...
  local step=$1 start rc
  shift
  say "pctfleet $*"
  start=$(date +%s%N)
  clean "$BASEPY" -m pctfleet "$@" --json >"$W/json/$step.json" 2>>"$LOG"
  rc=$?
  record "$step" "$rc" "$(( ($(date +%s%N) - start) / 1000000 ))" "$W/json/$step.json"
  tail -1 "$RES" | tee -a "$LOG"
}
provision() { pf "$1" provision --local --tags "$TAGS" "${VARS[@]}"; }
doctor() { pf "$1" doctor --local --venv "$V" --env-file "$ENVF" --arch sm_90; }
verify() {  # the testinfra checks of the CUDA side (no server runs here)
  pf "$1" verify --local "${VARS[@]}" -k 'toolchain or links or cccl or jit_cache'
}
jit() {  # step: a fresh JIT cache, the environment the server would get
  local ws=$W/ws-$1 start rc
  rm -rf "$ws" && mkdir -p "$ws"
  say "flashinfer JIT ($1)"
  start=$(date +%s%N)
  clean sh -c 'set -a; . "$1"; set +a; export FLASHINFER_WORKSPACE_BASE="$2"
    echo "CUDA_HOME=$CUDA_HOME nvcc=$(command -v nvcc)"; nvcc --version | tail -1
    exec timeout 420 "$3/bin/python" "$4" "$5"' jit "$ENVF" "$ws" "$V" \
    "$TREE/bench/gpu/jit_check.py" "$W/json/$1.json" >>"$LOG" 2>&1
  rc=$?
  record "$1" "$rc" "$(( ($(date +%s%N) - start) / 1000000 ))" "$W/json/$1.json"
  tail -1 "$RES" | cut -c1-600 | tee -a "$LOG"
}
cuda_home() { echo "$V"/lib/python3*/site-packages/nvidia/cu13; }

setup() {
  say "setup: fresh venv $V (machine torch via .pth), pctfleet's needs in $W/pf-site"
  rm -rf "$V" "$W/pf-site" "$W"/ws-*
  "$BASEPY" -m pip install -q --no-index --no-deps --no-compile --target "$W/pf-site" \
    "$STAGE"/{paramiko,bcrypt,cryptography,pynacl,cffi,pycparser,invoke,fabric}-*.whl \
    "$STAGE"/{decorator,deprecated,pytest_testinfra}-*.whl >>"$LOG" 2>&1
  clean uv venv -q "$V" --python /usr/bin/python3.12 >>"$LOG" 2>&1
  site=$("$BASEPY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  echo "$site" >"$V/lib/python3.12/site-packages/_machine_torch.pth"
  clean uv pip install -q --python "$V/bin/python" --no-deps \
    flashinfer-python==0.6.10.post1 apache-tvm-ffi==0.1.9 >>"$LOG" 2>&1
  clean "$V/bin/python" -c 'import torch, flashinfer, sys
print("venv", sys.prefix, "torch", torch.__version__, "flashinfer", flashinfer.__version__)' \
    2>&1 | tee -a "$LOG"
  clean sh -c 'command -v nvcc || echo "no nvcc on PATH (good)"; echo "CUDA_HOME=${CUDA_HOME:-unset}"' \
    | tee -a "$LOG"
}

base() {
  setup
  provision provision-1
  provision provision-2
  say "after provision: nvcc and CUDA_HOME from the env file"
  clean sh -c 'set -a; . "$1"; set +a; echo "CUDA_HOME=$CUDA_HOME"; command -v nvcc
    nvcc --version | tail -2' sh "$ENVF" 2>&1 | tee -a "$LOG"
  doctor doctor-matched
  verify verify-matched
  if [ "${NO_JIT:-0}" != 1 ]; then jit jit-matched; fi
}

incident() {  # name: break, doctor, JIT, provision, doctor, provision again
  local name=$1 ch
  ch=$(cuda_home)
  say "incident $name"
  case $name in
    nvvm-13.2)  # cicc and libdevice of nvidia-nvvm 13.2 beside ptxas 13.0, metadata untouched
      tar -xJf "$STAGE"/nvidia_nvvm-13.2.78-cicc.tar.xz -C "$ch" ;;
    nvvm-pip)  # nvidia-nvvm 13.2 alone over the 13.0 set, installed as the incident did
      clean uv pip install -q --python "$V/bin/python" --no-deps \
        "$STAGE"/incident/nvidia_nvvm-13.2.78-*.whl >>"$LOG" 2>&1 ;;
    nvcc-13.2)  # nvcc, nvvm and crt of 13.2 over the 13.0 set, as pip would put them
      clean uv pip install -q --python "$V/bin/python" --no-deps "$STAGE"/incident/*.whl \
        >>"$LOG" 2>&1
      clean "$V/bin/python" -m pip list 2>/dev/null | grep -E 'nvidia-(cuda-(nvcc|crt|runtime)|nvvm)' \
        | tee -a "$LOG" ;;
    cudart-13.2)  # the runtime wheel of 13.2 over the 13.0 set, as pip would put it
      clean uv pip install -q --python "$V/bin/python" --no-deps \
        nvidia-cuda-runtime==13.2.75 >>"$LOG" 2>&1 ;;
    no-curand)  # the pinned set as it was before its curand extra: no curand_kernel.h
      clean uv pip uninstall -q --python "$V/bin/python" nvidia-curand >>"$LOG" 2>&1
      ls "$ch"/include/curand_kernel.h 2>&1 | tee -a "$LOG" ;;
    no-libcudart)
      ls -l "$ch"/lib/libcudart.so* | tee -a "$LOG"
      rm -f "$ch"/lib/libcudart.so ;;
  esac
  doctor "doctor-$name"
  verify "verify-$name"
  if [ "${NO_JIT:-0}" != 1 ]; then jit "jit-$name"; fi
  provision "repair-$name"
  doctor "doctor-after-$name"
  verify "verify-after-$name"
  provision "again-$name"
  if [ "${JIT_AFTER_REPAIR:-0}" = 1 ]; then jit "jit-after-$name"; fi
}

case $PHASE in
  base) base ;;
  incidents) for i in ${INCIDENTS:-nvvm-13.2 cudart-13.2 no-libcudart}; do incident "$i"; done
    [ "${JIT_AFTER_REPAIR:-0}" = 1 ] || [ "${NO_JIT:-0}" = 1 ] || jit jit-final ;;
  all) base; for i in nvvm-13.2 cudart-13.2 no-libcudart; do incident "$i"; done ;;
esac
tar -czf "$OUT/details.tgz" -C "$W" json 2>/dev/null
say "done ($PHASE)"
