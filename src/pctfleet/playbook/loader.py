"""Playbooks: Ansible-shaped YAML read into plays and tasks, checked up front.

A playbook is a list of plays; each play has `hosts`, `vars`, `tasks` and
`handlers`, and each task names one module with its arguments plus optional
keywords (`when`, `register`, `notify`, ...). docs/playbooks.md lists them.

Loading validates everything that can be known before touching a machine:
unknown modules, unknown module arguments, unknown keywords, wrong types,
`notify` names without a handler, jinja2 syntax. Each problem is one
`PlaybookError` line starting with `file:line`. Nothing is rendered here:
templates are rendered per container by the engine (see templating.py).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pctfleet import ansiblecfg
from pctfleet.errors import InputError, PlaybookError, brief, did_you_mean
from pctfleet.inventory import VAR_NAME_RE
from pctfleet.playbook import delegation, kvargs
from pctfleet.playbook.ansibledefaults import PlayDefaults, play_defaults, unfollowed
from pctfleet.playbook.loops import NATIVE, WITH_LOOKUPS
from pctfleet.playbook.templating import syntax_problem
from pctfleet.playbook.varsfiles import Entry, PlayVarsFiles
from pctfleet.playbook.yamlsrc import YamlList, YamlMap, load_yaml, plain
from pctfleet.run.batches import parse_serial
from pctfleet.run.playflow import parse_percentage

TASK_KEYWORDS = (
    "name",
    "args",
    "when",
    "tags",
    "register",
    "notify",
    "changed_when",
    "failed_when",
    "retries",
    "until",
    "delay",
    "timeout",
    "no_log",
    "ignore_errors",
    "become",
    "environment",
    "vars",
    "loop",
    "loop_control",
    "run_once",
    "any_errors_fatal",
    "delegate_to",
    "check_mode",
    "diff",
    *(f"with_{kind}" for kind in (*NATIVE[1:], *WITH_LOOKUPS)),
)
HANDLER_KEYWORDS = (*TASK_KEYWORDS, "listen")
IMPORT_KEYWORDS = (
    "name", "tags", "when", "vars", "ignore_errors", "no_log", "run_once", "any_errors_fatal",
    "check_mode", "diff", "become",
)  # fmt: skip
APPLY_KEYWORDS = (
    "when", "tags", "vars", "ignore_errors", "no_log", "run_once", "any_errors_fatal",
    "check_mode", "diff", "become",
)  # fmt: skip
BLOCK_KEYWORDS = (
    "name", "block", "rescue", "always", "when", "tags", "vars", "ignore_errors", "no_log",
    "become", "run_once", "any_errors_fatal",
    "become", "check_mode", "diff", "environment",
)  # fmt: skip
LOOP_KEYS = ("loop", *(f"with_{kind}" for kind in (*NATIVE[1:], *WITH_LOOKUPS)))
LOOP_CONTROL_KEYS = ("loop_var", "index_var", "label", "pause", "extended")
PLAY_KEYS = (
    "name",
    "hosts",
    "defaults",
    "vars",
    "vars_files",
    "pre_tasks",
    "roles",
    "tasks",
    "post_tasks",
    "handlers",
    "tags",
    "gather_facts",
    "become",
    "serial",
    "max_fail_percentage",
    "any_errors_fatal",
    "force_handlers",
    *("environment", "ignore_errors", "no_log", "check_mode", "diff"),  # given to each task
    *("collections", "strategy", "gather_subset", "gather_timeout", "order"),  # warned
)
# Play keys read and not followed: each named in a warning where a play has it.
PLAY_KEYS_WARNED = {
    "collections": "modules and filters are ansible.builtin's, known by their short names",
    "strategy": "containers run as the linear strategy runs hosts",
    "gather_subset": "the facts read are a fixed subset (see docs/playbooks.md, Facts)",
    "gather_timeout": "facts are read with the play's first probe, under --timeout",
    "order": "containers run in the order of the play's hosts pattern (order: inventory)",
}
IMPORT_MODULES = ("import_tasks", "import_role", "include_tasks", "include_role")
DYNAMIC_MODULES = ("include_tasks", "include_role")
ROLE_ARGS = ("name", "tasks_from", "vars_from", "defaults_from", "handlers_from")
ROLE_ENTRY_KEYS = ("role", "name", "vars", "tags", "when")
# Modules that take a bare string, and the argument it is.
FREE_FORM_MODULES = {"command": "cmd", "shell": "cmd", "include_vars": "file", "meta": "free_form"}
META_ACTIONS = ("flush_handlers", "end_host", "end_play", "end_batch", "noop")
META_REFUSED = {
    "clear_facts": "facts are read per task, there is no fact cache to clear",
    "clear_host_errors": "a failed container stays failed for the rest of the run",
    "refresh_inventory": "the inventory is read once, before the run",
    "reset_connection": "connections are per node and shared by its containers",
    "end_role": "roles are flattened into the play's tasks",
}
FQCN_PREFIXES = ("ansible.builtin.", "ansible.legacy.")
DEFAULT_DELAY = 5.0
DEFAULT_UNTIL_RETRIES = 3
MAX_IMPORT_DEPTH = 20

# Ansible features users may try; naming them beats "unknown keyword".
UNSUPPORTED = {
    "rescue": "'rescue' belongs to a block (block: [...], rescue: [...])",
    "always": "'always' belongs to a block (block: [...], always: [...])",
    "vars_prompt": "vars_prompt is not supported: runs are unattended, pass values with -e",
    "delegate_facts": "delegate_facts is not supported: a delegated task's facts stay its own",
    "become_user": "become_user is not supported: tasks run as root through pct exec",
    "async": "async is not supported: use 'timeout'",
    "import_playbook": "import_playbook is not supported: run the playbooks one after another",
}


@dataclass(frozen=True)
class Task:
    """One task, unrendered: `args` and conditions may hold jinja2 templates.

    `when`, `changed_when` and `failed_when` are lists of expressions that
    must all hold (None for the last two means "not set"). `retries` counts the
    extra attempts after the first; it defaults to 3 when `until` is set."""

    name: str
    module: str
    args: dict[str, Any] = field(default_factory=dict)
    when: list[str] = field(default_factory=list)
    tags: frozenset[str] = frozenset()
    register: str | None = None
    notify: list[str] = field(default_factory=list)
    changed_when: list[str] | None = None
    failed_when: list[str] | None = None
    retries: int = 0
    until: str | None = None
    delay: float = DEFAULT_DELAY
    timeout: float | None = None
    no_log: bool | None = None  # None: not written (a block's value applies)
    ignore_errors: bool | None = None
    # Layers, the play's first: a mapping, or a template that renders to one when the
    # task runs (`environment: "{{ proxy_env }}"`); later layers win, as in Ansible.
    environment: tuple[dict[str, Any] | str, ...] = ()
    loc: str = ""
    vars: dict[str, Any] = field(default_factory=dict)  # block vars, then the task's own
    # Its role's defaults: over other roles' defaults, under every other variable.
    defaults: dict[str, Any] = field(default_factory=dict)
    loop: Loop | None = None
    # Role params, role_path and an include's loop variable: over registered results.
    params: dict[str, Any] = field(default_factory=dict)
    role: str = ""  # the role the task came from (its name is shown as "role : name")
    include: Any = None  # include_tasks/include_role: what expand_include needs
    run_once: bool | None = None  # None: not written (a block's value applies)
    any_errors_fatal: bool | None = None  # None: the block's, else the play's
    delegate_to: str | None = None  # set: runs on this machine (see delegation.py)
    check_mode: bool | None = None  # None: the run's --check
    diff: bool | None = None  # None: the run's --diff
    implicit: bool = False  # added by the play, not written: never reported
    # The keywords of the blocks, imports, roles and play around it (an _Inherit): what
    # the tasks an include_tasks/include_role brings in get, as in ansible-core, where
    # the include's own keywords stay its own.
    inherited: Any = field(default=None, compare=False)


@dataclass(frozen=True)
class Loop:
    """`loop` or a `with_*` keyword (`kind` is what follows `with_`, or "loop"), unrendered,
    with its `loop_control`."""

    kind: str
    terms: Any
    loop_var: str = "item"
    index_var: str | None = None
    label: str | None = None
    pause: float = 0.0
    extended: bool = False


@dataclass(frozen=True)
class Block:
    """`block`/`rescue`/`always`. The block's `when`, `tags`, `vars` and
    `ignore_errors` were copied into its tasks when it was read."""

    name: str
    block: list[Task | Block] = field(default_factory=list)
    rescue: list[Task | Block] = field(default_factory=list)
    always: list[Task | Block] = field(default_factory=list)
    loc: str = ""


def leaves(nodes: Iterable[Task | Block]) -> list[Task]:
    """Every task in `nodes`, blocks opened (block, rescue, always), in order."""
    out: list[Task] = []
    for node in nodes:
        if isinstance(node, Block):
            out += leaves([*node.block, *node.rescue, *node.always])
        else:
            out.append(node)
    return out


@dataclass(frozen=True)
class Handler(Task):
    """A task run once at the end of a play when notified by `name` or a `listen` topic."""

    listen: list[str] = field(default_factory=list)

    @property
    def names(self) -> frozenset[str]:
        """What a notify may call it: its name, and a role's also without "role : "."""
        return frozenset({self.name, self.name.split(" : ", 1)[-1] if self.role else self.name})


