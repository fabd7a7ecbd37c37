# shellcheck shell=sh
# What `unarchive` reads: whether CREATES exists, what DEST is, and how many of the
# archive's members differ in DEST (type, size, mtime, and OWNER/GROUP/MODE when given).
# The members come from MANIFEST (JSON, listed on the controller) or, when it is empty,
# from the archive ARCHIVE in the container (tar, tar.gz, zip), read with python3.
# inputs: CREATES ARCHIVE MANIFEST DEST OWNER GROUP MODE
# uses: pykv
if [ -n "$CREATES" ] && [ -e "$CREATES" ]; then pf_kv created 1; exit 0; fi
if [ -d "$DEST" ]; then pf_kv dest directory; elif [ -e "$DEST" ]; then pf_kv dest other; fi
if [ -z "$MANIFEST" ] && [ ! -f "$ARCHIVE" ]; then pf_kv archive absent; exit 0; fi
if ! command -v python3 >/dev/null 2>&1; then pf_kv differs unknown; exit 0; fi
pf_py python3 "$ARCHIVE" "$MANIFEST" "$DEST" "$OWNER" "$GROUP" "$MODE" <<'PY'
import grp, json, os, pwd, stat, sys, tarfile, zipfile
archive, manifest, dest, owner, group, mode = sys.argv[1:7]
def members(path):
    if zipfile.is_zipfile(path):
        pf_kv("kind", "zip")
        with zipfile.ZipFile(path) as z:
            return [[i.filename.rstrip("/"), "d" if i.is_dir() else "f", i.file_size, 0]
                    for i in z.infolist()]
    pf_kv("kind", "tar")
    with tarfile.open(path) as t:
        return [[m.name, "d" if m.isdir() else "l" if m.issym() else "f", m.size, m.mtime]
                for m in t.getmembers() if m.isdir() or m.isfile() or m.issym()]
try:
    listed = json.loads(manifest) if manifest else members(archive)
except (OSError, tarfile.TarError, zipfile.BadZipFile, ValueError) as err:
    pf_kv("differs", "unknown"); pf_kv("error", str(err)); sys.exit(0)
def same(name, kind, size, mtime):
    path = os.path.join(dest, name)
    try:
        st = os.lstat(path)
        names = pwd.getpwuid(st.st_uid).pw_name, grp.getgrgid(st.st_gid).gr_name
    except (OSError, KeyError):
        return False
    want = {"d": stat.S_ISDIR, "l": stat.S_ISLNK, "f": stat.S_ISREG}[kind]
    if not want(st.st_mode) or (kind == "f" and st.st_size != size):
        return False
    if kind == "f" and mtime and int(st.st_mtime) != int(mtime):
        return False
    if owner and owner not in (names[0], str(st.st_uid)):
        return False
    if group and group not in (names[1], str(st.st_gid)):
        return False
    return kind == "l" or not mode or stat.S_IMODE(st.st_mode) == int(mode, 8)
differ = [m[0] for m in listed if not same(*m)]
pf_kv("differs", len(differ)); pf_kv("members", len(listed))
if differ:
    pf_kv("first", differ[0])
PY
