"""jinja2 rendering with Ansible's habits and strict undefined variables.

* `render(value, vars, where=...)` renders every string inside dicts and lists.
  A string that is one expression, `"{{ n }}"`, keeps the value's type (an int
  stays an int, a list a list); anything else renders to a string.
* Variables may themselves hold templates (`cuda_home: "{{ venv }}/cu13"`):
  they are rendered when used, as Ansible does, and a loop is an error.
* `evaluate(expr, vars, where=...)` computes a bare expression for `when`,
  `changed_when`, `failed_when` and `until`; `condition()` makes it a bool.
* An undefined variable, a syntax error or a failing filter is a
  `TemplateError` of one line: `where: undefined variable 'foo'`.
* `Secret` marks a value to hide from output; `redact()` hides it.
"""

from __future__ import annotations

import ast
import base64
import functools
import json
import posixpath
import re
import shlex
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import jinja2
import yaml
from jinja2 import StrictUndefined, Undefined, meta, nodes

from pctfleet.errors import TemplateError, UndefinedVariable
from pctfleet.playbook import ansible_tests, filters, rendermemo, versions
from pctfleet.playbook.secrets import REDACTED, Secret, Unsafe
from pctfleet.playbook.secrets import is_template as _is_template

SECRET_SUFFIXES = ("_password", "_token", "_secret")
_UNDEFINED_RE = re.compile(r"^'([^']+)' is undefined")
_NO_ATTR_RE = re.compile(r"has no attribute '([^']+)'")
_TRUE_WORDS = {"true", "yes", "on", "1", "y", "t"}
_FALSE_WORDS = {"false", "no", "off", "0", "n", "f", "", "none"}


_EMPTY = Unsafe("")  # one for every empty output: a run registers thousands
_ATOMS = frozenset({int, float, bool, type(None)})


