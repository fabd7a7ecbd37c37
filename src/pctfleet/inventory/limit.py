"""`--limit` patterns: which containers of an inventory a pattern selects."""

from __future__ import annotations

import fnmatch
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import NamedTuple

from pctfleet.errors import InventoryError, did_you_mean
from pctfleet.inventory.checks import as_int


class Host(NamedTuple):
    """What a pattern can name about one container."""

    key: str
    name: str | None
    ctid: int
    node: str


def match_limit(
    limit: str,
    hosts: Sequence[Host],
    groups: Mapping[str, Sequence[str]],
    nodes: Collection[str],
    source: str,
) -> set[str]:
    """Keys of the `hosts` that `limit` selects; `groups` maps a name to its
    member keys. An unknown term is an error naming `source`."""
    matcher = _Matcher(hosts, groups, nodes, source)
    union: set[str] = set()
    plain, inter, excl = _split_terms(limit, nodes)
    for term in plain or ["all"]:
        union |= matcher.match(term)
    for term in inter:
        union &= matcher.match(term)
    for term in excl:
        union -= matcher.match(term)
    return union


class _Matcher:
    def __init__(
        self,
        hosts: Sequence[Host],
        groups: Mapping[str, Sequence[str]],
        nodes: Collection[str],
        source: str,
    ) -> None:
        self.hosts = hosts
        self.groups = groups
        self.nodes = nodes
        self.source = source

    def match(self, term: str) -> set[str]:
        if term in ("all", "*"):
            return {h.key for h in self.hosts}
        found = self._match_exact(term) if not _is_glob(term) else self._match_glob(term)
        if found is None:
            raise InventoryError(
                f"pattern {term!r} matches no group, node or container in {self.source}"
                + did_you_mean(term, self._names())
            )
        return found

    def _match_exact(self, term: str) -> set[str] | None:
        hits: list[Iterable[str]] = []
        if term in self.groups:
            hits.append(self.groups[term])
        if term in self.nodes:
            hits.append(h.key for h in self.hosts if h.node == term)
        hits.append(h.key for h in self.hosts if term in (h.key, h.name) or h.ctid == as_int(term))
        found = set().union(*hits)
        known = term in self.groups or term in self.nodes
        return found if found or known else None

    def _match_glob(self, term: str) -> set[str] | None:
        groups = fnmatch.filter(self.groups, term)
        nodes = set(fnmatch.filter(self.nodes, term))
        found = {k for g in groups for k in self.groups[g]}
        for h in self.hosts:
            if (
                h.node in nodes
                or fnmatch.fnmatchcase(h.key, term)
                or (h.name and fnmatch.fnmatchcase(h.name, term))
            ):
                found.add(h.key)
        return found if found or groups or nodes else None

    def _names(self) -> list[str]:
        names = [*self.groups, *self.nodes]
        return names + [n for h in self.hosts for n in (h.key, h.name) if n]


def _is_glob(term: str) -> bool:
    return any(ch in term for ch in "*?[")


def _split_terms(limit: str, nodes: Collection[str]) -> tuple[list, list, list]:
    """Split `a,b,&c,!d` (or `a:b:&c:!d`) into plain, `&` and `!` terms."""
    # A node named by an IPv6 address holds colons: no colon split for it.
    sep = "," if "," in limit or limit.strip() in nodes else ":"
    raw = limit.split(sep)
    plain, inter, excl = [], [], []
    for term in (t.strip() for t in raw):
        if term.startswith("!") and term[1:]:
            excl.append(term[1:])
        elif term.startswith("&") and term[1:]:
            inter.append(term[1:])
        elif term and term not in ("!", "&"):
            plain.append(term)
    return plain, inter, excl
