"""`lineinfile`: one line present (added, or replacing what `regexp` matches) or absent.

The rules are Ansible's, line for line: the file is split after each `\\n`, a line
is compared without its `\\r\\n`, an added line gets a `\\n`, and a last line without
one gets it before a line is added after it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pctfleet.modules.args import Context, arg, flag, text
from pctfleet.modules.base import Plan
from pctfleet.modules.textfile import EditArgs, FileText, TextEdit, TextFile, write

NL = b"\n"


@dataclass(frozen=True)
class LineArgs(EditArgs):
    line: str | None = arg(None, aliases=("value",), convert=lambda v, w: str(v))
    regexp: str | None = arg(None, aliases=("regex",), convert=text)
    search_string: str | None = arg(None, convert=text)
    state: str = arg("present", choices={"present", "absent"})
    insertafter: str | None = arg(None, convert=text)
    insertbefore: str | None = arg(None, convert=text)
    create: bool = arg(False, convert=flag)
    backrefs: bool = arg(False, convert=flag)
    firstmatch: bool = arg(False, convert=flag)

    def check(self, ctx: Context, where: str) -> None:
        self.check_path(where)
        self.check_patterns(where, "regexp", "insertafter", "insertbefore")
        for pair in (("insertafter", "insertbefore"), ("regexp", "search_string")):
            if all(getattr(self, key) is not None for key in pair):
                raise self.fail(f"{pair[0]!r} and {pair[1]!r} are mutually exclusive", where)
        if self.state == "present":
            if self.backrefs and self.regexp is None and self.search_string is None:
                raise self.fail("regexp or search_string is required with backrefs=true", where)
            if self.line is None:
                raise self.fail("line is required with state=present", where)
        elif (self.regexp, self.search_string, self.line) == (None, None, None):
            raise self.fail(
                "one of line, search_string, or regexp is required with state=absent", where
            )


@dataclass
class Edit:
    lines: list[bytes]
    msg: str = ""
    changed: bool = False
    found: int = 0


def _matches(args: LineArgs, lines: list[bytes]) -> tuple[int, Any]:
    """The index of the line `regexp` (or `search_string`) finds, and the match."""
    index, match = -1, None
    for number, current in enumerate(lines):
        if args.regexp is not None:
            found: Any = re.search(args.regexp.encode(), current)
        elif args.search_string is not None:
            found = args.search_string.encode() in current
        else:
            break
        if found:
            index, match = number, found
            if args.firstmatch:
                break
    return index, match


def _anchor(args: LineArgs, lines: list[bytes], line: bytes) -> tuple[int, int]:
    """(index of the exact line, index where insertafter/insertbefore puts a new one)."""
    after, before = args.insertafter, args.insertbefore
    pattern = after if after not in (None, "BOF", "EOF") else None
    if pattern is None and before not in (None, "BOF"):
        pattern = before
    exact, insert = -1, -1
    for number, current in enumerate(lines):
        if current.rstrip(b"\r\n") == line:
            exact = number
        elif pattern is not None and re.search(pattern.encode(), current):
            insert = number + 1 if after else number
            if args.firstmatch:
                break
    return exact, insert


def present(args: LineArgs, lines: list[bytes]) -> Edit:
    line = str(args.line).encode()
    index, match = _matches(args, lines)
    insert = -1
    if match is None:
        index, insert = _anchor(args, lines, line)
    if index != -1:
        new = match.expand(line) if args.backrefs and hasattr(match, "expand") else line
        new = new if new.endswith(NL) else new + NL
        if lines[index] == new:
            return Edit(lines)
        lines[index] = new
        return Edit(lines, "line replaced", True)
    if args.backrefs:  # without a match there is nothing to expand the backrefs from
        return Edit(lines)
    if "BOF" in (args.insertbefore, args.insertafter):
        return Edit([line + NL, *lines], "line added", True)
    if args.insertafter == "EOF" or insert == -1:
        if lines and lines[-1][-1:] not in (b"\n", b"\r"):
            lines.append(NL)
        return Edit([*lines, line + NL], "line added", True)
    if args.insertafter and insert == len(lines):
        if lines[insert - 1].rstrip(b"\r\n") == line:
            return Edit(lines)
        return Edit([*lines, line + NL], "line added", True)
    if args.insertafter and lines[insert].rstrip(b"\n\r") == line:
        return Edit(lines)
    lines.insert(insert, line + NL)
    return Edit(lines, "line added", True)


def absent(args: LineArgs, lines: list[bytes]) -> Edit:
    def matches(current: bytes) -> bool:
        if args.regexp is not None:
            return re.search(args.regexp.encode(), current) is not None
        if args.search_string is not None:
            return args.search_string.encode() in current
        return current.rstrip(b"\r\n") == str(args.line).encode()

    kept = [current for current in lines if not matches(current)]
    found = len(lines) - len(kept)
    return Edit(kept, f"{found} line(s) removed" if found else "", found > 0, found)


def edited(args: LineArgs, content: bytes) -> Edit:
    # Not splitlines(): that also splits at \r; Ansible's readlines() splits at \n only.
    lines = [part + NL for part in content.split(NL)]
    lines[-1] = lines[-1][:-1]
    if not lines[-1]:
        lines.pop()
    return present(args, lines) if args.state == "present" else absent(args, lines)


class LineText(FileText):
    def edit(self, args: LineArgs, content: bytes) -> bytes:
        return b"".join(edited(args, content).lines)


class LineInFile(TextEdit, name="lineinfile", args=LineArgs, fact=LineText()):
    """Ensure a line is in a file (or is not), Ansible's `lineinfile`."""

    registers_output = False

    def missing(self, args: LineArgs) -> Plan | None:
        if args.state == "absent":
            return Plan(False, msg="file not present", result={"found": 0})
        if args.create:
            return None
        return Plan(False, failed=True, msg=f"Destination {args.path} does not exist !")

    def edit(self, args: LineArgs, state: TextFile) -> Plan:
        edit = edited(args, state.content or b"")
        plan = write(args, state, b"".join(edit.lines) if edit.changed else None, edit.msg)
        if args.state == "absent":
            plan.result["found"] = edit.found
        return plan
