"""jinja2 rendering: strict undefined, native types, lazy vars, conditions, files, secrets."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

import jinja2
import pytest
import yaml

from pctfleet.errors import TemplateError
from pctfleet.playbook.templating import (
    REDACTED,
    Public,
    Secret,
    Unsafe,
    condition,
    evaluate,
    names_reached,
    redact,
    referenced_names,
    render,
    render_template_file,
    secret_values,
    syntax_problem,
    unsafe,
)

WHERE = "site.yml:12: task 'Install'"

VARS = {
    "n": 3,
    "flag": "yes",
    "items": ["a", "b"],
    "num_text": "13.0",
    "venv": "/opt/venv",
    "cuda_home": "{{ venv }}/lib/python3.11/site-packages/nvidia/cu13",
    "nvcc": "{{ cuda_home }}/bin/nvcc",
    "result": {"rc": 0, "stdout": "GPU 0: RTX PRO 6000", "failed": False, "changed": True},
    "path": "/etc/sglang/server.env",
}


def fail(value, variables=VARS, where=WHERE) -> str:
    with pytest.raises(TemplateError) as info:
        render(value, variables, where=where)
    message = str(info.value)
    assert len(message.splitlines()) == 1
    return message


def test_single_expression_keeps_its_type():
    got = render(
        {
            "n": "{{ n }}",
            "items": "{{ items }}",
            "dict": "{{ result }}",
            "text": "n={{ n }}",
            "num_text": "{{ num_text }}",
            "plain": "13.0",
            "ws": "{{- n -}}",
            "none": None,
            "int": 5,
        },
        VARS,
        where=WHERE,
    )
    assert got == {
        "n": 3,
        "items": ["a", "b"],
        "dict": VARS["result"],
        "text": "n=3",
        "num_text": "13.0",
        "plain": "13.0",
        "ws": 3,
        "none": None,
        "int": 5,
    }
    assert isinstance(got["num_text"], str)  # a string that looks like a number stays text


def test_nested_structures_and_trailing_newline():
    got = render(["{{ n + 1 }}", {"k": ["x{{ n }}", "line\n"]}], VARS, where=WHERE)
    assert got == [4, {"k": ["x3", "line\n"]}]


def test_variables_built_from_variables_render_lazily():
    assert (
        render("{{ nvcc }}", VARS, where=WHERE)
        == "/opt/venv/lib/python3.11/site-packages/nvidia/cu13/bin/nvcc"
    )
    # an unused broken variable is not an error, as in Ansible
    assert render("{{ n }}", {**VARS, "broken": "{{ nope }}"}, where=WHERE) == 3


def test_variable_loop_is_an_error():
    msg = fail("{{ a }}", {"a": "{{ b }}", "b": "{{ a }}"})
    assert msg == f"{WHERE}: variable refers to itself: a -> b -> a"


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("{{ foo }}", "undefined variable 'foo'"),
        ("x {{ foo }} y", "undefined variable 'foo'"),
        ("{{ foo.bar }}", "undefined variable 'foo'"),
        ("{{ result.nope }}", "undefined variable or attribute 'nope'"),
        ("{{ bad }}", "undefined variable 'missing_inner' (in variable 'bad')"),
        ("{{ foo | mandatory }}", "undefined variable 'foo' (marked mandatory)"),
    ],
)
def test_undefined_variables_are_named_with_where(template, expected):
    msg = fail(template, {**VARS, "bad": "{{ missing_inner }}"})
    assert msg.startswith(f"{WHERE}: {expected}")


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("{{ n + }}", "template syntax error"),
        ("{% if %}", "template syntax error"),
        ("{{ n | nosuch }}", "template syntax error: No filter named 'nosuch'"),
        ("{{ 1 / 0 }}", "template error: ZeroDivisionError"),
        ("{{ 'a' + 1 }}", "template error: TypeError"),
        ("{{ '!!' | b64decode }}", "b64decode:"),
    ],
)
def test_other_template_errors_are_one_line(template, expected):
    assert fail(template).startswith(f"{WHERE}: {expected}")


def test_filters():
    cases = {
        "{{ undefined_var | default('d') }}": "d",
        "{{ flag | bool }}": True,
        "{{ 'off' | bool }}": False,
        "{{ '42' | int }}": 42,
        "{{ items | join(',') }}": "a,b",
        '{{ "it\'s" | quote }}': "'it'\"'\"'s'",
        "{{ path | basename }}": "server.env",
        "{{ path | dirname }}": "/etc/sglang",
        "{{ 'cu12.8' | regex_replace('^cu', 'cuda-') }}": "cuda-12.8",
        "{{ result.stdout | regex_search('RTX \\w+') }}": "RTX PRO",
        "{{ 'a.b' | split('.') }}": ["a", "b"],
        "{{ {'a': 1} | combine({'b': 2}) }}": {"a": 1, "b": 2},
        "{{ 'hi' | b64encode }}": "aGk=",
        "{{ 'aGk=' | b64decode }}": "hi",
        "{{ n | mandatory }}": 3,
    }
    for template, expected in cases.items():
        assert render(template, VARS, where=WHERE) == expected, template
    assert json.loads(render("{{ result | to_json }}", VARS, where=WHERE)) == VARS["result"]
    assert yaml.safe_load(render("{{ items | to_yaml }}", VARS, where=WHERE)) == ["a", "b"]


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("result.rc == 0", True),
        ("result.rc != 0", False),
        ("x is defined", False),
        ("n is defined and n > 2", True),
        ("'RTX' in result.stdout", True),
        ("{{ n > 5 }}", False),
        ("result is failed", False),
        ("result is succeeded", True),
        ("result is changed", True),
        ("'13.0.88' is version('13.0', '>=')", True),
        ("'12.8' is version('12.9', '<')", True),
        ("result.stdout is search('PRO')", True),
        ("flag | bool", True),
        (True, True),
    ],
)
def test_evaluate(expr, expected):
    assert evaluate(expr, VARS, where=WHERE) == expected


def test_evaluate_errors_are_template_errors():
    with pytest.raises(TemplateError, match=r"^site.yml:12: task 'Install': undefined var"):
        evaluate("x > 1", VARS, where=WHERE)
    with pytest.raises(TemplateError, match="template syntax error"):
        evaluate("n ==", VARS, where=WHERE)
    with pytest.raises(TemplateError, match="empty condition"):
        evaluate("  ", VARS, where=WHERE)


def test_condition_is_an_and_with_ansible_truthiness():
    assert condition(["n == 3", "result.rc == 0"], VARS, where=WHERE)
    assert not condition(["n == 3", "result.rc == 1"], VARS, where=WHERE)
    assert condition("True", VARS, where=WHERE)
    assert not condition("'false'", VARS, where=WHERE)
    assert not condition("off_word", {"off_word": "no"}, where=WHERE)
    assert condition([], VARS, where=WHERE)


def test_placeholders_for_later_results_fail_only_when_used():
    later = {**VARS, "out": jinja2.ChainableUndefined(name="out")}
    assert render("{{ n }}", later, where=WHERE) == 3
    with pytest.raises(TemplateError, match="undefined variable 'out'"):
        render("{{ out.stdout }}", later, where=WHERE)


def test_referenced_names_come_from_the_parsed_templates():
    args = {
        "path": "/tmp/output",
        "mode": "{{ m | default('0644') }}",
        "lines": ["{% for x in out.lines %}{{ x }}{% endfor %}", Unsafe("{{ raw }}")],
    }
    assert referenced_names(args) == {"m", "out"}
    assert referenced_names(["out.rc == 0 and n > 1"], expression=True) == {"out", "n"}
    assert referenced_names("{{ out.stdout }}", expression=True) == {"out"}
    assert referenced_names("{{ broken") == set()


def test_names_reached_follow_variables_built_from_others():
    variables = {"p": "{{ q }}/x", "q": "{{ out.stdout }}", "loop": "{{ loop }}"}
    assert names_reached("{{ p }}", variables) == {"p", "q", "out"}
    assert names_reached("{{ loop }}", variables) == {"loop"}


def test_syntax_problem():
    assert syntax_problem("{{ n }}") is None
    assert syntax_problem("plain { text }") is None
    assert syntax_problem("{{ n | bool }}") is None
    assert "syntax error" in syntax_problem("{{ n")
    assert syntax_problem("a == 1", expression=True) is None
    assert "syntax error" in syntax_problem("a ==", expression=True)


def test_a_template_checked_at_load_is_not_compiled_again_to_render(monkeypatch):
    from pctfleet.playbook import templating

    compiled = []
    real = templating._ENV.compile
    monkeypatch.setattr(
        templating._ENV, "compile", lambda *a, **k: compiled.append(a[0]) or real(*a, **k)
    )
    text, expr = "at {{ where_checked }} only once", "checked_once + 1"
    assert syntax_problem(text) is None
    assert syntax_problem(expr, expression=True) is None
    assert len(compiled) == 2
    assert render(text, {"where_checked": "load"}, where=WHERE) == "at load only once"
    assert evaluate(expr, {"checked_once": 1}, where=WHERE) == 2
    assert len(compiled) == 2
    assert "syntax error" in syntax_problem("{{ where_checked")
    assert "syntax error" in syntax_problem("{{ where_checked")  # an error is never cached


# ---------------------------------------------------------------- template files


def test_render_template_file_includes_from_its_own_folder(tmp_path):
    (tmp_path / "env.j2").write_text("{% include 'port.j2' %}HOME={{ cuda_home }}\n")
    (tmp_path / "port.j2").write_text("PORT={{ port }}\n")
    out = render_template_file(tmp_path / "env.j2", {**VARS, "port": 30000}, where=WHERE)
    # As ansible-core: an included file's last line break stays out.
    assert out == "PORT=30000HOME=/opt/venv/lib/python3.11/site-packages/nvidia/cu13\n"


def test_template_file_errors_name_the_template_line(tmp_path):
    (tmp_path / "bad.j2").write_text("ok\nPORT={{ port }}\n")
    (tmp_path / "syntax.j2").write_text("a\nb\n{{ x \n")
    with pytest.raises(TemplateError) as info:
        render_template_file(tmp_path / "bad.j2", VARS, where=WHERE)
    assert str(info.value) == f"{WHERE}: {tmp_path / 'bad.j2'}:2: undefined variable 'port'"
    with pytest.raises(TemplateError, match=r"syntax.j2:3: template syntax error"):
        render_template_file(tmp_path / "syntax.j2", VARS, where=WHERE)
    with pytest.raises(TemplateError, match=r"template '.*nope.j2' not found"):
        render_template_file(tmp_path / "nope.j2", VARS, where=WHERE)


# ---------------------------------------------------------------- secrets


def test_secret_renders_real_value_and_redact_hides_it():
    variables = {**VARS, "hf": Secret("hf_abc123"), "nested": {"k": [Secret("s3cr3t")]}}
    rendered = render("--token {{ hf }}", variables, where=WHERE)
    assert rendered == "--token hf_abc123"
    assert isinstance(render("{{ hf }}", variables, where=WHERE), Secret)
    assert "hf_abc123" not in repr(variables["hf"])
    assert redact(f"{rendered} and s3cr3t", variables) == f"--token {REDACTED} and {REDACTED}"


def test_redact_by_variable_name_and_secret_vars():
    variables = {
        "db_password": "pw1",
        "api_token": "tok-2",
        "my_secret": "xyz",
        "plain": "visible",
        "license_key": "LIC",
        "secret_vars": ["license_key"],
        "derived_password": "{{ plain }}-x",
    }
    text = "pw1 tok-2 xyz visible LIC visible-x"
    assert redact(text, variables) == " ".join([REDACTED] * 3 + ["visible", REDACTED, REDACTED])
    assert redact("", variables) == ""
    assert redact("nothing here", {"empty_token": ""}) == "nothing here"


def test_secret_names_are_read_from_each_scope_own_names():
    # The names ending in _password/_token/_secret are found once per set of names:
    # scopes of the same size with other names must not get the first one's answer.
    assert secret_values({"db_token": "t1", "host": "h1"}) == {"t1"}
    assert secret_values({"db": "t1", "host_token": "h1"}) == {"h1"}
    assert secret_values({"host_token": "h1", "db": "t1"}) == {"h1"}
    assert secret_values({"db": "t1", "host": "h1"}) == set()
    assert secret_values({"db": "t1", "host": "h1", "secret_vars": ["db"]}) == {"t1"}


class _Vault(Mapping):
    """A mapping of its own kind: walked for secrets like a dict."""

    def __init__(self, data: dict) -> None:
        self._data = data

    def __getitem__(self, key: str) -> object:
        return self._data[key]

    def __iter__(self):  # noqa: ANN204
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


def test_secrets_are_found_in_every_kind_of_value_but_public_lists():
    deep: object = Secret("too-deep")
    for _ in range(60):
        deep = [deep]
    variables = {
        "a": {"b": [Secret("in-a-list"), (Secret("in-a-tuple"),)]},
        "vault": _Vault({"k": Secret("in-a-mapping")}),
        "hosts": Public([Secret("not-walked")]),
        "deep": deep,
        "n": 1,
    }
    assert secret_values(variables) == {"in-a-list", "in-a-tuple", "in-a-mapping"}


def test_a_template_file_edited_between_renders_renders_its_new_text(tmp_path) -> None:
    # Compiled templates are kept per folder; an edit must still be seen.
    src = tmp_path / "t.j2"
    src.write_text("a={{ x }}\n")
    assert render_template_file(src, {"x": 1}, where="t") == "a=1\n"
    src.write_text("b={{ x }}\n")
    os.utime(src, (1_000_000_000, 1_000_000_000))  # a different mtime, whatever the clock
    assert render_template_file(src, {"x": 2}, where="t") == "b=2\n"


def _unsafe_walk(value):  # noqa: ANN001, ANN202 - what `unsafe` makes, written plainly
    if isinstance(value, Secret | Unsafe):
        return value
    if isinstance(value, str):
        return Unsafe(value)
    if isinstance(value, dict):
        return {k: _unsafe_walk(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_unsafe_walk(v) for v in value]
    return value


def _typed(value):  # noqa: ANN001, ANN202 - a value with every type spelled out
    if isinstance(value, dict):
        return {k: _typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_typed(v) for v in value]
    return (type(value).__name__, value)


class Label(str):
    """A str of its own kind (as YAML loaders make): marked like any str."""


def test_unsafe_marks_every_string_and_leaves_everything_else_as_it_was():
    registered = {
        "rc": 0,
        "stdout": "{{ not_a_template }}",
        "stderr": "",
        "changed": False,
        "ratio": -0.0,
        "none": None,
        "lines": ["a", "", ("t", 1)],
        "nested": {"secret": Secret("hunter2"), "done": Unsafe("x"), "label": Label("")},
    }
    marked = unsafe(registered)
    assert _typed(marked) == _typed(_unsafe_walk(registered))
    assert type(marked["stderr"]) is Unsafe and type(marked["nested"]["label"]) is Unsafe
    assert marked["nested"]["secret"] is registered["nested"]["secret"]
    # Empty output is one shared Unsafe (a run registers thousands), still rendered as data.
    assert unsafe("") is unsafe({"x": ""})["x"]
    assert render({"out": marked["stdout"]}, {}, where=WHERE) == {"out": "{{ not_a_template }}"}


@pytest.mark.parametrize(
    "text, wanted",
    [
        ("{{ missing.stdout | default('none') }}", "none"),
        ("{{ missing['a'].b | default('none') }}", "none"),
        ("{{ missing.stdout is defined }}", False),
        ("{{ known.a.b | default('none') }}", "none"),
    ],
)
def test_an_attribute_of_an_undefined_value_is_undefined_as_in_ansible(text, wanted):
    """ansible-core 2.19 renders each of these (measured with ansible-playbook)."""
    assert render(text, {"known": {"a": 1}}, where="t") == wanted


def test_using_an_attribute_of_an_undefined_value_still_names_the_variable():
    with pytest.raises(TemplateError) as err:
        render("{{ missing.stdout }}", {}, where="book.yml:3")
    assert "undefined variable 'missing'" in str(err.value)


@pytest.mark.parametrize(
    "test", ["succeeded", "none", "string", "number", "mapping", "sameas(none)", "truthy"]
)
def test_a_test_on_an_undefined_value_names_the_variable(test):
    """ansible-core 2.19 fails `typo is none` ("'typo' is undefined"); only `defined`
    and `undefined` answer for an undefined value (measured with ansible-playbook)."""
    with pytest.raises(TemplateError) as err:
        render(f"{{{{ typo.rc is {test} }}}}", {}, where="book.yml:3")
    assert "undefined variable 'typo'" in str(err.value)
    assert render("{{ typo.rc is undefined }}", {}, where="t") is True


def test_contains_fails_on_an_undefined_list_item_even_after_a_match():
    """ansible-core 2.19 fails `[1, typo] is contains(1)` (its lazy list renders every
    item); a dict's undefined value is never looked at (measured with ansible-playbook)."""
    with pytest.raises(TemplateError) as err:
        render("{{ [1, typo] is contains(1) }}", {}, where="book.yml:3")
    assert "undefined variable 'typo'" in str(err.value)
    assert render("{{ {'a': typo} is contains('a') }}", {}, where="t") is True
    assert render("{{ [1, 2] is contains(2) }}", {}, where="t") is True


