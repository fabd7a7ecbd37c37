#!/bin/bash
# Captures the NVIDIA driver's own outputs on a GPU machine, verbatim, so the
# parsers of the host side of GPU passthrough are tested against the real
# formats. Each file under $OUT is one command's stdout; index.tsv names the
# command, its exit status and when it ran.
set -u
out=${OUT:?OUT must name a folder}
capture() {
    local name=$1; shift
    "$@" >"$out/$name" 2>"$out/$name.stderr"
    printf '%s\t%s\t%s\t%s\n' "$name" "$?" "$(date -u +%FT%TZ)" "$*" >>"$out/index.tsv"
}
capture proc-driver-nvidia-version cat /proc/driver/nvidia/version
capture nvidia-smi nvidia-smi
capture nvidia-smi-L nvidia-smi -L
capture nvidia-smi-query-driver nvidia-smi --query-gpu=driver_version --format=csv,noheader
capture nvidia-smi-query-csv nvidia-smi --query-gpu=index,name,uuid,pci.bus_id,driver_version,memory.total,compute_cap --format=csv
capture nvidia-smi-version nvidia-smi --version
capture nvidia-smi-q nvidia-smi -q
capture modinfo-nvidia modinfo nvidia
capture sys-module-nvidia-version cat /sys/module/nvidia/version
capture proc-devices cat /proc/devices
capture dev-nvidia bash -c 'ls -l /dev/nvidia* /dev/nvidia-caps 2>&1'
capture dev-nvidia-stat bash -c 'stat -c "%n %F %t:%T %a" /dev/nvidia* /dev/nvidia-caps/* 2>&1'
capture ldconfig-nvidia bash -c 'ldconfig -p | grep -E "libcuda|libnvidia-ml"'
capture lib-files bash -c 'ls -l /usr/lib/x86_64-linux-gnu/libcuda.so* /usr/lib/x86_64-linux-gnu/libnvidia-ml.so* /usr/lib64/libcuda.so* 2>/dev/null'
capture gpu-information bash -c 'cat /proc/driver/nvidia/gpus/*/information'
capture uname uname -r
capture os-release cat /etc/os-release
