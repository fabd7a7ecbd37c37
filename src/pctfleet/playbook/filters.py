"""ansible-core's own filters (ansible/plugins/filter/core.py and mathstuff.py, 2.19),
written again with the same arguments and results, for the templates of a playbook.
Each is also known by its FQCN, `ansible.builtin.NAME`, as there."""

from __future__ import annotations

import datetime
import glob
import hashlib
import itertools
import math
import os
import random
import re
import time
import uuid
from collections.abc import Mapping, MutableMapping, MutableSequence, Sequence
from typing import Any
from urllib.parse import urlsplit

import yaml

UUID_NAMESPACE_ANSIBLE = uuid.UUID("361E6D51-FAEC-444A-9079-341386DA8E2E")
LIST_MERGES = ("replace", "keep", "append", "prepend", "append_rp", "prepend_rp")


class FilterError(ValueError):
    """A filter's arguments do not fit, said as Ansible says it."""


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _flags(ignorecase: Any = False, multiline: Any = False) -> int:
    return (re.I if ignorecase else 0) | (re.M if multiline else 0)


def regex_replace(
    value: Any = "",
    pattern: str = "",
    replacement: str = "",
    ignorecase: bool = False,
    multiline: bool = False,
    count: int = 0,
    mandatory_count: int = 0,
) -> str:
    compiled = re.compile(pattern, flags=_flags(ignorecase, multiline))
    output, subs = compiled.subn(replacement, _text(value), count=count)
    if mandatory_count and mandatory_count != subs:
        raise FilterError(f"'{pattern}' should match {mandatory_count} times, but matches {subs}")
    return output


def regex_search(value: Any, regex: str, *args: str, **kwargs: Any) -> Any:
    """The match, or the groups named by `'\\1'` / `'\\g<name>'` arguments, as a list."""
    groups: list[int | str] = []
    for arg in args:
        named = re.match(r"\\g<(\S+)>", str(arg))
        numbered = re.match(r"\\(\d+)", str(arg))
        if named:
            groups.append(named.group(1))
        elif numbered:
            groups.append(int(numbered.group(1)))
        else:
            raise FilterError("Unknown argument")
    flags = _flags(kwargs.get("ignorecase"), kwargs.get("multiline"))
    found = re.search(regex, _text(value), flags)
    if not found:
        return None
    return [found.group(g) for g in groups] if groups else found.group()


def regex_findall(value: Any, regex: str, multiline: bool = False, ignorecase: bool = False):
    return re.findall(regex, _text(value), _flags(ignorecase, multiline))


def regex_escape(string: Any, re_type: str = "python") -> str:
    text = _text(string)
    if re_type == "python":
        return re.escape(text)
    if re_type == "posix_basic":
        return re.sub(r"([].[^$*\\])", r"\\\1", text)
    raise FilterError(f"Invalid regex type ({re_type})")


def ternary(value: Any, true_val: Any, false_val: Any, none_val: Any = None) -> Any:
    if value is None and none_val is not None:
        return none_val
    return true_val if bool(value) else false_val


def _is_sequence(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, str | bytes)


def flatten(mylist: Any, levels: int | None = None, skip_nulls: bool = True) -> list:
    flat: list = []
    for element in mylist:
        if skip_nulls and element in (None, "None", "null"):
            continue
        if _is_sequence(element) and (levels is None or levels >= 1):
            deeper = None if levels is None else int(levels) - 1
            flat.extend(flatten(element, deeper, skip_nulls))
        else:
            flat.append(element)
    return flat


def merge_hash(low: Mapping, high: Mapping, recursive: bool, list_merge: str) -> dict:
    """ansible.utils.vars.merge_hash: `high` over `low`, neither changed."""
    merged = dict(low)
    for key, value in high.items():
        if key not in merged:
            merged[key] = value
            continue
        old = merged[key]
        if isinstance(old, MutableMapping) and isinstance(value, MutableMapping):
            merged[key] = merge_hash(old, value, recursive, list_merge) if recursive else value
        elif isinstance(old, MutableSequence) and isinstance(value, MutableSequence):
            merged[key] = _merge_lists(old, value, list_merge)
        else:
            merged[key] = value
    return merged


def _merge_lists(low: list, high: list, how: str) -> list:
    return {
        "replace": high,
        "keep": low,
        "append": low + high,
        "prepend": high + low,
        "append_rp": [z for z in low if z not in high] + high,
        "prepend_rp": high + [z for z in low if z not in high],
    }[how]


