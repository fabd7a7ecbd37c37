"""`apt_repository` and `deb822_repository`: apt sources files, named and written as
Ansible names and writes them, so a file Ansible made is the file these modules find.

The probe reads the sources files; the new bytes are computed here and pushed through
copy's atomic, verified push. A converged task costs nothing beyond the shared probe.
"""

from __future__ import annotations

import base64
import re
import textwrap
from dataclasses import dataclass, field
from typing import Any

from pctfleet.errors import PlaybookError
from pctfleet.modules.args import Args, Context, arg, flag, text, text_list
from pctfleet.modules.base import Fact, FactReader, Module, Plan, Push, World, mode_string, q
from pctfleet.sh import snippet

SOURCES_LIST = "/etc/apt/sources.list"
SOURCES_DIR = "/etc/apt/sources.list.d"
KEYRINGS_DIR = "/etc/apt/keyrings"
SOURCE_TYPES = ("deb", "deb-src")
UPDATE = "apt-get update -q"


@dataclass(frozen=True)
class SourceLine:
    """One line of a one-line sources file, read as Ansible reads it."""

    valid: bool
    enabled: bool
    source: str
    comment: str

    def dump(self) -> str:
        head = "" if self.enabled else "# "
        tail = f" # {self.comment}" if self.comment else ""
        return f"{head}{self.source}{tail}\n"


def parse_line(line: str) -> SourceLine:
    """Ansible's reading: `#` first disables, a later `#` starts a comment, spaces collapse."""
    line, enabled, comment = line.strip(), True, ""
    if line.startswith("#"):
        enabled, line = False, line[1:]
    cut = line.find("#")
    if cut > 0:
        comment, line = line[cut + 1 :].strip(), line[:cut]
    source = line.strip()
    chunks = source.split()
    valid = bool(chunks) and chunks[0] in SOURCE_TYPES
    return SourceLine(valid, enabled, " ".join(chunks) if valid else source, comment)


def list_filename(source: str, filename: str | None) -> str:
    """The file Ansible puts a new line in: `filename`.list, else one named after the URL."""
    if filename is None:
        line = re.sub(r"\[[^\]]+\]", "", source)  # options
        line = re.sub(r"\w+://", "", line)  # protocols
        first = [part for part in line.split() if part not in SOURCE_TYPES][0]
        first = first.split("@", 1)[-1]  # user and password
        filename = "_".join(re.sub("[^a-zA-Z0-9]", " ", first).split())
    return filename if "/" in filename else f"{SOURCES_DIR}/{filename}.list"


def repo_line(value: Any, where: str) -> str:
    return text(value, where).strip()


@dataclass(frozen=True)
class AptRepositoryArgs(Args):
    repo: str = arg(required=True, convert=repo_line)
    state: str = arg("present", choices={"present", "absent"})
    filename: str | None = arg(None, convert=text)
    mode: str | None = arg(None, convert=mode_string)
    update_cache: bool = arg(True, aliases=("update-cache",), convert=flag)
    # Accepted for playbooks that set them; nothing here needs them.
    update_cache_retries: int = arg(5)
    update_cache_retry_max_delay: int = arg(12)
    validate_certs: bool = arg(True, convert=flag)
    install_python_apt: bool = arg(True, convert=flag)
    codename: str | None = arg(None, convert=text)

    def check(self, ctx: Context, where: str) -> None:
        if self.repo.startswith("ppa:"):
            raise self.fail(f"PPA repositories are not supported, got {self.repo!r}", where)
        line = parse_line(self.repo)
        if not line.valid or not line.enabled:
            raise self.fail(f"Invalid repository string: {self.repo!r}", where)

    @property
    def source(self) -> str:
        return parse_line(self.repo).source


@dataclass(frozen=True)
class SourcesFiles:
    """Every one-line sources file: path -> (mode, bytes), in apt's reading order."""

    files: dict[str, tuple[str, bytes]] = field(default_factory=dict)


class SourcesFact(FactReader[SourcesFiles]):
    State = SourcesFiles

    def command(self, args: Any, want_diff: bool) -> str:
        return snippet("apt_sources_fact", SOURCES_LIST=SOURCES_LIST, SOURCES_DIR=SOURCES_DIR)

    def parse(self, reading: Fact) -> SourcesFiles:
        fields, files = reading.fields(), {}
        for key, path in fields.items():
            if key.startswith("file") and key[4:].isdigit():
                n = key[4:]
                mode = fields.get(f"mode{n}", "644").zfill(4)
                files[path] = (mode, base64.b64decode(fields.get(f"content{n}", "")))
        return SourcesFiles(files)

    def converged(self, args: AptRepositoryArgs, world: World) -> dict[str, str]:
        if args.state == "absent":
            return {}
        path = list_filename(args.source, args.filename)
        content = base64.b64encode(f"{args.source}\n".encode()).decode()
        return {"file1": path, "mode1": (args.mode or "0644").lstrip("0"), "content1": content}


