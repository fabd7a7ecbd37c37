# shellcheck shell=sh
# What `copy` with `remote_src` reads: what SRC is (links followed, as ansible-core reads
# it). A file: its mode, size and sha1; where it goes (`dest`: DEST, or DEST/NAME when
# DEST ends in / or is a folder); what is there (not followed: type, mode, owner, group,
# sha1 of a regular file); `missing` the folders above it that are not there, top first.
# A folder: `tree`, JSON read with python3: the source's entries (path, type, mode, sha1
# of a file, target of a link), the folder they go to (`root`: DEST, or DEST/NAME where SRC has no final /),
# what that folder holds (owner and group too; sha1 of the files the source has) and the
# folders above it that are missing.
# inputs: SRC DEST
# uses: pykv
cr_src=$SRC
if [ -d "$cr_src" ]; then pf_kv src directory
elif [ -f "$cr_src" ]; then pf_kv src file
elif [ -e "$cr_src" ]; then pf_kv src other; exit 0
else pf_kv src absent; exit 0; fi
if [ -d "$cr_src" ]; then
  if ! command -v python3 >/dev/null 2>&1; then pf_kv tree_error "no python3"; exit 0; fi
  pf_py python3 "$cr_src" "$DEST" <<'PY'
import hashlib, json, os, stat, sys
src, dest = sys.argv[1:3]
root = dest if src.endswith("/") else os.path.join(dest, os.path.basename(src))
def kind(st):
    return ("l" if stat.S_ISLNK(st.st_mode) else "d" if stat.S_ISDIR(st.st_mode)
            else "f" if stat.S_ISREG(st.st_mode) else "o")
def name(number, table):
    try:
        return table(number)[0]
    except KeyError:
        return str(number)
import grp, pwd
def sha1(path):
    h = hashlib.sha1()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
def listing(top, owners):
    found = []
    for folder, dirs, files in os.walk(top):
        dirs.sort(); files.sort()
        for entry in [*files, *dirs]:
            path = os.path.join(folder, entry)
            st = os.lstat(path)
            row = [os.path.relpath(path, top), kind(st), "%04o" % stat.S_IMODE(st.st_mode)]
            if owners:
                row += [name(st.st_uid, pwd.getpwuid), name(st.st_gid, grp.getgrgid)]
            if row[1] == "l":
                row.append(os.readlink(path))
            found.append(row)
    return found
tree = {"root": root, "src": listing(src, False)}
tree["src_mode"] = "%04o" % stat.S_IMODE(os.stat(src).st_mode)
for row in tree["src"]:
    if row[1] == "f":
        row.append(sha1(os.path.join(src, row[0])))
missing, up = [], os.path.dirname(root.rstrip("/")) or "/"
while not os.path.lexists(up):
    missing.insert(0, up)
    up = os.path.dirname(up)
tree["missing"] = missing
if os.path.isdir(root):
    st = os.stat(root)
    tree["root_kind"] = "d"
    tree["root_attrs"] = ["%04o" % stat.S_IMODE(st.st_mode), name(st.st_uid, pwd.getpwuid),
                          name(st.st_gid, grp.getgrgid)]
    files = {row[0] for row in tree["src"] if row[1] == "f"}
    tree["dest"] = listing(root, True)
    for row in tree["dest"]:
        if row[1] == "f" and row[0] in files:
            row.append(sha1(os.path.join(root, row[0])))
elif os.path.lexists(root):
    tree["root_kind"] = "o"
else:
    tree["root_kind"] = "a"
pf_kv("tree", json.dumps(tree))
PY
  exit 0
fi
pf_kv src_mode "$(stat -L -c %a -- "$cr_src")"
pf_kv src_size "$(stat -L -c %s -- "$cr_src")"
cr_sum=$(sha1sum < "$cr_src") && pf_kv src_sha1 "${cr_sum%% *}"
cr_dest=$DEST
case $cr_dest in
  */) cr_dest=$cr_dest${cr_src##*/} ;;
  *) if [ -d "$cr_dest" ]; then cr_dest=$cr_dest/${cr_src##*/}; fi ;;
esac
pf_kv dest "$cr_dest"
if [ -L "$cr_dest" ]; then pf_kv type link
elif [ -d "$cr_dest" ]; then pf_kv type directory
elif [ -e "$cr_dest" ]; then pf_kv type file
else pf_kv type absent; fi
if [ -e "$cr_dest" ] || [ -L "$cr_dest" ]; then
  pf_kv attrs "$(stat -c '%a %U %G' -- "$cr_dest")"
fi
if [ -f "$cr_dest" ] && [ ! -L "$cr_dest" ]; then
  cr_sum=$(sha1sum < "$cr_dest") && pf_kv sha1 "${cr_sum%% *}"
fi
cr_up=${cr_dest%/*} cr_missing=''
while [ -n "$cr_up" ] && [ ! -e "$cr_up" ] && [ ! -L "$cr_up" ]; do
  cr_missing="$cr_up
$cr_missing"
  cr_up=${cr_up%/*}
done
pf_kv missing "$cr_missing"