def combine(*terms: Any, recursive: bool = False, list_merge: str = "replace") -> dict:
    """`a | combine(b, c)`, `[a, b] | combine`; later wins."""
    if list_merge not in LIST_MERGES:
        raise FilterError(f"'list_merge' must be one of {', '.join(LIST_MERGES)}")
    dictionaries = flatten(terms, levels=1)
    for found in dictionaries:
        if not isinstance(found, Mapping):
            raise FilterError(f"combine expects dictionaries, got {type(found).__name__}")
    if not dictionaries:
        return {}
    merged = dict(dictionaries[0])
    for dictionary in dictionaries[1:]:
        merged = merge_hash(merged, dictionary, recursive, list_merge)
    return merged


def dict2items(mydict: Any, key_name: str = "key", value_name: str = "value") -> list:
    if not isinstance(mydict, Mapping):
        raise FilterError(f"dict2items requires a dictionary, got {type(mydict).__name__} instead.")
    return [{key_name: key, value_name: mydict[key]} for key in mydict]


def items2dict(mylist: Any, key_name: str = "key", value_name: str = "value") -> dict:
    if not _is_sequence(mylist):
        raise FilterError(f"items2dict requires a list, got {type(mylist).__name__} instead.")
    try:
        return {item[key_name]: item[value_name] for item in mylist}
    except (KeyError, TypeError):
        raise FilterError(
            f"items2dict requires each dictionary in the list to contain the keys "
            f"'{key_name}' and '{value_name}'"
        ) from None


def subelements(obj: Any, path: Any, skip_missing: bool = False) -> list:
    elements = list(obj.values()) if isinstance(obj, Mapping) else list(obj)
    keys = path.split(".") if isinstance(path, str) else list(path)
    results = []
    for element in elements:
        values = element
        for key in keys:
            try:
                values = values[key]
            except KeyError:
                if not skip_missing:
                    raise FilterError(f"could not find {key!r} key in iterated item") from None
                values = []
                break
        if not isinstance(values, list):
            raise FilterError(f"the key {keys[-1]!r} should point to a list, got {values!r}")
        results.extend((element, value) for value in values)
    return results


def extract(item: Any, container: Any, morekeys: Any = None) -> Any:
    more = [] if morekeys is None else morekeys if isinstance(morekeys, list) else [morekeys]
    keys = [item, *more]
    value = container
    for key in keys:
        value = value[key]
    return value


