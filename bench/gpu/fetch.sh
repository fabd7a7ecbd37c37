#!/bin/sh
# Downloads, for the GPU machine's Python 3.12 on x86_64, what bench/gpu/run.sh
# installs (flashinfer and the packages the image lacks) and the two newer CUDA
# parts the mismatched toolchains swap in (into <dest>/parts, never installed).
#
#   bench/gpu/fetch.sh [dest]     # default .whl (git-ignored)
set -eu
dest=${1:-.whl}
py=${PYTHON:-python3}
mkdir -p "$dest/parts"
dl() {
  "$py" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
    --platform manylinux_2_26_x86_64 --platform manylinux_2_24_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    --platform manylinux1_x86_64 "$@"
}
# flashinfer 0.6.10.post1 (13 MB) bundles CCCL 3.3.2 and JIT-compiles through
# apache-tvm-ffi; paramiko and its needs let `pctfleet doctor` start there.
dl -d "$dest" flashinfer-python==0.6.10.post1 apache-tvm-ffi==0.1.9 \
  paramiko==5.1.0 bcrypt==5.0.0 cryptography==50.0.2 pynacl==1.6.2 cffi==2.1.1 \
  pycparser==3.12 invoke==2.2.1
# CUDA 13.2 runtime headers (CUDART_VERSION 13020) for the cuda_toolkit.h mismatch.
dl -d "$dest/parts" nvidia-cuda-runtime==13.2.75
# nvidia-nvvm 13.2.78 is 64 MB: keep what nvcc runs from it (cicc, libdevice).
part="$dest/parts/nvidia_nvvm-13.2.78-cicc.tar.xz"
if [ ! -f "$part" ]; then
  tmp=$(mktemp -d)
  dl -d "$tmp" nvidia-nvvm==13.2.78
  "$py" -m zipfile -e "$tmp"/nvidia_nvvm-13.2.78-*.whl "$tmp/x"
  mkdir -p "$tmp/nvvm/bin" "$tmp/nvvm/libdevice"
  cp "$tmp/x/nvidia/cu13/nvvm/bin/cicc" "$tmp/nvvm/bin/cicc"
  cp "$tmp/x/nvidia/cu13/nvvm/libdevice/libdevice.10.bc" "$tmp/nvvm/libdevice/"
  chmod 755 "$tmp/nvvm/bin/cicc"
  (cd "$tmp" && XZ_OPT="-9 -T0" tar -cJf nvvm.tar.xz nvvm)
  mv "$tmp/nvvm.tar.xz" "$part"
  rm -rf "$tmp"
fi
ls -l "$dest" "$dest/parts"
