"""What `lineinfile`, `blockinfile` and `replace` share: the file read in the probe, and the
write of the edited bytes through copy's atomic, verified push.

The new content is computed here, in Python, from the bytes the probe read (so Ansible's
Python regular expressions mean the same thing), and pushed to the file's real path
(links followed, as Ansible does) with its mode and owner kept.
"""

from __future__ import annotations

import base64
import itertools
import os
import re
import time
from dataclasses import dataclass
from typing import Any

from pctfleet.modules.args import Args, arg, flag, text
from pctfleet.modules.base import Fact, FactReader, Module, Plan, Push, World
from pctfleet.modules.file import PathState, attribute_fixes
from pctfleet.modules.modes import Mode, file_mode, stat_text, wanted_mode
from pctfleet.modules.validate import validate_code
from pctfleet.sh import snippet

# A larger file is refused: its bytes travel in the shared probe, on every run.
TEXT_LIMIT = 4 * 1024 * 1024
ATTRS_CHANGED = "ownership, perms or SE linux context changed"


@dataclass(frozen=True)
class EditArgs(Args):
    """The file an edit module changes, and the file attributes Ansible's edit modules take."""

    path: str = arg(required=True, aliases=("dest", "destfile", "name"), convert=text)
    mode: Mode | None = arg(None, convert=file_mode)
    owner: str | None = arg(None, convert=text)
    group: str | None = arg(None, convert=text)
    validate: str | None = arg(None, convert=validate_code)
    backup: bool = arg(False, convert=flag)

    def check_path(self, where: str) -> None:
        if not self.path.startswith("/"):
            raise self.fail(f"'path' must be an absolute path, got {self.path!r}", where)

    def check_patterns(self, where: str, *keys: str) -> None:
        """Each of `keys` given (other than Ansible's BOF/EOF) must be a regular expression."""
        for key in keys:
            value = getattr(self, key)
            if value in (None, "BOF", "EOF"):
                continue
            try:
                re.compile(value)
            except re.error as err:
                message = f"{key!r} is not a regular expression ({err}): {value!r}"
                raise self.fail(message, where) from None


@dataclass(frozen=True)
class TextFile:
    """The file as the probe found it; `content` is None where it is absent or too large."""

    type: str = "absent"  # absent | file | directory | other
    real: str = ""
    mode: str = ""
    owner: str = ""
    group: str = ""
    size: int = 0
    content: bytes | None = None

    @property
    def attributes(self) -> PathState:
        return PathState("file", "", self.mode, self.owner, self.group)


class FileText(FactReader[TextFile]):
    """The file's bytes, read once in the shared probe.

    The snippet depends on the path only, so tasks editing one file share one reading.
    """

    State = TextFile

    def command(self, args: Any, want_diff: bool) -> str:
        return snippet("file_text", TEXT_PATH=self.path_of(args), TEXT_LIMIT=TEXT_LIMIT)

    def path_of(self, args: Any) -> str:
        return args.path

    def parse(self, reading: Fact) -> TextFile:
        fields = reading.fields()
        content = base64.b64decode(fields["content"]) if "content" in fields else None
        mode = fields.get("mode", "")
        size = fields.get("size", "0")
        return TextFile(
            type=fields.get("type", "absent"),
            real=fields.get("real", ""),
            mode=mode.zfill(4) if mode else "",
            owner=fields.get("owner", ""),
            group=fields.get("group", ""),
            size=int(size) if size.isdigit() else 0,
            content=content,
        )

    def edit(self, args: Any, content: bytes) -> bytes:
        """The file's bytes after the task (converged: the task applied to what was there)."""
        return content

    def converged(self, args: Any, world: World) -> dict[str, str]:
        path = self.path_of(args)
        data = world.files[path] = self.edit(args, world.files.get(path, b""))
        mode = stat_text(wanted_mode(getattr(args, "mode", None), "") or "0644")
        owner = getattr(args, "owner", None) or "root"
        group = getattr(args, "group", None) or "root"
        return {"type": "file", "mode": mode, "owner": owner, "group": group} | {
            "real": path,
            "size": str(len(data)),
            "content": base64.b64encode(data).decode(),
        }


