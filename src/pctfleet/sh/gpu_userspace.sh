# shellcheck shell=sh
# The NVIDIA driver's userspace side as one container sees it, as pf_kv lines
# (cuda/driver.py parses them): the libraries' real files, the device nodes it can open.
# uses: kv
# Reads only: every device node is opened and closed again, nothing is loaded or created.
pf_kv gpu_ldconfig "$(ldconfig -p 2>/dev/null | grep -E '(libcuda|libnvidia-ml)\.so\.1 ')"
for gl_p in $(ldconfig -p 2>/dev/null | sed -En 's/^[[:space:]]*(libcuda|libnvidia-ml)\.so\.1 .* => //p') \
  /usr/lib/x86_64-linux-gnu/libcuda.so.1 /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1 \
  /usr/lib/aarch64-linux-gnu/libcuda.so.1 /usr/lib/aarch64-linux-gnu/libnvidia-ml.so.1 \
  /usr/lib64/libcuda.so.1 /usr/lib64/libnvidia-ml.so.1 /usr/lib/libcuda.so.1 /usr/lib/libnvidia-ml.so.1 \
  /usr/local/nvidia/lib64/libcuda.so.1 /usr/local/nvidia/lib64/libnvidia-ml.so.1; do
  [ -e "$gl_p" ] || continue
  gl_r=$(readlink -f "$gl_p")
  pf_kv "gpulib.$gl_p" "$gl_r"
  # A library bind-mounted as a single file keeps the name *.so.1: read its version
  # inside it. libcuda also holds older drivers' versions; its banner names its own.
  case "$gl_r" in
    *libcuda.so.1) gl_re='Version [0-9]+\.[0-9]+(\.[0-9]+)?\. Copyright' ;;
    *libnvidia-ml.so.1) gl_re='[0-9]{3}\.[0-9]{2,3}\.[0-9]{2}' ;;
    *) continue ;;
  esac
  pf_kv "gpulibver.$gl_p" "$(grep -a -o -m1 -E "$gl_re" "$gl_r" 2>/dev/null | head -n 1)"
done
# Mount points that hold driver libraries: bind-mounted from the node, they are the node's.
pf_kv gpu_mounts "$(awk '{print $5}' /proc/self/mountinfo 2>/dev/null | grep -E 'nvidia|lib' | head -n 50)"
if command -v nvidia-smi >/dev/null 2>&1; then
  pf_kv gpu_smi "$(timeout 20 nvidia-smi --version 2>&1 | head -n 5)"
fi
for gl_d in /dev/nvidia[0-9]* /dev/nvidiactl /dev/nvidia-uvm /dev/nvidia-uvm-tools /dev/nvidia-caps/*; do
  [ -e "$gl_d" ] || continue
  if (: <>"$gl_d") 2>/dev/null; then pf_kv "gpudev.$gl_d" open; else pf_kv "gpudev.$gl_d" denied; fi
done
:
