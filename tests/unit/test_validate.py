"""`validate`'s command as the sh code push.sh runs on the new file."""

from __future__ import annotations

import pytest

from pctfleet.errors import PlaybookError
from pctfleet.modules.validate import validate_code


def test_each_word_is_quoted_and_percent_s_is_the_new_file():
    assert validate_code("visudo -cf %s", "w") == 'visudo -cf "$tmp"'
    assert validate_code("sshd -t -f %s", "w") == 'sshd -t -f "$tmp"'
    assert validate_code("check --file=%s 'a b'", "w") == "check --file=\"$tmp\" 'a b'"
    assert validate_code("x %s$(reboot)", "w") == "x \"$tmp\"'$(reboot)'"


@pytest.mark.parametrize(
    ("value", "words"),
    [("visudo -c", "validate must contain %s: visudo -c"), ("x 'unclosed %s", "cannot split")],
)
def test_a_command_ansible_core_would_refuse_is_refused_before_the_run(value, words):
    with pytest.raises(PlaybookError, match=words):
        validate_code(value, "book.yml:3")
