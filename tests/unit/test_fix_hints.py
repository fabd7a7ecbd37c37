"""An error with a usual fix says it in one line that can be pasted as it is."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import paramiko
import pytest

from pctfleet.transport.base import ContainerStopped, HostKeyUnknown, SudoPasswordRequired
from pctfleet.transport.fixes import host_key_fix
from pctfleet.transport.hostkeys import RefuseUnknown
from pctfleet.transport.pct import PctTarget


@pytest.mark.parametrize(
    "hostname, key, line",
    [
        ("10.1.2.6", "ssh-ed25519", "ssh-keyscan -t ed25519 10.1.2.6 >> /k"),
        ("[10.1.2.6]:2222", "ecdsa-sha2-nistp256", "ssh-keyscan -t ecdsa -p 2222 10.1.2.6 >> /k"),
        ("pve1.example", "ssh-rsa", "ssh-keyscan -t rsa pve1.example >> /k"),
    ],
)
def test_unknown_host_key_names_the_keyscan_line(hostname, key, line):
    fix = host_key_fix(hostname, key, Path("/k"))
    assert fix.endswith(f": {line}")
    assert "--accept-new-host-keys" in fix


def test_the_refusal_carries_the_real_key_type_and_file(tmp_path):
    key = paramiko.RSAKey.generate(1024)
    policy = RefuseUnknown("node1", tmp_path / "known_hosts")
    with pytest.raises(HostKeyUnknown) as caught:
        policy.missing_host_key(None, "[127.0.10.1]:2222", key)
    assert str(caught.value).endswith(
        f"ssh-keyscan -t rsa -p 2222 127.0.10.1 >> {tmp_path / 'known_hosts'})"
    )


def target(user: str = "deploy") -> PctTarget:
    node = SimpleNamespace(node="pve1", target=SimpleNamespace(user=user))
    return PctTarget(node, 200)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "said",
    [b"sudo: a password is required\n", b"sudo: a terminal is required to read the password"],
)
def test_sudo_asking_for_a_password_names_the_sudoers_line(said):
    with pytest.raises(SudoPasswordRequired) as caught:
        target()._raise_pct_error(1, said)
    assert caught.value.hint == (
        "as root on pve1: echo 'deploy ALL=(root) NOPASSWD: /usr/sbin/pct' "
        "> /etc/sudoers.d/pctfleet (or connect as root)"
    )


def test_a_stopped_container_names_pct_start():
    with pytest.raises(ContainerStopped) as caught:
        target("root")._raise_pct_error(255, b"container '200' not running!\n")
    assert caught.value.hint == "start it on pve1: pct start 200"
