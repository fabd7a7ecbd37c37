"""Task modules by name. Each module file registers its classes when imported;
`REGISTRY` imports a module's file the first time its name is looked up.

`known_args()` is what the playbook loader validates task arguments against.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from pctfleet.modules.base import REGISTRY, Module


class _KnownArgs(Mapping[str, "set[str] | None"]):
    """Every module's name, and its arguments once asked for: a playbook's loader
    asks only about the modules the playbook uses."""

    def __getitem__(self, name: str) -> set[str] | None:
        return REGISTRY[name].known_args()

    def __contains__(self, name: object) -> bool:
        return name in REGISTRY.names()

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(REGISTRY.names()))

    def __len__(self) -> int:
        return len(REGISTRY.names())


def known_args() -> Mapping[str, set[str] | None]:
    return _KnownArgs()


__all__ = ["REGISTRY", "Module", "known_args"]
