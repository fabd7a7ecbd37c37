"""YAML loading that remembers where each mapping, key and list item came from.

The result is made of plain Python values, except that mappings are `YamlMap`
(a dict) and sequences are `YamlList` (a list), both carrying the file name and
line numbers, so validation errors can point at `file:line`:

>>> doc = load_yaml_text("a: 1\\nb:\\n  - x\\n", "demo.yml")
>>> doc.where("b"), doc["b"].where(0)
('demo.yml:2', 'demo.yml:3')
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, Node, SequenceNode

from pctfleet.errors import InputError
from pctfleet.playbook import vault
from pctfleet.playbook.secrets import Secret, Unsafe, is_template

_MERGE_TAG = "tag:yaml.org,2002:merge"


class YamlMap(dict):
    """A dict that knows its file, its own line and the line of each key."""

    file: str = "<string>"
    line: int = 0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.key_lines: dict[Any, int] = {}

    def line_of(self, key: Any) -> int:
        """Line of `key` (1-based); the mapping's own line if the key is absent."""
        return self.key_lines.get(key, self.line)

    def where(self, key: Any = None) -> str:
        """`file:line` of `key`, or of the mapping itself."""
        return f"{self.file}:{self.line if key is None else self.line_of(key)}"


class YamlList(list):
    """A list that knows its file, its own line and the line of each item."""

    file: str = "<string>"
    line: int = 0

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.item_lines: list[int] = []

    def line_of(self, index: int) -> int:
        if 0 <= index < len(self.item_lines):
            return self.item_lines[index]
        return self.line

    def where(self, index: int | None = None) -> str:
        return f"{self.file}:{self.line if index is None else self.line_of(index)}"


