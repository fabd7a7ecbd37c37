"""Secret and data-only strings and the template test: what reading YAML needs,
without Jinja.

Kept apart from templating.py so that loading an inventory (which starts the
nodes' logins) does not wait for jinja2 to import.
"""

from __future__ import annotations

REDACTED = "********"


class Secret(str):
    """A string whose value must never be shown: rendering uses the real value,
    `redact()` replaces it with `********`, and its repr() hides it."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Secret({REDACTED!r})"


class Unsafe(str):
    """Text that is data, never a template: what a container printed (a registered
    result), a loop's items, a YAML value tagged `!unsafe`. Rendering passes it
    through untouched, so `{{ ... }}` in it is never evaluated on the controller."""

    __slots__ = ()


def is_template(text: str) -> bool:
    return "{{" in text or "{%" in text or "{#" in text