def _edited(args: AptRepositoryArgs, files: dict[str, list[SourceLine]]) -> None:
    """The task applied to the parsed files, in place (Ansible's add and remove rules)."""
    source = args.source
    if args.state == "absent":
        for path, lines in files.items():
            files[path] = [x for x in lines if not (x.valid and x.enabled and x.source == source)]
        return
    found = False
    for lines in files.values():
        for i, line in enumerate(lines):
            if line.valid and line.source == source:  # a disabled copy is enabled again
                lines[i], found = SourceLine(True, True, line.source, line.comment), True
    if not found:
        files.setdefault(list_filename(source, args.filename), []).append(
            SourceLine(True, True, source, "")
        )


def _dump(lines: list[SourceLine]) -> str:
    return "".join(line.dump() for line in lines)


class AptRepository(Module, name="apt_repository", args=AptRepositoryArgs, fact=SourcesFact()):
    """Add or remove one line in apt's one-line sources files (Ansible's `apt_repository`)."""

    def plan(self, args: AptRepositoryArgs, state: SourcesFiles, check: bool) -> Plan:
        parsed = {
            path: [parse_line(x) for x in data.decode("utf-8", "replace").splitlines()]
            for path, (_, data) in state.files.items()
        }
        before = {path: _dump(lines) for path, lines in parsed.items() if lines}
        _edited(args, parsed)
        after = {path: _dump(lines) for path, lines in parsed.items() if lines}
        result = {"repo": args.repo, "state": args.state}
        added, removed = sorted(set(after) - set(before)), sorted(set(before) - set(after))
        result |= {"sources_added": added, "sources_removed": removed}
        if before == after:
            return Plan(False, result=result)
        pushes = [
            Push(path, text.encode(), self._mode(args, state, path))
            for path, text in after.items()
            if before.get(path) != text
        ]
        lines = [f"rm -f -- {q(path)}" for path in removed]
        lines += [UPDATE] if args.update_cache else []
        script = "set -e\n" + "".join(f"{line}\n" for line in lines) if lines else None
        changed = [p for p in sorted({*before, *after}) if before.get(p) != after.get(p)]
        diff = {
            "path": ", ".join(changed),
            "before": "".join(before.get(p, "") for p in changed),
            "after": "".join(after.get(p, "") for p in changed),
        }
        return Plan(True, pushes=pushes, script=script, diff=diff, result=result)

    def _mode(self, args: AptRepositoryArgs, state: SourcesFiles, path: str) -> str:
        """A new file gets `mode` (0644 by default); an existing one keeps its own."""
        if path in state.files:
            return state.files[path][0]
        return args.mode or "0644"

    def finish(self, args: AptRepositoryArgs, plan: Plan, rc: int, out: str, err: str) -> dict:
        if rc != 0:
            lines = err.strip().splitlines()
            return {"failed": True, "msg": lines[-1] if lines else f"exit {rc}"}
        return {"changed": True}


# -- deb822_repository ----------------------------------------------------------------

_DEB822_BOOLS = (
    "allow_downgrade_to_insecure",
    "allow_insecure",
    "allow_weak",
    "by_hash",
    "check_date",
    "check_valid_until",
    "enabled",
    "pdiffs",
    "trusted",
)
_DEB822_LISTS = ("architectures", "components", "languages", "suites", "targets", "uris")
_DEB822_TEXTS = ("inrelease_path", "signed_by", "date_max_future")


def _types(value: Any, where: str) -> tuple[str, ...]:
    kinds = text_list(value, where)
    bad = [kind for kind in kinds if kind not in SOURCE_TYPES]
    if bad:
        raise PlaybookError(
            f"deb822_repository: 'types' must be deb or deb-src, got {bad[0]!r}", where=where
        )
    return kinds


