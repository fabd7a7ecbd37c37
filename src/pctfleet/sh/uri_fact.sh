# shellcheck shell=sh
# What `uri` reads before it sends anything: whether CREATES exists, whether REMOVES does.
# inputs: CREATES REMOVES
if [ -n "$CREATES" ] && [ -e "$CREATES" ]; then pf_kv created 1; fi
if [ -n "$REMOVES" ] && [ ! -e "$REMOVES" ]; then pf_kv removed 1; fi
pf_kv read 1
