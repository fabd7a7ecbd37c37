"""The `version` test's kinds, against what ansible-core 2.19 answered for the same
comparisons (measured with ansible-playbook)."""

from __future__ import annotations

import pytest

from pctfleet.errors import TemplateError
from pctfleet.playbook.templating import render

# (expression, ansible-core's answer): each kind where it differs from the others.
MEASURED = [
    ("'2.5.1+cu124' is version('2.5.1', '>=', version_type='loose')", True),
    ("'2.5.1+cu124' is version('2.5.1', '==', version_type='semver')", True),
    ("'1.0.0-rc.1' is version('1.0.0', '<', version_type='semver')", True),
    ("'1.0.0-alpha.2' is version('1.0.0-alpha.10', '<', version_type='semver')", True),
    ("'2.5.1' is version('2.5', '>', strict=true)", True),
    ("'2.5.1+cu124' is version('2.5.1', '>', version_type='pep440')", True),
    ("'2.5.1rc1' is version('2.5.1', '<', version_type='pep440')", True),
    ("'1.2a1' is version('1.2', '<', version_type='strict')", True),
    ("'12.8' is version('12.10', '<', version_type='loose')", True),
]
REFUSED = [
    ("'2.5.1+cu124' is version('2.5', '>', strict=true)", "invalid version number"),
    ("'1.0' is version('1.0.0', '==', version_type='semver')", "invalid semantic version"),
    ("'1.0' is version('1.0.0', '==', version_type='nope')", "Invalid version type (nope)"),
    ("'1.0' is version('1.0', '==', strict=true, version_type='loose')", "Cannot specify both"),
    ("'1.0' is version('1.0', '~=')", "Invalid operator type (~=)"),
]


@pytest.mark.parametrize(("expression", "answer"), MEASURED)
def test_each_kind_compares_as_ansible_core_does(expression, answer):
    assert render("{{ " + expression + " }}", {}, where="t") is answer


@pytest.mark.parametrize(("expression", "words"), REFUSED)
def test_what_ansible_core_refuses_is_an_error_naming_why(expression, words):
    with pytest.raises(TemplateError, match=re_escape(words)):
        render("{{ " + expression + " }}", {}, where="t")


def re_escape(text: str) -> str:
    import re

    return re.escape(text)
