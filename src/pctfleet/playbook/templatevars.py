"""The variables ansible-core's `template` action adds for the template it renders
(ansible/_internal/_templating/_template_vars.py, 2.19): where the template is, who
owns it, when it was changed, where it goes, and `ansible_managed`.

`ansible_managed` is ansible.cfg's `[defaults] ansible_managed` ("Ansible managed"
when unset), its `{host}`, `{uid}` and `{file}` standing for those variables and its
strftime codes for the template's change time, as there; a variable of that name
set anywhere else wins."""

from __future__ import annotations

import datetime
import functools
import os
import pwd
import time
from collections import ChainMap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pctfleet.errors import PlaybookError
from pctfleet.playbook.templating import Unsafe

DEFAULT_MANAGED = "Ansible managed"
# Read anew by every render: a template reading one is never taken from another render.
UNSTABLE = frozenset({"template_run_date"})


def template_vars(
    src: str, path: Path, dest: str, variables: Mapping[str, Any], where: str
) -> Mapping:
    """`variables` with the template's own on top (`ansible_managed` below them). Their
    text is data (a `dest` may hold what a container printed): never rendered again;
    only `ansible_managed` is a template, as in Ansible."""
    found = Path(os.path.abspath(path))  # as found: symlinks and `..` kept, as Ansible
    stat = os.stat(found)
    try:
        owner: str | int = Unsafe(pwd.getpwuid(stat.st_uid).pw_name)
    except KeyError:
        owner = stat.st_uid
    own: dict[str, Any] = {
        "template_host": Unsafe(os.uname()[1]),
        "template_path": Unsafe(src),
        "template_mtime": datetime.datetime.fromtimestamp(stat.st_mtime),
        "template_uid": owner,
        "template_run_date": datetime.datetime.now(),
        "template_destpath": Unsafe(dest),
        "template_fullpath": Unsafe(str(found)),
    }
    if "ansible_managed" not in variables:
        own["ansible_managed"] = _managed(stat.st_mtime, where)
    return ChainMap(own, variables)  # type: ignore[arg-type]


def _managed(mtime: float, where: str) -> str:
    text, origin = _configured(
        os.environ.get("ANSIBLE_CONFIG"), os.getcwd(), os.environ.get("HOME")
    )
    try:
        text = text.format(host="{{ template_host }}", uid="{{ template_uid }}",
                           file="{{ template_path }}")  # fmt: skip
    except (IndexError, KeyError, ValueError) as exc:
        problem = f"{type(exc).__name__}: {exc}"
        raise PlaybookError(
            f"{origin}: ansible_managed {text!r} is not a format Ansible fills in "
            f"({problem}; placeholders: {{host}}, {{uid}}, {{file}})",
            where=where,
        ) from None
    return time.strftime(text, time.localtime(mtime))


@functools.lru_cache(maxsize=8)
def _configured(_named: str | None, _cwd: str, _home: str | None) -> tuple[str, str]:
    """ansible.cfg's string and where it is, read once per config location (the
    arguments key the cache)."""
    from pctfleet import ansiblecfg

    config = ansiblecfg.read()
    if config.managed:
        return config.managed, f"{config.path} [defaults]"
    return DEFAULT_MANAGED, "the default"
