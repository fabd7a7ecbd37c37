"""Kept logins (transport/keep.py, keeper.py): the key, the private socket, and the
wire between a command and the keeper, with a fake node connection behind it."""

from __future__ import annotations

import io
import os
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pctfleet.transport import base, keep, keeper, keepwire
from pctfleet.transport.options import ConnectOptions, ResolvedTarget


@pytest.fixture
def home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="h", dir="/tmp") as short:  # room for a socket
        monkeypatch.setenv("HOME", short)
        monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
        (Path(short) / ".ssh").mkdir()
        yield Path(short)


def test_key_follows_the_known_hosts_bytes(home: Path) -> None:
    known = home / "kh"
    known.write_text("127.0.0.1 ssh-ed25519 AAAA\n")
    options = ConnectOptions(known_hosts=str(known), identity="id")
    first = keep.login_key("pve1", "127.0.0.1", options)
    assert first is not None
    assert keep.login_key("pve1", "127.0.0.1", options) == first
    known.write_text("127.0.0.1 ssh-ed25519 AAAA\n# edited\n")
    assert keep.login_key("pve1", "127.0.0.1", options) != first


def test_key_follows_the_ssh_config_and_the_options(home: Path) -> None:
    options = ConnectOptions(user="root")
    first = keep.login_key("pve1", "127.0.0.1", options)
    (home / ".ssh" / "config").write_text("Host *\n  ServerAliveInterval 5\n")
    second = keep.login_key("pve1", "127.0.0.1", options)
    assert second != first
    assert keep.login_key("pve1", "127.0.0.1", ConnectOptions(user="admin")) != second
    assert keep.login_key("pve2", "127.0.0.1", options) != second


def test_a_relative_identity_is_the_same_login_as_its_absolute_path(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(home)
    (home / "id").write_text("key")
    relative = keep.login_key("pve1", "127.0.0.1", ConnectOptions(identity="id"))
    absolute = keep.login_key("pve1", "127.0.0.1", ConnectOptions(identity=str(home / "id")))
    assert relative == absolute
    assert keep.portable(ConnectOptions(identity="id")).identity == str(home / "id")


def test_a_node_behind_a_jump_host_is_never_kept(home: Path) -> None:
    options = ConnectOptions(ssh_options=(("ProxyJump", "bastion"),))
    assert keep.login_key("pve1", "127.0.0.1", options) is None


def test_the_socket_lives_in_a_private_directory(home: Path) -> None:
    path = keep.keeper_socket()
    assert path is not None
    assert path.parent == home / ".cache" / "pctfleet" / "keep"
    assert path.parent.stat().st_mode & 0o777 == 0o700


def test_no_socket_where_others_may_enter(home: Path) -> None:
    folder = home / ".cache" / "pctfleet" / "keep"
    folder.mkdir(parents=True)
    folder.chmod(0o755)
    assert keep.keeper_socket() is None


def test_a_long_home_keeps_its_socket_in_a_private_tmp_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / ("long" * 30)))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    path = keep.keeper_socket()
    assert path is not None
    assert path.parent == Path(f"/tmp/pctfleet-keep-{os.getuid()}")
    assert path.parent.stat().st_mode & 0o777 == 0o700


def test_options_survive_the_trip_to_the_keeper(home: Path) -> None:
    options = ConnectOptions(
        user="root", port=2222, ssh_options=(("Compression", "yes"),), persist=30.0
    )
    import json

    back = keep.options_from(json.loads(json.dumps(keep.options_json(options))))
    assert back == keep.portable(options)


@pytest.mark.parametrize(
    "error",
    [
        base.NodeUnreachable("pve1", "cannot reach", "check sshd"),
        base.HostKeyChanged("pve1", "HOST KEY CHANGED", "refused"),
        base.AuthFailed("pve1", "authentication failed"),
        base.CommandTimeout("pve1", "did not finish within 5s", "raise --timeout"),
    ],
)
def test_a_keeper_error_is_the_same_typed_outcome_here(error: base.TransportError) -> None:
    back = keepwire.error_from(keepwire.error_frame(error))
    assert type(back) is type(error)
    assert (back.where, back.message, back.hint) == (error.where, error.message, error.hint)


# -- the wire, end to end, with a fake node connection --------------------------


class FakeChannel:
    closed = False

    def close(self) -> None:
        self.closed = True


