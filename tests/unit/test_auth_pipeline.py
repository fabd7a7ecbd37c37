"""The pipelined public-key login: what goes out, in what order, and when it waits."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import threading

import paramiko
import pytest
from paramiko.auth_handler import AuthHandler
from paramiko.common import MSG_CHANNEL_OPEN, MSG_SERVICE_REQUEST, MSG_USERAUTH_REQUEST

from pctfleet.transport import preopen
from pctfleet.transport.auth import PipelinedAuth, PipelinedTransport, _skip_once
from pctfleet.transport.early import IDENT, IDENT_LINE
from pctfleet.transport.options import ConnectOptions, connection


class WireLog:
    """Just enough of a Transport for an AuthHandler: records each message sent.
    Like PipelinedTransport, it keeps the count of SERVICE_ACCEPTs due."""

    server_mode = False
    session_id = b"\x01" * 32
    preferred_pubkeys = ("rsa-sha2-512", "rsa-sha2-256", "ssh-rsa")

    def __init__(self) -> None:
        self.server_extensions: dict = {}  # sshd's EXT_INFO, once read
        self.lock = threading.Lock()
        self.accepts_due = 0
        self.messages: list[bytes] = []
        self.on_send = lambda kind: None  # what the "network" does as a message leaves

    @property
    def sent(self) -> list[int]:
        return [message[0] for message in self.messages]

    def _send_message(self, m: paramiko.Message) -> None:
        self.messages.append(m.asbytes())
        self.on_send(m.asbytes()[0])

    def algorithms(self) -> list[str]:
        """The signature algorithm of each USERAUTH_REQUEST sent."""
        found = []
        for raw in self.messages:
            if raw[0] == MSG_USERAUTH_REQUEST:
                m = paramiko.Message(raw[1:])
                m.get_text(), m.get_text(), m.get_text(), m.get_boolean()
                found.append(m.get_text())
        return found

    def _log(self, *args: object) -> None:
        pass

    def _auth_trigger(self) -> None:
        pass


def accept() -> paramiko.Message:
    m = paramiko.Message()
    m.add_string("ssh-userauth")
    m.rewind()
    return m


@pytest.fixture(scope="module")
def ecdsa() -> paramiko.PKey:
    return paramiko.ECDSAKey.generate()


@pytest.fixture(scope="module")
def rsa() -> paramiko.PKey:
    return paramiko.RSAKey.generate(1024)


@pytest.fixture(scope="module")
def ed25519(tmp_path_factory) -> paramiko.PKey:
    path = tmp_path_factory.mktemp("key") / "id"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)
    return paramiko.Ed25519Key.from_private_key_file(str(path))


def attempt(wire: WireLog, key: paramiko.PKey, handler_class: type = PipelinedAuth) -> AuthHandler:
    """One key's attempt, with a handler of its own (as Transport.auth_publickey makes)."""
    handler = handler_class(wire)  # type: ignore[arg-type]
    handler.auth_publickey("root", key, threading.Event())
    return handler


def test_signed_request_follows_the_service_request_at_once(ecdsa):
    wire = WireLog()
    handler = attempt(wire, ecdsa)
    assert wire.sent == [MSG_SERVICE_REQUEST, MSG_USERAUTH_REQUEST]
    handler._parse_service_accept(accept())  # sshd's answer, later: nothing more goes out
    assert wire.sent == [MSG_SERVICE_REQUEST, MSG_USERAUTH_REQUEST]
    assert wire.accepts_due == 0


def test_the_request_is_the_one_paramiko_would_send(ed25519, rsa):
    """Byte for byte (Ed25519 and RSA PKCS#1 signatures are deterministic)."""
    for key, extensions in ((ed25519, {}), (rsa, {"server-sig-algs": b"rsa-sha2-256"})):
        ours, theirs = WireLog(), WireLog()
        ours.server_extensions = theirs.server_extensions = extensions
        attempt(ours, key)
        attempt(theirs, key, AuthHandler)._parse_service_accept(accept())
        assert ours.messages == theirs.messages


def test_each_new_attempt_is_pipelined_again(ecdsa):
    wire = WireLog()
    attempt(wire, ecdsa)._parse_service_accept(accept())
    second = attempt(wire, ecdsa)  # the next key, after a failure
    assert wire.sent == [MSG_SERVICE_REQUEST, MSG_USERAUTH_REQUEST] * 2
    second._parse_service_accept(accept())
    assert len(wire.sent) == 4


