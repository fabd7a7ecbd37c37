"""The usual fix of a transport error, as one line an operator can paste as it is."""

from __future__ import annotations

from pathlib import Path

PCT = "/usr/sbin/pct"  # where pve-container installs it; sudo matches the full path
SUDO_ASKED = ("a password is required", "a terminal is required")

# ssh-keyscan -t takes the short type names; paramiko gives the key's wire name.
_KEYSCAN_TYPES = {"ssh-ed25519": "ed25519", "ssh-rsa": "rsa", "ssh-dss": "dsa"}


def keyscan_type(key_name: str) -> str:
    if key_name.startswith("ecdsa-sha2-"):
        return "ecdsa"
    return _KEYSCAN_TYPES.get(key_name, key_name)


def split_known_host(hostname: str) -> tuple[str, int]:
    """known_hosts' host field ("10.1.2.6" or "[10.1.2.6]:2222") as address and port."""
    if hostname.startswith("[") and "]:" in hostname:
        address, port = hostname[1:].rsplit("]:", 1)
        if port.isdigit():
            return address, int(port)
    return hostname, 22


def host_key_fix(hostname: str, key_name: str, record_file: Path) -> str:
    address, port = split_known_host(hostname)
    port_flag = f"-p {port} " if port != 22 else ""
    scan = f"ssh-keyscan -t {keyscan_type(key_name)} {port_flag}{address} >> {record_file}"
    fix = f"check the fingerprint, then rerun with --accept-new-host-keys or record it: {scan}"
    if where := unchecked_by_ansible():
        fix += f" ({where} says host_key_checking false; pctfleet checks host keys all the same)"
    return fix


def unchecked_by_ansible() -> str | None:
    """Where the ansible.cfg or ANSIBLE_* of this folder turns host key checking off: why
    ansible-playbook logged in where pctfleet refuses an unknown key."""
    from pctfleet import ansiblecfg
    from pctfleet.errors import InputError

    try:
        checking = ansiblecfg.read().login.host_key_checking
    except InputError:
        return None
    return checking[1] if checking and not checking[0] else None


def asks_password(stderr: str) -> bool:
    """What sudo -n prints when the user may not run pct without a password."""
    return any(text in stderr for text in SUDO_ASKED)


def sudoers_fix(user: str, node: str) -> str:
    line = f"{user} ALL=(root) NOPASSWD: {PCT}"
    return f"as root on {node}: echo '{line}' > /etc/sudoers.d/pctfleet (or connect as root)"


def start_fix(ctid: int, node: str) -> str:
    return f"start it on {node}: pct start {ctid}"