@dataclass(frozen=True)
class Deb822Args(Args):
    name: str = arg(required=True, convert=text)
    state: str = arg("present", choices={"present", "absent"})
    mode: str = arg("0644", convert=mode_string)
    types: tuple[str, ...] = arg(("deb",), convert=_types)
    uris: tuple[str, ...] | None = arg(None, convert=text_list)
    suites: tuple[str, ...] | None = arg(None, convert=text_list)
    components: tuple[str, ...] | None = arg(None, convert=text_list)
    architectures: tuple[str, ...] | None = arg(None, convert=text_list)
    languages: tuple[str, ...] | None = arg(None, convert=text_list)
    targets: tuple[str, ...] | None = arg(None, convert=text_list)
    signed_by: str | None = arg(None, convert=text)
    enabled: bool | None = arg(None, convert=flag)
    trusted: bool | None = arg(None, convert=flag)
    allow_insecure: bool | None = arg(None, convert=flag)
    allow_weak: bool | None = arg(None, convert=flag)
    allow_downgrade_to_insecure: bool | None = arg(None, convert=flag)
    by_hash: bool | None = arg(None, convert=flag)
    check_date: bool | None = arg(None, convert=flag)
    check_valid_until: bool | None = arg(None, convert=flag)
    pdiffs: bool | None = arg(None, convert=flag)
    date_max_future: str | None = arg(None, convert=text)
    inrelease_path: str | None = arg(None, convert=text)
    install_python_debian: bool = arg(False, convert=flag)  # accepted; nothing to install

    def check(self, ctx: Context, where: str) -> None:
        if re.match(r"^\w+://", self.signed_by or ""):
            raise self.fail(
                "'signed_by' as a URL is not supported: download the key with get_url "
                f"and give its path, got {self.signed_by!r}",
                where,
            )
        if self.state == "present" and not (self.uris and self.suites):
            raise self.fail("state=present needs 'uris' and 'suites'", where)

    @property
    def slugs(self) -> tuple[str, str]:
        """The file's name as older Ansible made it, and as it makes it now."""
        legacy = re.sub(r"[^a-z0-9-]+", "", re.sub(r"[_\s]+", "-", self.name.lower()))
        return legacy, self.name.replace(" ", "-")


def deb822_text(args: Deb822Args) -> str:
    """The file as Ansible writes it: fields in the order of their argument names."""
    names = sorted((*_DEB822_BOOLS, *_DEB822_LISTS, *_DEB822_TEXTS, "name", "types"))
    out = []
    for key in names:
        value = getattr(args, key)
        if value is None:
            continue
        if isinstance(value, bool):
            value = "yes" if value else "no"
        elif isinstance(value, tuple):
            value = " ".join(value)
        if "\n" in value:
            body = "\n".join(line.strip() or "." for line in value.strip().splitlines())
            value = "\n" + textwrap.indent(body, "    ")
        label = {"name": "X-Repolib-Name", "uris": "URIs"}.get(key)
        label = label or key.replace("_", "-").title()
        out.append(f"{label}:{value}\n" if value.startswith("\n") else f"{label}: {value}\n")
    return "".join(out)


@dataclass(frozen=True)
class Deb822File:
    slug: str = ""
    mode: str = ""
    content: bytes | None = None
    keys: tuple[str, ...] = ()


class Deb822Fact(FactReader[Deb822File]):
    State = Deb822File

    def command(self, args: Deb822Args, want_diff: bool) -> str:
        legacy, new = args.slugs
        return snippet("deb822_fact", LEGACY=legacy, NEW=new)

    def parse(self, reading: Fact) -> Deb822File:
        f = reading.fields()
        content = base64.b64decode(f["content"]) if "content" in f else None
        mode = f.get("mode", "")
        keys = tuple(ext for ext in ("asc", "gpg") if f.get(f"key_{ext}") == "1")
        return Deb822File(f.get("slug", ""), mode.zfill(4) if mode else "", content, keys)

    def converged(self, args: Deb822Args, world: World) -> dict[str, str]:
        slug = args.slugs[1]
        if args.state == "absent":
            return {"slug": slug}
        content = base64.b64encode(deb822_text(args).encode()).decode()
        return {"slug": slug, "mode": args.mode.lstrip("0"), "content": content}


class Deb822Repository(Module, name="deb822_repository", args=Deb822Args, fact=Deb822Fact()):
    """One repository as a deb822 `.sources` file (Ansible's `deb822_repository`)."""

    def plan(self, args: Deb822Args, state: Deb822File, check: bool) -> Plan:
        slug = state.slug or args.slugs[1]
        dest = f"{SOURCES_DIR}/{slug}.sources"
        keyring = f"{KEYRINGS_DIR}/{slug}"
        if args.state == "absent":
            gone = [dest] if state.content is not None else []
            gone += [f"{keyring}.{ext}" for ext in state.keys]
            result = {"repo": None, "dest": dest, "key_filename": f"{keyring}.gpg"}
            if not gone:
                return Plan(False, result=result)
            script = "set -e\n" + "".join(f"rm -f -- {q(path)}\n" for path in gone)
            before = (state.content or b"").decode("utf-8", "replace")
            diff = {"path": dest, "before": before, "after": ""}
            return Plan(True, script=script, diff=diff, result=result)
        repo = deb822_text(args)
        result = {"repo": repo, "dest": dest, "key_filename": None}
        if state.content == repo.encode() and state.mode == args.mode:
            return Plan(False, result=result)
        before = (state.content or b"").decode("utf-8", "replace")
        diff = {"path": dest, "before": before, "after": repo}
        if state.content == repo.encode():
            script = f"set -e\nchmod {args.mode} -- {q(dest)}\n"
            return Plan(True, script=script, diff=diff, result=result)
        return Plan(True, pushes=[Push(dest, repo.encode(), args.mode)], diff=diff, result=result)
