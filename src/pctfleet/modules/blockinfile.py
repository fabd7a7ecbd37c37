"""`blockinfile`: a block of lines between two marker lines, inserted, updated or removed.

Ansible's rules: a marker line matches only whole (its `\\n` included), the block gets a
final `\\n`, and without both markers the block goes after the last line `insertafter`
matches (before the last one `insertbefore` matches), else at the end.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pctfleet.modules.args import Context, arg, flag, text
from pctfleet.modules.base import Plan
from pctfleet.modules.textfile import EditArgs, FileText, TextEdit, TextFile, write

NL = b"\n"


@dataclass(frozen=True)
class BlockArgs(EditArgs):
    block: str = arg("", aliases=("content",), convert=lambda v, w: str(v))
    marker: str = arg("# {mark} ANSIBLE MANAGED BLOCK", convert=text)
    marker_begin: str = arg("BEGIN", convert=text)
    marker_end: str = arg("END", convert=text)
    state: str = arg("present", choices={"present", "absent"})
    insertafter: str | None = arg(None, convert=text)
    insertbefore: str | None = arg(None, convert=text)
    create: bool = arg(False, convert=flag)
    append_newline: bool = arg(False, convert=flag)
    prepend_newline: bool = arg(False, convert=flag)

    def check(self, ctx: Context, where: str) -> None:
        self.check_path(where)
        self.check_patterns(where, "insertafter", "insertbefore")
        if self.insertafter is not None and self.insertbefore is not None:
            raise self.fail("'insertafter' and 'insertbefore' are mutually exclusive", where)

    def markers(self) -> tuple[bytes, bytes]:
        marker = self.marker.encode()
        return (
            marker.replace(b"{mark}", self.marker_begin.encode()) + NL,
            marker.replace(b"{mark}", self.marker_end.encode()) + NL,
        )


def _where(args: BlockArgs, original: bytes, lines: list[bytes]) -> int:
    """Where a block with no markers in the file goes (Ansible's search, last match wins)."""
    after, before = args.insertafter, args.insertbefore
    if after is None and before is None:
        after = "EOF"
    pattern = after if after not in (None, "EOF") else before if before != "BOF" else None
    if pattern is None:
        return 0 if before is not None else len(lines)
    compiled = re.compile(pattern.encode())
    if compiled.flags & re.MULTILINE:
        match = compiled.search(original)
        if not match:
            return len(lines)
        return original.count(NL, 0, match.end() if after else match.start())
    found = [number for number, line in enumerate(lines) if compiled.search(line)]
    if not found:
        return len(lines)
    return found[-1] + 1 if after is not None else found[-1]


def edited(args: BlockArgs, original: bytes) -> tuple[bytes, bool]:
    """The new content, and whether the block is there."""
    lines = original.splitlines(keepends=True)
    begin, end = args.markers()
    block = args.block.encode()
    blocklines: list[bytes] = []
    if args.state == "present" and block:
        block = block if block.endswith(NL) else block + NL
        blocklines = [begin, *block.splitlines(keepends=True), end]
    first = last = None
    for number, line in enumerate(lines):
        first = number if line == begin else first
        last = number if line == end else last
    if first is None or last is None:
        at = _where(args, original, lines)
    else:
        at = min(first, last)
        del lines[at : max(first, last) + 1]
    if at > 0 and not lines[at - 1].endswith(NL):
        lines[at - 1] += NL
    present = args.state == "present"
    if args.prepend_newline and present and at != 0 and lines[at - 1] != NL:
        lines[at:at] = [NL]
        at += 1
    lines[at:at] = blocklines
    after = at + len(blocklines)
    if args.append_newline and present and after < len(lines) and lines[after] != NL:
        lines[after:after] = [NL]
    return b"".join(lines), bool(blocklines)


class BlockText(FileText):
    def edit(self, args: BlockArgs, content: bytes) -> bytes:
        return edited(args, content)[0]


class BlockInFile(TextEdit, name="blockinfile", args=BlockArgs, fact=BlockText()):
    """Insert, update or remove a marked block of lines, Ansible's `blockinfile`."""

    registers_output = False

    def missing(self, args: BlockArgs) -> Plan | None:
        if args.state == "absent":
            return Plan(False, msg=f"File {args.path} not present")
        return None if args.create else super().missing(args)

    def edit(self, args: BlockArgs, state: TextFile) -> Plan:
        original = state.content if state.type == "file" else None
        result, inserted = edited(args, original or b"")
        if original == result:
            return write(args, state, None, "", result_key="backup_file")
        msg = "Block inserted" if inserted else "Block removed"
        msg = "File created" if original is None else msg
        return write(args, state, result, msg, result_key="backup_file")
