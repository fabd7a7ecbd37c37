#!/usr/bin/env bash
# Install what pctfleet and its lab need on Debian 12 (as root), into .venv.
# Safe to run again: it only installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
for pair in sshd:openssh-server lxc-start:lxc debootstrap:debootstrap ip:iproute2 \
            unshare:util-linux ssh-keygen:openssh-client shellcheck:shellcheck \
            chromium:chromium; do
  command -v "${pair%%:*}" >/dev/null 2>&1 || [ -x "/usr/sbin/${pair%%:*}" ] \
    || need_apt+=("${pair#*:}")
done
python3 -c 'import venv, ensurepip' 2>/dev/null || need_apt+=(python3-venv)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "bootstrap: apt-get install ${need_apt[*]}" >&2
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need_apt[@]}"
fi

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
# Wheels are cached outside the repo so a fresh clone installs quickly.
export PIP_CACHE_DIR=${PIP_CACHE_DIR:-/var/cache/pctfleet/pip-controller}
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test]'
# Bytecode now, once, as a wheel install would: an editable install in a shell
# with PYTHONDONTWRITEBYTECODE set would otherwise compile every module at every
# start of the CLI.
.venv/bin/python -m compileall -q src >/dev/null
echo "bootstrap: ready (.venv/bin/pctfleet)" >&2
