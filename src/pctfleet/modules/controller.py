"""Modules that run on the controller only: they cost no remote call."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Self

from pctfleet.errors import PlaybookError, UndefinedVariable, brief
from pctfleet.inventory import VAR_NAME_RE
from pctfleet.modules import varsdir
from pctfleet.modules.args import Args, Context, arg, flag, text_list
from pctfleet.modules.assertion import waits_for_run
from pctfleet.modules.base import Module, Plan
from pctfleet.playbook import search
from pctfleet.playbook.templating import as_data, evaluate, render
from pctfleet.playbook.yamlsrc import load_yaml, plain


def _shown(value: Any, where: str) -> str:
    """Any value as the text a message prints (a list or a number too)."""
    return str(value)


def _expression_text(value: Any, where: str) -> str:
    """`var` is an expression to evaluate: text, as ansible-core requires it to be
    (`var: "{{ n }}"` rendering to a number is an error there too)."""
    if not isinstance(value, str):
        raise PlaybookError(f"debug: 'var' must be an expression, got {brief(value)}", where=where)
    return value


def _verbosity(value: Any, where: str) -> int:
    """An int as ansible-core converts one (`true` is 1, "2" is 2, 1.5 is refused)."""
    if isinstance(value, bool | int):
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"\s*[-+]?\d+\s*", value):
        return int(value)
    raise PlaybookError(
        f"debug: 'verbosity' must be a whole number, got {brief(value)}", where=where
    )


@dataclass(frozen=True)
class DebugArgs(Args):
    reads_context: ClassVar[bool] = True
    msg: Any = arg("Hello world!")  # registered as it renders (a list stays a list)
    var: str | None = arg(None, convert=_expression_text)
    verbosity: int = arg(0, convert=_verbosity)  # shown from this many -v on, else skipped
    # Not arguments: `var` evaluated with the task's variables when it is prepared, and
    # the run's -v count (ansible_verbosity).
    value: Any = None
    run_verbosity: int = 0

    @classmethod
    def parse(cls, raw: Mapping[str, Any], ctx: Context, where: str) -> Self:
        args = super().parse(raw, ctx, where)
        if "msg" in raw and raw["msg"] is None:  # given, as None: shown, not the default
            args = dataclasses.replace(args, msg=None)
        verbosity = ctx.variables.get("ansible_verbosity", 0)
        args = dataclasses.replace(args, run_verbosity=verbosity)
        if args.var is None or waits_for_run([args.var], ctx.variables):
            return args  # a registered result, say: shown when the task is reached
        try:  # a bare expression, read as `when` reads one (Jinja's own escapes)
            value = evaluate(args.var, ctx.variables, where=where)
        except UndefinedVariable as exc:  # as ansible-core shows it: the task goes on
            value = f"<< error 1 - {exc.detail} >>"
        return dataclasses.replace(args, value=as_data(value))


class Debug(Module, name="debug", args=DebugArgs):
    """Print a message or a variable: `debug: {msg: "..."}` or `debug: {var: result}`."""

    # Registers its message as it rendered, or `var`'s value under its name (no msg).
    registers_output = registers_msg = False

    controller = True

    def plan(self, args: DebugArgs, state: None, check: bool) -> Plan:
        if args.verbosity > args.run_verbosity:
            return Plan(False, skipped="Verbosity threshold not met.")
        if args.var is not None:
            return Plan(False, msg=f"{args.var} = {args.value!r}", result={args.var: args.value})
        return Plan(False, msg=_shown(args.msg, ""), result={"msg": args.msg})


@dataclass(frozen=True)
class SetFactArgs(Args):
    free_names: ClassVar[bool] = True
    reads_context: ClassVar[bool] = True  # a name may be a template of the task's variables

    @classmethod
    def parse(cls, raw: Mapping[str, Any], ctx: Context, where: str) -> Self:
        args = super().parse(raw, ctx, where)
        if not any("{{" in name for name in args.extra):
            return args
        return dataclasses.replace(args, extra=fact_names(args.extra, ctx.variables, where))


def fact_names(facts: Mapping[str, Any], variables: Mapping[str, Any], where: str) -> dict:
    """`set_fact`'s names rendered (`"port_{{ model }}": 30000`), as in ansible-core."""
    out = {}
    for name, value in facts.items():
        rendered = str(render(name, variables, where=where)) if "{{" in name else name
        if not VAR_NAME_RE.match(rendered):
            raise PlaybookError(f"set_fact: {rendered!r} is not a valid variable name", where=where)
        out[rendered] = value
    return out


class SetFact(Module, name="set_fact", args=SetFactArgs):
    """Set variables for the later tasks of this container."""

    registers_output = registers_msg = False

    controller = True

    def plan(self, args: SetFactArgs, state: None, check: bool) -> Plan:
        # A `_`-prefixed name stays internal: it never becomes a variable of later tasks.
        # `cacheable` is Ansible's fact-cache switch: there is no cache, so it sets nothing.
        facts = {k: v for k, v in args.extra.items() if not k.startswith("_")}
        facts.pop("cacheable", None)
        return Plan(False, result={"ansible_facts": facts})

    def after(self, registered: dict[str, Any], variables: dict[str, Any]) -> None:
        variables.update(registered.get("ansible_facts", {}))


