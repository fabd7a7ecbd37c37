"""Text for the terminal built from strings we do not control.

Task names, container and node names, stderr, diffs, evidence and messages come
from playbooks, inventories and containers. They are printed as written, never
read as rich markup: `[/bold]` in a command's stderr shows as those characters
instead of raising MarkupError, and `[red]x[/red]` in a task name stays plain.
Terminal control codes (ESC, BEL, ...) are shown as visible escapes such as
`\\x1b`, so a container's output cannot recolour, retitle or clear the
operator's terminal. Styling is ours alone: a (value, style) pair.
"""

from __future__ import annotations

import re

from rich.text import Text

# C0 and C1 controls and DEL; newline and tab are layout, and rich drops a bare CR itself.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")

Part = Text | tuple[object, str] | object


def visible(value: object) -> str:
    """The string with every terminal control code written out as `\\xNN`."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", str(value))


def line(*parts: Part) -> Text:
    """One Text from pieces: a plain value is shown as written, `(value, style)` is styled."""
    out = Text()
    for part in parts:
        if isinstance(part, Text):
            out.append_text(part)
        elif isinstance(part, tuple):
            value, style = part
            out.append(visible(value), style=style or None)
        else:
            out.append(visible(part))
    return out
