"""The settings of ansible.cfg (and their ANSIBLE_* variables) that change what a play
does, as ansible-playbook would read them beside the playbook.

Followed: `gathering` (a play that does not say gathers facts unless it is
`explicit`) and `any_errors_fatal` (a play's default). pctfleet.cli.options follows
`[tags] run`/`skip` (when the command line gives none) and `vault_identity_list`.
Not followed, and named in a `warning:` line wherever they are set to something that
changes a run: the UNFOLLOWED settings below.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pctfleet.ansiblecfg import AnsibleConfig, boolean


@dataclass(frozen=True)
class PlayDefaults:
    gather_facts: bool = True
    any_errors_fatal: bool = False


def play_defaults(config: AnsibleConfig) -> PlayDefaults:
    gathering = config.setting("ANSIBLE_GATHERING", "defaults", "gathering")
    explicit = gathering is not None and gathering[0].strip().lower() == "explicit"
    fatal = config.flag("ANSIBLE_ANY_ERRORS_FATAL", "defaults", "any_errors_fatal", False)
    return PlayDefaults(gather_facts=not explicit, any_errors_fatal=fatal)


def _set(value: str) -> bool:
    return bool(value.strip())


def _true(value: str) -> bool:
    return boolean(value)


def _false(value: str) -> bool:
    return not boolean(value)


# (variable, section, key, when it changes a run, what pctfleet does instead)
UNFOLLOWED: tuple[tuple[str, str, str, Callable[[str], bool], str], ...] = (
    ("ANSIBLE_HASH_BEHAVIOUR", "defaults", "hash_behaviour",
     lambda v: v.strip().lower() != "replace", "a variable set twice is replaced, not merged"),
    ("ANSIBLE_ERROR_ON_UNDEFINED_VARS", "defaults", "error_on_undefined_vars", _false,
     "an undefined variable is an error"),
    ("ANSIBLE_JINJA2_EXTENSIONS", "defaults", "jinja2_extensions", _set,
     "templates have no extensions ({% do %} and {% break %} are syntax errors)"),
    ("ANSIBLE_PRIVATE_ROLE_VARS", "defaults", "private_role_vars", _true,
     "a role's vars are the play's, as by default"),
    ("ANSIBLE_TASK_TIMEOUT", "defaults", "task_timeout", lambda v: v.strip() not in ("", "0"),
     "a task has no time limit of its own: give it `timeout:`, or --timeout"),
    ("ANSIBLE_INJECT_FACT_VARS", "defaults", "inject_facts_as_vars", _false,
     "facts are also ansible_* variables"),
    ("ANSIBLE_NULL_REPRESENTATION", "defaults", "null_representation", _set,
     "None renders as Ansible renders it by default"),
    ("ANSIBLE_BECOME_USER", "privilege_escalation", "become_user",
     lambda v: v.strip() not in ("", "root"), "tasks run as root, through pct exec"),
    ("ANSIBLE_PRECEDENCE", "defaults", "precedence", _set,
     "variables take Ansible's default precedence"),
)  # fmt: skip


def unfollowed(config: AnsibleConfig) -> list[str]:
    """One line for each setting above that would make ansible-playbook run the play
    otherwise."""
    lines = []
    for variable, section, key, changes, instead in UNFOLLOWED:
        found = config.setting(variable, section, key)
        if found and changes(found[0]):
            lines.append(f"{found[1]} = {found[0]!r} is not followed: {instead}")
    return lines
