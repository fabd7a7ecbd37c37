"""`copy` and `template`: a file's content, written atomically and verified."""

from __future__ import annotations

import base64
import dataclasses
import functools
import hashlib
import json
import os
import posixpath
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Self

from pctfleet.errors import PlaybookError
from pctfleet.modules import copyremote, copytree
from pctfleet.modules.args import Args, Context, arg, flag, text
from pctfleet.modules.base import Fact, FactReader, Module, Plan, Push, World
from pctfleet.modules.copytree import Tree, file_result
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
        return super().parse(raw, ctx, where).prepared(ctx, where)

    def prepared(self, ctx: Context, where: str) -> Self:
        """The arguments with what `dest` must hold read (a `dest` ending in / gets the
        name of `src`)."""
        dest = self.dest
        if dest.endswith("/") and self.src:
            dest += Path(self.src).name
        return dataclasses.replace(self, dest=dest, data=self.read(ctx, where))

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
            stamp = cls.stamp(path, raw, src)
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

    @classmethod
    def stamp(cls, path: Path, raw: Mapping[str, Any], src: str) -> tuple:
        """What decides the bytes read from `path` (its stat)."""
        return _stamp(path)

    def check(self, ctx: Context, where: str) -> None:
        if not self.dest.startswith("/"):
            raise self.fail(f"'dest' must be an absolute path, got {self.dest!r}", where)

    def read(self, ctx: Context, where: str) -> bytes:
        raise NotImplementedError

    def parents(self) -> tuple[Mode | None, str | None, str | None] | None:
        """The attributes of the folders the task makes above `dest` (None: as the push
        makes them)."""
        return None

    @property
    def push_owner(self) -> str:
        owner, group = self.owner or "", self.group or ""
        return f"{owner}:{group}" if group else owner


PRESERVE = Mode("preserve")  # `mode: preserve`: the source file's own mode


def _copy_mode(value: Any, where: str) -> Mode:
    """copy's `mode`: as `file_mode` reads it, or `preserve`."""
    return PRESERVE if value == "preserve" else file_mode(value, where)


@dataclass(frozen=True)
class CopyArgs(ContentArgs):
    content: str | None = arg(None, convert=_any_text)
    mode: Mode | None = arg(None, convert=_copy_mode)
    directory_mode: Mode | None = arg(None, convert=file_mode)
    remote_src: bool = arg(False, convert=flag)
    local_follow: bool = arg(True, convert=flag)
    # Not an argument: a folder `src` as walked on the controller (copytree.py).
    tree: Tree | None = dataclasses.field(default=None, repr=False)

    @classmethod
    def context_key(
        cls, raw: Mapping[str, Any], variables: Mapping[str, Any], base_dir: str
    ) -> tuple[frozenset[str], tuple] | None:
        remote = raw.get("remote_src", False)
        if isinstance(remote, str):  # templated, or a word: parsed anew each time
            return None
        if remote:  # nothing on the controller is read
            return frozenset(), ()
        return super().context_key(raw, variables, base_dir)

    @classmethod
    def stamp(cls, path: Path, raw: Mapping[str, Any], src: str) -> tuple:
        if not path.is_dir():
            return _stamp(path)
        follow = raw.get("local_follow", True)
        if not isinstance(follow, bool):
            raise ValueError("local_follow is templated: parsed anew")
        return copytree.stamp(path, src.endswith("/"), follow)

    def check(self, ctx: Context, where: str) -> None:
        super().check(ctx, where)
        if self.remote_src:
            if self.content is not None or not self.src:
                raise self.fail("remote_src needs 'src', a path in the container", where)
            if not self.src.startswith("/"):
                raise self.fail(
                    f"with remote_src 'src' must be an absolute path, got {self.src!r}", where
                )
            if self.validate:
                raise self.fail("validate with remote_src is not supported", where)
        if self.mode == PRESERVE and self.content is not None:
            raise self.fail("mode: preserve needs 'src' (content has no mode to keep)", where)

    @property
    def preserve(self) -> bool:
        return self.mode == PRESERVE

    def prepared(self, ctx: Context, where: str) -> Self:
        if self.remote_src:  # where it goes is decided in the container (copyremote.py)
            return self
        if self.content is None and self.src:
            path = self.locate(self.src, ctx, where)
            if path.is_dir():
                return self._tree(path, where)
        args = super().prepared(ctx, where)
        if self.preserve:
            path = self.locate(self.src, ctx, where)
            mode = f"{stat.S_IMODE(path.stat().st_mode):04o}"
            args = dataclasses.replace(args, mode=file_mode(mode, where))
        return args

    def _tree(self, path: Path, where: str) -> Self:
        if self.backup:
            raise self.fail("backup with a folder as 'src' is not supported", where)
        tree = copytree.walk(path, self.src.endswith("/"), self.local_follow, where)
        return dataclasses.replace(self, tree=tree)

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

    def parents(self) -> tuple[Mode | None, str | None, str | None] | None:
        """The mode, owner and group of the folders the copy makes above its file (None:
        none asked, they are made as the push makes them)."""
        if self.directory_mode is None and not self.owner and not self.group:
            return None
        return self.directory_mode, self.owner, self.group


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
    """What is at `dest`, and for a regular file its sha256 (and its bytes, for a diff);
    `above`: the folders above it, where the copy makes missing ones with attributes."""

    path: PathState = field(default_factory=PathState)
    sha256: str = ""
    content: bytes | None = None
    above: copytree.TreeReading = field(default_factory=copytree.TreeReading)