@dataclass(frozen=True)
class Play:
    name: str
    hosts: tuple[str, ...] = ("all",)  # patterns, a `hosts:` list item each
    vars: dict[str, Any] = field(default_factory=dict)
    tasks: list[Task | Block] = field(default_factory=list)
    handlers: list[Handler] = field(default_factory=list)
    tags: frozenset[str] = frozenset()
    loc: str = ""
    # Like a role's defaults: below every inventory level, so inventories override them.
    defaults: dict[str, Any] = field(default_factory=dict)
    serial: list[str] = field(default_factory=list)  # batch sizes; empty: one batch
    max_fail_percentage: float | None = None
    any_errors_fatal: bool = False
    gather_facts: bool = True  # as in Ansible; the facts come with the first probe
    vars_files: PlayVarsFiles | None = None  # where a name is a template: per container
    force_handlers: bool | None = None  # None: the run's (--force-handlers, ansible.cfg)
    forced_tasks: list[Task | Block] = field(default_factory=list)  # `tasks` as it runs them

    def task_list(self, force_handlers: bool) -> list[Task | Block]:
        """The tasks as they run: with force_handlers (the play's, else the run's),
        each section in a block whose `always` runs its notified handlers."""
        forced = self.force_handlers if self.force_handlers is not None else force_handlers
        return self.forced_tasks if forced else self.tasks


@dataclass(frozen=True)
class Playbook:
    path: str
    plays: list[Play] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # what was read but not used


# ---------------------------------------------------------------- tags


def select_tasks(
    tasks: Iterable[Task], tags: set[str] | None = None, skip_tags: set[str] | None = None
) -> list[Task]:
    """Tasks that run for `--tags`/`--skip-tags`, with Ansible's rules:
    `always` runs unless skipped by name, `never` runs only when asked for by
    one of its tags, `all` means every task but `never` ones, `tagged` and
    `untagged` match tasks with and without tags."""
    chosen: list = []
    for node in tasks:
        if not isinstance(node, Block):
            if should_run(node.tags, tags, skip_tags):
                chosen.append(node)
            continue
        parts = [
            select_tasks(part, tags, skip_tags) for part in (node.block, node.rescue, node.always)
        ]
        if any(parts):
            chosen.append(replace(node, block=parts[0], rescue=parts[1], always=parts[2]))
    return chosen


def should_run(task_tags: Iterable[str], only: set[str] | None, skip: set[str] | None) -> bool:
    tags = set(task_tags) or {"untagged"}
    untagged = tags == {"untagged"}
    only = set(only or ()) or {"all"}
    run = (
        "always" in tags
        or ("all" in only and "never" not in tags)
        or not tags.isdisjoint(only)
        or ("tagged" in only and not untagged and "never" not in tags)
    )
    if run and skip:
        if "all" in skip:
            run = "always" in tags and "always" not in skip
        elif not tags.isdisjoint(skip) or ("tagged" in skip and not untagged):
            run = False
    return run


# ---------------------------------------------------------------- small validators


class _Reader:
    """State while reading one playbook: known modules, the import chain, and per
    play the roles already run, their handlers and defaults."""

    def __init__(
        self,
        path: Path,
        known_modules: Mapping[str, set[str] | None],
        roles_path: Sequence[str] = (),
    ) -> None:
        self.path = path
        self.known = known_modules
        self.imports: list[Path] = []
        self.roles_path = list(roles_path)
        self.warnings: list[str] = []
        self.defaults = PlayDefaults()  # ansible.cfg's, for what a play does not say
        self.new_play()

    def new_play(self) -> None:
        self.roles_seen: set[tuple[Path, str]] = set()
        self.role_handlers: list[Handler] = []
        self.handler_files: set[Path] = set()
        self.role_defaults: dict[str, Any] = {}
        self.role_vars: dict[str, Any] = {}

    def canonical(self, key: str) -> str | None:
        """Module name for a task key (`ansible.builtin.copy` -> `copy`), or None."""
        if key in self.known:
            return key
        for prefix in FQCN_PREFIXES:
            if key.startswith(prefix) and key[len(prefix) :] in self.known:
                return key[len(prefix) :]
        return None