def unsafe(value: Any) -> Any:
    """`value` with every string inside it (dicts and lists walked) marked `Unsafe`."""
    kind = type(value)  # exact types first: every task's registered result comes here
    if kind is str:
        return Unsafe(value) if value else _EMPTY
    if kind is dict:
        return {k: unsafe(v) for k, v in value.items()}
    if kind in _ATOMS:
        return value
    if isinstance(value, Secret | Unsafe):
        return value
    if isinstance(value, str):
        return Unsafe(value) if value else _EMPTY
    if isinstance(value, Mapping):
        return {k: unsafe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [unsafe(v) for v in value]
    return value


class _Failure(Exception):
    """Raised inside rendering; the caller adds `where` to make a TemplateError."""


# ---------------------------------------------------------------- filters and tests


def to_bool(value: Any) -> bool:
    """Ansible's `bool` filter: 'yes'/'on'/'true'/'1' are true, other strings false."""
    if isinstance(value, str):
        return value.strip().lower() in _TRUE_WORDS
    return bool(value)


def _plain(value: Any) -> Any:
    """Secrets and other str subclasses as plain str, so yaml.safe_dump accepts them."""
    if isinstance(value, Mapping):
        return {_plain(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    _defined(value)
    return str(value) if isinstance(value, str) else value


_DEFINED_DEPTH = 8  # an undefined value an expression put deeper is left to its reader


def _defined(value: Any, depth: int = 0) -> Any:
    """`value`, or the error naming what is undefined in it (ChainedUndefined lets an
    undefined value travel into a list or dict built by the expression; using it there
    is the error). A lazy mapping (hostvars, vars) is not walked: that would render
    every variable in it."""
    if isinstance(value, Undefined):
        value._fail_with_undefined_error()
    elif type(value) is dict and depth < _DEFINED_DEPTH:  # built here, not a host list
        for item in value.values():
            _defined(item, depth + 1)
    elif type(value) in (list, tuple) and depth < _DEFINED_DEPTH:
        for item in value:
            _defined(item, depth + 1)
    return value


def _b64decode(value: Any) -> str:
    try:
        return base64.b64decode(str(value), validate=True).decode("utf-8")
    except ValueError as err:  # binascii.Error and UnicodeDecodeError are ValueErrors
        raise _Failure(f"b64decode: {err}") from None


def _mandatory(value: Any, msg: str | None = None) -> Any:
    if isinstance(value, Undefined):
        name = value._undefined_name  # jinja keeps the name of what was missing
        raise _Failure(msg or f"undefined variable {name!r} (marked mandatory)")
    return value


def _version(value: Any, other: Any, op: str = "==", **kinds: Any) -> bool:
    """Ansible's `version` test: `cuda is version('12.8', '>=')` (see versions.py)."""
    unknown = set(kinds) - {"strict", "version_type"}
    if unknown:
        raise _Failure(f"version: unexpected argument {sorted(unknown)[0]!r}")
    try:
        return versions.compare(value, other, op, **kinds)
    except versions.VersionError as err:
        raise _Failure(f"version: {err}") from None


def _result_test(flag: str, default: bool = False):
    """Tests on a registered result: `result is failed`, `result is changed`."""

    def test(value: Any) -> bool:
        _defined(value)  # `typo.rc is succeeded` is the error naming `typo`, not true
        return bool(value.get(flag, default)) if isinstance(value, Mapping) else default

    return test


FILTERS = {
    **filters.FILTERS,
    "bool": to_bool,
    "quote": lambda v: shlex.quote("" if v is None else str(v)),
    "basename": lambda v: posixpath.basename(str(v)),
    "dirname": lambda v: posixpath.dirname(str(v)),
    "to_json": lambda v, **kw: json.dumps(_plain(v), **kw),
    "to_nice_json": lambda v, indent=4, sort_keys=True, **kw: json.dumps(
        _plain(v), indent=indent, sort_keys=sort_keys, separators=(",", ": "), **kw
    ),
    "to_yaml": lambda v, *a, **kw: filters.to_yaml(_plain(v), *a, **kw),
    "to_nice_yaml": lambda v, *a, **kw: filters.to_nice_yaml(_plain(v), *a, **kw),
    "from_json": json.loads,
    "from_yaml": yaml.safe_load,
    "b64encode": lambda v: base64.b64encode(str(v).encode()).decode("ascii"),
    "b64decode": _b64decode,
    "mandatory": _mandatory,
    "split": lambda v, sep=None, maxsplit=-1: str(v).split(sep, maxsplit),
    "version_compare": _version,
}

TESTS = {
    "version": _version,
    "version_compare": _version,
    "match": lambda v, p: re.match(p, str(v)) is not None,
    "search": lambda v, p: re.search(p, str(v)) is not None,
    "regex": lambda v, p: re.search(p, str(v)) is not None,
    "failed": _result_test("failed"),
    "succeeded": lambda v: not _result_test("failed")(v),
    "success": lambda v: not _result_test("failed")(v),
    "changed": _result_test("changed"),
    "skipped": _result_test("skipped"),
    **ansible_tests.TESTS,
}
TESTS |= {alias: TESTS[name] for alias, name in ansible_tests.ALIASES.items()}
# ansible-core's own filters and tests are also known by their FQCN.
FILTERS |= {f"ansible.builtin.{name}": f for name, f in list(FILTERS.items())}
TESTS |= {f"ansible.builtin.{name}": t for name, t in list(TESTS.items())}


class ChainedUndefined(StrictUndefined):
    """Strict, except that an attribute or item of an undefined value is undefined too
    (not an error yet), as in Ansible: `{{ result.stdout | default('') }}` gives ''
    when `result` is undefined, and `{{ result.stdout }}` still fails, naming `result`."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return self

    def __getitem__(self, key: Any) -> Any:
        return self


class _EscapingLexer(jinja2.lexer.Lexer):
    r"""ansible-core's AnsibleLexer: a string constant inside `{{ }}` keeps its
    backslashes, because YAML has already read the escapes of a playbook's text
    (`regex_replace('(\\d+)', 'v\\1')` in a double-quoted YAML string reaches Jinja
    as `'v\1'`, a backreference, not the byte 0x01). `{% %}` statements, conditions
    and template files are read as Jinja reads them, as there."""

    def tokeniter(self, source, name, filename=None, state=None):  # noqa: ANN001, ANN201
        in_variable = state == "variable"  # a bare expression: the inside of a `{{ }}`
        for token in super().tokeniter(source, name, filename, state):
            kind = token[1]
            if kind == jinja2.lexer.TOKEN_VARIABLE_BEGIN:
                in_variable = True
            elif kind == jinja2.lexer.TOKEN_VARIABLE_END:
                in_variable = False
            elif in_variable and kind == jinja2.lexer.TOKEN_STRING:
                token = (token[0], kind, token[2].replace("\\", "\\\\"))
            yield token


class _ValueEnvironment(jinja2.Environment):
    """Where a playbook's values render (see _EscapingLexer)."""

    @property
    def lexer(self) -> jinja2.lexer.Lexer:
        found = self.__dict__.get("_escaping_lexer")
        if found is None:
            found = self.__dict__["_escaping_lexer"] = _EscapingLexer(self)
        return found


_VIEWS = (type({}.keys()), type({}.values()), type({}.items()))


def as_data(value: Any) -> Any:
    """`value` as ansible-core 2.19 gives a template's result: an iterator (`map`,
    `zip`, `product`), a dict view or a tuple inside it becomes a list, so no
    `<generator object ...>` reaches a file or a message."""
    kind = type(value)
    if kind in _PLAIN:
        return value
    if kind is list:
        listed = [as_data(item) for item in value]
        return value if all(a is b for a, b in zip(listed, value, strict=True)) else listed
    if kind is dict:
        data = {key: as_data(item) for key, item in value.items()}
        return value if all(data[k] is v for k, v in value.items()) else data
    if kind is tuple or kind in _VIEWS or isinstance(value, Iterator):
        return [as_data(item) for item in value]
    return value


def _listing(plugin: Any) -> Any:
    """A filter whose iterator result is a list, as ansible-core's filters give it:
    `s | map('string') | length` and `(a | zip(b))[0]` work there."""

    @functools.wraps(plugin)  # keeps jinja's pass_context mark
    def listed(*args: Any, **kwargs: Any) -> Any:
        value = plugin(*args, **kwargs)
        return list(value) if isinstance(value, Iterator) or type(value) in _VIEWS else value

    return listed


def _finalize(value: Any) -> Any:
    # As in Ansible: None inside text renders as nothing ("x{{ none }}x" is "xx").
    return "" if value is None else as_data(value)


def _make_env(loader: jinja2.BaseLoader | None = None, values: bool = False) -> jinja2.Environment:
    # As ansible-core's templar renders everything (template files and the playbook's
    # own text alike): trim_blocks drops the newline after a block tag, so `{% if %}`
    # lines leave no blank line behind.
    kind = _ValueEnvironment if values else jinja2.Environment
    env = kind(
        undefined=ChainedUndefined,
        finalize=_finalize,
        keep_trailing_newline=loader is None,  # files: see render_template_file
        autoescape=False,
        loader=loader,
        trim_blocks=True,
    )
    env.filters.update(FILTERS)
    env.tests.update(TESTS)
    for table in (env.filters, env.tests):  # Jinja's own are ansible.builtin's there too
        table.update({f"ansible.builtin.{n}": f for n, f in list(table.items()) if "." not in n})
    env.filters.update({name: _listing(f) for name, f in env.filters.items()})
    for name, test in env.tests.items():
        if name not in _UNDEFINED_TESTS and not hasattr(test, "jinja_pass_arg"):
            env.tests[name] = _on_defined(test)
    return env


# The tests that answer for an undefined value; every other one fails on it, naming
# the variable, as in ansible-core 2.19 (`typo is none` is an error there, not false).
_UNDEFINED_TESTS = frozenset({"defined", "undefined"})


def _on_defined(test: Any) -> Any:
    @functools.wraps(test)
    def checked(value: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(value, Undefined):  # only the value itself: `[typo] is sequence` holds
            value._fail_with_undefined_error()
        return test(value, *args, **kwargs)

    return checked


_ENV = _make_env(values=True)  # a playbook's values
_CONDITIONS = _make_env()  # `when` and the other conditions: Jinja's own escapes


# ---------------------------------------------------------------- lazy variables


# lookup(), query() and q(), filled in by pctfleet.playbook.lookups (it raises _Failure).
# Not jinja globals: jinja's name tracking leaves globals out, and a variable of the
# same name (`q`) must still count where a render's inputs are told.
CALLABLES: dict[str, Any] = {}


class LazyVars(Mapping):
    """Variables whose template strings are rendered on first use, like Ansible's
    lazy templating, so one variable may be built from others."""

    def __init__(self, variables: Mapping[str, Any], env: jinja2.Environment = _ENV) -> None:
        self._raw = variables
        self._env = env
        self._done: dict[str, Any] = {}
        self._busy: list[str] = []

    def __getitem__(self, key: str) -> Any:
        if key in self._done:
            return self._done[key]
        if key not in self._raw:
            return CALLABLES[key] if key in CALLABLES else self._env.globals[key]
        if key in self._busy:
            loop = " -> ".join([*self._busy[self._busy.index(key) :], key])
            raise _Failure(f"variable refers to itself: {loop}")
        self._busy.append(key)
        try:
            self._done[key] = _render_value(self._raw[key], self, self._env)
        except _Failure:
            raise
        except jinja2.UndefinedError as err:
            # As in ansible-core: a variable built from an undefined one is undefined
            # itself (`api_url | default(...)`, `api_url is defined`); used, it fails so.
            return self._env.undefined(hint=f"{_describe(err)} (in variable {key!r})", name=key)
        except Exception as err:
            # Say which variable failed to render, not only what it needed.
            raise _Failure(f"{_describe(err)} (in variable {key!r})") from None
        finally:
            self._busy.pop()
        return self._done[key]

    def __contains__(self, key: object) -> bool:
        return key in self._raw or key in CALLABLES or key in self._env.globals

    def __iter__(self) -> Iterator[str]:
        yield from self._raw
        yield from (k for k in {**CALLABLES, **self._env.globals} if k not in self._raw)

    def __len__(self) -> int:
        return len(set(self._raw) | set(CALLABLES) | set(self._env.globals))


def _lazy(variables: Mapping[str, Any]) -> LazyVars:
    return variables if isinstance(variables, LazyVars) else LazyVars(variables)


# ---------------------------------------------------------------- rendering


@functools.lru_cache(maxsize=8192)
def _single_expression(text: str) -> str | None:
    """The expression inside `"{{ expr }}"` when that is the whole string (parsed once
    per text: a fleet renders the same strings for every container).

    Whitespace around it counts, as in Ansible: `"{{ x }}\\n"` is a string with
    the newline (a file's content), not x's value.
    """
    if not (text.startswith("{{") and text.endswith("}}")):
        return None
    try:
        tree = _ENV.parse(text)
    except jinja2.TemplateSyntaxError:
        return None
    outputs = tree.body
    if len(outputs) != 1 or not isinstance(outputs[0], nodes.Output):
        return None
    parts = outputs[0].nodes
    if len(parts) != 1 or isinstance(parts[0], nodes.TemplateData):
        return None
    inner = text[2:-2]
    # `{{- x -}}` whitespace control marks are not part of the expression.
    if inner[:1] in ("-", "+"):
        inner = inner[1:]
    return inner[:-1] if inner[-1:] in ("-", "+") else inner


@functools.lru_cache(maxsize=8192)
def _expression(env: jinja2.Environment, expr: str) -> jinja2.Template:
    """Compiled once: a fleet renders the same expressions for every container."""
    return env.compile_expression(expr, undefined_to_none=False)._template


@functools.lru_cache(maxsize=8192)
def _template(env: jinja2.Environment, text: str) -> jinja2.Template:
    return env.from_string(text)


def _run_expression(expr: str, variables: LazyVars, env: jinja2.Environment) -> Any:
    return as_data(_defined(_expression_value(expr, variables, env)))


def _expression_value(expr: str, variables: LazyVars, env: jinja2.Environment) -> Any:
    template = _expression(env, expr)  # jinja's TemplateExpression keeps it in _template
    context = template.new_context(variables, shared=True)
    for _ in template.root_render_func(context):
        pass
    return context.vars["result"]


def _render_string(text: str, variables: LazyVars, env: jinja2.Environment) -> Any:
    if isinstance(text, Secret | Unsafe) or not _is_template(text):
        return text
    key = rendermemo.memo_key(env, text, variables)
    return rendermemo.rendered(key, lambda: _render_fresh(text, variables, env))


def _render_fresh(text: str, variables: LazyVars, env: jinja2.Environment) -> Any:
    expr = _single_expression(text)
    if expr is not None:
        return _run_expression(expr, variables, env)
    # "{{ x }}\n": Jinja drops a template's last newline, so this is one expression, as
    # in Ansible, which gives the newline back to a string value only ("text\n"; a list
    # stays a list, for copy to write as JSON).
    expr = _single_expression(text[:-1]) if text.endswith("}}\n") else None
    if expr is not None:
        value = _expression_value(expr, variables, env)
        if isinstance(value, jinja2.ChainableUndefined):  # a fact not read yet: text
            return "\n"
        value = as_data(_defined(value))
        if isinstance(value, Unsafe | Secret):  # data stays data, with its newline
            return type(value)(value + "\n")
        return value + "\n" if isinstance(value, str) else value
    template = _template(env, text)
    context = template.new_context(variables, shared=True)
    return "".join(template.root_render_func(context))


def _render_value(value: Any, variables: LazyVars, env: jinja2.Environment) -> Any:
    if isinstance(value, str):
        return _render_string(value, variables, env)
    if type(value) in _PLAIN:  # a number or a flag: nothing to render, no ABC check
        return value
    if isinstance(value, Mapping):
        return {k: _render_value(v, variables, env) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_render_value(v, variables, env) for v in value]
    return value


def syntax_problem(text: str, *, expression: bool = False) -> str | None:
    """Why `text` is not a valid template (or bare expression), else None.
    Compiling also catches unknown filters and tests, before any run; it goes
    through the render caches, so the run does not compile the text again."""
    try:
        if expression:
            inner = _single_expression(text)
            _expression(_ENV, inner if inner is not None else text)
        elif _is_template(text):
            _template(_ENV, text)
    except jinja2.TemplateSyntaxError as err:
        return f"template syntax error: {err.message}"
    except RecursionError:
        return "template nested too deeply"
    return None


@functools.lru_cache(maxsize=8192)
def _names_in(text: str, expression: bool) -> frozenset[str]:
    if expression:
        inner = _single_expression(text)
        text = "{{ " + (inner if inner is not None else text) + " }}"
    elif not _is_template(text):
        return frozenset()
    try:
        return frozenset(meta.find_undeclared_variables(_ENV.parse(text)))
    except (jinja2.TemplateSyntaxError, RecursionError):
        return frozenset()  # rendering reports the syntax error itself


def referenced_names(value: Any, *, expression: bool = False) -> set[str]:
    """Names of the variables the templates in `value` read (dicts and lists
    walked; with `expression`, each string is a bare expression as in `when`).
    Names a template defines itself (`{% set %}`, loop variables) are not counted.

    >>> sorted(referenced_names({"a": "{{ out.stdout }}/x", "b": ["{{ n | int }}"]}))
    ['n', 'out']
    """
    if isinstance(value, Secret | Unsafe):
        return set()
    if isinstance(value, str):
        return set(_names_in(value, expression))
    if isinstance(value, Mapping):
        value = list(value.values())
    if not isinstance(value, list | tuple):
        return set()
    return {name for item in value for name in referenced_names(item, expression=expression)}


def names_reached(
    value: Any, variables: Mapping[str, Any], *, expression: bool = False
) -> set[str]:
    """`referenced_names`, plus what the variables it reads read in turn
    (`p: "{{ out.stdout }}/x"` makes `{{ p }}` reach `out`)."""
    return names_through(referenced_names(value, expression=expression), variables)


def names_through(names: Iterable[str], variables: Mapping[str, Any]) -> set[str]:
    """`names`, plus what the variables of those names read in turn."""
    todo = list(names)
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            if name in variables:
                todo.extend(referenced_names(variables[name]))
    return seen


def _describe(err: Exception) -> str:
    """One line saying what went wrong, naming the variable where possible."""
    if isinstance(err, _Failure):
        return str(err)
    message = getattr(err, "message", None) or str(err)
    if isinstance(err, jinja2.UndefinedError):
        if message.startswith("undefined variable "):  # said by a LazyVars variable
            return message
        if match := _UNDEFINED_RE.match(message):
            return f"undefined variable {match.group(1)!r}"
        if match := _NO_ATTR_RE.search(message):
            return f"undefined variable or attribute {match.group(1)!r} ({message})"
        return f"undefined variable ({message})"
    if isinstance(err, jinja2.TemplateSyntaxError):
        return f"template syntax error: {message}"
    if isinstance(err, RecursionError):
        return "template or variables nested too deeply (or referring to themselves)"
    return f"template error: {type(err).__name__}: {message}"


def _guard(where: str, func, *args: Any) -> Any:
    try:
        return func(*args)
    except TemplateError:
        raise
    except jinja2.UndefinedError as err:
        detail = getattr(err, "message", None) or str(err)
        raise UndefinedVariable(_describe(err), where=where, detail=detail) from None
    except Exception as err:  # jinja lets any Python error of a filter through
        raise TemplateError(_describe(err), where=where) from None


def render(value: Any, variables: Mapping[str, Any], *, where: str) -> Any:
    """Render every string in `value` (dicts and lists walked recursively).

    >>> render({"n": "{{ n }}", "s": "n={{ n }}"}, {"n": 2}, where="x")
    {'n': 2, 's': 'n=2'}
    """
    return _guard(where, _render_value, value, _lazy(variables), _ENV)


def evaluate(expr: Any, variables: Mapping[str, Any], *, where: str) -> Any:
    """Value of a bare expression, as in `when: result.rc == 0`.

    Booleans and numbers pass through; `"{{ x }}"` is accepted like Ansible does.
    """
    if not isinstance(expr, str):
        return expr
    text = expr.strip()
    inner = _single_expression(text)
    if inner is not None:
        text = inner
    if not text:
        raise TemplateError("empty condition", where=where)
    return _guard(where, _run_expression, text, _lazy(variables), _CONDITIONS)


def condition(exprs: Sequence[Any] | Any, variables: Mapping[str, Any], *, where: str) -> bool:
    """True when every expression holds (a list is an AND, as in Ansible)."""
    return first_false(exprs, variables, where=where) is HOLDS


HOLDS = object()


def first_false(exprs: Sequence[Any] | Any, variables: Mapping[str, Any], *, where: str) -> Any:
    """The first expression that does not hold (what ansible-core registers as a
    skipped task's `false_condition`), evaluated in order and no further; `HOLDS`
    when all hold (see `condition`)."""
    items = exprs if isinstance(exprs, list | tuple) else [exprs]
    lazy = _lazy(variables)
    for expr in items:
        if not _truth(evaluate(expr, lazy, where=where)):
            return expr
    return HOLDS


def _truth(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() not in _FALSE_WORDS
    return bool(value)


# ---------------------------------------------------------------- template files


# What a template task's arguments or a `#jinja2:` first line may change in how its
# file is read (ansible-core's TemplateOverrides), with Jinja's own names.
OVERRIDES = (
    "block_start_string", "block_end_string", "variable_start_string", "variable_end_string",
    "comment_start_string", "comment_end_string", "line_statement_prefix",
    "line_comment_prefix", "trim_blocks", "lstrip_blocks", "newline_sequence",
    "keep_trailing_newline",
)  # fmt: skip
HEADER = "#jinja2:"


class _HeaderLoader(jinja2.FileSystemLoader):
    """Template files with their `#jinja2:` first line, if any, taken off (it is read
    into the environment, see `header_options`)."""

    def get_source(self, environment: jinja2.Environment, template: str) -> tuple:
        source, filename, uptodate = super().get_source(environment, template)
        if source.startswith(HEADER):
            source = source[source.find("\n") + 1 :] if "\n" in source else ""
        return source, filename, uptodate


@functools.lru_cache(maxsize=64)
def _file_env(folder: str, options: tuple = ()) -> jinja2.Environment:
    """One environment per template folder (and options): it compiles each file once,
    and again only when the file changes (jinja compares its mtime), however many
    containers render it."""
    env = _make_env(_HeaderLoader([folder]))
    return env.overlay(**dict(options)) if options else env


def template_env(folder: str) -> jinja2.Environment:
    """The environment template files in `folder` are rendered with."""
    return _file_env(folder)


def header_options(source: str) -> dict[str, Any]:
    """The options a template's `#jinja2: key: value, ...` first line sets, read as
    ansible-core reads them (each value a Python literal); {} without one."""
    if not source.startswith(HEADER):
        return {}
    if "\n" not in source:
        raise ValueError(f"Missing newline after {HEADER!r} override.")
    options = {}
    for pair in source[len(HEADER) : source.index("\n")].split(","):
        key, sep, value = pair.partition(":")
        if not sep or key.strip() not in OVERRIDES:
            raise ValueError(f"Invalid {HEADER!r} override {pair.strip()!r}")
        try:
            options[key.strip()] = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            message = f"{HEADER!r} override {key.strip()}: cannot read {value.strip()!r}"
            raise ValueError(message) from None
    return options


def _trailing_newlines(text: str) -> int:
    return len(text) - len(text.rstrip("\n"))


@functools.lru_cache(maxsize=256)
def _head_and_tail(path: str, stamp: tuple) -> tuple[tuple, int]:
    """A template file's `#jinja2:` options and how many line breaks end it, once per
    version of the file."""
    source = Path(path).read_text(encoding="utf-8")
    return tuple(sorted(header_options(source).items())), _trailing_newlines(source)


def render_template_file(
    path: str | Path,
    variables: Mapping[str, Any],
    *,
    where: str,
    options: Mapping[str, Any] | None = None,
) -> str:
    """Render a template file to text (the template module finds it), with `options`
    (see OVERRIDES) under the file's own `#jinja2:` line. Errors name the template's
    file and line: `where: templates/env.j2:3: undefined variable 'x'`."""
    found = Path(path)
    if not found.is_file():
        raise TemplateError(f"template {str(path)!r} not found", where=where)
    try:
        st = found.stat()
        header, tail = _head_and_tail(str(found), (st.st_ino, st.st_size, st.st_mtime_ns))
        chosen = {**(options or {}), **dict(header)}
        env = _file_env(str(found.parent), tuple(sorted(chosen.items())))
    except (OSError, UnicodeDecodeError, ValueError, TypeError) as err:
        raise TemplateError(
            f"template {str(found)!r}: {err}", where=f"{where}: {found}:1"
        ) from None
    try:
        template = env.get_template(found.name)
        # Values already rendered (lookup('template') passes its own) are not rendered again.
        lazy = variables if isinstance(variables, LazyVars) else LazyVars(variables, env)
        context = template.new_context(lazy, shared=True)
        text = "".join(template.root_render_func(context))
    except (OSError, UnicodeDecodeError) as err:
        raise TemplateError(f"cannot read template {str(found)!r}: {err}", where=where) from None
    except TemplateError:
        raise
    except Exception as err:
        line = _template_line(err, str(found.resolve()))
        raise TemplateError(_describe(err), where=f"{where}: {found}:{line}") from None
    # As ansible-core: the text ends in as many line breaks as the file does (a block
    # tag's trim_blocks does not eat the last; an included file's last stays out).
    missing = tail - _trailing_newlines(text)
    return text + env.newline_sequence * missing if missing > 0 else text


def _template_line(err: Exception, filename: str) -> int | str:
    """Line in the template where `err` happened, from jinja's debug info."""
    lineno = getattr(err, "lineno", None)
    if isinstance(err, jinja2.TemplateSyntaxError) and lineno:
        return lineno
    tb = err.__traceback__
    line: int | str = "?"
    while tb is not None:
        template = tb.tb_frame.f_globals.get("__jinja_template__")
        if (
            template is not None
            and template.filename
            and str(Path(template.filename).resolve()) == filename
        ):
            line = template.get_corresponding_lineno(tb.tb_lineno)
        tb = tb.tb_next
    return line


# ---------------------------------------------------------------- secrets


def _secret_names(variables: Mapping[str, Any]) -> set[str]:
    listed = variables.get("secret_vars") or []
    names = {str(n) for n in listed} if isinstance(listed, list | tuple) else set()
    return names | _named_secret(tuple(variables))


@functools.lru_cache(maxsize=256)
def _named_secret(names: tuple) -> frozenset[str]:
    """The names ending in _password/_token/_secret: every result of a container asks
    with the same names (names only: no value is kept here)."""
    return frozenset(k for k in names if isinstance(k, str) and k.endswith(SECRET_SUFFIXES))


class Public(list):
    """A list known to hold no secret (a play's host names): redaction, which runs
    for every task of every container, does not walk it (it grows with the fleet)."""


_PLAIN = frozenset({str, int, float, bool, type(None)})  # exact types: subclasses walk


def _scalars(value: Any, depth: int = 0) -> Iterator[Any]:
    """Everything inside `value` that is neither a mapping nor a list, 50 levels deep at most."""
    if type(value) in _PLAIN:  # most values: no walk, no ABC check
        yield value
        return
    if depth > 50 or isinstance(value, Public):
        return
    if isinstance(value, Mapping):
        value = list(value.values())
    if not isinstance(value, list | tuple):
        yield value
        return
    for item in value:
        yield from _scalars(item, depth + 1)


def _leaves(value: Any) -> Iterator[str]:
    """Every string (or number) inside `value`, as text."""
    for item in _scalars(value):
        if isinstance(item, str | int | float) and not isinstance(item, bool):
            yield str(item)


def _secrets_in(value: Any) -> list[str]:
    """The `Secret`s inside `value` (as `_scalars` walks it), without a generator per level:
    it runs for every result of every container."""
    found, todo = [], [(value, 0)]
    while todo:
        item, depth = todo.pop()
        kind = type(item)
        if kind in _PLAIN:
            continue
        if depth > 50:
            continue
        if kind is dict:  # exact types before the ABC checks: most values are these
            todo.extend((inner, depth + 1) for inner in item.values())
            continue
        if kind is list or kind is tuple:
            todo.extend((inner, depth + 1) for inner in item)
            continue
        if isinstance(item, Public):
            continue
        if isinstance(item, Secret):
            found.append(str(item))
        elif isinstance(item, Mapping):
            todo.extend((inner, depth + 1) for inner in item.values())
        elif isinstance(item, list | tuple):
            todo.extend((inner, depth + 1) for inner in item)
    return found


def secret_values(variables: Mapping[str, Any]) -> set[str]:
    """Every value to hide: `Secret`s anywhere in `variables`, and the values of
    variables named in `secret_vars` or ending in _password/_token/_secret."""
    found = set(_secrets_in(variables))
    lazy = _lazy(variables)
    for name in _secret_names(variables):
        if name not in variables:
            continue
        try:
            value = lazy[name]  # the rendered value is what could leak
        except Exception:
            value = variables[name]
        found |= set(_leaves(value)) | set(_leaves(variables[name]))
    return {v for v in found if v}


def hider(variables: Mapping[str, Any]) -> Callable[[str], str]:
    """`redact` for many texts of one scope: the secrets are found once, at the first
    text that is not empty."""
    found: list[list[str]] = []

    def hide(text: str) -> str:
        if not text:
            return text
        if not found:
            found.append(sorted(secret_values(variables), key=len, reverse=True))
        for value in found[0]:
            text = text.replace(value, REDACTED)
        return text

    return hide


def redact(text: str, variables: Mapping[str, Any]) -> str:
    """`text` with every secret value (see `secret_values`) replaced by ********."""
    return hider(variables)(text)


def redact_data(value: Any, variables: Mapping[str, Any] | Callable[[str], str]) -> Any:
    """`value` (mappings, lists, scalars) with every string passed through `redact`
    (or through `variables` itself when it is a `hider`)."""
    hide = variables if callable(variables) else hider(variables)
    if isinstance(value, str):
        return hide(value)
    if isinstance(value, Mapping):
        return {k: redact_data(v, hide) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_data(v, hide) for v in value]
    return value


__all__ = [
    "REDACTED",
    "LazyVars",
    "Secret",
    "Unsafe",
    "condition",
    "evaluate",
    "hider",
    "names_reached",
    "names_through",
    "referenced_names",
    "redact",
    "redact_data",
    "render",
    "render_template_file",
    "secret_values",
    "syntax_problem",
    "to_bool",
    "unsafe",
]


from pctfleet.playbook.lookups import GLOBALS as _LOOKUPS  # noqa: E402 - uses _Failure

CALLABLES.update(_LOOKUPS)