class FakeNode:
    """What the keeper needs of a NodeConnection: echoes stdin, then says things."""

    def __init__(self) -> None:
        self.node, self.address = "pve1", "127.0.0.1"
        self.target = ResolvedTarget("pve1", "127.0.0.1", 22, "root")
        self.up = True
        self.fail: base.TransportError | None = None
        self.no_channel: base.TransportError | None = None
        self.commands: list[str] = []
        self.channels: list[FakeChannel] = []

    def alive(self) -> bool:
        return self.up

    def exec(self, command, *, stdin, timeout, stdout, stderr, opened=None):  # noqa: ANN001
        if self.no_channel is not None:
            raise self.no_channel
        self.channels.append(FakeChannel())
        opened(self.channels[-1])  # raises when the client is gone: the command never runs
        self.commands.append(command)
        if self.fail is not None:
            raise self.fail
        received = b"".join(iter(lambda: stdin.read(65536), b""))
        stdout.write(received.upper())
        stderr.write(f"timeout={timeout}".encode())
        return 7, 0.25

    def close(self) -> None:
        self.up = False


@pytest.fixture
def served(tmp_path: Path):
    """A keeper holding one fake login, listening on a socket of its own."""
    path = tmp_path / "k.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(8)
    the_keeper = keeper.Keeper()
    fake = FakeNode()
    kept = keeper.Kept("K1", fake, 30.0)  # type: ignore[arg-type]
    kept.ready.set()
    the_keeper.kept["K1"] = kept
    stop = threading.Event()
    threading.Thread(
        target=keeper._accept_loop, args=(the_keeper, server, stop), daemon=True
    ).start()
    yield path, fake, the_keeper
    stop.set()
    server.close()


def kept_node(path: Path, key: str = "K1") -> keep.KeptNode:
    node = keep.KeptNode(path, ("pve1", "127.0.0.1", ConnectOptions()), {"user": "root"})
    node._key = key
    return node


def test_a_command_runs_through_the_keeper(served) -> None:
    path, fake, _ = served
    out, err = io.BytesIO(), io.BytesIO()
    data = b"x" * 200_000  # more than one frame
    code, seconds = kept_node(path).exec(
        "pct exec 200 -- true", stdin=io.BytesIO(data), timeout=5.0, stdout=out, stderr=err
    )
    assert (code, seconds) == (7, 0.25)
    assert out.getvalue() == data.upper()
    assert err.getvalue() == b"timeout=5.0"
    assert fake.commands == ["pct exec 200 -- true"]


def test_the_keeper_error_is_raised_as_its_type(served) -> None:
    path, fake, _ = served
    fake.fail = base.NodeUnreachable("pve1", "connection lost during a command")
    with pytest.raises(base.NodeUnreachable, match="connection lost"):
        kept_node(path).exec(
            "true", stdin=b"", timeout=None, stdout=io.BytesIO(), stderr=io.BytesIO()
        )


class OwnLogin:
    def __init__(self, *node: object) -> None:
        self.node = node
        self.connections_opened = 1
        self.commands: list[str] = []

    def exec(self, command, *, stdin, timeout, stdout, stderr, read_only=False):  # noqa: ANN001
        self.commands.append(command)
        return 0, 0.0


@pytest.fixture
def own_logins(monkeypatch: pytest.MonkeyPatch) -> list[OwnLogin]:
    made: list[OwnLogin] = []

    class Module:
        @staticmethod
        def NodeConnection(*node: object) -> OwnLogin:  # noqa: N802 - stands for the class
            made.append(OwnLogin(*node))
            return made[-1]

    monkeypatch.setattr("pctfleet.transport.early.ssh_module", lambda: Module)
    return made


def test_a_dead_kept_login_means_a_login_of_our_own(served, own_logins) -> None:
    path, fake, _ = served
    fake.up = False
    node = kept_node(path)
    code, _ = node.exec("true", stdin=b"", timeout=None, stdout=io.BytesIO(), stderr=io.BytesIO())
    assert code == 0
    assert fake.commands == []
    assert [o.commands for o in own_logins] == [["true"]]
    assert node.connections_opened == 1


def test_an_unknown_login_or_no_keeper_means_a_login_of_our_own(
    served, own_logins, tmp_path: Path
) -> None:
    path, fake, _ = served
    kept_node(path, key="other").exec(
        "a", stdin=b"", timeout=None, stdout=io.BytesIO(), stderr=io.BytesIO()
    )
    kept_node(tmp_path / "none.sock").exec(
        "b", stdin=b"", timeout=None, stdout=io.BytesIO(), stderr=io.BytesIO()
    )
    assert [o.commands for o in own_logins] == [["a"], ["b"]]
    assert fake.commands == []


