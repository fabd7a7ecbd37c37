"""The ansible.cfg an Ansible user's repository already has, found as ansible-core finds
it, for the settings that say where things are: `inventory`, `vault_password_file` and
`roles_path` (section `[defaults]`, or their ANSIBLE_* variables, which win), and the
node login proxmox_pct_remote takes from it (see `NodeLogin`).

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
from dataclasses import dataclass, field
from pathlib import Path

from pctfleet.errors import InputError

SYSTEM = Path("/etc/ansible/ansible.cfg")
HOME_CONFIG = "~/.ansible.cfg"


@dataclass(frozen=True)
class NodeLogin:
    """How proxmox_pct_remote logs in to a node when the inventory's host variables
    (ansible_user, ansible_port, ansible_ssh_private_key_file, ...) do not say; each
    value names where it came from, for messages."""

    user: tuple[str, str] | None = None  # (value, where)
    port: tuple[int, str] | None = None
    identity: tuple[Path, str] | None = None
    host_key_checking: tuple[bool, str] | None = None


@dataclass(frozen=True)
class AnsibleConfig:
    path: Path | None  # the file read; None when there is none
    inventory: tuple[Path, ...] = ()
    vault_password_file: Path | None = None
    roles_path: tuple[Path, ...] = ()
    login: NodeLogin = NodeLogin()
    managed: str | None = None  # [defaults] ansible_managed, for templates
    force_handlers: bool = False  # [defaults] force_handlers, or ANSIBLE_FORCE_HANDLERS
    sections: Mapping[str, Mapping[str, str]] = field(default_factory=dict, compare=False)
    variables: Mapping[str, str] = field(default_factory=dict, compare=False)  # ANSIBLE_*

    def setting(self, variable: str, section: str, key: str) -> tuple[str, str] | None:
        """(value, where) of one setting: its variable, else the file's key (unquoted,
        as ansible-core reads an ini string); None where neither is set."""
        if self.variables.get(variable):
            return self.variables[variable], variable
        value = self.sections.get(section, {}).get(key)
        return (_unquote(value), f"{self.path} [{section}] {key}") if value else None

    def flag(self, variable: str, section: str, key: str, default: bool) -> bool:
        found = self.setting(variable, section, key)
        return boolean(found[0]) if found else default

    def words(self, variable: str, section: str, key: str) -> tuple[str, ...]:
        """A list setting (comma-separated), as ansible-core splits one."""
        found = self.setting(variable, section, key)
        items = (_unquote(item.strip()) for item in found[0].split(",")) if found else ()
        return tuple(item for item in items if item)


# Where ansible-core 2.19 looks, first found wins (measured with ansible-playbook -vvv
# against proxmox_pct_remote, tests/unit/test_ansible_login_differential.py). The
# [defaults] user and key outrank the [paramiko_connection] ones and their variables
# because they reach the plugin as the play's remote_user and --private-key's default;
# the port has no such path, so there the later-listed source wins, as in the plugin.
# ("env", NAME) or (SECTION, KEY); a [defaults] path is relative to the file's
# folder, the others (the plugin's plain strings) to the current folder.
USER_SOURCES = (
    ("env", "ANSIBLE_REMOTE_USER"),
    ("defaults", "remote_user"),
    ("env", "ANSIBLE_PARAMIKO_REMOTE_USER"),
    ("paramiko_connection", "remote_user"),
)
PORT_SOURCES = (
    ("env", "ANSIBLE_REMOTE_PARAMIKO_PORT"),
    ("env", "ANSIBLE_REMOTE_PORT"),
    ("paramiko_connection", "remote_port"),
    ("defaults", "remote_port"),
)
IDENTITY_SOURCES = (
    ("env", "ANSIBLE_PRIVATE_KEY_FILE"),
    ("defaults", "private_key_file"),
    ("env", "ANSIBLE_PARAMIKO_PRIVATE_KEY_FILE"),
    ("paramiko_connection", "private_key_file"),
)
HOST_KEY_SOURCES = (
    ("env", "ANSIBLE_PARAMIKO_HOST_KEY_CHECKING"),
    ("env", "ANSIBLE_SSH_HOST_KEY_CHECKING"),
    ("env", "ANSIBLE_HOST_KEY_CHECKING"),
    ("paramiko_connection", "host_key_checking"),
    ("defaults", "host_key_checking"),
)


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
    sections = _sections(path) if path else {}
    values = sections.get("defaults", {})
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
        _login(env, sections, path, cwd),
        _unquote(values["ansible_managed"]) if values.get("ansible_managed") else None,
        _force_handlers(env, values),
        sections,
        {k: v for k, v in env.items() if k.startswith("ANSIBLE_")},
    )


def _force_handlers(env: Mapping[str, str], values: Mapping[str, str]) -> bool:
    if env.get("ANSIBLE_FORCE_HANDLERS"):
        return boolean(env["ANSIBLE_FORCE_HANDLERS"])
    return boolean(values.get("force_handlers", ""))


def _login(
    env: Mapping[str, str], sections: Mapping[str, Mapping[str, str]], path: Path | None, cwd: Path
) -> NodeLogin:
    def first(sources: tuple[tuple[str, str], ...]) -> tuple[str, str, str] | None:
        """(value, where, section) of the first source that sets one."""
        for section, key in sources:
            if section == "env":
                if env.get(key):
                    return env[key], key, section
            elif sections.get(section, {}).get(key):
                return sections[section][key], f"{path} [{section}] {key}", section
        return None

    user, port, identity, checking = (
        first(s) for s in (USER_SOURCES, PORT_SOURCES, IDENTITY_SOURCES, HOST_KEY_SOURCES)
    )
    return NodeLogin(
        user=(_unquote(user[0]) if user[2] != "env" else user[0], user[1]) if user else None,
        port=(_port(port[0], port[1]), port[1]) if port else None,
        identity=_identity(identity, path, cwd) if identity else None,
        host_key_checking=(boolean(checking[0]), checking[1]) if checking else None,
    )


def _port(text: str, where: str) -> int:
    try:
        port = int(text.strip())
    except ValueError:
        port = 0
    if not 1 <= port <= 65535:
        raise InputError(f"{where}: must be a port number 1-65535, got {text!r}")
    return port


def _identity(found: tuple[str, str, str], path: Path | None, cwd: Path) -> tuple[Path, str]:
    """[defaults] private_key_file and ANSIBLE_PRIVATE_KEY_FILE are ansible-core paths
    ($VARS and ~ expanded, relative to the file's folder or the current one); the
    plugin's own are strings, only ~ expanded (and an ini value unquoted)."""
    text, where, section = found
    if where == "ANSIBLE_PRIVATE_KEY_FILE" or section == "defaults":
        base = path.parent if section == "defaults" and path else cwd
        return base / os.path.expanduser(os.path.expandvars(text.strip())), where
    text = text if section == "env" else _unquote(text)
    return cwd / os.path.expanduser(text), where


# ansible-core's true spellings (module_utils.parsing.convert_bool); a setting reads
# them leniently: anything else is false.
_TRUE = {"y", "yes", "on", "1", "true", "t"}


def boolean(text: str) -> bool:
    return text.strip().lower() in _TRUE


def _unquote(text: str) -> str:
    """A string setting of an ini file without its quotes, as ansible-core's unquote."""
    quoted = len(text) > 1 and text[0] == text[-1] and text[0] in "'\"" and text[-2] != "\\"
    return text[1:-1] if quoted else text


def _sections(path: Path) -> dict[str, dict[str, str]]:
    parser = configparser.ConfigParser(interpolation=None, inline_comment_prefixes=(";",))
    try:
        parser.read(path)
    except (configparser.Error, UnicodeDecodeError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InputError(f"{path}: not a valid ansible.cfg: {first}") from None
    return {name: dict(parser[name]) for name in parser.sections()}


def _paths(found: tuple[str, Path] | None, separator: str | None) -> tuple[Path, ...]:
    if found is None:
        return ()
    text, base = found
    parts = text.split(separator) if separator else [text]
    paths = (os.path.expanduser(os.path.expandvars(p.strip())) for p in parts if p.strip())
    return tuple(base / p for p in paths)
