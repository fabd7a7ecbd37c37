"""Task modules by name. `KNOWN_ARGS` is what the playbook loader validates against."""

from __future__ import annotations

from .base import Module
from .command import Command, Shell
from .controller import Debug, Fail, SetFact
from .copy import Copy, Template
from .file import File
from .pip import Pip
from .server import Server, ServerStop

REGISTRY: dict[str, Module] = {
    module.name: module
    for module in (
        Command(),
        Shell(),
        File(),
        Copy(),
        Template(),
        Pip(),
        Server(),
        ServerStop(),
        Debug(),
        SetFact(),
        Fail(),
    )
}


def register(module: Module) -> None:
    REGISTRY[module.name] = module


def known_args() -> dict[str, set[str] | None]:
    return {name: module.args for name, module in REGISTRY.items()}
