# shellcheck shell=sh
# pctfleet_uv: the container's uv (on PATH, else root's ~/.local/bin), nothing when none.
pctfleet_uv() {
  command -v uv 2>/dev/null || { [ -x /root/.local/bin/uv ] && echo /root/.local/bin/uv; } || :
}
# pctfleet_pip INSTALLER PYTHON VERB ARG...: `install` or `uninstall` in PYTHON's environment.
# INSTALLER is what the plan chose from the probe: uv's path (much faster, and a venv
# made by `uv venv` has no pip), `pip`, or `ensurepip` (bootstrap pip first, then pip).
pctfleet_pip() {
  pp_with=$1 pp_py=$2 pp_verb=$3
  shift 3
  case "$pp_with" in
    pip) ;;
    ensurepip) "$pp_py" -c 'import pip' 2>/dev/null || "$pp_py" -m ensurepip || return ;;
    *) "$pp_with" pip "$pp_verb" --python "$pp_py" "$@"; return ;;
  esac
  if [ "$pp_verb" = install ]; then
    "$pp_py" -m pip install --no-input --disable-pip-version-check "$@"
  else
    "$pp_py" -m pip uninstall -y "$@"
  fi
}
