"""Task modules by name. Each module file registers its classes when imported.

`known_args()` is what the playbook loader validates task arguments against.
"""

from __future__ import annotations

import importlib
import pkgutil

from pctfleet.modules.base import REGISTRY, Module

_HELPERS = {"base", "args"}

for _info in pkgutil.iter_modules(__path__):
    if _info.name not in _HELPERS:
        importlib.import_module(f"{__name__}.{_info.name}")


def known_args() -> dict[str, set[str] | None]:
    return {name: module.known_args() for name, module in REGISTRY.items()}


__all__ = ["REGISTRY", "Module", "known_args"]
