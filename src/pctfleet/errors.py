"""Exception types shared by the whole package.

Every error caused by what the user wrote (inventory, playbook, template, CLI
value) is an `InputError`. Its text is a single line, prefixed with
`file:line` where the location is known, so the CLI can print it as-is and
exit with code 4 instead of showing a traceback.
"""

from __future__ import annotations

import difflib


class PctfleetError(Exception):
    """Base class of every error pctfleet raises on purpose."""


class InputError(PctfleetError):
    """Bad user input: the message is one line, `where: what is wrong`.

    >>> str(InputError("'port' must be an integer", where="inv.yml:3"))
    "inv.yml:3: 'port' must be an integer"
    """

    def __init__(self, message: str, *, where: str | None = None) -> None:
        text = f"{where}: {message}" if where else message
        # Messages quote user data, which may hold line breaks; a caller
        # relies on one line, so fold them here once for every subclass.
        self.message = " ".join(text.splitlines())
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message


class InventoryError(InputError):
    """An inventory file, a --limit pattern, a --ct value or a -e value is wrong."""


class EmptySelection(InventoryError):
    """--limit leaves nothing of an inventory that has containers: a command line that
    targets nothing, refused as ansible-playbook refuses it (exit 5, bad options)."""

    exit_code = 5


class PlaybookError(InputError):
    """A playbook or task file is wrong."""


class TemplateError(InputError):
    """A jinja2 expression or template failed to parse or to render."""


class UndefinedVariable(TemplateError):
    """A template read a variable (or an attribute) that is not defined; `detail` is
    Jinja's own words for it (`'nope' is undefined`)."""

    def __init__(self, message: str, *, where: str | None = None, detail: str = "") -> None:
        super().__init__(message, where=where)
        self.detail = detail or message


def did_you_mean(word: object, choices: object) -> str:
    """` (did you mean 'x'?)` when `word` is close to one of `choices`, else ``."""
    if not isinstance(word, str):
        return ""
    close = difflib.get_close_matches(word, [str(c) for c in choices], n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def brief(value: object, limit: int = 60) -> str:
    """`repr(value)` cut to `limit` characters, for quoting user data in a message."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
