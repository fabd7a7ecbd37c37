"""Host patterns (`--limit`, a play's `hosts:`): which containers they select.

The language is ansible-core's (inventory/manager.py, measured against 2.19): terms
split at commas, else at colons; plain terms first, then `&` terms, then `!` terms;
a term is a host or group name, a glob (`*?[`) or a `~regex` over those names, with
an optional `[i]`, `[i:j]` or `[i:]` subscript that slices what it matched in the
group's order. A host name wins over a group of the same name.

In an Ansible inventory the names are host and group names only. pctfleet adds exact
terms Ansible has no name for: a node (its address), a `node/ctid` key and a bare
ctid, taken only when no host or group has that name and never glob-matched, so a
glob selects what ansible-playbook would. A native inventory has no host names: there
a container's key and name stand for its host name and each node is a group.
"""

from __future__ import annotations

import fnmatch
import ipaddress
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from pctfleet.errors import InventoryError, brief, did_you_mean
from pctfleet.inventory.checks import as_int

# `expr[3]`, `expr[-1]`, `expr[1:3]`, `expr[1:]` (and the old `expr[1-3]`).
_SUBSCRIPT = re.compile(r"^(.+)\[(?:(-?[0-9]+)|([0-9]+)([:-])([0-9]*))\]$")
# A term of a colon-separated pattern: a bracketed expression stays whole.
_TERM = re.compile(r"(?:[^\s:\[\]]|\[[^\]]*\])+")
_RANGE = r"\[(?:[a-z]:[a-z]|[0-9]+:[0-9]+)(?::[0-9]+)?\]"
_LABEL = rf"(?:\w|{_RANGE})(?:[\w-]|{_RANGE})*(?<![_-])"
_HOSTNAME = re.compile(rf"^{_LABEL}(?:\.{_LABEL})*$", re.I)
_WITH_PORT = re.compile(r"^((?:[^:\[\]]|\[[^\]]*\])*):[0-9]+$")
_GLOB = "*?["


class Host(NamedTuple):
    """What a pattern can name about one container."""

    key: str
    name: str | None  # its host name in an Ansible inventory; None in a native one
    ctid: int
    node: str
    label: str | None = None  # a native container's name


def match_limit(
    pattern: str | Sequence[Any],
    hosts: Sequence[Host],
    groups: Mapping[str, Any],
    nodes: Collection[str],
    source: str,
    *,
    files: bool = True,
    walk: bool = False,
) -> list[str]:
    """Keys of the `hosts` that `pattern` selects: a string, or a list whose items are
    patterns (a play's `hosts:` list). `groups` maps a name to its Group (`members`,
    closed over `children`). With `files`, a term `@FILE` stands for the lines of FILE,
    one pattern a line (`--limit @site.retry`). An unknown term is an error naming
    `source`.

    In an Ansible inventory the keys come in ansible-core's order: the terms' (each
    plain term adds what it matches, in its own order; `&` and `!` terms filter), or
    with `walk` the `all` group's (`ansible_order`), as ansible-core filters its host
    list by a --limit. In a native inventory they keep the order of `hosts`."""
    terms, origin = expand_files(split_pattern(pattern)) if files else (split_pattern(pattern), {})
    return _Patterns(hosts, groups, nodes, source, origin).select(terms, walk)


def split_pattern(pattern: str | Sequence[Any]) -> list[str]:
    """The terms of a pattern, as ansible-core splits them: each item of a list apart;
    a string at its commas, else (unless it is one address, `host:port` or IPv6) at
    colons and whitespace, a bracketed `[...]` kept whole."""
    if not isinstance(pattern, str):
        return [term for item in pattern for term in split_pattern(item)]
    if "," in pattern:
        parts = pattern.split(",")
    elif _one_address(pattern):
        parts = [pattern]
    else:
        parts = _TERM.findall(pattern)
    return [p.strip() for p in parts if p.strip()]


def _one_address(text: str) -> bool:
    bracketed = re.match(r"^\[(.+)\]:[0-9]+$", text)
    if bracketed:
        text = bracketed.group(1)
    with_port = _WITH_PORT.match(text)
    if with_port:
        text = with_port.group(1)
    if _HOSTNAME.match(text):
        return True
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return "%" not in text


def expand_files(terms: Iterable[str]) -> tuple[list[str], dict[str, str]]:
    """`@FILE` terms replaced by the lines of FILE (Ansible's retry files), and which
    file each of those came from."""
    out: list[str] = []
    origin: dict[str, str] = {}
    for term in terms:
        if not term.startswith("@"):
            out.append(term)
            continue
        lines = [line.strip() for line in _limit_file(term[1:]).split("\n")]
        out += lines
        origin.update(dict.fromkeys(lines, term))
    return out, origin