def _fail(message: str, m: YamlMap | YamlList, key: Any = None, ctx: str = "") -> PlaybookError:
    where = m.where(key) if isinstance(m, YamlMap | YamlList) else None
    return PlaybookError(f"{ctx}: {message}" if ctx else message, where=where)


def _str_list(m: YamlMap, key: str, ctx: str, *, allow_bool: bool = False) -> list[str]:
    """A string or a list of strings (numbers, and booleans if allowed, as text)."""
    raw = m.get(key)
    if raw is None:
        return []
    items = raw if isinstance(raw, list) else [raw]
    scalar = (str, int, float) if not allow_bool else (str, int, float, bool)
    if any(not isinstance(i, scalar) or (isinstance(i, bool) and not allow_bool) for i in items):
        raise _fail(f"{key!r} must be a string or a list of strings, got {brief(raw)}", m, key, ctx)
    return [str(i) for i in items]


def _tags(m: YamlMap, ctx: str) -> frozenset[str]:
    words = _str_list(m, "tags", ctx)
    # Ansible also accepts `tags: a,b` as a comma-separated string.
    return frozenset(w.strip() for item in words for w in item.split(",") if w.strip())


def _bool(m: YamlMap, key: str, ctx: str, default: bool | None = False) -> bool | None:
    value = m.get(key, default)
    if value is not default and not isinstance(value, bool):
        raise _fail(f"{key!r} must be true or false, got {brief(value)}", m, key, ctx)
    return value


# Keywords that may be a template, rendered as the task starts (`ignore_errors: "{{
# ansible_check_mode }}"`, as in Ansible); the others shape the run before it starts.
TEMPLATED_FLAGS = ("ignore_errors", "no_log", "check_mode", "diff")


def _flag(m: YamlMap, key: str, ctx: str) -> bool | str | None:
    """One of TEMPLATED_FLAGS: true/false, or a template of one (kept as written)."""
    value = m.get(key)
    if isinstance(value, str) and "{{" in value:
        _check_jinja(value, m, key, ctx)
        return value
    return _bool(m, key, ctx, None)


def keyword_templates(task: Task) -> list[Any]:
    """What of a task's keywords is rendered when it runs: templated flags, environment."""
    flags = [getattr(task, key) for key in TEMPLATED_FLAGS]
    return [*(flag for flag in flags if isinstance(flag, str)), *task.environment]


def _number(m: YamlMap, key: str, ctx: str, default: Any, *, integer: bool = False) -> Any:
    value = m.get(key)
    if value is None:
        return default
    kinds = int if integer else (int, float)
    if (
        isinstance(value, bool)
        or not isinstance(value, kinds)
        or value < 0
        or not math.isfinite(value)
    ):
        kind = "a whole number" if integer else "a number"
        raise _fail(f"{key!r} must be {kind} >= 0, got {brief(value)}", m, key, ctx)
    return value if integer else float(value)


def _text(m: YamlMap, key: str, ctx: str, default: str | None = None) -> str | None:
    value = m.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise _fail(f"{key!r} must be a string, got {brief(value)}", m, key, ctx)
    return str(value)


def _mapping(m: YamlMap, key: str, ctx: str, *, var_names: bool = False) -> dict[str, Any]:
    value = m.get(key)
    if value is None:
        return {}
    if not isinstance(value, YamlMap):
        raise _fail(f"{key!r} must be a mapping, got {brief(value)}", m, key, ctx)
    return _checked_names(value, key, ctx, var_names)


def _checked_names(value: YamlMap, what: str, ctx: str, var_names: bool) -> dict[str, Any]:
    for name in value:
        bad_name = var_names and not VAR_NAME_RE.match(str(name))
        if not isinstance(name, str) or bad_name:
            raise _fail(f"{brief(name)} is not a valid name in {what!r}", value, name, ctx)
    return plain(value)


def _check_jinja(value: Any, m: YamlMap, key: Any, ctx: str, *, expr: bool = False) -> None:
    """Report jinja2 syntax errors at load time, with the playbook's line."""
    for text in _strings(value):
        problem = syntax_problem(text, expression=expr)
        if problem:
            raise _fail(f"{key!r}: {problem} in {brief(text)}", m, key, ctx)


def _strings(value: Any, depth: int = 0) -> list[str]:
    if depth > 50:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [s for v in value.values() for s in _strings(v, depth + 1)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v, depth + 1)]
    return []


# ---------------------------------------------------------------- tasks


def _task_label(m: YamlMap) -> str:
    name = m.get("name")
    return f"task {str(name)!r}" if isinstance(name, str | int | float) else "task"


def _module_key(reader: _Reader, m: YamlMap, keywords: Sequence[str], ctx: str) -> str:
    """The one key of `m` that names a module; errors for none, two, or unknown."""
    others = [k for k in m if k not in keywords]
    for key in others:
        if not isinstance(key, str):
            raise _fail(f"unknown key {brief(key)}", m, key, ctx)
        if key in UNSUPPORTED:
            raise _fail(f"{key!r}: {UNSUPPORTED[key]}", m, key, ctx)
        if key.startswith("with_"):
            known = ", ".join(LOOP_KEYS)
            raise _fail(f"{key!r} is not supported (loops: {known})", m, key, ctx)
        if reader.canonical(key) is None and key not in (*_import_names(), "local_action"):
            choices = [*keywords, *reader.known]
            raise _fail(
                f"unknown module or keyword {key!r}{did_you_mean(key, choices)}", m, key, ctx
            )
    if not others:
        raise _fail(
            f"task names no module (known: {', '.join(sorted(reader.known))})", m, None, ctx
        )
    if len(others) > 1:
        raise _fail(
            f"task names more than one module: {', '.join(map(repr, others))}", m, others[1], ctx
        )
    return others[0]


def _bare(key: str) -> str:
    for prefix in FQCN_PREFIXES:
        key = key.removeprefix(prefix)
    return key


def _import_names() -> set[str]:
    return {f"{p}{name}" for name in IMPORT_MODULES for p in ("", *FQCN_PREFIXES)}


