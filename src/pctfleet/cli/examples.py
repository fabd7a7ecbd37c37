"""Each command's examples at the end of its --help.

A command's docstring ends with an "Examples:" block; typer shows a docstring
above the options, so the block moves to the command's epilog, shown last.
"""

from __future__ import annotations

import inspect

import typer

MARK = "Examples:"
LAB_INVENTORY = "/var/lib/pctfleet-lab/inventory.yml"  # what `pctfleet lab up` writes


def split_examples(doc: str) -> tuple[str, str]:
    """The docstring before its Examples block, and the block."""
    head, mark, tail = inspect.cleandoc(doc).partition(f"\n{MARK}\n")
    return (head.rstrip(), f"{MARK}\n{tail.strip(chr(10))}") if mark else (head, "")


def examples(doc: str) -> list[str]:
    """The example command lines of a docstring (comments after '#' stay on)."""
    _, block = split_examples(doc)
    return [line.strip() for line in block.splitlines()[1:] if line.strip()]


def examples_last(app: typer.Typer) -> typer.Typer:
    for info in app.registered_commands:
        _move(info)
    for group in app.registered_groups:
        instance = group.typer_instance
        if instance is not None and instance.registered_callback is not None:
            # a group with a callback (`runs`): typer takes its help from the group's entry
            group.callback = instance.registered_callback.callback
            _move(group)
        if instance is not None:
            examples_last(instance)
    return app


def _move(info) -> None:  # noqa: ANN001 - typer's CommandInfo or TyperInfo
    doc = info.help if isinstance(info.help, str) else None
    head, block = split_examples(doc or getattr(info.callback, "__doc__", None) or "")
    if block and not isinstance(info.epilog, str):
        info.help, info.epilog = head, block