def test_lookup_names_only_what_the_keeper_holds(served, home: Path) -> None:
    path, _, the_keeper = served
    held_node = ("pve1", "127.0.0.1", ConnectOptions())
    other = ("pve2", "127.0.0.2", ConnectOptions())
    kept = the_keeper.kept.pop("K1")
    kept.key = keep.login_key(*held_node)
    the_keeper.kept[kept.key] = kept
    found = keep.lookup(path, [held_node, other])
    assert found == {held_node: {"user": "root", "hostname": "127.0.0.1", "port": 22}}


def test_the_keeper_answers_only_its_own_user(served, monkeypatch: pytest.MonkeyPatch) -> None:
    path, _, _ = served
    monkeypatch.setattr(keeper, "_peer_uid", lambda sock: os.getuid() + 1)
    assert keep.ask(path, b"L", {}) is None


def test_idle_logins_expire_and_busy_ones_do_not(served) -> None:
    _, fake, the_keeper = served
    kept = the_keeper.kept["K1"]
    kept.persist = 0.0
    kept.in_flight = 1
    assert the_keeper.expired() == []
    kept.in_flight = 0
    assert the_keeper.expired() == [kept]
    assert the_keeper.kept == {}


def test_a_channel_that_will_not_open_means_a_login_of_our_own(served, own_logins) -> None:
    path, fake, the_keeper = served
    fake.no_channel = base.NodeUnreachable("pve1", "cannot open a channel")
    node = kept_node(path)
    node.exec("true", stdin=b"", timeout=None, stdout=io.BytesIO(), stderr=io.BytesIO())
    assert [o.commands for o in own_logins] == [["true"]]
    assert the_keeper.kept == {}  # the dead login is dropped, not tried again


def test_a_client_that_gave_up_before_the_answer_never_runs_the_command(served) -> None:
    path, fake, the_keeper = served
    with socket.socket(socket.AF_UNIX) as sock:
        sock.connect(str(path))
        keepwire.send_json(sock, b"X", {"key": "K1", "command": "apt-get -y upgrade"})
        assert keepwire.receive(sock.makefile("rb"))[0] == b"A"
    # It closed without a stdin frame (it timed out and logs in itself): no run here.
    kept = the_keeper.kept["K1"]
    deadline = time.monotonic() + 5
    while kept.in_flight and time.monotonic() < deadline:
        time.sleep(0.01)
    assert kept.in_flight == 0
    assert fake.commands == []


def test_a_channel_whose_caller_backs_out_is_closed_unused(monkeypatch) -> None:
    from pctfleet.transport import ssh

    node = ssh.NodeConnection("pve1", "127.0.0.1", ConnectOptions(), adopt=False)
    channel = FakeChannel()
    monkeypatch.setattr(node, "_open_channel", lambda: (channel, object()))
    monkeypatch.setattr(node, "_release", lambda slot: None)
    ran = []
    monkeypatch.setattr(ssh, "pump_channel", lambda *a: ran.append(a) or 0)

    def back_out(opened_channel) -> None:  # noqa: ANN001
        raise keepwire.WireError("the client went away")

    with pytest.raises(keepwire.WireError):
        node.exec(
            "true", stdin=b"", timeout=1, stdout=io.BytesIO(), stderr=io.BytesIO(), opened=back_out
        )
    assert channel.closed and ran == []


def test_a_client_gone_mid_stdin_ends_the_command(served) -> None:
    path, fake, _ = served
    stdin = keeper.StdinFrames(io.BytesIO(b""))
    channel = FakeChannel()
    stdin.channel, stdin.begun = channel, True  # type: ignore[assignment]
    assert stdin.read() == b""  # the stream ended without E
    assert channel.closed


def test_every_keeper_of_this_user_is_found(home: Path) -> None:
    path = keep.keeper_socket()
    assert path is not None
    other = path.parent / "k-000000000000.sock"
    for socket_path in (path, other):
        socket_path.touch()
    assert keep.keeper_sockets() == sorted([path, other])


@pytest.mark.parametrize("value", ["inf", "nan", "604801"])
def test_a_pct_url_keeps_a_login_at_most_a_week(value: str) -> None:
    from pctfleet.verify.backend import PctUrlError, spec_from

    with pytest.raises(PctUrlError, match="persist"):
        spec_from("root@127.0.0.1", {"container": "200", "persist": value})
    assert spec_from("root@127.0.0.1", {"container": "200", "persist": "60"}).options.persist == 60
