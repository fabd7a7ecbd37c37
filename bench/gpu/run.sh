#!/bin/sh
# The GPU proof, on a machine with an NVIDIA GPU, nvcc and a torch venv:
#
#   bench/gpu/fetch.sh            # once, where pip can download
#   bench/gpu/run.sh OUTDIR       # on the GPU machine (no network needed)
#
# Installs the fetched wheels into the python that holds torch (PYTHON,
# default python3), then runs bench/gpu/proof.py, which writes
# OUTDIR/results.json. Extra arguments go to proof.py.
set -eu
cd "$(dirname "$0")/../.."
dest=${1:?usage: bench/gpu/run.sh OUTDIR [proof.py options]}
shift
py=${PYTHON:-python3}
wheels=${WHEELS:-.whl}
mkdir -p "$dest"
if ls "$wheels"/*.whl >/dev/null 2>&1; then
  if ! "$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
      "$wheels"/*.whl >"$dest/pip.log" 2>&1; then
    # A read-only venv: install beside it instead.
    "$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
      --target /tmp/gpu-proof-site "$wheels"/*.whl >>"$dest/pip.log" 2>&1
    export PYTHONPATH=/tmp/gpu-proof-site${PYTHONPATH:+:$PYTHONPATH}
  fi
fi
export PYTHONPATH=src${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1
exec "$py" bench/gpu/proof.py --out "$dest" --wheels "$wheels" "$@"