def with_absolute_files(limit: str | None) -> str | None:
    """`limit` with each `@FILE` naming its file by absolute path (a rollout's journal
    keeps it: --resume may run from another folder)."""
    terms = split_pattern(limit or "")
    if not any(term.startswith("@") for term in terms):
        return limit
    return ",".join("@" + str(Path(t[1:]).absolute()) if t.startswith("@") else t for t in terms)


def _limit_file(name: str) -> str:
    path = Path(name)
    if not name or not path.exists():
        raise InventoryError(f"--limit {('@' + name)!r}: no such file")
    if not path.is_file():
        raise InventoryError(
            f"--limit {('@' + name)!r}: not a file (a limit file lists one pattern a line)"
        )
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InventoryError(f"--limit {('@' + name)!r}: cannot read it ({exc})") from None


def ansible_order(groups: Mapping[str, Any], keys: Sequence[str] = ()) -> dict[str, list[str]]:
    """Each group's members in ansible-core's order (what a subscript counts), `all`
    (over `keys`) included: the group's own hosts, then its children's own hosts
    child by child, then their children's, level by level (Group.get_hosts). Below
    the first level ansible-core walks a set: its order there is any order."""
    own = {name: _own(group, groups) for name, group in groups.items()}
    kids = {name: [c for c in group.children if c in groups] for name, group in groups.items()}
    # `all`: its own hosts are those in no group; its children the groups no group holds.
    held = {k for group in groups.values() for k in group.members}
    top = [name for name in groups if not any(name in kids[p] for p in groups)]
    top.sort(key=lambda name: name != "ungrouped")
    own["all"] = [k for k in keys if k not in held]
    kids["all"] = top
    order = {}
    for name in ["all", *groups]:
        seq: list[str] = []
        level, seen = [name], {name}
        while level:
            seq += [k for g in level for k in own[g]]
            below = dict.fromkeys(c for g in level for c in kids[g] if c not in seen)
            seen.update(below)
            level = list(below)
        order[name] = list(dict.fromkeys(seq))
    return order


def _own(group: Any, groups: Mapping[str, Any]) -> list[str]:
    """The hosts listed in the group itself. `members` lists them first, then its
    children's not listed there: the shortest head after which the rest is exactly that."""
    members = list(group.members)
    kids = [c for c in group.children if c in groups]
    if not kids:
        return members
    below = list(dict.fromkeys(k for c in kids for k in groups[c].members))
    held = set(below)
    cut = max((i + 1 for i, key in enumerate(members) if key not in held), default=0)
    while cut < len(members):
        head = set(members[:cut])
        if members[cut:] == [k for k in below if k not in head]:
            break
        cut += 1
    return members[:cut]


