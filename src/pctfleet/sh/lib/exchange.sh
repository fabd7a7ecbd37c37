# shellcheck shell=sh
# Swap two directories atomically (renameat2 RENAME_EXCHANGE); python3 is there with a venv.
pctfleet_exchange() {
  python3 - "$1" "$2" <<'PCTFLEET_PY'
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.renameat2(-100, os.fsencode(sys.argv[1]), -100, os.fsencode(sys.argv[2]), 2) != 0:
    err = ctypes.get_errno()
    sys.exit(f"cannot swap {sys.argv[1]} and {sys.argv[2]}: {os.strerror(err)}")
PCTFLEET_PY
}
