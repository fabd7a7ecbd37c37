"""`copy` and `template`: a file's content, written atomically and verified."""

from __future__ import annotations

import base64
import dataclasses
import functools
import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Self

from pctfleet.errors import PlaybookError
from pctfleet.modules.args import Args, Context, arg, flag, text
from pctfleet.modules.base import Fact, FactReader, Module, Plan, Push, World
from pctfleet.modules.file import PathState, attribute_fixes, path_state, stat_probe
from pctfleet.modules.modes import Mode, file_mode, stat_text, wanted_mode
from pctfleet.modules.textfile import TEXT_LIMIT, backup_name
from pctfleet.modules.validate import validate_code
from pctfleet.playbook.rendermemo import pure_names
from pctfleet.playbook.templatevars import UNSTABLE, template_vars
from pctfleet.playbook.templating import HEADER, render, render_template_file, template_env
from pctfleet.sh import snippet

DIFF_LIMIT = 64 * 1024
_DELIMITERS = tuple(f"{kind}_{end}_string" for kind in ("block", "variable", "comment")
                    for end in ("start", "end"))  # fmt: skip
_READ_AS_DEFAULT = frozenset({*_DELIMITERS, "trim_blocks", "lstrip_blocks", "newline_sequence"})


def _any_text(value: Any, where: str) -> str:
    """copy's `content`: a mapping or a list is written as JSON, as Ansible writes it."""
    if isinstance(value, dict | list):
        return json.dumps(value)
    return str(value)


@dataclass(frozen=True)
class ContentArgs(Args):
    """What `copy` and `template` share: where the file goes, its attributes, its bytes."""

    reads_context: ClassVar[bool] = True

    dest: str = arg(required=True, convert=text)
    mode: Mode | None = arg(None, convert=file_mode)
    owner: str | None = arg(None, convert=text)
    group: str | None = arg(None, convert=text)
    force: bool = arg(True, convert=flag)
    backup: bool = arg(False, convert=flag)
    src: str | None = arg(None, convert=text)
    validate: str | None = arg(None, convert=validate_code)
    # Not an argument: what `dest` must hold, read (or rendered) once when the task is prepared.
    data: bytes = dataclasses.field(default=b"", repr=False)

    @classmethod
    def parse(cls, raw: Mapping[str, Any], ctx: Context, where: str) -> Self:
        args = super().parse(raw, ctx, where)
        dest = args.dest
        if dest.endswith("/") and args.src:
            dest += Path(args.src).name
        return dataclasses.replace(args, dest=dest, data=args.read(ctx, where))

    @classmethod
    def context_key(
        cls, raw: Mapping[str, Any], variables: Mapping[str, Any], base_dir: str
    ) -> tuple[frozenset[str], tuple] | None:
        """Without `src` nothing; with it `role_path` (where it is looked for), the
        file's stat (any write changes its ctime: new bytes, a new key) and for a
        template the variables it reads. None where that cannot be told now."""
        if "src" not in raw:
            return frozenset(), ()
        try:
            src = text(render(raw["src"], variables, where=""), "")
            path = cls.locate(src, Context(base_dir, variables), "")
            stamp = _stamp(path)
            names = cls.file_names(path, stamp)
        except Exception:  # noqa: BLE001 - parsing reports it, with its own `where`
            return None
        return None if names is None else (names | {"role_path"}, (str(path), stamp))

    @classmethod
    def locate(cls, src: str, ctx: Context, where: str) -> Path:
        """The controller file `src` names."""
        raise NotImplementedError

    @classmethod
    def file_names(cls, path: Path, stamp: tuple) -> frozenset[str] | None:
        """The variables the file's bytes depend on (a plain copy: none)."""
        return frozenset()

    def check(self, ctx: Context, where: str) -> None:
        if not self.dest.startswith("/"):
            raise self.fail(f"'dest' must be an absolute path, got {self.dest!r}", where)

    def read(self, ctx: Context, where: str) -> bytes:
        raise NotImplementedError

    @property
    def push_owner(self) -> str:
        owner, group = self.owner or "", self.group or ""
        return f"{owner}:{group}" if group else owner


@dataclass(frozen=True)
class CopyArgs(ContentArgs):
    content: str | None = arg(None, convert=_any_text)

    def read(self, ctx: Context, where: str) -> bytes:
        if self.content is not None:
            return self.content.encode()
        if not self.src:
            raise PlaybookError("copy needs 'content' or 'src'", where=where)
        path = self.locate(self.src, ctx, where)
        try:
            return path.read_bytes()
        except OSError as exc:
            raise PlaybookError(
                f"copy: cannot read src {path}: {exc.strerror}", where=where
            ) from None

    @classmethod
    def locate(cls, src: str, ctx: Context, where: str) -> Path:
        path = Path(src).expanduser()
        if not path.is_absolute():
            found = [b / "files" / path for b in _bases(ctx)] + [Path(ctx.base_dir) / path]
            path = next((p for p in found if p.exists()), found[-1])
        return path