def _module_args(
    reader: _Reader, m: YamlMap, key: str, module: str, ctx: str, raw: Any = ...
) -> dict:
    raw = m[key] if raw is ... else raw
    if raw is None:
        args: dict[str, Any] = {}
    elif isinstance(raw, dict):  # a YamlMap, or local_action's `module=x k=v` words
        args = plain(raw)
    elif isinstance(raw, str) and module in ("command", "shell"):
        args = _command_words(raw, m, key, ctx)
        if module == "command":  # as before, and as ansible-core runs it: not command's
            args.pop("executable", None)
    elif isinstance(raw, str) and module in FREE_FORM_MODULES:
        args = {FREE_FORM_MODULES[module]: raw}
    elif isinstance(raw, str | int | float) and not isinstance(raw, bool):
        args = _key_value_args(str(raw), m, key, ctx)
    else:
        raise _fail(f"arguments of {key!r} must be a mapping, got {brief(raw)}", m, key, ctx)
    args = {**_mapping(m, "args", ctx), **args}
    sources = [s for s in (raw, m.get("args")) if isinstance(s, YamlMap)]
    _check_args(reader, args, sources, m, key, module, ctx)
    _check_jinja(args, m, key, ctx)
    return args


def _key_value_args(text: str, m: YamlMap, key: str, ctx: str) -> dict[str, str]:
    """Ansible's legacy `copy: src=a dest=b` form, split as ansible-core splits it."""
    try:
        args = kvargs.parse_kv(text)
    except kvargs.SplitError as err:
        raise _fail(f"cannot parse arguments of {key!r}: {err}", m, key, ctx) from None
    if "_raw_params" in args:
        word = kvargs.split_args(args["_raw_params"])[0]
        raise _fail(
            f"module {key!r} takes a mapping or key=value arguments, got {brief(word)}", m, key, ctx
        )
    return args


def _command_words(text: str, m: YamlMap, key: str, ctx: str) -> dict[str, str]:
    """`shell: make all chdir=/src creates=/src/out`: the command and its options."""
    try:
        args = kvargs.parse_kv(text, kvargs.COMMAND_OPTIONS)
    except kvargs.SplitError as err:
        raise _fail(f"cannot parse arguments of {key!r}: {err}", m, key, ctx) from None
    return {"cmd": args.pop("_raw_params", ""), **args}


def _check_args(
    reader: _Reader,
    args: dict,
    sources: Sequence[YamlMap],
    m: YamlMap,
    key: str,
    module: str,
    ctx: str,
) -> None:
    """Every argument name must be one the module takes; errors point at its line."""
    allowed = reader.known[module]
    for name in args:
        if isinstance(name, str) and (allowed is None or name in allowed):
            continue
        at, at_key = next(((s, name) for s in sources if name in s), (m, key))
        if not isinstance(name, str):
            raise _fail(
                f"argument name {brief(name)} of module {module!r} must be a string",
                at,
                at_key,
                ctx,
            )
        raise _fail(
            f"unknown argument {name!r} for module {module!r}"
            f"{did_you_mean(name, allowed or ())}; it takes: "
            f"{', '.join(sorted(allowed or ())) or 'no arguments'}",
            at,
            at_key,
            ctx,
        )


def _conditions(m: YamlMap, key: str, ctx: str) -> list[str] | None:
    if key not in m or m[key] is None:
        return None
    exprs = _str_list(m, key, ctx, allow_bool=True)
    _check_jinja(exprs, m, key, ctx, expr=True)
    return exprs


def _task_fields(m: YamlMap, ctx: str) -> dict[str, Any]:
    """The keywords of a task, validated (everything but name/module/args)."""
    until = _conditions(m, "until", ctx)
    if until is not None and len(until) != 1:
        raise _fail("'until' must be one expression", m, "until", ctx)
    register = _text(m, "register", ctx)
    if register is not None and not VAR_NAME_RE.match(register):
        raise _fail(f"'register' must be a variable name, got {register!r}", m, "register", ctx)
    default_retries = DEFAULT_UNTIL_RETRIES if until else 0
    timeout = _number(m, "timeout", ctx, None)
    if timeout == 0:
        raise _fail("'timeout' must be more than 0 seconds", m, "timeout", ctx)
    return dict(
        when=_conditions(m, "when", ctx) or [],
        tags=_tags(m, ctx),
        register=register,
        notify=_str_list(m, "notify", ctx),
        changed_when=_conditions(m, "changed_when", ctx),
        failed_when=_conditions(m, "failed_when", ctx),
        retries=_number(m, "retries", ctx, default_retries, integer=True),
        until=until[0] if until else None,
        delay=_number(m, "delay", ctx, DEFAULT_DELAY),
        timeout=timeout,
        no_log=_flag(m, "no_log", ctx),
        ignore_errors=_flag(m, "ignore_errors", ctx),
        environment=_environment(m, ctx),
        vars=_scoped_vars(m, ctx),
        loop=_loop(m, ctx),
        run_once=_bool(m, "run_once", ctx, None),
        any_errors_fatal=_bool(m, "any_errors_fatal", ctx, None),
        delegate_to=_text(m, "delegate_to", ctx),
        check_mode=_flag(m, "check_mode", ctx),
        diff=_flag(m, "diff", ctx),
    )


def _scoped_vars(m: YamlMap, ctx: str) -> dict[str, Any]:
    variables = _mapping(m, "vars", ctx, var_names=True)
    _check_jinja(variables, m, "vars", ctx)
    return variables


def _loop(m: YamlMap, ctx: str) -> Loop | None:
    given = [k for k in LOOP_KEYS if k in m]
    if len(given) > 1:
        raise _fail(f"one loop per task, got {', '.join(map(repr, given))}", m, given[1], ctx)
    if not given:
        if "loop_control" in m:
            raise _fail("'loop_control' needs 'loop' or a with_* keyword", m, "loop_control", ctx)
        return None
    key = given[0]
    terms = plain(m[key]) if isinstance(m[key], YamlMap | YamlList) else m[key]
    if terms is None or isinstance(terms, bool):
        raise _fail(f"{key!r} needs a list or a template, got {brief(terms)}", m, key, ctx)
    _check_jinja(terms, m, key, ctx)
    return Loop(key.removeprefix("with_"), terms, **_loop_control(m, ctx))


def _loop_control(m: YamlMap, ctx: str) -> dict[str, Any]:
    raw = m.get("loop_control")
    if raw is None:
        return {}
    if not isinstance(raw, YamlMap):
        raise _fail(f"'loop_control' must be a mapping, got {brief(raw)}", m, "loop_control", ctx)
    for key in raw:
        if key not in LOOP_CONTROL_KEYS:
            choices = ", ".join(LOOP_CONTROL_KEYS)
            raise _fail(f"unknown loop_control key {brief(key)} (known: {choices})", raw, key, ctx)
    names = {k: _text(raw, k, ctx) for k in ("loop_var", "index_var")}
    for key, name in names.items():
        if name is not None and not VAR_NAME_RE.match(name):
            raise _fail(f"{key!r} must be a variable name, got {name!r}", raw, key, ctx)
    label = _text(raw, "label", ctx)
    _check_jinja(label or "", raw, "label", ctx)
    return dict(
        loop_var=names["loop_var"] or "item",
        index_var=names["index_var"],
        label=label,
        pause=_number(raw, "pause", ctx, 0.0),
        extended=bool(_bool(raw, "extended", ctx)),
    )