def test_an_answer_that_comes_back_at_once_is_counted(ecdsa):
    """sshd's SERVICE_ACCEPT handled between our two messages: one request only."""
    wire = WireLog()
    handler = PipelinedAuth(wire)  # type: ignore[arg-type]

    def answer(kind: int) -> None:
        if kind == MSG_SERVICE_REQUEST:
            handler._parse_service_accept(accept())

    wire.on_send = answer
    handler.auth_publickey("root", ecdsa, threading.Event())
    assert wire.sent == [MSG_SERVICE_REQUEST, MSG_USERAUTH_REQUEST]
    assert wire.accepts_due == 0


def test_a_key_that_cannot_sign_sends_nothing(ecdsa):
    class Refusing(paramiko.ECDSAKey):
        def sign_ssh_data(self, data: bytes, algorithm: str | None = None) -> bytes:
            raise paramiko.SSHException("agent refused operation")

    refusing = Refusing(vals=(ecdsa.signing_key, ecdsa.verifying_key))
    wire = WireLog()
    with pytest.raises(paramiko.SSHException):
        attempt(wire, refusing)
    assert (wire.sent, wire.accepts_due) == ([], 0)
    attempt(wire, ecdsa)._parse_service_accept(accept())  # the next key, as if alone
    assert wire.sent == [MSG_SERVICE_REQUEST, MSG_USERAUTH_REQUEST]


def test_rsa_waits_for_the_service_accept_while_ext_info_is_unread(rsa):
    """The RSA signature's algorithm depends on sshd's EXT_INFO, read by then."""
    wire = WireLog()
    handler = attempt(wire, rsa)
    assert wire.sent == [MSG_SERVICE_REQUEST]
    handler._parse_service_accept(accept())
    assert wire.sent == [MSG_SERVICE_REQUEST, MSG_USERAUTH_REQUEST]


def test_rsa_is_pipelined_once_ext_info_is_read(rsa):
    wire = WireLog()
    wire.server_extensions = {"server-sig-algs": b"ssh-ed25519,rsa-sha2-256"}
    attempt(wire, rsa)
    assert wire.sent == [MSG_SERVICE_REQUEST, MSG_USERAUTH_REQUEST]
    assert wire.algorithms() == ["rsa-sha2-256"]  # the one sshd named, as paramiko picks it


def test_other_methods_keep_paramikos_order():
    wire = WireLog()
    handler = PipelinedAuth(wire)  # type: ignore[arg-type]
    handler.auth_password("root", "secret", threading.Event())
    assert wire.sent == [MSG_SERVICE_REQUEST]
    handler._parse_service_accept(accept())
    assert wire.sent == [MSG_SERVICE_REQUEST, MSG_USERAUTH_REQUEST]


def test_every_node_connection_logs_in_with_it():
    conn = connection("127.0.0.1", ConnectOptions(identity="/k/id"))
    assert conn.connect_kwargs["transport_factory"] is PipelinedTransport
    assert conn.connect_kwargs["key_filename"] == ["/k/id"]


def test_the_transport_names_itself_as_the_early_socket_did():
    """The identification line is part of the key exchange's hash: the transport's
    must be the line tcp_connect sent."""
    ours, theirs = socket.socketpair()
    with ours, theirs:
        assert PipelinedTransport(ours).local_version == IDENT
        assert PipelinedTransport(ours, ident_sent=True).local_version == IDENT


def test_an_identification_line_already_sent_is_not_sent_again():
    writes: list[bytes] = []
    write = _skip_once(writes.append, IDENT_LINE)
    line = IDENT_LINE
    write(line)
    write(b"packet")
    write(line)  # only the first write is the identification line
    assert writes == [b"packet", line]


def test_a_first_write_that_is_not_the_line_goes_out():
    writes: list[bytes] = []
    write = _skip_once(writes.append, IDENT_LINE)
    write(b"SSH-2.0-other\r\n")
    write(IDENT_LINE)
    assert writes == [b"SSH-2.0-other\r\n", IDENT_LINE]


