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
# DEST/b1, b2, ...: the same files, hard-linked, at most MAX_MB each.
set -eu
dest=${1:?usage: local_fetch.sh DEST [MAX_MB]}
max=$(( ${2:-60} * 1000000 ))
here=$(cd "$(dirname "$0")" && pwd)
"$here/fetch.sh" "$dest/all" >/dev/null
pyv() {
  "${PYTHON:-python3}" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    --platform manylinux_2_12_x86_64 --platform manylinux2010_x86_64 \
    --platform manylinux_2_5_x86_64 --platform manylinux1_x86_64 -d "$dest/all" "$@"
}
pyv cuda-toolkit==13.0.2 nvidia-cuda-nvcc==13.0.88 nvidia-nvvm==13.0.88 \
  nvidia-cuda-crt==13.0.88 nvidia-cuda-runtime==13.0.96 nvidia-cuda-cccl==13.0.85 \
  nvidia-curand==10.4.0.35 \
  fabric==3.2.3 decorator==5.3.1 deprecated==1.3.1 pytest-testinfra==10.2.2 ninja==1.13.0
# Largest first, each into the first batch it fits.
n=0
# shellcheck disable=SC2045  # ls -S gives the size order; wheel names have no spaces
for f in $(ls -S "$dest/all"/*.whl "$dest/all"/parts/*); do
  size=$(stat -c %s "$f")
  i=1
  while :; do
    mkdir -p "$dest/b$i"
    used=$(du -cb "$dest/b$i" | tail -1 | cut -f1)
    if [ $((used + size)) -le "$max" ] || [ "$used" -le 4096 ]; then break; fi
    i=$((i + 1))
  done
  ln -f "$f" "$dest/b$i/"
  [ "$i" -gt "$n" ] && n=$i
done
for i in $(seq 1 "$n"); do du -sh "$dest/b$i"; done
