# shellcheck shell=sh
# Every entry under each directory in "$@" (only its own entries unless RECURSE=1, at most
# DEPTH levels when set), without following links: per path N, `entriesN` holds NUL-separated
# records "TYPE TARGET_TYPE PERMS UID GID SIZE INODE DEV NLINK ATIME MTIME CTIME USER GROUP",
# then the path; `skipN` says the path is not a directory.
# inputs: RECURSE DEPTH
fe_i=0
if [ "$RECURSE" = 1 ]; then fe_max=${DEPTH:-}; else fe_max=1; fi
for fe_path do
  if [ ! -d "$fe_path" ]; then
    pf_kv "skip$fe_i" 1
  else
    pf_kv "entries$fe_i" "$(find "$fe_path" -mindepth 1 ${fe_max:+-maxdepth "$fe_max"} \
      -printf '%y %Y %m %U %G %s %i %D %n %A@ %T@ %C@ %u %g\0%p\0' 2>/dev/null | base64 -w0)"
  fi
  fe_i=$((fe_i + 1))
done
