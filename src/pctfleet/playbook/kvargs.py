"""A task's arguments written as one line, `copy: src=a dest="b c" mode=0644`, read as
ansible-core reads them (ansible/parsing/splitter.py, 2.19): split on spaces except
inside quotes and `{{ }}`, `{% %}`, `{# #}` blocks; `\\t`-style escapes decoded in
`key=value` words; quotes around a value removed. For command and shell, the words
that are not one of their options are the command, exactly as written."""

from __future__ import annotations

import codecs
import re

# The options command and shell take among their free-form words.
COMMAND_OPTIONS = frozenset(
    {"creates", "removes", "chdir", "executable", "warn", "stdin", "stdin_add_newline",
     "strip_empty_ends"}
)  # fmt: skip
_HEX = "[0-9A-Fa-f]"
_ESCAPES = re.compile(
    rf"(\\U{_HEX}{{8}}|\\u{_HEX}{{4}}|\\x{_HEX}{{2}}|\\N\{{[^}}]+\}}|\\[\\'\"abfnrtv])"
)


class SplitError(ValueError):
    """Unbalanced quotes or jinja blocks."""


def _decode_escapes(text: str) -> str:
    return _ESCAPES.sub(lambda m: codecs.decode(m.group(0), "unicode-escape"), text)


def unquote(text: str) -> str:
    quoted = len(text) > 1 and text[0] == text[-1] and text[0] in "\"'" and text[-2] != "\\"
    return text[1:-1] if quoted else text


def _quote_state(token: str, quote: str | None) -> str | None:
    previous = None
    for index, char in enumerate(token):
        if index > 0:
            previous = token[index - 1]
        if char in "\"'" and previous != "\\":
            quote = (None if char == quote else quote) if quote else char
    return quote


def _depth(token: str, depth: int, opening: str, closing: str) -> int:
    change = token.count(opening) - token.count(closing)
    return max(0, depth + change) if change else depth


class _Splitter:
    """split_args' state: the words so far, the open quote and block depths."""

    def __init__(self) -> None:
        self.words: list[str] = []
        self.quote: str | None = None
        self.depths = [0, 0, 0]  # {{ }}, {% %}, {# #}

    def in_block(self) -> bool:
        return any(self.depths)

    def token(self, index: int, token: str) -> None:
        was_quoted = self.quote is not None
        self.quote = _quote_state(token, self.quote)
        quoted = self.quote is not None
        appended = False
        if quoted and not was_quoted and not self.in_block():
            self.words.append(token)
            appended = True
        elif self.in_block() or quoted or was_quoted:
            spacer = "" if index == 0 and was_quoted else (" " if index > 0 else "")
            self.words[-1] += spacer + token
            appended = True
        for n, (opening, closing) in enumerate((("{{", "}}"), ("{%", "%}"), ("{#", "#}"))):
            before = self.depths[n]
            self.depths[n] = _depth(token, before, opening, closing)
            if self.depths[n] != before and not appended:
                self.words.append(token)
                appended = True
        if not self.in_block() and not quoted and not appended and token != "":
            self.words.append(token)


def split_args(text: str) -> list[str]:
    """The words of `text`, spaces and newlines inside quotes and blocks kept."""
    if not text:
        return []
    state = _Splitter()
    lines = text.split("\n")
    for line_index, line in enumerate(lines):
        continued = False
        for index, token in enumerate(line.split(" ")):
            if not token and index != 0:
                state.words[-1:] = [(state.words[-1] if state.words else "") + " "]
                continue
            if token == "\\" and state.quote is None:
                continued = True
                continue
            state.token(index, token)
        if len(lines) > 1 and line_index != len(lines) - 1 and not continued:
            state.words[-1:] = [(state.words[-1] if state.words else "") + "\n"]
    if state.in_block() or state.quote is not None:
        raise SplitError("unbalanced jinja2 block or quotes")
    return state.words


def join_args(words: list[str]) -> str:
    joined = ""
    for word in words:
        joined += word if not joined or joined.endswith("\n") else " " + word
    return joined


def parse_kv(text: str, raw_options: frozenset[str] | None = None) -> dict[str, str]:
    """`key=value` words as a mapping. With `raw_options` (command, shell), words that
    are not one of those options make the `_raw_params` string, as written; without,
    a word with no `=` is in `_raw_params` too, for the caller to refuse."""
    options: dict[str, str] = {}
    raw: list[str] = []
    for word in split_args(text):
        decoded = _decode_escapes(word)
        position = _unescaped_equals(decoded)
        if position is None:
            raw.append(decoded.replace("\\=", "=") if "=" in decoded else word)
            continue
        key, value = decoded[:position], decoded[position + 1 :]
        if raw_options is not None and key not in raw_options:
            raw.append(word)
        else:
            options[key.strip()] = unquote(value.strip())
    if raw:
        options["_raw_params"] = join_args(raw)
    return options


def _unescaped_equals(word: str) -> int | None:
    """Where the first `=` not after a backslash is, past the word's first character."""
    position = 0
    while True:
        position = word.find("=", position + 1)
        if position < 0:
            return None
        if word[position - 1] != "\\":
            return position
