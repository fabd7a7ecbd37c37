"""One round trip that reads every fact a container's tasks need.

Each module contributes a snippet; they are joined into one sh script sent on
stdin, each snippet in its own subshell (so one failing snippet cannot stop
the rest) with stdin from /dev/null (so no snippet can eat the script).
The output is framed per snippet with a record-separator marker that carries
a random nonce made for this probe: a container cannot guess it, so no file
it prints can end a frame or start one.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping

from pctfleet.facts.kv import KV_FUNCTION
from pctfleet.modules.base import Fact

BEGIN = "\x1epctfleet-fact-begin "
END = "\x1epctfleet-fact-end "
_NONCE = re.compile(r"pctfleet-fact-begin %s %s\\n' (?P<nonce>[0-9a-f]{32}) ")


def build_script(snippets: Mapping[str, str], nonce: str | None = None) -> str:
    """One script for many snippets, keyed by the task they belong to."""
    nonce = nonce or secrets.token_hex(16)
    parts = ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:$PATH", KV_FUNCTION]
    for key, snippet in snippets.items():
        parts.append(
            f"printf '\\036pctfleet-fact-begin %s %s\\n' {nonce} '{key}'\n"
            f"(\n{snippet}\n) </dev/null 2>/dev/null\n"
            f"printf '\\036pctfleet-fact-end %s %s %s\\n' {nonce} '{key}' \"$?\""
        )
    return "\n".join(parts) + "\n"


def nonce_of(script: str) -> str:
    """The nonce `build_script` framed `script` with ('' when it has no snippet)."""
    match = _NONCE.search(script)
    return match.group("nonce") if match else ""


def parse_output(text: str, nonce: str) -> dict[str, Fact]:
    """Split the probe's stdout back into one Fact per key; only `nonce`'s markers count."""
    if not nonce:
        return {}
    begin, end = f"{BEGIN}{nonce} ", f"{END}{nonce} "
    facts: dict[str, Fact] = {}
    key, lines = None, []
    for line in text.split("\n"):
        if line.startswith(begin):
            key, lines = line[len(begin) :], []
        elif line.startswith(end) and key is not None:
            ended, _, status = line[len(end) :].rpartition(" ")
            if ended == key and status.lstrip("-").isdigit():
                facts[key] = Fact("\n".join(lines), int(status))
                key = None
            else:
                lines.append(line)
        elif key is not None:
            lines.append(line)
    return facts


def run_probe(target, snippets: Mapping[str, str]) -> dict[str, Fact]:  # noqa: ANN001
    """Build, run on `target` (anything with `run_script`) and parse one probe.

    A snippet several tasks share (three edits of one file) runs once; each gets its reading.
    """
    first: dict[str, str] = {}
    for key, snippet in snippets.items():
        first.setdefault(snippet, key)
    script = build_script({key: snippet for snippet, key in first.items()})
    facts = parse_output(target.run_script(script, read_only=True).text(), nonce_of(script))
    return {key: facts[first[s]] for key, s in snippets.items() if first[s] in facts}