def _parse_task(reader: _Reader, m: YamlMap, handler: bool) -> list:
    """One task (or, for import_tasks, the tasks it brings in)."""
    ctx = _task_label(m)
    if "block" in m:
        return [_parse_block(reader, m, handler, ctx)]
    keywords = HANDLER_KEYWORDS if handler else TASK_KEYWORDS
    key = _module_key(reader, m, keywords, ctx)
    if key in _import_names():
        kind = _bare(key)
        if kind in DYNAMIC_MODULES:
            return [_include_task(reader, m, key, kind, handler, ctx)]
        if kind == "import_role":
            from pctfleet.playbook import roles

            return roles.import_role(reader, m, key, handler, ctx)
        return _import(reader, m, key, handler, ctx)
    fields = _task_fields(m, ctx)
    module, raw = _local_action(reader, m, key, fields, ctx)
    name = _text(m, "name", ctx, module) or module
    _check_jinja(name, m, "name", ctx)
    loc = m.where()
    args = _module_args(reader, m, key, module, ctx, raw)
    if module == "meta":
        _check_meta(args, m, key, ctx)
    if handler:
        return [Handler(name, module, args, listen=_str_list(m, "listen", ctx), loc=loc, **fields)]
    return [Task(name, module, args, loc=loc, **fields)]


def _local_action(reader: _Reader, m: YamlMap, key: str, fields: dict, ctx: str) -> tuple:
    """The module and raw arguments of the task; `local_action` delegates it to localhost."""
    module, raw = reader.canonical(key), ...
    if key == "local_action":
        if "delegate_to" in m:
            both = "'delegate_to' and 'local_action' exclude each other"
            raise _fail(both, m, "delegate_to", ctx)
        try:
            module, raw = delegation.split_local_action(m[key], reader.canonical)
        except PlaybookError as exc:
            raise _fail(exc.message, m, key, ctx) from None
        fields["delegate_to"] = "localhost"
    assert module is not None  # _module_key refused unknown modules
    _check_delegation(m, "delegate_to" if "delegate_to" in m else key, module, fields, ctx)
    return module, raw


def _check_delegation(m: YamlMap, key: str, module: str, fields: dict, ctx: str) -> None:
    if fields.get("delegate_to") is not None:
        problem = delegation.delegate_problem(fields["delegate_to"], module)
        if problem:
            raise _fail(problem, m, key, ctx)


def _parse_block(reader: _Reader, m: YamlMap, handler: bool, ctx: str) -> Block:
    ctx = ctx.replace("task", "block", 1)
    if handler:
        raise _fail("blocks are not supported among handlers", m, "block", ctx)
    for key in m:
        if key not in BLOCK_KEYWORDS:
            known = ", ".join(BLOCK_KEYWORDS)
            raise _fail(f"{brief(key)} cannot be used on a block (only {known})", m, key, ctx)
    parts = {key: _task_list(reader, m, key, ctx, handler) for key in ("block", "rescue", "always")}
    if not parts["block"] and "block" in m and not isinstance(m["block"], YamlList):
        raise _fail(f"'block' must be a list of tasks, got {brief(m['block'])}", m, "block", ctx)
    inherit = _inherited(m, ctx)
    name = _text(m, "name", ctx, "block") or "block"
    return Block(name, **{k: inherit.apply(v) for k, v in parts.items()}, loc=m.where())


@dataclass(frozen=True)
class _Inherit:
    """What a block (or an import, or a play: `tags`) gives each task inside it."""

    when: list[str] = field(default_factory=list)
    tags: frozenset[str] = frozenset()
    vars: dict[str, Any] = field(default_factory=dict)
    ignore_errors: bool | None = None
    no_log: bool | None = None
    run_once: bool | None = None
    any_errors_fatal: bool | None = None
    check_mode: bool | None = None
    diff: bool | None = None
    environment: tuple[dict[str, Any] | str, ...] = ()  # a play's: under a task's
    defaults: dict[str, Any] = field(default_factory=dict)  # a role's, for its own tasks

    def apply(self, nodes: list) -> list:
        out: list = []
        for node in nodes:
            if isinstance(node, Block):
                parts = (node.block, node.rescue, node.always)
                block, rescue, always = (self.apply(p) for p in parts)
                out.append(replace(node, block=block, rescue=rescue, always=always))
                continue
            out.append(
                replace(
                    node,
                    when=[*self.when, *node.when],
                    tags=node.tags | self.tags,
                    vars={**self.vars, **node.vars},
                    ignore_errors=_first(node.ignore_errors, self.ignore_errors),
                    no_log=_first(node.no_log, self.no_log),
                    run_once=_first(node.run_once, self.run_once),
                    any_errors_fatal=_first(node.any_errors_fatal, self.any_errors_fatal),
                    check_mode=_first(node.check_mode, self.check_mode),
                    diff=_first(node.diff, self.diff),
                    environment=(*self.environment, *node.environment),
                    defaults={**self.defaults, **node.defaults},
                    inherited=self.around(node.inherited),
                )
            )
        return out

    def around(self, inner: _Inherit | None) -> _Inherit:
        """These keywords around `inner` (a block's inside a play's): inner ones win."""
        if inner is None:
            return self
        flags = ("ignore_errors", "no_log", "run_once", "any_errors_fatal", "check_mode", "diff")
        return _Inherit(
            when=[*self.when, *inner.when],
            tags=self.tags | inner.tags,
            vars={**self.vars, **inner.vars},
            environment=(*self.environment, *inner.environment),
            defaults={**self.defaults, **inner.defaults},
            **{key: _first(getattr(inner, key), getattr(self, key)) for key in flags},
        )


def _inherited(m: YamlMap, ctx: str) -> _Inherit:
    """What a block's (or a static import's) keywords give each task inside it."""
    return _Inherit(
        when=_conditions(m, "when", ctx) or [],
        tags=_tags(m, ctx),
        vars=_scoped_vars(m, ctx),
        ignore_errors=_flag(m, "ignore_errors", ctx),
        no_log=_flag(m, "no_log", ctx),
        run_once=_bool(m, "run_once", ctx, None),
        any_errors_fatal=_bool(m, "any_errors_fatal", ctx, None),
        check_mode=_flag(m, "check_mode", ctx),
        diff=_flag(m, "diff", ctx),
        environment=_environment(m, ctx),
    )


def _first(*values: bool | None) -> bool | None:
    return next((v for v in values if v is not None), None)


