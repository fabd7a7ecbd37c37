"""The ansible.cfg an Ansible user's repository already has, found as ansible-core finds
it, for the settings that say where things are: `inventory`, `vault_password_file` and
`roles_path` (section `[defaults]`, or their ANSIBLE_* variables, which win).

ansible-core reads the first of: $ANSIBLE_CONFIG (a file, or a folder holding
ansible.cfg), ./ansible.cfg (not when the current folder is world-writable),
~/.ansible.cfg, /etc/ansible/ansible.cfg. Paths in the file are relative to its
folder; paths in the variables to the current folder; `~` and `$VARS` are expanded
and `;` starts a comment, as in Ansible. One file is read, never merged.
"""

from __future__ import annotations

import configparser
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pctfleet.errors import InputError

SYSTEM = Path("/etc/ansible/ansible.cfg")
HOME_CONFIG = "~/.ansible.cfg"


@dataclass(frozen=True)
class AnsibleConfig:
    path: Path | None  # the file read; None when there is none
    inventory: tuple[Path, ...] = ()
    vault_password_file: Path | None = None
    roles_path: tuple[Path, ...] = ()


def find(env: Mapping[str, str], cwd: Path) -> Path | None:
    named = env.get("ANSIBLE_CONFIG")
    if named:
        path = Path(os.path.expanduser(named))
        path = path / "ansible.cfg" if path.is_dir() else path
        if path.is_file():
            return path
    local = cwd / "ansible.cfg"
    if local.is_file() and not _world_writable(cwd):
        return local
    home = Path(os.path.expanduser(HOME_CONFIG))
    return next((p for p in (home, SYSTEM) if p.is_file()), None)


def _world_writable(folder: Path) -> bool:
    try:
        return bool(folder.stat().st_mode & stat.S_IWOTH)
    except OSError:
        return True


def read(env: Mapping[str, str] | None = None, cwd: Path | None = None) -> AnsibleConfig:
    """The settings, from the variables and the file found. A file that is not valid INI
    is an InputError naming it."""
    env = os.environ if env is None else env
    cwd = Path.cwd() if cwd is None else cwd
    path = find(env, cwd)
    values = _defaults(path) if path else {}
    folder = path.parent if path else cwd

    def setting(key: str) -> tuple[str, Path] | None:
        variable = env.get(f"ANSIBLE_{key.upper()}")
        if variable:
            return variable, cwd
        return (values[key], folder) if values.get(key) else None

    return AnsibleConfig(
        path,
        _paths(setting("inventory"), ","),
        next(iter(_paths(setting("vault_password_file"), None)), None),
        _paths(setting("roles_path"), ":"),
    )


def _defaults(path: Path) -> dict[str, str]:
    parser = configparser.ConfigParser(interpolation=None, inline_comment_prefixes=(";",))
    try:
        parser.read(path)
    except (configparser.Error, UnicodeDecodeError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InputError(f"{path}: not a valid ansible.cfg: {first}") from None
    return dict(parser["defaults"]) if parser.has_section("defaults") else {}


def _paths(found: tuple[str, Path] | None, separator: str | None) -> tuple[Path, ...]:
    if found is None:
        return ()
    text, base = found
    parts = text.split(separator) if separator else [text]
    paths = (os.path.expanduser(os.path.expandvars(p.strip())) for p in parts if p.strip())
    return tuple(base / p for p in paths)
