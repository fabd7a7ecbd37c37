"""One round trip that reads every fact a container's tasks need.

Each module contributes a snippet; they are joined into one sh script sent on
stdin, each snippet in its own subshell (so one failing snippet cannot stop
the rest) with stdin from /dev/null (so no snippet can eat the script).
The output is framed per snippet with a record-separator marker.
"""

from __future__ import annotations

from collections.abc import Mapping

from .modules.base import Fact

BEGIN = "\x1epctfleet-fact-begin "
END = "\x1epctfleet-fact-end "


def build_script(snippets: Mapping[str, str]) -> str:
    """One script for many snippets, keyed by the task they belong to."""
    parts = ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:$PATH"]
    for key, snippet in snippets.items():
        parts.append(
            f"printf '\\036pctfleet-fact-begin %s\\n' '{key}'\n"
            f"(\n{snippet}\n) </dev/null 2>/dev/null\n"
            f"printf '\\036pctfleet-fact-end %s %s\\n' '{key}' \"$?\""
        )
    return "\n".join(parts) + "\n"


def parse_output(text: str) -> dict[str, Fact]:
    """Split the probe's stdout back into one Fact per key."""
    facts: dict[str, Fact] = {}
    key, lines = None, []
    for line in text.split("\n"):
        if line.startswith(BEGIN):
            key, lines = line[len(BEGIN) :], []
        elif line.startswith(END) and key is not None:
            _, status = line[len(END) :].rsplit(" ", 1)
            facts[key] = Fact("\n".join(lines), int(status))
            key = None
        elif key is not None:
            lines.append(line)
    return facts