def _task_list(reader: _Reader, m: YamlMap, key: str, ctx: str, handler: bool) -> list:
    raw = m.get(key)
    if raw is None:
        return []
    if not isinstance(raw, YamlList):
        raise _fail(f"{key!r} must be a list of tasks, got {brief(raw)}", m, key, ctx)
    return _tasks_of(reader, raw, handler)


def _tasks_of(reader: _Reader, items: YamlList, handler: bool) -> list:
    out: list = []
    for i, item in enumerate(items):
        if not isinstance(item, YamlMap):
            raise _fail(
                f"a task must be a mapping (name: ..., module: ...), got {brief(item)}", items, i
            )
        out += _parse_task(reader, item, handler)
    return out


# ---------------------------------------------------------------- import_tasks


def _import(reader: _Reader, m: YamlMap, key: str, handler: bool, ctx: str) -> list:
    """Expand `import_tasks: file.yml` in place; its keywords (`when`, `tags`, `vars`,
    ...) apply to each task, as a block's do."""
    for other in m:
        if other != key and other not in IMPORT_KEYWORDS:
            raise _fail(
                f"{other!r} cannot be used with {key!r} (only {', '.join(IMPORT_KEYWORDS)})",
                m,
                other,
                ctx,
            )
    path = _import_path(reader, m, key, ctx)
    if len(reader.imports) >= MAX_IMPORT_DEPTH or path.resolve() in [
        p.resolve() for p in reader.imports
    ]:
        chain = " -> ".join(p.name for p in [*reader.imports, path])
        raise _fail(f"import loop or too deep: {chain}", m, key, ctx)
    items = load_yaml(path, what="a list of tasks")
    if not isinstance(items, YamlList):
        raise _fail(f"{path} must hold a list of tasks, got {brief(items)}", m, key, ctx)
    inherit = _inherited(m, ctx)
    reader.imports.append(path)
    try:
        tasks = _tasks_of(reader, items, handler)
    finally:
        reader.imports.pop()
    return inherit.apply(tasks)


def _import_path(reader: _Reader, m: YamlMap, key: str, ctx: str) -> Path:
    raw = m[key]
    if isinstance(raw, YamlMap) and set(raw) <= {"file"}:
        raw = raw.get("file")
    if not isinstance(raw, str) or not raw.strip():
        raise _fail(f"{key!r} must name a task file, got {brief(raw)}", m, key, ctx)
    if "{{" in raw or "{%" in raw:
        raise _fail(
            f"{key!r}: a templated file name is not supported (tasks are "
            "imported when the playbook is read)",
            m,
            key,
            ctx,
        )
    current = reader.imports[-1] if reader.imports else reader.path
    try:
        return _task_file(reader, raw, current, key)
    except PlaybookError as exc:
        raise _fail(exc.message, m, key, ctx) from None


# ---------------------------------------------------------------- include_tasks, include_role


@dataclass(frozen=True)
class Include:
    """What a dynamic include needs to load its tasks when it is reached."""

    reader: Any
    current: Path  # the file the include is written in
    handler: bool
    applied: Any = None  # `apply`: keywords given to each task it brings in (an _Inherit)


def _include_task(
    reader: _Reader, m: YamlMap, key: str, kind: str, handler: bool, ctx: str
) -> Task:
    """`include_tasks`/`include_role`: one task; the engine expands it when reached,
    with its name rendered, once per loop item (`expand_include`)."""
    raw = m[key]
    if isinstance(raw, str) and kind == "include_tasks":
        args: dict[str, Any] = {"file": raw}
    elif isinstance(raw, YamlMap):
        args = plain(raw)
    else:
        raise _fail(f"{key!r} needs a mapping or a file name, got {brief(raw)}", m, key, ctx)
    applied = _applied(raw, ctx) if isinstance(raw, YamlMap) and "apply" in raw else None
    args.pop("apply", None)
    _check_args(reader, args, [raw] if isinstance(raw, YamlMap) else [], m, key, kind, ctx)
    _check_jinja(args, m, key, ctx)
    fields = _task_fields(m, ctx)
    _check_delegation(m, "delegate_to", kind, fields, ctx)
    # Unnamed, ansible-core calls an include_role "include_role : ROLE" (as written).
    unnamed = f"{key} : {args.get('name')}" if kind == "include_role" else kind
    name = _text(m, "name", ctx) or unnamed
    current = reader.imports[-1] if reader.imports else reader.path
    include = Include(reader, current, handler, applied)
    task = Task(name, kind, args, loc=m.where(), include=include, **fields)
    if kind == "include_role" and not _templated(args.get("name")):
        from pctfleet.playbook import roles

        roles.check_include(reader, task, m, key, ctx)  # a missing role fails before running
    return task


def _applied(raw: YamlMap, ctx: str) -> _Inherit:
    """An include's `apply`: block keywords for each task it brings in (not for the
    include itself, whose own keywords decide whether it runs)."""
    keys = raw["apply"]
    if not isinstance(keys, YamlMap):
        raise _fail(f"'apply' must be a mapping of keywords, got {brief(keys)}", raw, "apply", ctx)
    for key in keys:
        if key not in APPLY_KEYWORDS:
            known = ", ".join(APPLY_KEYWORDS)
            raise _fail(f"{brief(key)} cannot be used in 'apply' (only {known})", keys, key, ctx)
    return _inherited(keys, ctx)


def _templated(value: Any) -> bool:
    return not isinstance(value, str) or "{{" in value or "{%" in value


def expand_include(
    task: Task, args: dict[str, Any], item: dict[str, Any]
) -> tuple[list, list, Any]:
    """The tasks (and, for a role, handlers and its Sink: defaults and vars/) an include
    brings in, with its rendered `args`; `item` (the loop variables) goes over each
    task's variables."""
    inc: Include = task.include
    reader = inc.reader
    if task.module == "include_role":
        from pctfleet.playbook import roles

        tasks, handlers, sink = roles.include_role(reader, task, args, item)
        return (inc.applied.apply(tasks) if inc.applied else tasks), handlers, sink
    path = _task_file(reader, str(args["file"]), inc.current, task.module, task.loc)
    reader.imports.append(path)
    try:
        nodes = _tasks_of(reader, _task_items(path, task.loc), inc.handler)
    finally:
        reader.imports.pop()
    nodes = inc.applied.apply(nodes) if inc.applied else nodes
    return inherit_from(task, nodes, item), [], None


