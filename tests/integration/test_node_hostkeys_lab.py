"""known_hosts as operators' machines have them, against the lab's real sshd.

Debian's ssh_config says `HashKnownHosts yes`, so the lines `ssh` recorded are
hashed; and a line recorded by an older client names the key type it agreed on
then (ECDSA), while the node offers an Ed25519 key too. OpenSSH's client asks
for the recorded type first and connects; so must pctfleet, with no "host key
changed" alarm.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.lab

KEY = "node1/200"


def pctfleet_exec(inventory: Path, known_hosts: Path) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "pctfleet", "exec", "-i", str(inventory), "--limit", KEY]
    argv += ["--known-hosts", str(known_hosts), "--json", "--", "printf", "in"]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120)


def hashed(path: Path) -> Path:
    """The file as `HashKnownHosts yes` leaves it: no host name in clear."""
    subprocess.run(["ssh-keygen", "-q", "-H", "-f", str(path)], check=True, capture_output=True)
    Path(f"{path}.old").unlink()
    assert "|1|" in path.read_text() and " 127.0." not in path.read_text()
    return path


def ran(done: subprocess.CompletedProcess) -> list:
    assert done.stdout, done.stderr
    return [(r["status"], r["stdout"]) for r in json.loads(done.stdout)["results"]]


@pytest.fixture(scope="module")
def info(lab):
    return lab.up(nodes=2, containers=2)


def test_a_hashed_known_hosts_file_is_read(info, tmp_path: Path):
    known = tmp_path / "known_hosts"
    known.write_text(Path(info.known_hosts).read_text())
    done = pctfleet_exec(info.inventory, hashed(known))
    assert ran(done) == [("ok", "in")], done.stderr


def test_a_node_known_by_its_older_key_type_is_not_a_changed_key(lab, info, tmp_path: Path):
    ecdsa = tmp_path / "ssh_host_ecdsa_key"
    keygen = ["ssh-keygen", "-q", "-t", "ecdsa", "-N", "", "-C", "node1", "-f", str(ecdsa)]
    subprocess.run(keygen, check=True)
    public = Path(f"{ecdsa}.pub").read_text().split()
    known = tmp_path / "known_hosts"
    known.write_text(f"{info.node('node1').address} {public[0]} {public[1]}\n")
    with lab.sshd_setting("node1", "HostKey", str(ecdsa)):
        offered = subprocess.run(
            ["ssh-keyscan", "-t", "ed25519,ecdsa", info.node("node1").address],
            capture_output=True,
            text=True,
        ).stdout
        assert "ssh-ed25519" in offered and "ecdsa-sha2-nistp256" in offered  # both offered
        done = pctfleet_exec(info.inventory, hashed(known))
    assert ran(done) == [("ok", "in")], done.stderr