def unreadable(state: TextFile, path: str) -> Plan | None:
    """Ansible's failure for a path that is no file to edit, or None when it is one."""
    if state.type == "directory":
        return Plan(False, failed=True, msg=f"Path {path} is a directory !")
    if state.type == "other":
        return Plan(False, failed=True, msg=f"Path {path} is not a regular file")
    if state.type == "file" and state.content is None:
        return Plan(
            False,
            failed=True,
            msg=f"{path} is {state.size} bytes: larger than the {TEXT_LIMIT} bytes an edit reads",
        )
    return None


class TextEdit(Module):
    """What lineinfile, blockinfile and replace share: a path that is no file to edit
    fails; a missing file is `missing`'s to judge (None: create it); the file is `edit`'s."""

    def plan(self, args: Any, state: TextFile, check: bool) -> Plan:
        failed = unreadable(state, args.path)
        if failed:
            return failed
        if state.type == "absent":
            verdict = self.missing(args)
            if verdict is not None:
                return verdict
        return self.edit(args, state)

    def missing(self, args: Any) -> Plan | None:
        return Plan(False, failed=True, msg=f"Path {args.path} does not exist !")

    def edit(self, args: Any, state: TextFile) -> Plan:
        raise NotImplementedError


def backup_name(path: str) -> str:
    """Ansible's backup file name, PATH.NUMBER.YYYY-MM-DD@HH:MM:SS~. ansible-core's
    NUMBER is its module's process id, new for every task; here it is this process's
    id and a count, so two backups made in one second never share a name (the second
    would overwrite the first, the only copy of the original)."""
    number = os.getpid() * 1000 + next(_BACKUPS) % 1000
    return f"{path}.{number}.{time.strftime('%Y-%m-%d@%H:%M:%S')}~"


_BACKUPS = itertools.count()


def write(
    args: EditArgs, state: TextFile, new: bytes | None, msg: str, result_key: str = "backup"
) -> Plan:
    """The plan for an edit: push `new` (None: content unchanged), then fix attributes.

    The registered result carries `result_key` (Ansible's name for the backup path).
    """
    target = state.real or args.path
    before = state.content if state.content is not None else b""
    exists = state.type == "file"
    changed = new is not None and (not exists or new != before)
    attrs = state.attributes if exists else PathState("file")
    # A symbolic mode applies to the file's mode, or to a new file's (the probe read it).
    wanted = wanted_mode(args.mode, state.mode if exists else "")
    pushes, script, result = [], None, {result_key: ""} if result_key == "backup" else {}
    if changed:
        if args.backup and exists:  # first, as ansible-core makes it: even if validate refuses
            result[result_key] = backup_name(target)
            pushes.append(Push(result[result_key], before, state.mode, _owner(state, None)))
        mode = wanted or state.mode or "0644"
        check = args.validate or ""
        pushes.append(Push(target, new, mode, _owner(state, args), check, validated_as="edit"))
        attrs = PathState("file", "", mode, args.owner or state.owner, args.group or state.group)
    symbolic = None if changed else args.mode  # a new file's owner comes with its push
    fixes, _ = attribute_fixes(target, attrs, wanted, args.owner, args.group, symbolic)
    if fixes:
        script = "set -e\n" + "\n".join(fixes) + "\n"
    if fixes or (changed and _attributes_moved(args, state, wanted)):
        msg = f"{msg} and {ATTRS_CHANGED}" if changed else ATTRS_CHANGED
    if not changed and not fixes:
        return Plan(False, msg=msg, result=result)
    diff = {
        "path": args.path,
        "before": _shown(before),
        "after": _shown(before if new is None else new),
    }
    return Plan(True, msg=msg, pushes=pushes, script=script, diff=diff, result=result)


def _attributes_moved(args: EditArgs, state: TextFile, wanted: str | None) -> bool:
    """Whether the pushed file's mode, owner or group differ from what was there (a new
    file: from what the umask and root give it), which ansible-core's message tells."""
    there = state.type == "file"
    mode, owner, group = (
        (state.mode, state.owner, state.group) if there else ("0644", "root", "root")
    )
    return bool(
        (wanted and wanted != mode)
        or (args.owner and str(args.owner) != owner)
        or (args.group and str(args.group) != group)
    )


def _owner(state: TextFile, args: EditArgs | None) -> str:
    """`owner:group` for the push: what the task asks, else what the file has."""
    owner = (args.owner if args else None) or state.owner
    group = (args.group if args else None) or state.group
    return f"{owner}:{group}" if group else owner


def _shown(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")
