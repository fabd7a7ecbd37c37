"""Every distribution a python sees, by PEP 503 name: the `pip` probe's `pkgs` fact.

This file is a program: the probe runs it as it is, `PYTHON -c SOURCE`, in the
container, and it prints one `pkgs=` line (base64 JSON, as pf_kv does). Its answer
is exactly what `REFERENCE` prints:

    {normalize(d.metadata["Name"]): d.version for d in importlib.metadata.distributions()}

but importing importlib.metadata (email, zipfile, pathlib, csv, re, json ...) costs
~35 ms at every probe, three times the interpreter's own start. So on the Pythons
whose importlib.metadata it mirrors (3.10 to 3.13) it finds and reads the metadata
as that code does, with built-in modules only: each sys.path entry in order, its
`*.dist-info` and `*.egg-info` children grouped by name in the order Lookup groups
them, then a `.egg` entry's EGG-INFO; METADATA, else PKG-INFO, else the child itself
as UTF-8 text; the first `Name` and `Version` header as the email parser reads them
(compat32); a later distribution of the same name wins. Whatever it does not read
in exactly that way (another finder of distributions, a sys.path entry that is not
a folder, a metadata file with a Content-Type or a folded Name or Version, any
error) is answered by REFERENCE itself, so the fact is the same either way.
Only built-in modules are imported before that: no `re`, `json` or `base64`.
"""

import os
import sys

# What the probe ran before; run as it is wherever the fast path is not sure.
REFERENCE = """import importlib.metadata as m, json, re
seen = {}
for d in m.distributions():
    name = d.metadata["Name"]
    if name:
        seen[re.sub(r"[-_.]+", "-", name).lower()] = d.version
pf_kv("pkgs", json.dumps(seen, sort_keys=True))"""

# The CPythons whose importlib.metadata and email parser this mirrors.
MIRRORED = ((3, 10), (3, 11), (3, 12), (3, 13))


class Unsure(Exception):
    """Something the fast path does not read as importlib.metadata would."""


def pf_kv(key, value):
    """The probe's `KEY=base64` line (base64 always, as facts/kv.py reads it; no base64 import)."""
    import binascii

    print(key + "=" + binascii.b2a_base64(str(value).encode(), newline=False).decode())


def normalize(name):
    """PEP 503: re.sub(r"[-_.]+", "-", name).lower(), without re."""
    name = name.replace("_", "-").replace(".", "-")
    while "--" in name:
        name = name.replace("--", "-")
    return name.lower()


def candidates(root):
    """The metadata paths importlib.metadata's FastPath and Lookup find in one sys.path
    entry, in their order: the *.dist-info/*.egg-info children grouped by the name
    their own names start with (in the order each name first appears), then EGG-INFO."""
    try:
        children = os.listdir(root or ".")
    except FileNotFoundError:
        return []  # not there: no zip either
    except OSError as exc:
        raise Unsure("not a folder it can list (a zip?)") from exc
    infos, eggs = {}, []
    base_is_egg = os.path.basename(root).lower().endswith(".egg")
    for child in children:
        low = child.lower()
        if low.endswith((".dist-info", ".egg-info")):
            group = normalize(low.rpartition(".")[0].partition("-")[0]).replace("-", "_")
            infos.setdefault(group, []).append(os.path.join(root, child))
        elif base_is_egg and low == "egg-info":
            eggs.append(os.path.join(root, child))
    return [path for group in infos.values() for path in group] + eggs


def read(path):
    """A file's text as PathDistribution.read_text gives it (None where it has none)."""
    try:
        with open(path, encoding="utf-8") as stream:
            return stream.read()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError):
        return None


def _named(line):
    """Does the line start a header: printable ASCII but space, up to its first colon?"""
    colon = line.find(":")
    if colon < 0:
        return False
    name = line[:colon]
    return name.isascii() and name.isprintable() and " " not in name


def headers(text):
    """(name, value) of each header, as email.message_from_string(text) sets them.

    `text` is in universal-newline form (no \\r). The headers end at the first line
    that neither starts one (`Name:`, `From `) nor continues one (a space or tab).
    A `From ` line is dropped (the envelope, or a stray one), and so is a line
    starting with a colon, or a continuation with no header before it. A value is
    what follows the first colon less its leading blanks, with its continuation
    lines, less the trailing newline.
    """
    lines, start = [], 0
    while start < len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end + 1
        line = text[start:end]
        if not (line.startswith(("From ", " ", "\t")) or _named(line)):
            break
        lines.append(line)
        start = end
    pairs, current = [], []
    for line in lines:
        if line[0] in " \t":
            if current:
                current.append(line)
            continue
        if current:
            pairs.append(_pair(current))
            current = []
        if line.startswith("From ") or line.startswith(":"):
            continue
        current = [line]
    if current:
        pairs.append(_pair(current))
    return pairs


def _pair(lines):
    name, _, value = lines[0].partition(":")
    return name, (value.lstrip(" \t") + "".join(lines[1:])).rstrip("\r\n")


def header(pairs, key):
    """The first value of `key` (any case), as Message.get gives it; Unsure when it is
    folded (importlib.metadata re-indents those)."""
    for name, value in pairs:
        if name.lower() == key:
            if "\n" in value:
                raise Unsure(f"a folded {key}")
            return value
    return None


def listing():
    """{PEP 503 name: version} as REFERENCE finds it; Unsure where it would not be."""
    if sys.implementation.name != "cpython" or sys.version_info[:2] not in MIRRORED:
        raise Unsure("a Python this does not mirror")
    path_finder = sys.modules["_frozen_importlib_external"].PathFinder
    finders = [f for f in sys.meta_path if getattr(f, "find_distributions", None)]
    if finders != [path_finder] or not all(isinstance(p, str) for p in sys.path):
        raise Unsure("another finder of distributions, or a sys.path entry not a str")
    seen = {}
    for root in sys.path:
        for path in candidates(root):
            text = read(os.path.join(path, "METADATA"))
            text = text or read(os.path.join(path, "PKG-INFO")) or read(path) or ""
            pairs = headers(text)
            if header(pairs, "content-type") is not None:
                raise Unsure("a Content-Type: the body would be parsed as MIME")
            name = header(pairs, "name")
            if name:
                seen[normalize(name)] = header(pairs, "version")
    return seen


def dump(seen):
    """json.dumps(seen, sort_keys=True) for str keys and str or None values."""
    from _json import encode_basestring_ascii as quote  # json's own, in C

    pairs = (f"{quote(k)}: {'null' if v is None else quote(v)}" for k, v in sorted(seen.items()))
    return "{" + ", ".join(pairs) + "}"


def main():
    try:
        text = dump(listing())
    except Exception:  # Unsure, or anything REFERENCE may read otherwise: let it answer
        exec(REFERENCE, {"pf_kv": pf_kv})
        return
    pf_kv("pkgs", text)


if __name__ == "__main__":
    main()