def inherit_from(task: Task, nodes: list, item: dict[str, Any]) -> list:
    """What tasks brought in by `task` get from it: its vars, params and role, and the
    keywords of what is around it (its own `when`, `tags` ... were for it alone)."""
    around: dict[str, Any] = {}
    if task.inherited is not None:  # vars come with the task's own, defaults by role
        nodes = replace(task.inherited, vars={}, defaults={}).apply(nodes)
        around = task.inherited.vars
    # The include's own `vars` are include params, as in ansible-core: over set_fact,
    # registered results and the included tasks' own vars (a block's stay task vars).
    own = {k: v for k, v in task.vars.items() if k not in around or around[k] is not v}
    params = {**task.params, **own, **item}
    return _walk(
        nodes,
        lambda t: replace(
            t,
            vars={**task.vars, **t.vars},
            params={**params, **t.params},
            role=t.role or task.role,
            name=t.name if t.role or not task.role else f"{task.role} : {t.name}",
        ),
    )


def _walk(nodes: list, change: Any) -> list:
    """`nodes` with `change` applied to every task, blocks opened."""
    out: list = []
    for node in nodes:
        if isinstance(node, Block):
            parts = (_walk(p, change) for p in (node.block, node.rescue, node.always))
            block, rescue, always = parts
            out.append(replace(node, block=block, rescue=rescue, always=always))
        else:
            out.append(change(node))
    return out


def _task_items(path: Path, where: str) -> YamlList:
    items = load_yaml(path, what="a list of tasks")
    if not isinstance(items, YamlList):
        raise PlaybookError(f"{path} must hold a list of tasks, got {brief(items)}", where=where)
    return items


def _task_file(reader: _Reader, name: str, current: Path, key: str, where: str = "") -> Path:
    """A task file next to the file naming it, else next to the playbook."""
    for base in dict.fromkeys([current.parent, reader.path.parent]):
        candidate = Path(os.path.normpath(base / name))
        if candidate.is_file():
            return candidate
    raise PlaybookError(
        f"{key!r}: task file {name!r} not found next to {current.name} or {reader.path.name}",
        where=where or None,
    )


# ---------------------------------------------------------------- plays


def _check_play_keys(m: YamlMap, ctx: str) -> None:
    for key in m:
        if key in PLAY_KEYS:
            continue
        if key in UNSUPPORTED:
            raise _fail(f"{key!r}: {UNSUPPORTED[key]}", m, key, ctx)
        if key not in PLAY_KEYS:
            raise _fail(
                f"unknown play key {brief(key)}{did_you_mean(key, PLAY_KEYS)}; "
                f"expected one of: {', '.join(PLAY_KEYS)}",
                m,
                key,
                ctx,
            )


def _hosts(m: YamlMap, ctx: str) -> tuple[str, ...]:
    """The play's host patterns, a list item each: ansible-core splits each item apart,
    so `["gpu:!b", a]` is gpu and a without b. A template is rendered as the run
    starts (run.playbookrun.play_patterns)."""
    words = tuple(w.strip() for w in _str_list(m, "hosts", ctx) if w.strip())
    if "hosts" in m and not words:
        raise _fail("'hosts' must be a non-empty pattern", m, "hosts", ctx)
    _check_jinja(list(words), m, "hosts", ctx)
    return words or ("all",)


def _vars_files(reader: _Reader, m: YamlMap, ctx: str) -> tuple[dict, PlayVarsFiles | None]:
    """The play's vars_files (playbook/varsfiles.py): merged now where no name is a
    template; else read for each container, and (None) nothing is merged now."""
    raw = m.get("vars_files")
    if raw is not None and not isinstance(raw, YamlList):
        raise _fail("'vars_files' must be a list of file names", m, "vars_files", ctx)
    entries = []
    for i, entry in enumerate(raw or []):
        names = list(entry) if isinstance(entry, YamlList) else [entry]
        for name in names:
            if not isinstance(name, str):
                raise _fail(f"vars_files entry must be a file name, got {brief(name)}", raw, i, ctx)
            problem = syntax_problem(name)
            if problem:
                raise _fail(f"vars_files entry: {problem} in {brief(name)}", raw, i, ctx)
        entries.append(Entry(tuple(names), raw.where(i), ctx))
    files = PlayVarsFiles(tuple(entries), reader.path.parent)
    if any(entry.templated for entry in entries):
        return {}, files
    merged, warnings = files.values_for({}, {})
    reader.warnings += warnings
    return merged, None


def _parse_play(reader: _Reader, m: YamlMap, index: int) -> Play:
    name = _text(m, "name", "play", f"play #{index + 1}")
    ctx = f"play {name!r}"
    _check_play_keys(m, ctx)
    files_vars, vars_files = _vars_files(reader, m, ctx)
    variables = {**_mapping(m, "vars", ctx, var_names=True), **files_vars}
    tags = _tags(m, ctx)
    reader.new_play()
    sections, role_vars, handlers = _play_tasks(reader, m, ctx)
    # Ansible's public roles: their vars/ (and a roles entry's `vars:`) are play variables,
    # above vars_files (those read for each container too).
    variables = {**variables, **reader.role_vars, **role_vars}
    if vars_files is not None:
        vars_files.over = {**reader.role_vars, **role_vars}
    keys = _play_task_keys(m, ctx)
    given = _Inherit(tags=tags, **keys)
    tasks, forced = (given.apply(_sections(*sections, m, f)) for f in (0, 1))
    handlers = _Inherit(**keys).apply(handlers)
    reader.warnings += [
        f"{m.where(key)}: play key {key!r} is not followed: {why}"
        for key, why in PLAY_KEYS_WARNED.items()
        if key in m and not (key == "strategy" and m[key] == "linear")
    ]
    _check_notify([*leaves(tasks), *handlers], handlers)
    defaults = {**reader.role_defaults, **_mapping(m, "defaults", ctx, var_names=True)}
    return Play(
        name or f"play #{index + 1}",
        _hosts(m, ctx),
        variables,
        tasks,
        handlers,
        tags,
        m.where(),
        defaults,
        **_flow_keys(m, ctx, reader.defaults.any_errors_fatal),
        gather_facts=bool(_bool(m, "gather_facts", ctx, reader.defaults.gather_facts)),
        vars_files=vars_files,
        force_handlers=_bool(m, "force_handlers", ctx, None),
        forced_tasks=forced,
    )


def _environment(m: YamlMap, ctx: str) -> tuple[dict[str, Any] | str, ...]:
    """`environment`: the variables exported for each task (`export NAME=...`), a
    mapping or a template of one, as one layer."""
    value = m.get("environment")
    if isinstance(value, str) and "{{" in value:
        _check_jinja(value, m, "environment", ctx)
        return (value,)
    if value is not None and not isinstance(value, YamlMap):
        raise _fail(f"'environment' must be a mapping, or a template of one, got {brief(value)}",
                    m, "environment", ctx)  # fmt: skip
    environment = _mapping(m, "environment", ctx, var_names=True)
    _check_jinja(environment, m, "environment", ctx)
    return (environment,) if environment else ()