def get_hash(data: Any, hashtype: str = "sha1") -> str:
    try:
        digest = hashlib.new(hashtype)
    except ValueError as exc:
        raise FilterError(str(exc)) from None
    digest.update(_text(data).encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


def to_uuid(string: Any, namespace: Any = UUID_NAMESPACE_ANSIBLE) -> str:
    space = namespace if isinstance(namespace, uuid.UUID) else uuid.UUID(str(namespace))
    return str(uuid.uuid5(space, _text(string)))


def path_join(paths: Any) -> str:
    if isinstance(paths, str):
        return os.path.join(paths)
    return os.path.join(*paths)


def type_debug(obj: Any) -> str:
    """The native type's name: a playbook's own string types read as `str`."""
    for kind in (bool, int, float, str, dict, list, tuple):
        if isinstance(obj, kind):
            return kind.__name__
    return type(obj).__name__


def fileglob(pathname: Any) -> list[str]:
    return [g for g in glob.glob(_text(pathname)) if os.path.isfile(g)]


def to_datetime(string: Any, format: str = "%Y-%m-%d %H:%M:%S") -> datetime.datetime:  # noqa: A002
    return datetime.datetime.strptime(_text(string), format)


def strftime(string_format: str, second: Any = None, utc: bool = False) -> str:
    when = None if second is None else float(second)
    return time.strftime(string_format, (time.gmtime if utc else time.localtime)(when))


def url_split(value: Any, query: str = "") -> Any:
    parts = urlsplit(_text(value))
    fields = {
        "fragment": parts.fragment, "hostname": parts.hostname, "netloc": parts.netloc,
        "password": parts.password, "path": parts.path, "port": parts.port,
        "query": parts.query, "scheme": parts.scheme, "username": parts.username,
    }  # fmt: skip
    if not query:
        return fields
    if query not in fields:
        raise FilterError(f"urlsplit: unknown URL component: {query}")
    return fields[query]


# ansible-core dumps with libyaml where PyYAML has it: no `...` after a lone scalar.
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def to_yaml(value: Any, *_args: Any, default_flow_style: bool | None = None, **kwargs: Any) -> str:
    """Terse YAML, keys sorted, short lists and maps inline, as Ansible's to_yaml."""
    return yaml.dump(
        value, Dumper=_DUMPER, allow_unicode=True,
        default_flow_style=default_flow_style, **kwargs,
    )  # fmt: skip


def to_nice_yaml(value: Any, indent: int = 4, *_args: Any, **kwargs: Any) -> str:
    kwargs.setdefault("default_flow_style", False)
    return to_yaml(value, indent=indent, **kwargs)


def _set_op(op: str):  # noqa: ANN202
    """mathstuff's union/intersect/difference/symmetric_difference: set order where the
    items hash, else the first list's order, each once."""

    def apply(a: Any, b: Any) -> list:
        try:
            return list(getattr(set(a), op)(set(b)))
        except TypeError:
            return _ordered(op, list(a), list(b))

    return apply


def _ordered(op: str, a: list, b: list) -> list:
    picked = {
        "__and__": [x for x in a if x in b],
        "__sub__": [x for x in a if x not in b],
        "__or__": a + b,
        "__xor__": [x for x in a + b if (x in a) != (x in b)],
    }[op]
    return [x for i, x in enumerate(picked) if x not in picked[:i]]


def logarithm(x: Any, base: float = math.e) -> float:
    return math.log10(x) if base == 10 else math.log(x, base)


def inversepower(x: Any, base: float = 2) -> float:
    return math.sqrt(x) if base == 2 else math.pow(x, 1.0 / float(base))


def shuffle(mylist: Any, seed: Any = None) -> list:
    shuffled = list(mylist)
    (random.Random(seed) if seed else random).shuffle(shuffled)  # noqa: S311
    return shuffled


def rand(end: Any, start: Any = None, step: Any = None, seed: Any = None) -> Any:
    """ansible-core's `random`: below `end` (from `start` by `step`) for a number, one
    of its items for a list; with a `seed`, the same answer every time."""
    # Not for secrets, as there: a seeded pick must repeat.
    picker = random.Random(seed) if seed is not None else random.SystemRandom()  # noqa: S311
    if isinstance(end, int) and not isinstance(end, bool):
        return picker.randrange(start or 0, end, step or 1)
    if hasattr(end, "__iter__"):
        if start or step:
            raise ValueError("start and step can only be used with integer values")
        return picker.choice(list(end) if not isinstance(end, Sequence) else end)
    raise ValueError("random can only be used on sequences and integers")


FILTERS: dict[str, Any] = {
    "regex_replace": regex_replace,
    "regex_search": regex_search,
    "regex_findall": regex_findall,
    "regex_escape": regex_escape,
    "ternary": ternary,
    "flatten": flatten,
    "combine": combine,
    "dict2items": dict2items,
    "items2dict": items2dict,
    "subelements": subelements,
    "extract": extract,
    "hash": get_hash,
    "checksum": lambda data: get_hash(data, "sha1"),
    "sha1": lambda data: get_hash(data, "sha1"),
    "md5": lambda data: get_hash(data, "md5"),
    "to_uuid": to_uuid,
    "path_join": path_join,
    "expanduser": lambda p: os.path.expanduser(_text(p)),
    "expandvars": lambda p: os.path.expandvars(_text(p)),
    "realpath": lambda p: os.path.realpath(_text(p)),
    "relpath": lambda p, start=os.curdir: os.path.relpath(_text(p), start),
    "splitext": lambda p: os.path.splitext(_text(p)),
    "normpath": lambda p: os.path.normpath(_text(p)),
    "commonpath": lambda paths: os.path.commonpath(list(paths)),
    "fileglob": fileglob,
    "type_debug": type_debug,
    "to_datetime": to_datetime,
    "strftime": strftime,
    "urlsplit": url_split,
    "to_yaml": to_yaml,
    "to_nice_yaml": to_nice_yaml,
    "from_yaml_all": lambda text: list(yaml.safe_load_all(_text(text))),
    "union": _set_op("__or__"),
    "intersect": _set_op("__and__"),
    "difference": _set_op("__sub__"),
    "symmetric_difference": _set_op("__xor__"),
    "product": itertools.product,
    "permutations": itertools.permutations,
    "combinations": itertools.combinations,
    "zip": zip,
    "zip_longest": itertools.zip_longest,
    "log": logarithm,
    "pow": math.pow,
    "root": inversepower,
    "shuffle": shuffle,
    "random": rand,
}