_NEWLINES = {"\\n": "\n", "\\r": "\r", "\\r\\n": "\r\n"}  # as written in YAML's plain text


def _newline(value: Any, where: str) -> str:
    word = _NEWLINES.get(str(value), str(value))
    if word not in ("\n", "\r", "\r\n"):
        raise PlaybookError(r"template: newline_sequence must be \n, \r or \r\n", where=where)
    return word


@dataclass(frozen=True)
class TemplateArgs(ContentArgs):
    trim_blocks: bool = arg(True, convert=flag)
    lstrip_blocks: bool = arg(False, convert=flag)
    newline_sequence: str = arg("\n", convert=_newline)
    block_start_string: str | None = arg(None, convert=text)
    block_end_string: str | None = arg(None, convert=text)
    variable_start_string: str | None = arg(None, convert=text)
    variable_end_string: str | None = arg(None, convert=text)
    comment_start_string: str | None = arg(None, convert=text)
    comment_end_string: str | None = arg(None, convert=text)
    output_encoding: str = arg("utf-8", convert=text)

    def read(self, ctx: Context, where: str) -> bytes:
        if not self.src:
            raise PlaybookError("module 'template' needs 'src'", where=where)
        path = self.locate(self.src, ctx, where)
        variables = template_vars(self.src, path, self.dest, ctx.variables, where)
        rendered = render_template_file(path, variables, where=where, options=self.options)
        try:
            return rendered.encode(self.output_encoding)
        except LookupError:
            raise PlaybookError(
                f"template: unknown output_encoding {self.output_encoding!r}", where=where
            ) from None
        except UnicodeEncodeError as err:
            raise PlaybookError(f"template: {err}", where=where) from None

    @property
    def options(self) -> dict[str, Any]:
        """How the file is read, where the task changes it (Jinja's option names)."""
        chosen = {"lstrip_blocks": self.lstrip_blocks, "newline_sequence": self.newline_sequence}
        chosen["trim_blocks"] = self.trim_blocks
        for name in _DELIMITERS:
            if getattr(self, name) is not None:
                chosen[name] = getattr(self, name)
        defaults = {"lstrip_blocks": False, "newline_sequence": "\n", "trim_blocks": True}
        return {k: v for k, v in chosen.items() if defaults.get(k) != v}

    @classmethod
    def locate(cls, src: str, ctx: Context, where: str) -> Path:
        return _find_template(src, ctx, where)

    @classmethod
    def context_key(
        cls, raw: Mapping[str, Any], variables: Mapping[str, Any], base_dir: str
    ) -> tuple[frozenset[str], tuple] | None:
        if not _READ_AS_DEFAULT.isdisjoint(raw):  # other delimiters: names not told here
            return None
        return super().context_key(raw, variables, base_dir)

    @classmethod
    def file_names(cls, path: Path, stamp: tuple) -> frozenset[str] | None:
        names = _template_names(str(path), stamp)
        return None if names is None or names & UNSTABLE else names


def _stamp(path: Path) -> tuple:
    """A controller file's identity and version: a write changes its ctime (and size)."""
    st = os.stat(path)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


@functools.lru_cache(maxsize=256)
def _template_names(path: str, stamp: tuple) -> frozenset[str] | None:
    """The variables a template file reads, None unless it is pure (no include, loop
    or call: `rendermemo.pure_names`); once per version of the file."""
    source = Path(path).read_text(encoding="utf-8")
    if source.startswith(HEADER):  # read with other options: names not told here
        return None
    return pure_names(template_env(str(Path(path).parent)), source)


def _bases(ctx: Context) -> list[Path]:
    """A role's folder first (its templates/ and files/), then the playbook's."""
    role = ctx.variables.get("role_path")
    return [*([Path(role)] if isinstance(role, str) else []), Path(ctx.base_dir)]


def _find_template(src: str, ctx: Context, where: str) -> Path:
    role = ctx.variables.get("role_path")
    candidates = (
        (Path(src).expanduser(),)  # $HOME is read each time
        if src.startswith(("/", "~"))
        else _template_candidates(src, role if isinstance(role, str) else None, ctx.base_dir)
    )
    for path in candidates:
        if path.is_file():
            return path
    raise PlaybookError(
        f"template: {src} not found (looked in {', '.join(str(c.parent) for c in candidates)})",
        where=where,
    )


@functools.lru_cache(maxsize=1024)
def _template_candidates(src: str, role: str | None, base_dir: str) -> tuple[Path, ...]:
    """Where a relative `src` is looked for, in order (the same paths for every container)."""
    base = Path(base_dir)
    bases = [*([Path(role)] if role is not None else []), base]
    return (*(b / "templates" / src for b in bases), base / src, base.parent / "templates" / src)


