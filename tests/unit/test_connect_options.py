"""Connection settings: explicit options win, then ~/.ssh/config, then ssh's defaults."""

from __future__ import annotations

from pctfleet.inventory import Node
from pctfleet.transport.connections import node_options
from pctfleet.transport.hostkeys import AcceptNew, RefuseUnknown, enforce
from pctfleet.transport.options import ConnectOptions, connection, resolve
from pctfleet.transport.ssh import NodeConnection


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


def test_ssh_options_act_like_dash_o_and_win_over_the_config_file(tmp_path):
    config = tmp_path / "config"
    config.write_text("Host 10.1.2.6\n  ProxyJump admin@10.1.2.5\n")
    options = ConnectOptions(
        ssh_config=str(config), ssh_options=(("ProxyJump", "root@10.1.2.7:2222"),)
    )
    assert resolve("pve1", "10.1.2.6", options).proxy_jump == "root@10.1.2.7:2222"
    conn = connection("10.1.2.6", options)
    assert (conn.gateway.user, conn.gateway.host, conn.gateway.port) == ("root", "10.1.2.7", 2222)
    # The option is the node's, not the jump host's: no jump from the jump host.
    assert not conn.gateway.gateway


def test_inventory_ssh_options_reach_the_connection_options():
    node = Node("pve1", "10.1.2.6", ssh_options={"ProxyJump": "j", "StrictHostKeyChecking": True})
    options = node_options(node, ConnectOptions())
    assert options.ssh_options == (("ProxyJump", "j"), ("StrictHostKeyChecking", "yes"))


def test_every_hop_refuses_unknown_host_keys_not_fabrics_auto_add(tmp_path):
    config = tmp_path / "config"
    config.write_text("Host 10.1.2.6\n  ProxyJump a@10.1.2.5,b@10.1.2.4\n")
    conn = connection("10.1.2.6", ConnectOptions(ssh_config=str(config)))
    enforce(conn, "pve1", str(tmp_path / "known_hosts"), accept_new=False)
    hops = [conn, conn.gateway, conn.gateway.gateway]
    assert sorted(h.host for h in hops) == ["10.1.2.4", "10.1.2.5", "10.1.2.6"]
    assert all(isinstance(h.client._policy, RefuseUnknown) for h in hops)


def test_explicit_identity_is_offered_to_jump_hosts_too(tmp_path):
    config = tmp_path / "config"
    config.write_text("Host 10.1.2.6\n  ProxyJump 10.1.2.5\n  IdentityFile /node-key\n")
    conn = connection("10.1.2.6", ConnectOptions(ssh_config=str(config), identity="/k"))
    assert conn.connect_kwargs["key_filename"] == ["/k"]
    assert conn.gateway.connect_kwargs["key_filename"] == ["/k"]


def test_ssh_option_strict_host_key_checking_accept_new_records_unknown_keys(tmp_path):
    def policy(*ssh_options: tuple[str, str]) -> type:
        options = ConnectOptions(ssh_config=str(tmp_path / "absent"), ssh_options=ssh_options)
        return type(NodeConnection("pve1", "10.1.2.6", options)._new_connection().client._policy)

    assert policy() is RefuseUnknown
    assert policy(("StrictHostKeyChecking", "yes")) is RefuseUnknown
    assert policy(("StrictHostKeyChecking", "accept-new")) is AcceptNew