def plain(value: Any) -> Any:
    """A copy made of plain dicts and lists, for handing data beyond validation
    (yaml.safe_dump and friends do not know YamlMap). A structure that refers
    to itself through YAML aliases raises RecursionError."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def where(value: Any, key: Any = None, default: str = "") -> str:
    """`file:line` of a loaded value (or of one of its keys), `default` if unknown."""
    if isinstance(value, YamlMap | YamlList):
        return value.where(key)
    return default


# libyaml's parser when PyYAML has it: the pure-Python scanner was a tenth of a
# large fleet's controller CPU (a 1,000-container inventory). Marks carry lines either way.
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class PositionLoader(_SAFE_LOADER):  # type: ignore[misc, valid-type]
    """A safe loader that builds YamlMap/YamlList and refuses duplicate keys."""

    source_name = "<string>"

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict:
        # Also used by !!set and !!omap: keep the duplicate check there too.
        _check_duplicates(self, node)
        return super().construct_mapping(node, deep=deep)


def _line(node: Node) -> int:
    return node.start_mark.line + 1


def _check_duplicates(loader: PositionLoader, node: MappingNode) -> None:
    """A repeated key silently wins in plain PyYAML; here it is an error."""
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        if key_node.tag == _MERGE_TAG:
            continue
        key = loader.construct_object(key_node, deep=True)
        try:
            first = seen.get(key)
        except TypeError:
            raise ConstructorError(
                None, None, "found an unhashable key", key_node.start_mark
            ) from None
        if first is not None:
            raise ConstructorError(
                None,
                None,
                f"duplicate key {key!r} (first defined on line {first})",
                key_node.start_mark,
            )
        seen[key] = _line(key_node)


def _construct_map(loader: PositionLoader, node: MappingNode):
    data = YamlMap()
    data.file, data.line = loader.source_name, _line(node)
    yield data
    _check_duplicates(loader, node)
    loader.flatten_mapping(node)
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=False)
        try:
            hash(key)
        except TypeError:
            raise ConstructorError(
                None, None, "found an unhashable key", key_node.start_mark
            ) from None
        data[key] = loader.construct_object(value_node, deep=False)
        data.key_lines[key] = _line(key_node)


def _construct_seq(loader: PositionLoader, node: SequenceNode):
    data = YamlList()
    data.file, data.line = loader.source_name, _line(node)
    yield data
    for item in node.value:
        data.append(loader.construct_object(item, deep=False))
        data.item_lines.append(_line(item))


def _construct_vault(loader: PositionLoader, node: Node) -> Secret:
    """An inline `!vault |` value: decrypted here, and kept hidden from output."""
    where = f"{loader.source_name}:{_line(node)}"
    if not isinstance(node.value, str):
        raise vault.VaultError("!vault must tag a text block ($ANSIBLE_VAULT;...)", where=where)
    return Secret(vault.decrypt(node.value, where))


def _construct_unsafe(loader: PositionLoader, node: Node) -> Any:
    """A value tagged `!unsafe`: read as if untagged, every text in it data, never a
    template (ansible-core's `!unsafe`, on a scalar or a whole list or mapping)."""
    untagged = copy.copy(node)
    untagged.tag = loader.resolve(type(node), node.value, (True, False))
    return _as_unsafe(loader.construct_object(untagged, deep=True))


def _as_unsafe(value: Any) -> Any:
    if isinstance(value, Secret | Unsafe):
        return value
    if isinstance(value, str):
        return Unsafe(value)
    if isinstance(value, list):  # in place: a YamlList keeps its lines
        value[:] = [_as_unsafe(item) for item in value]
    elif isinstance(value, dict):
        for key, item in value.items():
            value[key] = _as_unsafe(item)
    return value


PositionLoader.add_constructor("tag:yaml.org,2002:map", _construct_map)
PositionLoader.add_constructor("tag:yaml.org,2002:seq", _construct_seq)
PositionLoader.add_constructor("!vault", _construct_vault)
PositionLoader.add_constructor("!unsafe", _construct_unsafe)


def _yaml_problem(err: yaml.YAMLError, name: str, text: str) -> InputError:
    """Turn a PyYAML error (several lines) into `file:line:col: problem`."""
    if isinstance(err, yaml.reader.ReaderError):
        line = text[: err.position].count("\n") + 1
        char = err.character
        shown = f"#x{char:04x}" if isinstance(char, int) else repr(char)
        return InputError(
            f"YAML error: special character {shown} is not allowed", where=f"{name}:{line}"
        )
    mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
    problem = getattr(err, "problem", None) or getattr(err, "context", None)
    if mark is not None:
        where = f"{name}:{mark.line + 1}:{mark.column + 1}"
        return InputError(f"YAML error: {problem or err}", where=where)
    return InputError(f"YAML error: {err}", where=name)


def load_yaml_text(text: str, name: str = "<string>") -> Any:
    """Parse one YAML document; `None` when it holds nothing but comments.
    A vault-encrypted document is decrypted first and its text values become `Secret`s."""
    if not vault.is_vaulted(text):
        return _parse(text, name)
    try:
        return _hide_strings(_parse(vault.decrypt(text, name), name))
    except RecursionError:  # an alias that holds itself
        raise InputError("YAML error: nested too deeply", where=name) from None


def _hide_strings(value: Any) -> Any:
    """Every string value (not key) inside `value` as a `Secret`, containers kept in place.
    A template stays plain text: a Secret is never rendered, and Ansible renders it."""
    if isinstance(value, str):
        return value if is_template(value) else Secret(value)
    if isinstance(value, dict):
        for key, item in value.items():
            value[key] = _hide_strings(item)
    elif isinstance(value, list):
        value[:] = [_hide_strings(item) for item in value]
    return value


def _parse(text: str, name: str) -> Any:
    loader = None
    try:
        loader = PositionLoader(text)
        loader.source_name = name
        return loader.get_single_data()
    except yaml.YAMLError as err:
        raise _yaml_problem(err, name, text) from None
    except RecursionError:
        raise InputError("YAML error: nested too deeply", where=name) from None
    finally:
        if loader is not None:
            loader.dispose()


def read_text(path: str | Path) -> str:
    """Read a UTF-8 file; an unreadable file is an InputError naming it."""
    try:
        data = Path(path).read_bytes()
    except OSError as err:
        raise InputError(f"cannot read file: {err.strerror or err}", where=str(path)) from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise InputError("file is not valid UTF-8 text", where=f"{path}:{line}") from None


def load_yaml(path: str | Path, *, what: str = "a YAML document") -> Any:
    """Load a YAML file with positions; an empty file is an error."""
    name = str(path)
    data = load_yaml_text(read_text(path), name)
    if data is None:
        raise InputError(f"file is empty (expected {what})", where=name)
    return data