def test_lookups_run_here_and_an_unknown_one_is_named(tmp_path, monkeypatch):
    from pctfleet.errors import TemplateError

    monkeypatch.setenv("LOOKED_UP", "yes")
    (tmp_path / "files").mkdir()
    (tmp_path / "files/k.txt").write_text("key\n")
    scope = {"playbook_dir": str(tmp_path)}
    assert render("{{ lookup('env', 'LOOKED_UP') }}", scope, where="w") == "yes"
    assert render("{{ lookup('file', 'k.txt') }}", scope, where="w") == "key"
    assert render("{{ query('file', 'k.txt') }}", scope, where="w") == ["key"]
    with pytest.raises(TemplateError) as err:
        render("{{ lookup('dig', 'example.org') }}", scope, where="site.yml:4")
    assert str(err.value).startswith("site.yml:4: lookup plugin 'dig' is not supported (known:")
    with pytest.raises(TemplateError) as err:
        render("{{ lookup('file', 'nope.txt') }}", scope, where="site.yml:5")
    assert "lookup('file'): The 'file' lookup had an issue accessing the file 'nope.txt'" in str(
        err.value
    )


def test_what_a_container_printed_stays_data_through_a_template_lookup_and_a_newline(tmp_path):
    from pctfleet.playbook.templating import Unsafe, unsafe

    (tmp_path / "templates").mkdir()
    (tmp_path / "templates/t.j2").write_text("{{ b }}")
    scope = {"playbook_dir": str(tmp_path), "out": unsafe("{{ 7*7 }}"), "b": "x {{ out }}"}
    assert render("{{ lookup('template', 't.j2') }}", scope, where="w") == "x {{ 7*7 }}"
    kept = render("{{ out }}\n", scope, where="w")
    assert (kept, type(kept)) == ("{{ 7*7 }}\n", Unsafe)