@dataclass(frozen=True)
class FileContent:
    """What is at `dest`, and for a regular file its sha256 (and its bytes, for a diff)."""

    path: PathState = field(default_factory=PathState)
    sha256: str = ""
    content: bytes | None = None


class ContentStat(FactReader[FileContent]):
    """`stat` of `dest` plus the sha256 of the file there; its text too when diffing."""

    State = FileContent

    def command(self, args: ContentArgs, want_diff: bool) -> str:
        # A backup is pushed from the bytes read here, so `backup` reads them up to 4 MiB.
        limit = TEXT_LIMIT if args.backup else DIFF_LIMIT
        inputs = {
            "DEST": args.dest,
            "WANT_DIFF": int(want_diff or args.backup),
            "DIFF_LIMIT": limit,
        }
        return stat_probe(args.dest) + "\n" + snippet("file_content", **inputs)

    def parse(self, reading: Fact) -> FileContent:
        fields = reading.fields()
        content = base64.b64decode(fields["content"]) if "content" in fields else None
        return FileContent(path_state(fields), fields.get("sha256", ""), content)

    def converged(self, args: ContentArgs, world: World) -> dict[str, str]:
        world.files[args.dest] = args.data  # a later task (server's env_file) reads it
        return {
            "type": "file",
            "mode": stat_text(wanted_mode(args.mode, "") or "0644"),
            "owner": args.owner or "root",
            "group": args.group or "root",
            "sha256": hashlib.sha256(args.data).hexdigest(),
        }


class Copy(Module, name="copy", args=CopyArgs, fact=ContentStat()):
    """Write `content` (or a local `src` file) to `dest` in the container."""

    def plan(self, args: ContentArgs, state: FileContent, check: bool) -> Plan:
        dest, data = args.dest, args.data
        if state.path.type == "directory":
            return Plan(False, failed=True, msg=f"{dest} is a directory")
        if not args.force and state.path.type != "absent":
            # Ansible: an existing dest is left as it is, attributes included.
            return Plan(False, msg=f"{dest} exists; force: false keeps it")
        # A symbolic mode applies to the file's mode, as read by the probe. A link is
        # replaced by a new file, as Ansible replaces it: that one starts from 0644.
        current = state.path.mode if state.path.type == "file" else ""
        wanted = wanted_mode(args.mode, current)
        if state.sha256 != hashlib.sha256(data).hexdigest():
            mode = wanted or current or "0644"
            pushes = [Push(dest, data, mode, args.push_owner, args.validate or "")]
            result = _written(args, state, mode) | {"md5sum": hashlib.md5(data).hexdigest()}  # noqa: S324
            if args.backup and state.path.type == "file":
                if state.content is None:
                    return Plan(False, failed=True, msg=f"{dest}: too large to back up")
                result["backup_file"] = backup_name(dest)
                old_mode = state.path.mode or "0644"
                # First, as ansible-core makes it: there even when validate refuses the file.
                pushes.insert(0, Push(result["backup_file"], state.content, old_mode, ""))
            return Plan(True, pushes=pushes, diff=_diff(dest, state, data), result=result)
        fixes, attr_diff = attribute_fixes(dest, state.path, wanted, args.owner, args.group)
        result = _written(args, state, wanted or current) | {"path": dest}
        if not fixes:
            return Plan(False, result=result)
        diff = {"path": dest, "before": str(attr_diff["before"]), "after": str(attr_diff["after"])}
        return Plan(True, script="set -e\n" + "\n".join(fixes) + "\n", diff=diff, result=result)


def _written(args: ContentArgs, state: FileContent, mode: str) -> dict[str, Any]:
    """What ansible-core registers about the file copy or template leaves: its sha1
    `checksum`, `size`, `mode`, `owner` and `group` where known here (the task's, or
    what the probe read), never made up."""
    data = args.data
    out = {"dest": args.dest, "state": "file", "checksum": hashlib.sha1(data).hexdigest()}  # noqa: S324
    out |= {"size": len(data), "mode": mode} if mode else {"size": len(data)}
    for key, given, read in (
        ("owner", args.owner, state.path.owner),
        ("group", args.group, state.path.group),
    ):
        if given or read:
            out[key] = given or read
    return out


class Template(Copy, name="template", args=TemplateArgs):
    """Render a jinja2 template from the playbook's templates/ folder into `dest`."""


def _diff(dest: str, state: FileContent, data: bytes) -> dict:
    if state.content is not None:
        before = state.content.decode("utf-8", errors="replace")
    elif state.path.type == "absent":
        before = ""
    else:
        before = f"(existing content, sha256 {(state.sha256 or '?')[:12]}...)\n"
    if len(data) <= DIFF_LIMIT:
        after = data.decode("utf-8", errors="replace")
    else:
        after = f"({len(data)} bytes)\n"
    return {"path": dest, "before": before, "after": after}
