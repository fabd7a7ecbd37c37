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

DEFAULT_MANAGED = "Ansible managed"
# Read anew by every render: a template reading one is never taken from another render.
UNSTABLE = frozenset({"template_run_date"})


def template_vars(src: str, path: Path, dest: str, variables: Mapping[str, Any]) -> Mapping:
    """`variables` with the template's own on top (`ansible_managed` below them)."""
    found = path.resolve()
    stat = os.stat(found)
    try:
        owner: str | int = pwd.getpwuid(stat.st_uid).pw_name
    except KeyError:
        owner = stat.st_uid
    own: dict[str, Any] = {
        "template_host": os.uname()[1],
        "template_path": src,
        "template_mtime": datetime.datetime.fromtimestamp(stat.st_mtime),
        "template_uid": owner,
        "template_run_date": datetime.datetime.now(),
        "template_destpath": dest,
        "template_fullpath": str(found),
    }
    if "ansible_managed" not in variables:
        own["ansible_managed"] = _managed(stat.st_mtime)
    return ChainMap(own, variables)  # type: ignore[arg-type]


def _managed(mtime: float) -> str:
    text = _configured(os.environ.get("ANSIBLE_CONFIG"), os.getcwd(), os.environ.get("HOME"))
    text = text.format(host="{{ template_host }}", uid="{{ template_uid }}",
                       file="{{ template_path }}")  # fmt: skip
    return time.strftime(text, time.localtime(mtime))


@functools.lru_cache(maxsize=8)
def _configured(_named: str | None, _cwd: str, _home: str | None) -> str:
    """ansible.cfg's string, read once per config location (the arguments key the cache)."""
    from pctfleet import ansiblecfg

    return ansiblecfg.read().managed or DEFAULT_MANAGED