def _play_task_keys(m: YamlMap, ctx: str) -> dict[str, Any]:
    """The play keys that are every task's, as in Ansible (a task's own value wins)."""
    flags = {key: _flag(m, key, ctx) for key in TEMPLATED_FLAGS}
    return {"environment": _environment(m, ctx)} | flags


def _play_tasks(reader: _Reader, m: YamlMap, ctx: str) -> tuple[tuple, dict, list]:
    """The play's sections (pre_tasks, roles and tasks, post_tasks), its roles' vars,
    and its handlers in the order Ansible runs them (measured): the `roles:` roles',
    the play's own, then those of the roles tasks import, in the order imported."""
    from pctfleet.playbook import roles

    # Read in ansible-core's load order (roles, pre_tasks, post_tasks, tasks): it decides
    # which role is a repeat, whose vars win, and the order of imported roles' handlers.
    role_tasks, role_vars = roles.play_roles(reader, m, ctx)
    listed = len(reader.role_handlers)
    pre_tasks = _task_list(reader, m, "pre_tasks", ctx, handler=False)
    post_tasks = _task_list(reader, m, "post_tasks", ctx, handler=False)
    tasks = [*role_tasks, *_task_list(reader, m, "tasks", ctx, handler=False)]
    own = _task_list(reader, m, "handlers", ctx, handler=True)
    handlers = [*reader.role_handlers[:listed], *own, *reader.role_handlers[listed:]]
    return (pre_tasks, tasks, post_tasks), role_vars, handlers


def _sections(pre_tasks: list, tasks: list, post_tasks: list, m: YamlMap, forced: int) -> list:
    """The sections as Ansible's Play.compile joins them: the handlers notified in each
    run at its end, by a flush tagged `always` (as there: `--skip-tags always` skips
    it; the engine's flush after the last section is skipped the same way). With
    force_handlers each section is a block whose `always` is that flush, so a failure
    in it runs them too. A section left empty adds nothing: with nothing before it,
    nothing was notified."""
    flush = Task(
        "meta: flush_handlers", "meta", {"free_form": "flush_handlers"},
        tags=frozenset({"always"}), loc=m.where(), implicit=True,
    )  # fmt: skip
    parts = [part for part in (pre_tasks, tasks, post_tasks) if part]
    if forced:
        return [Block("", part, always=[flush], loc=m.where()) for part in parts]
    if not pre_tasks and not post_tasks:
        return tasks
    return [*pre_tasks, flush, *tasks, *([flush, *post_tasks] if post_tasks else [])]


def _flow_keys(m: YamlMap, ctx: str, fatal_default: bool) -> dict[str, Any]:
    """serial (a count, "N%", or a list of them), max_fail_percentage, any_errors_fatal
    (`fatal_default` where the play does not say: ansible.cfg's)."""
    raw = m.get("serial")
    items = [] if raw is None else (raw if isinstance(raw, list) else [raw])
    serial = [str(i).strip() for i in items if isinstance(i, str | int) and not isinstance(i, bool)]
    if raw is not None and (len(serial) != len(items) or not serial):
        bad = f"'serial' must be a count, a percentage or a list of them, got {brief(raw)}"
        raise _fail(bad, m, "serial", ctx)
    try:
        serial = parse_serial(",".join(serial)) if serial else []
        max_fail = parse_percentage(m.get("max_fail_percentage"))
    except (InputError, ValueError) as exc:
        key = "serial" if isinstance(exc, InputError) else "max_fail_percentage"
        raise _fail(f"{key!r}: {str(exc).removeprefix('--serial: ')}", m, key, ctx) from None
    fatal = bool(_bool(m, "any_errors_fatal", ctx, fatal_default))
    return {"serial": serial, "max_fail_percentage": max_fail, "any_errors_fatal": fatal}


def _check_meta(args: dict, m: YamlMap, key: str, ctx: str) -> None:
    action = args.get("free_form")
    if action in META_ACTIONS:
        return
    why = META_REFUSED.get(str(action), f"known: {', '.join(META_ACTIONS)}")
    raise _fail(f"meta action {brief(action)} is not supported: {why}", m, key, ctx)


def _check_notify(tasks: Sequence[Task], handlers: Sequence[Task]) -> None:
    """Every notify names a handler. Two of the play's own handlers with one name are
    refused (only the last would ever run); a role read twice brings its handlers
    twice, and the one read last runs, as in Ansible."""
    seen: dict[str, str] = {}
    for h in handlers:
        if h.name in seen and not h.role:
            raise PlaybookError(
                f"handler name {h.name!r} is already used at {seen[h.name]}", where=h.loc
            )
        seen[h.name] = h.loc
    topics = {name for h in handlers if isinstance(h, Handler) for name in h.names}
    topics |= {h.name for h in handlers}
    topics |= {t for h in handlers if isinstance(h, Handler) for t in h.listen}
    for task in tasks:
        for name in task.notify:
            if name not in topics and "{{" not in name and "{%" not in name:  # run time
                known = ", ".join(sorted(topics)) or "none defined"
                raise PlaybookError(
                    f"task {task.name!r}: notify {name!r} names no handler"
                    f"{did_you_mean(name, topics)} (handlers: {known})",
                    where=task.loc,
                )


def load_playbook(
    path: str | Path,
    known_modules: Mapping[str, set[str] | None],
    roles_path: Sequence[str] = (),
) -> Playbook:
    """Read and validate a playbook. `known_modules` maps each module name to the
    argument names it accepts (None: anything); `roles_path` are folders of roles
    (-r), searched after `roles/` next to the playbook and before ansible.cfg's."""
    reader = _Reader(Path(path), known_modules, roles_path)
    config = ansiblecfg.read()
    reader.defaults = play_defaults(config)
    reader.warnings += unfollowed(config)
    doc = load_yaml(path, what="a list of plays")
    if not isinstance(doc, YamlList):
        raise PlaybookError(
            "a playbook is a list of plays (start each play with '- "
            f"hosts: ...'), got {brief(doc)}",
            where=f"{path}:1",
        )
    if not doc:
        raise PlaybookError("the playbook has no plays", where=f"{path}:1")
    plays = []
    for i, item in enumerate(doc):
        if not isinstance(item, YamlMap):
            raise _fail(f"a play must be a mapping (hosts, tasks, ...), got {brief(item)}", doc, i)
        try:
            plays.append(_parse_play(reader, item, i))
        except RecursionError:
            raise _fail("play is nested too deeply", doc, i) from None
    return Playbook(str(path), plays, reader.warnings)
