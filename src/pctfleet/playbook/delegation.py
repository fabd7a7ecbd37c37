"""`delegate_to` and `local_action` as the loader reads them.

A delegated task runs on this machine (the controller) with the container's
variables. Only the controller can be delegated to: `localhost` or `127.0.0.1`,
written as such or as a template that renders to one of them (checked per
container before anything runs). Anything else is refused here, with its line.
"""

from __future__ import annotations

from typing import Any

from pctfleet.errors import InputError, PlaybookError, brief
from pctfleet.playbook.kvargs import parse_kv

LOCAL_NAMES = frozenset({"localhost", "127.0.0.1"})
# Modules whose job is the container's serving stack: on the controller they would
# start servers or judge a CUDA toolchain that is not the container's.
_SERVING = "it acts on the container's serving stack"
_INCLUDE = "delegate the tasks it brings in instead"
NOT_DELEGABLE = {
    **dict.fromkeys(
        ("server", "server_stop", "cuda_toolchain", "compile_probe", "cccl_overlay"), _SERVING
    ),
    **dict.fromkeys(("cuda_links", "flashinfer_cache"), _SERVING),
    **dict.fromkeys(("include_tasks", "include_role"), _INCLUDE),
}
_ONLY = "only localhost or 127.0.0.1 (this machine) can be delegated to"


def _templated(text: str) -> bool:
    return "{{" in text or "{%" in text


def delegate_problem(value: Any, module: str) -> str | None:
    """Why `delegate_to: value` on a `module` task cannot be, or None."""
    if isinstance(value, bool) or not isinstance(value, str) or not value.strip():
        return f"'delegate_to' must name a host, got {brief(value)}"
    if not _templated(value) and value.strip() not in LOCAL_NAMES:
        return f"'delegate_to': {value.strip()!r} is not supported: {_ONLY}"
    if module in NOT_DELEGABLE:
        return f"module {module!r} cannot be delegated: {NOT_DELEGABLE[module]}"
    return None


def check_rendered(task: Any, scope: dict[str, Any], where: str) -> None:
    """A templated `delegate_to` must render to the controller for this container."""
    written = getattr(task, "delegate_to", None)
    if not written or not _templated(written):
        return
    from pctfleet.playbook.templating import render

    host = str(render(written, scope, where=where)).strip()
    if host not in LOCAL_NAMES:
        raise InputError(f"'delegate_to' rendered to {host!r}: {_ONLY}", where=where)


def split_local_action(raw: Any, canonical: Any) -> tuple[str, Any]:
    """(module name, its arguments as written) of a `local_action` value.

    Ansible's forms: `command echo hi`, `copy src=a dest=b` (the first word names
    the module; `module=copy` is read the same), and `{module: copy, src: a, ...}`.
    """
    if isinstance(raw, dict):
        rest = type(raw)({k: v for k, v in raw.items() if k != "module"})
        if hasattr(raw, "__dict__"):
            rest.__dict__.update(raw.__dict__)  # keep a YamlMap's file and lines
        head = raw.get("module")
    elif isinstance(raw, str):
        rest, head = None, raw
    else:
        raise PlaybookError(f"'local_action' needs a module, got {brief(raw)}")
    name, _, inline = (head.strip() if isinstance(head, str) else "").partition(" ")
    keyed = name.startswith("module=")  # `module=copy src=a`: every word is key=value
    name = name.removeprefix("module=")
    module = canonical(name) if name else None
    if module is None:
        raise PlaybookError(f"'local_action' names no known module: {brief(head)}")
    if keyed and rest is None:
        rest = {}
    return module, _merge(rest, inline.strip(), module, keyed)


def _merge(rest: Any, inline: str, module: str, keyed: bool) -> Any:
    """The mapping's arguments plus those written after the module name."""
    if rest is None:
        return inline or None
    if inline and module in ("command", "shell") and not keyed:
        rest.setdefault("cmd", inline)
    elif inline:
        try:  # split as ansible-core splits key=value words (kvargs)
            pairs = parse_kv(inline)
        except ValueError as err:
            raise PlaybookError(f"'local_action': {err}: {brief(inline)}") from None
        if "_raw_params" in pairs:
            word = pairs["_raw_params"].split()[0]
            raise PlaybookError(f"'local_action': expected key=value, got {word!r}")
        for key, value in pairs.items():
            rest.setdefault(key, value)
    return rest
