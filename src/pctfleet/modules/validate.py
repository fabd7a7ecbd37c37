"""`validate` on copy, template, lineinfile, blockinfile and replace: a command run on
the new file before it replaces the old one (`visudo -cf %s`, `sshd -t -f %s`); when it
fails, the file is left as it was and the task fails, as in ansible-core."""

from __future__ import annotations

import shlex
from typing import Any

from pctfleet.errors import PlaybookError
from pctfleet.modules.base import q


def validate_code(value: Any, where: str) -> str:
    """`validate` as sh code for push.sh: its words split as ansible-core splits them
    (no shell), each quoted, `%s` standing for the new file (`"$tmp"` there)."""
    text = str(value)
    if "%s" not in text:
        raise PlaybookError(f"validate must contain %s: {text}", where=where)
    try:
        words = shlex.split(text)
    except ValueError as err:
        message = f"validate: cannot split {text!r} into words ({err})"
        raise PlaybookError(message, where=where) from None
    return " ".join(_word(word) for word in words)


def _word(word: str) -> str:
    pieces = word.split("%s")
    return '"$tmp"'.join(q(piece) if piece else "" for piece in pieces) or "''"


def failed_validation(kind: str, rc: int, out: str, err: str) -> dict[str, Any]:
    """What the task registers when `validate` refused the new file, in ansible-core's
    words: copy and template's, or the edit modules' (lineinfile, blockinfile, replace)."""
    if kind == "edit":
        return {"changed": False, "failed": True, "msg": f"failed to validate: rc:{rc} error:{err}"}
    return {
        "changed": False,
        "failed": True,
        "msg": "failed to validate",
        "exit_status": rc,
        "stdout": out,
        "stderr": err,
        "stdout_lines": out.splitlines(),
        "stderr_lines": err.splitlines(),
    }