def test_a_refused_key_drops_the_channels_asked_behind_it():
    ours, theirs = socket.socketpair()
    with ours, theirs:
        transport = PipelinedTransport(ours)
        transport.remote_version = "SSH-2.0-OpenSSH_9.2p1"
        assert preopen.ask(transport, 2) == 2
        handler = PipelinedAuth(transport)
        handler.auth_event = threading.Event()
        failure = paramiko.Message()
        failure.add_list(["publickey"])
        failure.add_boolean(False)
        failure.rewind()
        handler._parse_userauth_failure(failure)
        assert handler.auth_event.is_set()  # paramiko's own handling went on
        assert transport.early_channels.asked == []
        assert preopen.take(transport, 5.0) is None


def wire_types(theirs: socket.socket) -> list[int]:
    """The message types written so far on a transport with no keys yet (RFC 4253 6:
    length, padding length, payload, padding; no MAC)."""
    theirs.setblocking(False)
    data = b""
    with contextlib.suppress(BlockingIOError):
        while chunk := theirs.recv(65536):
            data += chunk
    types = []
    while data:
        length, padding = int.from_bytes(data[:4], "big"), data[4]
        types.append(data[5])
        data = data[4 + length :]
        assert padding >= 4
    return types


@pytest.fixture
def ready():
    """A PipelinedTransport as kex leaves it (active, clear to send), before its
    first login attempt, wanting 2 channels from an OpenSSH sshd; and the socket
    its messages reach."""
    ours, theirs = socket.socketpair()
    transport = PipelinedTransport(ours, channels=2)
    transport.active = transport.initial_kex_done = True
    transport.clear_to_send.set()
    transport.remote_version = "SSH-2.0-OpenSSH_9.2p1"
    transport.session_id = b"\x01" * 32  # what the key exchange would have set
    yield transport, theirs
    transport.active = False
    ours.close()
    theirs.close()


def test_channels_go_out_right_behind_a_pipelined_request(ready, ecdsa):
    transport, theirs = ready
    transport.auth_publickey("root", ecdsa, threading.Event())
    assert wire_types(theirs) == [
        MSG_SERVICE_REQUEST,
        MSG_USERAUTH_REQUEST,
        MSG_CHANNEL_OPEN,
        MSG_CHANNEL_OPEN,
    ]


def test_an_attempt_that_is_not_pipelined_asks_for_no_channel(ready, rsa):
    """An RSA key before sshd's EXT_INFO waits for SERVICE_ACCEPT: a CHANNEL_OPEN
    sent now would reach sshd before the login request."""
    transport, theirs = ready
    transport.auth_publickey("root", rsa, threading.Event())
    assert wire_types(theirs) == [MSG_SERVICE_REQUEST]
    assert transport.early_channels.asked == []


def test_a_transport_told_the_line_was_sent_does_not_send_it():
    ours, theirs = socket.socketpair()
    with ours, theirs:
        PipelinedTransport(ours, ident_sent=True).packetizer.write_all(IDENT_LINE)
        PipelinedTransport(ours).packetizer.write_all(b"x")
        theirs.settimeout(1.0)
        assert theirs.recv(100) == b"x"


HANG_UPS = [
    paramiko.AuthenticationException("Authentication failed: transport shut down or saw EOF"),
    ConnectionResetError(104, "Connection reset by peer"),  # we sent after sshd closed
]


@pytest.mark.parametrize("hang_up", HANG_UPS)
@pytest.mark.parametrize("said_yes", [True, False])
def test_a_hang_up_right_after_the_yes_is_no_refusal(said_yes, hang_up, monkeypatch):
    """sshd hangs up at an exec on a channel it refused (preopen.claim) a moment
    after its USERAUTH_SUCCESS; paramiko, seeing the connection gone before it
    looks at the answer, would call that a failed login."""
    ours, theirs = socket.socketpair()
    transport = PipelinedTransport(ours)
    transport.active, transport.initial_kex_done = True, True

    def attempt(self, username, key, event):  # noqa: ANN001
        self.authenticated = said_yes

    def wait(self, event):  # noqa: ANN001
        raise hang_up

    monkeypatch.setattr(PipelinedAuth, "auth_publickey", attempt)
    monkeypatch.setattr(PipelinedAuth, "wait_for_response", wait)
    try:
        if said_yes:
            assert transport.auth_publickey("root", None) == []
        else:
            with pytest.raises(type(hang_up)):
                transport.auth_publickey("root", None)
    finally:
        ours.close()
        theirs.close()
