"""Connection settings: explicit options win, then ~/.ssh/config, then ssh's defaults."""

from __future__ import annotations

from pctfleet.transport.options import ConnectOptions, resolve


def test_ssh_config_supplies_what_was_not_given(tmp_path):
    config = tmp_path / "config"
    config.write_text(
        "Host pve-*\n  User admin\n  Port 2222\n  IdentityFile ~/.ssh/pve\n  HostName 10.1.2.6\n"
    )
    target = resolve("pve-a", "pve-a", ConnectOptions(ssh_config=str(config)))
    assert (target.hostname, target.user, target.port) == ("10.1.2.6", "admin", 2222)
    assert target.identities[0].endswith("/.ssh/pve")


def test_explicit_options_win_over_ssh_config(tmp_path):
    config = tmp_path / "config"
    config.write_text("Host pve-a\n  User admin\n  Port 2222\n")
    given = ConnectOptions(user="root", port=22, identity="/k", ssh_config=str(config))
    target = resolve("pve-a", "pve-a", given)
    assert (target.user, target.port, target.identities) == ("root", 22, ("/k",))


def test_defaults_without_any_config(tmp_path):
    target = resolve("n", "10.1.2.6", ConnectOptions(ssh_config=str(tmp_path / "absent")))
    assert (target.user, target.port, target.proxy_jump) == ("root", 22, None)
