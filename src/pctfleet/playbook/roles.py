"""Roles, read as Ansible reads them: `roles:` in a play, `import_role` (static) and
`include_role` (loaded when reached).

A role is a folder: tasks/, handlers/, defaults/, vars/, meta/ (each `main.yml`
unless `*_from` names another file), templates/ and files/ (found first by the
role's template and copy tasks through `role_path`). It is looked up in `roles/`
next to the playbook, then the -r folders, then `roles_path` of an ansible.cfg
next to the playbook, then next to the playbook. Variables follow Ansible's
precedence: defaults under inventory vars (a play's `defaults`), vars/ over play
vars (play-wide for roles: and import_role, as Ansible's public roles), role
params and `role_path` over registered results.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pctfleet import ansiblecfg
from pctfleet.errors import PlaybookError, brief
from pctfleet.playbook import loader as ld
from pctfleet.playbook.yamlsrc import YamlList, YamlMap, load_yaml, plain

IMPORT_ROLE_KEYWORDS = ("name", "when", "tags", "vars")


@dataclass
class Sink:
    """Where a role's handlers and defaults go: the play's, or an include's own."""

    handlers: list = field(default_factory=list)
    files: set[Path] = field(default_factory=set)
    defaults: dict[str, Any] = field(default_factory=dict)
    exports: dict[str, Any] = field(default_factory=dict)  # vars/ the play sees (public roles)


@dataclass(frozen=True)
class Call:
    """One use of a role: its name, the files to read and what it is given."""

    name: str
    where: str
    files: dict[str, str] = field(default_factory=dict)  # tasks/vars/defaults/handlers -> stem
    vars: dict[str, Any] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    inherit: Any = None  # ld._Inherit: the entry's when and tags


def _sink(reader: Any) -> Sink:
    """The play's: roles: and import_role are public, as in Ansible (their defaults
    and vars/ reach every task of the play)."""
    return Sink(reader.role_handlers, reader.handler_files, reader.role_defaults, reader.role_vars)


# ---------------------------------------------------------------- finding


def search_path(reader: Any) -> list[Path]:
    base = reader.path.parent
    return [base / "roles", *map(Path, reader.roles_path), *_cfg_roles_path(base), base]


def _cfg_roles_path(base: Path) -> list[Path]:
    """roles_path of the ansible.cfg ansible-playbook reads (pctfleet.ansiblecfg); where
    there is none, of an ansible.cfg next to the playbook."""
    config = ansiblecfg.read()
    if config.roles_path or config.path is not None:
        return list(config.roles_path)
    beside = ansiblecfg.read({"ANSIBLE_CONFIG": str(base / "ansible.cfg")}, base)
    return list(beside.roles_path) if beside.path == base / "ansible.cfg" else []


def find_role(reader: Any, name: str, where: str) -> Path:
    if "/" in name or name.startswith("~"):
        path = Path(reader.path.parent, os.path.expanduser(name))
        if path.is_dir():
            return path
    looked = search_path(reader)
    for base in looked:
        if (base / name).is_dir():
            return base / name
    shown = ", ".join(os.path.normpath(p) for p in looked)
    raise PlaybookError(f"role {name!r} not found (looked in {shown})", where=where)


def _role_file(role: Path, folder: str, stem: str) -> Path | None:
    for name in (stem, f"{stem}.yml", f"{stem}.yaml"):
        path = role / folder / name
        if path.is_file():
            return path
    return None


def _mapping_file(role: Path, folder: str, stem: str, where: str) -> Any:
    path = _role_file(role, folder, stem)
    if path is None:
        return {}
    data = load_yaml(path, what="a mapping")
    if data is None:
        return {}
    if not isinstance(data, YamlMap):
        raise PlaybookError(f"{path} must hold a mapping, got {brief(data)}", where=where)
    if folder == "meta":  # kept as read: its entries' lines are quoted in errors
        return data
    return ld._checked_names(data, str(path.name), f"role {role.name!r}", var_names=True)


# ---------------------------------------------------------------- loading


