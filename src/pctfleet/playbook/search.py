"""Where a playbook's relative file names are looked for, as ansible-core looks."""

from __future__ import annotations

from pathlib import Path


def vars_file(name: str, base_dir: str | Path) -> Path | None:
    """`vars_files` and `include_vars`: the playbook folder's vars/NAME, then NAME
    (an absolute or `~` name as written); None where neither is a file."""
    path = Path(name).expanduser()
    base = Path(base_dir)
    tried = [path] if path.is_absolute() else [base / "vars" / name, base / name]
    return next((p for p in tried if p.is_file()), None)
