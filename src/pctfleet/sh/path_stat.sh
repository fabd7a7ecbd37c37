# shellcheck shell=sh
# What is at a path, without following a link: its type, link target, mode, owner and group
# (names, and their ids as `uid`/`gid`).
# STAT_TIMES=1: the access and modification times (`stat %x %y`, local wall clock) of what
# it points to. STAT_SRC (state=hard): a folder at the path stands for the entry of SRC's
# name inside it (its `path`), as in Ansible; the path's link count and dev:inode, and
# SRC's own, followed (`src_*`). STAT_TREE=P or L (recurse): every entry under a folder,
# summed up in one pass as the distinct "type mode uid gid user group" lines with their
# counts (`tree`, at most 4097 lines: one more than a plan takes); L follows links as
# Ansible's follow does: a link's target (and a linked folder's entries) by its own line,
# and each link by its own line of type l. No path is printed: names cannot forge lines.
# STAT_TARGET (state=link): whether that path, the link's target, exists (`target_exists`).
# inputs: STAT_PATH STAT_TIMES STAT_SRC STAT_TREE STAT_TARGET
p=$STAT_PATH
if [ -n "$STAT_SRC" ] && [ -d "$p" ] && [ -n "${STAT_SRC##*/}" ]; then
  p=${p%/}/${STAT_SRC##*/}; pf_kv path "$p"
fi
if [ -L "$p" ]; then pf_kv type link; pf_kv target "$(readlink -- "$p")"
elif [ -d "$p" ]; then pf_kv type directory
elif [ -e "$p" ]; then pf_kv type file
else pf_kv type absent; fi
if [ -e "$p" ] || [ -L "$p" ]; then
  # One stat for all of them, a line each (no name holds a newline).
  { IFS= read -r ps_mode; IFS= read -r ps_owner; IFS= read -r ps_group; IFS= read -r ps_uid
    IFS= read -r ps_gid; IFS= read -r ps_links; IFS= read -r ps_id; } <<PCTFLEET_STAT
$(stat -c '%a
%U
%G
%u
%g
%h
%d:%i' -- "$p")
PCTFLEET_STAT
  pf_kv mode "$ps_mode"
  pf_kv owner "$ps_owner"
  pf_kv group "$ps_group"
  pf_kv uid "$ps_uid"
  pf_kv gid "$ps_gid"
  if [ -n "$STAT_SRC" ]; then pf_kv links "$ps_links"; pf_kv id "$ps_id"; fi
fi
if [ "$STAT_TIMES" = 1 ] && [ -e "$p" ]; then
  { IFS= read -r ps_atime; IFS= read -r ps_mtime; } <<PCTFLEET_STAT
$(stat -L -c '%x
%y' -- "$p")
PCTFLEET_STAT
  pf_kv atime "$ps_atime"
  pf_kv mtime "$ps_mtime"
fi
if [ -n "$STAT_SRC" ]; then
  if [ -d "$STAT_SRC" ]; then pf_kv src_type directory
  elif [ -e "$STAT_SRC" ]; then pf_kv src_type file
  else pf_kv src_type absent; fi
  if [ -e "$STAT_SRC" ]; then
    { IFS= read -r ps_id; IFS= read -r ps_mode; IFS= read -r ps_owner; IFS= read -r ps_group
      IFS= read -r ps_uid; IFS= read -r ps_gid; IFS= read -r ps_atime; IFS= read -r ps_mtime
    } <<PCTFLEET_STAT
$(stat -L -c '%d:%i
%a
%U
%G
%u
%g
%x
%y' -- "$STAT_SRC")
PCTFLEET_STAT
    pf_kv src_id "$ps_id"
    pf_kv src_mode "$ps_mode"
    pf_kv src_owner "$ps_owner"
    pf_kv src_group "$ps_group"
    pf_kv src_uid "$ps_uid"
    pf_kv src_gid "$ps_gid"
    if [ "$STAT_TIMES" = 1 ]; then pf_kv src_atime "$ps_atime"; pf_kv src_mtime "$ps_mtime"; fi
  fi
fi
if [ -n "$STAT_TREE" ] && [ -d "$p" ] && [ ! -L "$p" ]; then
  ps_format='%y %m %U %G %u %g\n'
  # A find error (a loop of links) is a line of its own; the plan reports it.
  if [ "$STAT_TREE" = L ]; then
    ps_tree=$({ find -L "$p" -mindepth 1 ! -type l -printf "$ps_format"
      find -L "$p" -mindepth 1 -xtype l \
        -exec sh -c 'find "$@" -maxdepth 0 -printf "$0"' "$ps_format" {} +
    } 2>&1 | sort | uniq -c | head -n 4097)
  else
    ps_tree=$(find "$p" -mindepth 1 -printf "$ps_format" 2>&1 | sort | uniq -c | head -n 4097)
  fi
  pf_kv tree "$ps_tree"
fi
if [ -n "$STAT_TARGET" ]; then
  if [ -e "$STAT_TARGET" ]; then pf_kv target_exists 1; else pf_kv target_exists 0; fi
fi