def load_role(reader: Any, call: Call, sink: Sink, dedup: bool) -> list:
    """The role's tasks, its dependencies' first; handlers and defaults go to `sink`.
    With `dedup` (roles: and dependencies) a role already run with the same params
    runs again only where its meta allows duplicates."""
    path = find_role(reader, call.name, call.where)
    meta = _mapping_file(path, "meta", "main", call.where)
    ident = (path.resolve(), repr(sorted({**call.vars, **call.params}.items())))
    if dedup and ident in reader.roles_seen and not meta.get("allow_duplicates"):
        return []
    if len(reader.imports) >= ld.MAX_IMPORT_DEPTH:
        raise PlaybookError(f"role {call.name!r}: dependencies too deep", where=call.where)
    out: list = []
    reader.imports.append(path / "meta" / "main.yml")
    try:
        for dep in _entries(meta.get("dependencies") or [], str(path / "meta"), "dependencies"):
            out += load_role(reader, dep, sink, dedup=True)
    finally:
        reader.imports.pop()
    reader.roles_seen.add(ident)
    files = {"tasks": "main", "vars": "main", "defaults": "main", "handlers": "main", **call.files}
    defaults = _mapping_file(path, "defaults", files["defaults"], call.where)
    sink.defaults.update(defaults)
    exported = _mapping_file(path, "vars", files["vars"], call.where)
    sink.exports.update(exported)
    own_vars = ld._Inherit(vars={**exported, **call.vars}, defaults=defaults)
    magic = {"role_path": str(path), "role_name": path.name, **call.params}
    out += _mark(
        own_vars.apply(_role_tasks(reader, path, files["tasks"], call, False)), path.name, magic
    )
    _role_handlers(reader, path, files["handlers"], call, sink, own_vars, magic)
    return (call.inherit or ld._Inherit()).apply(out)


def _role_tasks(reader: Any, path: Path, stem: str, call: Call, handler: bool) -> list:
    file = _role_file(path, "handlers" if handler else "tasks", stem)
    if file is None:
        if stem != "main":
            kind = "handlers_from" if handler else "tasks_from"
            raise PlaybookError(f"role {call.name!r}: no {kind} file {stem!r}", where=call.where)
        return []
    items = load_yaml(file, what="a list of tasks")
    if items is None:
        return []
    if not isinstance(items, YamlList):
        raise PlaybookError(
            f"{file} must hold a list of tasks, got {brief(items)}", where=call.where
        )
    reader.imports.append(file)
    try:
        return ld._tasks_of(reader, items, handler)
    finally:
        reader.imports.pop()


def _role_handlers(
    reader: Any, path: Path, stem: str, call: Call, sink: Sink, own_vars: Any, magic: dict
) -> None:
    file = _role_file(path, "handlers", stem)
    if file is None:
        return
    # Read again where the role is met again: the handler read last is the one that
    # runs, at its place (Handler.names, the engine's _notified).
    sink.files.add(file.resolve())
    handlers = own_vars.apply(_role_tasks(reader, path, stem, call, True))
    sink.handlers.extend(_mark(handlers, path.name, magic))


def _mark(nodes: list, role: str, params: dict) -> list:
    """Tasks of `role`: named "role : name" as Ansible shows them, with its params."""

    def change(task: Any) -> Any:
        if task.role:
            return replace(task, params={**params, **task.params})
        return replace(
            task, name=f"{role} : {task.name}", role=role, params={**params, **task.params}
        )

    return ld._walk(nodes, change)


# ---------------------------------------------------------------- the ways in


def _entries(raw: Any, where: str, what: str) -> list[Call]:
    if not isinstance(raw, list):
        raise PlaybookError(f"{what!r} must be a list of roles, got {brief(raw)}", where=where)
    return [_entry(raw, i, what, where) for i in range(len(raw))]


def _entry(items: Any, i: int, what: str, where: str) -> Call:
    """A roles/dependencies entry: a name, or {role|name, vars, tags, when, params...}."""
    item = items[i]
    at = items.where(i) if isinstance(items, YamlList) else where
    if isinstance(item, str) and item.strip():
        return Call(item.strip(), at)
    if not isinstance(item, YamlMap):
        raise PlaybookError(
            f"{what} entry must be a role name or a mapping, got {brief(item)}", where=at
        )
    name = item.get("role", item.get("name"))
    if not isinstance(name, str) or not name.strip():
        raise PlaybookError(f"{what} entry needs 'role: NAME', got {brief(plain(item))}", where=at)
    ctx = f"role {name!r}"
    inherit = ld._Inherit(when=ld._conditions(item, "when", ctx) or [], tags=ld._tags(item, ctx))
    params = {k: plain(v) for k, v in item.items() if k not in ld.ROLE_ENTRY_KEYS}
    return Call(name.strip(), at, vars=ld._scoped_vars(item, ctx), params=params, inherit=inherit)


