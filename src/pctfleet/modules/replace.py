"""`replace`: every match of a regular expression replaced, optionally only between
`after` and `before` (Ansible's `replace`, Python's `re.subn` in MULTILINE mode)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from pctfleet.modules.args import Context, arg, text
from pctfleet.modules.base import Plan
from pctfleet.modules.textfile import EditArgs, FileText, TextEdit, TextFile, write


@dataclass(frozen=True)
class ReplaceArgs(EditArgs):
    regexp: str = arg(required=True, convert=text)
    replace: str = arg("", convert=lambda v, w: str(v))
    after: str | None = arg(None, convert=text)
    before: str | None = arg(None, convert=text)
    encoding: str = arg("utf-8", convert=text)

    def check(self, ctx: Context, where: str) -> None:
        self.check_path(where)
        self.check_patterns(where, "regexp", "after", "before")
        try:
            "".encode(self.encoding)
        except LookupError:
            raise self.fail(f"unknown encoding {self.encoding!r}", where) from None

    def section(self) -> str:
        """Ansible's pattern for the part of the file `after`/`before` select ('' = all)."""
        if self.after and self.before:
            return f"{self.after}(?P<subsection>.*?){self.before}"
        if self.after:
            return f"{self.after}(?P<subsection>.*)"
        if self.before:
            return f"(?P<subsection>.*){self.before}"
        return ""


def edited(args: ReplaceArgs, data: bytes) -> tuple[bytes | None, str]:
    """The new bytes (None: nothing to replace) and Ansible's message."""
    contents = data.decode(args.encoding, errors="surrogateescape")
    pattern, start, end = args.section(), 0, len(contents)
    if pattern:
        match = re.search(re.compile(pattern, re.DOTALL), contents)
        if not match:
            return None, f"Pattern for before/after params did not match the given file: {pattern}"
        start, end = match.start("subsection"), match.end("subsection")
    section = contents[start:end]
    new, count = re.subn(re.compile(args.regexp, re.MULTILINE), args.replace, section)
    if count == 0 or new == section:
        return None, ""
    whole = contents[:start] + new + contents[end:]
    return whole.encode(args.encoding, errors="surrogateescape"), f"{count} replacements made"


class ReplaceText(FileText):
    def edit(self, args: ReplaceArgs, content: bytes) -> bytes:
        return edited(args, content)[0] or content


class Replace(TextEdit, name="replace", args=ReplaceArgs, fact=ReplaceText()):
    """Replace every match of `regexp` in a file, Ansible's `replace`."""

    def edit(self, args: ReplaceArgs, state: TextFile) -> Plan:
        try:
            new, msg = edited(args, state.content or b"")
        except re.error as err:  # a bad group reference in `replace`
            return Plan(False, failed=True, msg=f"replace: {err}")
        plan = write(args, state, new, msg, result_key="backup_file")
        plan.result["rc"] = 0
        return plan
