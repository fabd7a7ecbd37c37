"""Where a playbook's relative file names are looked for, as ansible-core looks."""

from __future__ import annotations

import os
from pathlib import Path


def vars_file(name: str, base_dir: str | Path) -> Path | None:
    """`vars_files` and `include_vars`: the playbook folder's vars/NAME, then NAME
    (an absolute or `~` name as written); None where neither exists. The first that
    exists is the answer, a folder too (reading it then fails, naming it, as in
    Ansible)."""
    path = Path(os.path.expanduser(name))  # `~nobody/x` stays as written, as in Ansible
    base = Path(base_dir)
    tried = [path] if path.is_absolute() else [base / "vars" / name, base / name]
    return next((p for p in tried if p.exists()), None)