def play_roles(reader: Any, m: YamlMap, ctx: str) -> tuple[list, dict[str, Any]]:
    """The tasks of a play's `roles:`, and the variables their entries give the play."""
    raw = m.get("roles")
    if raw is None:
        return [], {}
    if not isinstance(raw, YamlList):
        raise ld._fail(f"'roles' must be a list, got {brief(raw)}", m, "roles", ctx)
    tasks: list = []
    play_vars: dict[str, Any] = {}
    for call in _entries(raw, m.where("roles"), "roles"):
        tasks += load_role(reader, call, _sink(reader), dedup=True)
        play_vars.update(call.vars)
    return tasks, play_vars


def _role_args(raw: Any, m: YamlMap, key: str, ctx: str) -> dict[str, Any]:
    if isinstance(raw, str):
        return {"name": raw}
    if not isinstance(raw, YamlMap):
        raise ld._fail(f"{key!r} needs a mapping with 'name', got {brief(raw)}", m, key, ctx)
    args = plain(raw)
    for name in args:
        if name not in (*ld.ROLE_ARGS, "allow_duplicates", "public"):
            raise ld._fail(f"{key!r}: unknown argument {brief(name)}", raw, name, ctx)
    if not isinstance(args.get("name"), str):
        raise ld._fail(f"{key!r} needs 'name: ROLE'", m, key, ctx)
    return args


def _call(args: dict[str, Any], where: str, variables: dict, inherit: Any = None) -> Call:
    files = {k.removesuffix("_from"): str(v) for k, v in args.items() if k.endswith("_from")}
    return Call(str(args["name"]), where, files, variables, {}, inherit)


def import_role(reader: Any, m: YamlMap, key: str, handler: bool, ctx: str) -> list:
    """`import_role`: the role's tasks in place when the playbook is read; the task's
    `when`, `tags` and `vars` apply to each of them."""
    if handler:
        raise ld._fail(f"{key!r} cannot be used among handlers", m, key, ctx)
    for other in m:
        if other != key and other not in IMPORT_ROLE_KEYWORDS:
            only = ", ".join(IMPORT_ROLE_KEYWORDS)
            raise ld._fail(f"{other!r} cannot be used with {key!r} (only {only})", m, other, ctx)
    args = _role_args(m[key], m, key, ctx)
    if ld._templated(args["name"]):
        raise ld._fail(f"{key!r}: a templated role name needs include_role", m, key, ctx)
    inherit = ld._Inherit(when=ld._conditions(m, "when", ctx) or [], tags=ld._tags(m, ctx))
    call = _call(args, m.where(key), ld._scoped_vars(m, ctx), inherit)
    return load_role(reader, call, _sink(reader), dedup=False)


def check_include(reader: Any, task: Any, m: YamlMap, key: str, ctx: str) -> None:
    """An include_role whose name is known: read now, so a missing role or a bad task
    fails before anything runs and its handlers can be notified."""
    # An include is private, as in Ansible: its defaults and vars/ stay with its tasks.
    sink = Sink(reader.role_handlers, reader.handler_files)
    load_role(reader, _call(task.args, m.where(key), task.vars), sink, dedup=False)


def include_role(reader: Any, task: Any, args: dict, item: dict) -> tuple[list, list, Sink]:
    """An include_role reached: the role's tasks, handlers, and its defaults and vars/
    (the play's only where it is `public`)."""
    sink = Sink()
    saved = reader.roles_seen
    try:
        tasks = load_role(reader, _call(args, task.loc, task.vars), sink, dedup=False)
    finally:
        reader.roles_seen = saved
    return ld.inherit_from(task, tasks, item), sink.handlers, sink


def public_names(task: Any) -> set[str]:
    """The names a `public` include_role of a known role gives the rest of the play:
    its defaults and vars/ (its dependencies' are not looked for)."""
    args = task.args
    if task.module != "include_role" or ld._templated(args.get("name")):
        return set()
    if str(args.get("public", "")).strip().lower() not in {"true", "yes", "1", "on"}:
        return set()
    path = find_role(task.include.reader, str(args["name"]), task.loc)
    files = {"vars": "main", "defaults": "main", **_call(args, task.loc, {}).files}
    found = _mapping_file(path, "defaults", files["defaults"], task.loc)
    return set(found) | set(_mapping_file(path, "vars", files["vars"], task.loc))
