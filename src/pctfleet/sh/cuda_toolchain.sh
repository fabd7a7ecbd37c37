# inputs: INSTALLER PYTHON APT TOOLKIT FORCE EXTRAS NINJA
# uses: pip
# shellcheck shell=sh
# "$@": pip's extra arguments. INSTALLER: uv's path, pip or ensurepip (lib/pip.sh).
# APT: Debian packages to install ('' none); TOOLKIT: the
# pinned set to install ('' none); FORCE=1: reinstall the components cuda-toolkit pins
# for the extras in EXTRAS (comma-separated), as the installed cuda-toolkit pins them: a
# component of another release, or files changed by hand under matching metadata; NINJA=1: ninja.
set -e
export DEBIAN_FRONTEND=noninteractive
if [ -n "$APT" ]; then
  # shellcheck disable=SC2086  # APT is a list of package names, one word each
  apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends $APT >/dev/null
fi
if [ -n "$TOOLKIT" ]; then pctfleet_pip "$INSTALLER" "$PYTHON" install "$@" "$TOOLKIT"; fi
if [ -n "$FORCE" ]; then
  pins=$("$PYTHON" - "$EXTRAS" <<'PCTFLEET_PY'
import importlib.metadata as m
import sys
wanted = sys.argv[1].split(",")
pins = set()
for req in m.requires("cuda-toolkit") or []:
    spec, _, marker = req.partition(";")
    if any(f"extra == '{extra}'" in marker for extra in wanted):
        pins.add(spec.replace(" ", ""))
print(" ".join(sorted(pins)))
PCTFLEET_PY
)
  # shellcheck disable=SC2086  # $pins is a list of requirement words
  pctfleet_pip "$INSTALLER" "$PYTHON" install "$@" --force-reinstall --no-deps $pins
fi
if [ -n "$NINJA" ]; then pctfleet_pip "$INSTALLER" "$PYTHON" install "$@" ninja; fi