class _Patterns:
    def __init__(
        self,
        hosts: Sequence[Host],
        groups: Mapping[str, Any],
        nodes: Collection[str],
        source: str,
        origin: Mapping[str, str],
    ) -> None:
        self.source = source
        self.origin = origin
        self.named = any(h.name for h in hosts)
        self.keys = [h.key for h in hosts]
        self.key_set = set(self.keys)
        order = ansible_order(groups, self.keys)
        # ansible-core's groups, `all` and `ungrouped` first: globs match them too.
        self.groups: dict[str, list[str]] = {}
        for name in sorted(order, key=lambda n: (n != "all", n != "ungrouped")):
            self.groups[name] = order[name]
        self.on_node: dict[str, list[str]] = {node: [] for node in nodes}
        self.by_ctid: dict[int, list[str]] = {}
        for h in hosts:
            self.on_node.setdefault(h.node, []).append(h.key)
            self.by_ctid.setdefault(h.ctid, []).append(h.key)
        if not self.named:  # no Ansible order to follow; and its nodes are groups too
            self.groups["all"] = self.keys
            for node, keys in self.on_node.items():
                self.groups[node] = list(dict.fromkeys([*self.groups.get(node, []), *keys]))
        # Each host's names, in inventory order: its host name, or (native) key and name.
        self.names: list[tuple[tuple[str, ...], str]] = [
            ((h.name,) if self.named else tuple(n for n in (h.key, h.label) if n), h.key)
            for h in hosts
        ]
        self.by_name: dict[str, list[str]] = {}
        for names, key in self.names:
            for n in names:
                self.by_name.setdefault(n, []).append(key)

    def select(self, terms: Sequence[str], walk: bool = False) -> list[str]:
        terms = [t for t in terms if t and t not in ("!", "&")]
        plain = [t for t in terms if t[0] not in "!&"] or ["all"]
        both = [t for t in terms if t[0] == "&"]
        chosen: dict[str, None] = {}
        for term in [*plain, *both, *(t for t in terms if t[0] == "!")]:
            if self.named and term in self.by_name:  # a host's own name: that host, first
                chosen.update(dict.fromkeys(self.by_name[term]))
                continue
            that = self._term(term)
            if term[0] in "!&":
                hits = set(that)
                chosen = {k: None for k in chosen if (k in hits) == (term[0] == "&")}
            else:
                chosen.update(dict.fromkeys(that))
        if walk or not self.named:  # a native inventory's `all` is its order
            return [k for k in self.groups["all"] if k in chosen]
        return list(chosen)

    def _term(self, term: str) -> list[str]:
        text = term[1:] if term[0] in "!&" else term
        expr, index = (text, None) if text.startswith("~") else _subscript(text)
        matched, found = self._enumerate(expr)
        if index is not None and found:
            found = self._slice(found, index, text)
        if found or matched:
            return found
        exact = self._exact(text)
        if exact is None:
            raise self._unknown(text)
        return [k for k in self.keys if k in exact]

    def _enumerate(self, expr: str) -> tuple[list[str], list[str]]:
        """The groups `expr` names, and the hosts it matches in order (ansible-core's
        `_enumerate_matches`: an exact name reaches hosts only where no group has it)."""
        match = self._matcher(expr)
        if match is None:  # no glob: a name, looked up
            groups = [expr] if expr in self.groups else []
            found = list(self.groups[expr]) if groups else []
            if not groups or "." in expr:
                found += self.by_name.get(expr, [])
            return groups, found
        groups = [g for g in self.groups if match(g)]
        found = [k for g in groups for k in self.groups[g]]
        found += [key for names, key in self.names if any(match(n) for n in names)]
        return groups, found

    def _matcher(self, expr: str) -> Callable[[str], Any] | None:
        if expr.startswith("~"):
            try:
                return re.compile(expr[1:]).match
            except re.error as exc:
                raise InventoryError(
                    f"pattern {brief(expr)}: invalid regular expression ({exc})"
                ) from None
        if not any(ch in expr for ch in _GLOB):
            return None
        return re.compile(fnmatch.translate(expr)).match

    def _slice(self, found: list[str], index: tuple[int, int | None], text: str) -> list[str]:
        """ansible-core's `_apply_subscript`: `[i]` one host, `[i:j]` i to j inclusive,
        `[i:]` to the end (`[i:0]` is `[i]`, as there)."""
        start, end = index
        try:
            if not end:
                return [found[start]]
        except IndexError:
            raise InventoryError(
                f"pattern {brief(text)}: no host at that index ({len(found)} matched) in "
                f"{self.source}"
            ) from None
        last = len(found) - 1 if end == -1 else end
        return found[start : last + 1]

    def _exact(self, text: str) -> set[str] | None:
        """pctfleet's names Ansible lacks: a node, a `node/ctid` key, a ctid; exact only."""
        hits = set(self.on_node.get(text, ()))
        if text in self.key_set:
            hits.add(text)
        ctid = as_int(text)
        hits.update(self.by_ctid.get(ctid, ()) if ctid is not None else ())
        return hits if hits or text in self.on_node else None

    def _unknown(self, text: str) -> InventoryError:
        message = f"pattern {text!r} matches no group, host, node or container in {self.source}"
        if text in self.origin:
            message += f" (a line of {self.origin[text]})"
        sub = _SUBSCRIPT.match(text)
        if ":" in text and not sub:
            message += "; separate terms with commas"
        if sub:
            message += (
                f"; {text[len(sub.group(1)) :]} is a subscript of {sub.group(1)!r}, as in "
                f"Ansible: for a regular expression write ~{text}"
            )
        names = [*self.groups, *self.by_name, *self.on_node, *self.keys]
        return InventoryError(message + did_you_mean(text, names))


def _subscript(text: str) -> tuple[str, tuple[int, int | None] | None]:
    """`gpu[1:]` -> ("gpu", (1, -1)): ansible-core's `_split_subscript`."""
    m = _SUBSCRIPT.match(text)
    if not m:
        return text, None
    expr, idx, start, _, end = m.groups()
    if idx:
        return expr, (int(idx), None)
    return expr, (int(start), int(end) if end else -1)
