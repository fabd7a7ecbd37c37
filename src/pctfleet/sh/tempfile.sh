# shellcheck shell=sh
# tempfile: make a file (or a directory when TF_DIR=1) named PREFIX + 8 random characters +
# SUFFIX in TF_PATH (else $TMPDIR, else /tmp), only its owner may read it; print its path.
# inputs: TF_DIR TF_PATH TF_PREFIX TF_SUFFIX
set -e
tf_in=${TF_PATH:-${TMPDIR:-/tmp}}
if [ "$TF_DIR" = 1 ]; then set -- -d; else set --; fi
mktemp "$@" --tmpdir="$tf_in" --suffix="$TF_SUFFIX" -- "${TF_PREFIX}XXXXXXXX"