def _kind(args: Any) -> str:
    """Which copy this is: file (content or a controller file), tree (a controller
    folder), remote (`remote_src`)."""
    if getattr(args, "remote_src", False):
        return "remote"
    return "tree" if getattr(args, "tree", None) is not None else "file"


class ContentStat(FactReader[FileContent]):
    """`stat` of `dest` plus the sha256 of the file there; its text too when diffing.
    A folder copied reads every path it writes (copytree), `remote_src` both sides
    (copyremote)."""

    State = FileContent

    def command(self, args: ContentArgs, want_diff: bool) -> str:
        kind = _kind(args)
        if kind == "tree":
            return copytree.probe(args.tree, args.dest)
        if kind == "remote":
            return copyremote.probe(args)
        # A backup is pushed from the bytes read here, so `backup` reads them up to 4 MiB.
        limit = TEXT_LIMIT if args.backup else DIFF_LIMIT
        inputs = {
            "DEST": args.dest,
            "WANT_DIFF": int(want_diff or args.backup),
            "DIFF_LIMIT": limit,
        }
        read = stat_probe(args.dest) + "\n" + snippet("file_content", **inputs)
        if args.parents() is not None:
            read += "\n" + snippet("copy_tree_fact", argv=_above_file(args.dest), KINDS_ONLY=1)
        return read

    def parse(self, reading: Fact) -> FileContent:
        fields = reading.fields()
        content = base64.b64decode(fields["content"]) if "content" in fields else None
        above = copytree.parse(reading) if "kinds" in fields else copytree.TreeReading()
        return FileContent(path_state(fields), fields.get("sha256", ""), content, above)

    def converged(self, args: ContentArgs, world: World) -> dict[str, str]:
        kind = _kind(args)
        if kind == "tree":
            return copytree.converged(args, world)
        if kind == "remote":
            return copyremote.converged(args, world)
        world.files[args.dest] = args.data  # a later task (server's env_file) reads it
        above = {"kinds": "d" * len(_above_file(args.dest))} if args.parents() else {}
        return above | {
            "type": "file",
            "mode": stat_text(wanted_mode(args.mode, "") or "0644"),
            "owner": args.owner or "root",
            "group": args.group or "root",
            "sha256": hashlib.sha256(args.data).hexdigest(),
        }


def _above_file(dest: str) -> list[str]:
    """The folders above a file, top first: `/a/b/f` -> [/a, /a/b]."""
    return copytree.above(posixpath.dirname(dest))


class Copy(Module, name="copy", args=CopyArgs, fact=ContentStat()):
    """Write `content` (or a local `src` file or folder) to `dest` in the container, or
    copy a file or folder already there (`remote_src`)."""

    registers_output = registers_msg = False

    def decide(self, args: Any, reading: Fact | None, check: bool) -> Plan:
        kind = _kind(args)
        if kind == "tree":
            state = copytree.parse(reading) if reading is not None else copytree.TreeReading()
            return copytree.plan(args, state, check)
        if kind == "remote":
            return copyremote.plan(args, copyremote.parse(reading), check)
        return super().decide(args, reading, check)

    def plan(self, args: ContentArgs, state: FileContent, check: bool) -> Plan:
        plan = self._plan(args, state)
        parents = args.parents()
        if plan.pushes and parents is not None:  # made by the push, then given attributes
            lines = made_folders(_above_file(args.dest), state.above, *parents)
            if lines:
                plan.script = (plan.script or "set -e\n") + "".join(f"{x}\n" for x in lines)
        return plan

    def _plan(self, args: ContentArgs, state: FileContent) -> Plan:
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
        fixes, attr_diff = attribute_fixes(
            dest, state.path, wanted, args.owner, args.group, args.mode
        )
        result = _written(args, state, wanted or current) | {"path": dest}
        if not fixes:
            return Plan(False, result=result)
        diff = {"path": dest, "before": str(attr_diff["before"]), "after": str(attr_diff["after"])}
        return Plan(True, script="set -e\n" + "\n".join(fixes) + "\n", diff=diff, result=result)


def made_folders(
    paths: list[str],
    reading: copytree.TreeReading,
    mode: Mode | None,
    owner: str | None,
    group: str | None,
) -> list[str]:
    """Shell lines giving the folders among `paths` the probe did not find (made by the
    push's `mkdir -p`, or here) `directory_mode`, `owner` and `group`, as ansible-core's
    copy gives the folders it makes above a file."""
    if len(reading.seen) != len(paths):  # not read: never touch a folder that may be there
        return []
    lines = []
    for index, path in enumerate(paths):
        if reading.at(index).kind == "a":
            lines += copytree.new_folder(path, mode, owner, group)
    return lines


def _written(args: ContentArgs, state: FileContent, mode: str) -> dict[str, Any]:
    return file_result(args, args.dest, args.data, mode, state.path.owner, state.path.group)


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
