#!/bin/sh
# Downloads what bench/gpu/local_proof.sh needs on a GPU machine with no package
# index, and splits it into carry batches small enough to travel one at a time:
#
#   bench/gpu/local_fetch.sh DEST [MAX_MB]    # default 60 MB a batch
#
# DEST/all: bench/gpu/fetch.sh's wheels (flashinfer, tvm-ffi, paramiko and its
# needs) and parts (cicc 13.2, cuda-runtime 13.2), plus the pinned CUDA 13.0 set
# that `cuda_toolkit: auto` installs with torch 2.11+cu130 (cuda-toolkit 13.0.2 and
# its nvcc, nvvm, crt, cudart, cccl and curand wheels), fabric and ninja.
# DEST/all/incident: nvcc, nvvm and crt 13.2 (the incident's wheels).
# DEST/chunks/c00, c01, ...: DEST/all as one tar stream, MAX_MB a chunk.
set -eu
dest=${1:?usage: local_fetch.sh DEST [MAX_MB]}
max=$(( ${2:-60} * 1000000 ))
here=$(cd "$(dirname "$0")" && pwd)
"$here/fetch.sh" "$dest/all" >/dev/null
pyv() {  # DIR REQUIREMENT...
  d=$1
  shift
  "${PYTHON:-python3}" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    --platform manylinux_2_12_x86_64 --platform manylinux2010_x86_64 \
    --platform manylinux_2_5_x86_64 --platform manylinux1_x86_64 -d "$d" "$@"
}
pyv "$dest/all" cuda-toolkit==13.0.2 nvidia-cuda-nvcc==13.0.88 nvidia-nvvm==13.0.88 \
  nvidia-cuda-crt==13.0.88 nvidia-cuda-runtime==13.0.96 nvidia-cuda-cccl==13.0.85 \
  nvidia-curand==10.4.0.35 \
  fabric==3.2.3 decorator==5.3.1 deprecated==1.3.1 pytest-testinfra==10.2.2 ninja==1.13.0
# The incident "nvcc, nvvm and crt 13.2 over the 13.0 runtime headers", as pip
# would make it: the three wheels of 13.2, installed over the pinned set there.
pyv "$dest/all/incident" nvidia-cuda-nvcc==13.2.78 nvidia-nvvm==13.2.78 nvidia-cuda-crt==13.2.78
# One tar stream cut into MAX-byte chunks: a wheel larger than one carry travels
# in pieces too. There: `cat` each chunk onto one file as it arrives, then untar.
rm -rf "$dest/chunks" && mkdir -p "$dest/chunks"
tar -cf - -C "$dest" all | split -b "$max" -d - "$dest/chunks/c"
ls -l "$dest/chunks"