# ---------------------------------------------------------------- data, not templates


def test_iterators_from_filters_are_lists_in_text_values_and_expressions():
    data = {"a": [1, 2], "b": ["x", "y"], "s": [3, 1, 3]}
    assert render("{{ a | zip(b) }}", data, where="t") == [[1, "x"], [2, "y"]]
    assert render("z={{ s | map('string') }}", data, where="t") == "z=['3', '1', '3']"
    assert render("{{ (a | product(b)) | length }}", data, where="t") == 4
    assert render("{{ (a | reverse)[0] }}", data, where="t") == 2
    assert render("{{ {'k': 1}.items() }}", data, where="t") == [["k", 1]]
    assert render("{{ 'a.b' | splitext }}", data, where="t") == ["a", ".b"]


def test_as_data_gives_back_the_same_object_when_nothing_is_an_iterator():
    from pctfleet.playbook.templating import as_data

    value = {"k": [1, {"n": "x"}]}
    assert as_data(value) is value
    assert as_data({"k": (1, 2)}) == {"k": [1, 2]}


def test_random_with_a_seed_repeats_and_counts_as_ansible_does():
    data = {"b": ["x", "y", "z"]}
    first = render("{{ 60 | random(seed='x') }}", data, where="t")
    assert first == render("{{ 60 | ansible.builtin.random(seed='x') }}", data, where="t")
    stepped = render("{{ 60 | random(start=10, step=5, seed='x') }}", data, where="t")
    assert 10 <= stepped < 60 and stepped % 5 == 0
    assert render("{{ b | random(seed='y') }}", data, where="t") in data["b"]
    with pytest.raises(TemplateError, match="start and step"):
        render("{{ b | random(start=1) }}", data, where="t")


def test_a_yaml_unsafe_tag_keeps_braces_as_text():
    from pctfleet.playbook.yamlsrc import load_yaml_text

    loaded = load_yaml_text('one: !unsafe "{{ 5*5 }}"\nall: !unsafe ["{{ a }}", {k: "{% x %}"}]\n')
    assert render("{{ one }}|{{ all[1].k }}", loaded, where="t") == "{{ 5*5 }}|{% x %}"
    assert render({"v": "{{ all }}"}, loaded, where="t") == {"v": ["{{ a }}", {"k": "{% x %}"}]}
