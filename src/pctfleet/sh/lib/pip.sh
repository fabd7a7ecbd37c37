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
    *) pctfleet_net_retry "$pp_with" pip "$pp_verb" --python "$pp_py" "$@"; return ;;
  esac
  if [ "$pp_verb" = install ]; then
    # pip >= 25.1 resumes a download cut short; older pips ignore the unknown setting.
    (
      export PIP_RESUME_RETRIES="${PIP_RESUME_RETRIES:-5}"
      pctfleet_net_retry "$pp_py" -m pip install --no-input --disable-pip-version-check "$@"
    )
  else
    "$pp_py" -m pip uninstall -y "$@"
  fi
}
# What pip and uv print when the network, not the request, failed: a download cut
# short, a timeout, a reset, a name that did not resolve, a server-side 5xx.
PCTFLEET_NET_ERRORS='incomplete-download|IncompleteRead|Connection broken|[Tt]imed out|ReadTimeout|ConnectTimeout|Connection reset|Connection aborted|Connection refused|NewConnectionError|Max retries exceeded|[Nn]ame resolution|dns error|error sending request|50[234] (Server Error|Service Unavailable|Bad Gateway|Gateway Time)'
PCTFLEET_NET_TRIES=${PCTFLEET_NET_TRIES:-3}
PCTFLEET_NET_PAUSE=${PCTFLEET_NET_PAUSE:-5}
# pctfleet_net_retry CMD...: run an installer; when it fails on the network, run it
# again: PCTFLEET_NET_TRIES attempts in all, waiting PCTFLEET_NET_PAUSE s more before
# each. Safe: pip and uv fetch everything before they change the environment.
# stderr comes out after each attempt, so that the retry decision can read it.
pctfleet_net_retry() {
  pn_try=1
  while :; do
    pn_err=$(mktemp) || return
    "$@" 2>"$pn_err" && pn_rc=0 || pn_rc=$?
    cat "$pn_err" >&2
    # pip's "Retrying (Retry(...)) after connection broken" lines are ones it got past.
    if [ "$pn_rc" -eq 0 ] || [ "$pn_try" -ge "$PCTFLEET_NET_TRIES" ] \
      || ! grep -v 'Retrying (Retry(' "$pn_err" | grep -Eq "$PCTFLEET_NET_ERRORS"; then
      rm -f "$pn_err"
      return "$pn_rc"
    fi
    rm -f "$pn_err"
    pn_wait=$((pn_try * PCTFLEET_NET_PAUSE))
    echo "pctfleet: network error (attempt $pn_try of $PCTFLEET_NET_TRIES), again in $pn_wait s" >&2
    sleep "$pn_wait"
    pn_try=$((pn_try + 1))
  done
}
