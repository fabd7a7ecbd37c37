# shellcheck shell=sh
# pf_kv KEY VALUE: the one way a probe prints a fact (value base64-encoded, one line).
pf_kv() { printf '%s=' "$1"; printf '%s' "$2" | base64 -w0; echo; }