@dataclass(frozen=True)
class FailArgs(Args):
    msg: str = arg("Failed as requested from task", convert=_shown)


class Fail(Module, name="fail", args=FailArgs):
    """Stop this container's run with a message."""

    registers_output = False

    controller = True

    def plan(self, args: FailArgs, state: None, check: bool) -> Plan:
        return Plan(False, failed=True, msg=args.msg)


class _Written:
    """Variables as a vars file wrote them: not a Mapping, so the engine does not mark
    them as container data, and their templates render when used, as Ansible's do."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.values = values


def _depth(value: Any, where: str) -> int:
    if isinstance(value, bool) or not str(value).strip().isdigit():
        raise PlaybookError(
            f"include_vars: 'depth' must be a whole number, got {brief(value)}", where=where
        )
    return int(value)


def _pattern(value: Any, where: str) -> re.Pattern:
    try:
        return re.compile(str(value))
    except re.error as err:
        raise PlaybookError(
            f"include_vars: {brief(value)} is not a regular expression ({err})", where=where
        ) from None


def _ignored(value: Any, where: str) -> tuple[str, ...]:
    """`ignore_files`: a list of patterns, or one string of them split at spaces."""
    patterns = value.split() if isinstance(value, str) else text_list(value, where)
    for pattern in patterns:
        _pattern(f"{pattern}$", where)
    return tuple(patterns)


def _extensions(value: Any, where: str) -> tuple[str, ...]:
    # A string is read as ansible-core reads it: each of its characters an extension.
    return tuple(value) if isinstance(value, str) else text_list(value, where)


_DIR_ONLY = (
    "dir",
    "depth",
    "files_matching",
    "ignore_files",
    "extensions",
    "ignore_unknown_extensions",
)


@dataclass(frozen=True)
class IncludeVarsArgs(Args):
    reads_context: ClassVar[bool] = True
    file: str | None = arg(None, convert=_shown)
    dir: str | None = arg(None, convert=_shown)
    name: str | None = arg(None, convert=_shown)
    depth: int = arg(0, convert=_depth)
    files_matching: re.Pattern | None = arg(None, convert=_pattern)
    ignore_files: tuple[str, ...] = arg((), convert=_ignored)
    extensions: tuple[str, ...] = arg(varsdir.EXTENSIONS, convert=_extensions)
    ignore_unknown_extensions: bool = arg(False, convert=flag)
    # Not arguments: the files read (vars/FILE, then FILE, next to the playbook; or
    # those of `dir`) and the mapping they make.
    paths: tuple[str, ...] = ()
    loaded: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    @classmethod
    def parse(cls, raw: Mapping[str, Any], ctx: Context, where: str) -> Self:
        if "file" in raw and any(key in raw for key in _DIR_ONLY):
            raise PlaybookError(
                "include_vars: 'file' does not go with 'dir' and its options", where=where
            )
        args = super().parse(raw, ctx, where)
        if args.dir is None and args.file is None:
            raise PlaybookError(
                "include_vars: give 'file' (or a free-form name) or 'dir'", where=where
            )
        if args.dir is not None:
            walk = varsdir.Walk(
                args.depth, args.files_matching, args.ignore_files, args.extensions,
                args.ignore_unknown_extensions,
            )  # fmt: skip
            root = varsdir.folder(args.dir, ctx.base_dir, ctx.variables.get("role_path"))
            loaded, paths = varsdir.read(root, walk, where)
            return dataclasses.replace(args, paths=tuple(paths), loaded=loaded)
        path = _vars_file(str(args.file), ctx.base_dir, where)
        data = load_yaml(path, what="a mapping of variables")
        if not isinstance(data, Mapping) or not all(isinstance(k, str) for k in data):
            raise PlaybookError(f"include_vars: {path} must hold a mapping of names", where=where)
        return dataclasses.replace(args, paths=(str(path),), loaded=plain(data))


def _vars_file(name: str, base_dir: str, where: str) -> Path:
    """Where Ansible looks from a playbook: its vars/ folder, then the playbook's own."""
    found = search.vars_file(name, base_dir)
    if found is None:
        raise PlaybookError(f"include_vars: file {name!r} not found in {base_dir}", where=where)
    return found


class IncludeVars(Module, name="include_vars", args=IncludeVarsArgs):
    """Read variables from a YAML file on the controller for the later tasks."""

    registers_output = registers_msg = False

    controller = True

    def plan(self, args: IncludeVarsArgs, state: None, check: bool) -> Plan:
        values = {args.name: dict(args.loaded)} if args.name else dict(args.loaded)
        files = list(args.paths)
        result = {"ansible_facts": _Written(values), "ansible_included_var_files": files}
        return Plan(False, msg=f"included {', '.join(files) or 'no file'}", result=result)

    def after(self, registered: dict[str, Any], variables: dict[str, Any]) -> None:
        written = registered.get("ansible_facts")
        if isinstance(written, _Written):
            registered["ansible_facts"] = written.values
            variables.update(written.values)
