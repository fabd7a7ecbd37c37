"""Task modules by name. `known_args()` is what the playbook loader validates against."""

from __future__ import annotations

from .base import Module
from .cccl import CcclOverlay
from .command import Command, Shell
from .controller import Debug, Fail, SetFact
from .copy import Copy, Template
from .cudalinks import CudaLinks
from .file import File
from .jitcache import FlashinferCache
from .pip import Pip
from .server import Server, ServerStop
from .toolchain import CompileProbe, CudaToolchain

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
        CudaToolchain(),
        CompileProbe(),
        CcclOverlay(),
        CudaLinks(),
        FlashinferCache(),
    )
}


def known_args() -> dict[str, set[str] | None]:
    return {name: module.args for name, module in REGISTRY.items()}
