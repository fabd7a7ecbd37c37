"""Pure templates share their results between containers; nothing else does."""

from __future__ import annotations

import pytest

from pctfleet.playbook import rendermemo
from pctfleet.playbook.templating import _ENV
from pctfleet.playbook.templating import render as _render


def render(value, variables):  # noqa: ANN001, ANN201
    return _render(value, variables, where="t")


@pytest.fixture
def fresh_calls(monkeypatch):
    """The memo emptied, and a count of renders that really ran."""
    monkeypatch.setattr(rendermemo, "_table", {})
    calls = []
    real = rendermemo.rendered

    def counting(key, make):
        def counted():
            calls.append(key)
            return make()

        return real(key, counted)

    monkeypatch.setattr(rendermemo, "rendered", counting)
    return calls


def test_the_same_values_render_once_and_other_values_render_again(fresh_calls):
    text = "{{ venv }}/bin/python"
    assert render(text, {"venv": "/opt/a"}) == "/opt/a/bin/python"
    assert render(text, {"venv": "/opt/a", "other": 1}) == "/opt/a/bin/python"
    assert render(text, {"venv": "/opt/b"}) == "/opt/b/bin/python"
    assert len(fresh_calls) == 2


def test_types_are_kept_apart(fresh_calls):
    assert render("{{ x }}", {"x": 1}) == 1
    assert render("{{ x }}", {"x": True}) is True
    assert render("{{ x }}", {"x": 1.0}) == 1.0 and isinstance(render("{{ x }}", {"x": 1.0}), float)


@pytest.mark.parametrize(
    "text",
    [
        "{{ lookup('env', 'HOME') }}",
        "{{ [1, 2] | random }}",
        "{% for i in items %}{{ i }}{% endfor %}",
        "{{ path is exists }}",
        "{{ now() }}",
    ],
)
def test_templates_that_read_more_than_their_variables_are_never_shared(text):
    assert rendermemo.pure_names(_ENV, text) is None


def test_a_list_variable_or_an_undefined_one_is_not_shared(fresh_calls):
    assert rendermemo.memo_key(_ENV, "{{ xs | join(',') }}", {"xs": ["a"]}) is None
    assert rendermemo.memo_key(_ENV, "{{ gone | default('d') }}", {}) is None
    assert render("{{ gone | default('d') }}", {}) == "d"
