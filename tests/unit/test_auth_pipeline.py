"""The pipelined public-key login: what goes out, in what order, and when it waits."""

from __future__ import annotations

import threading

import paramiko
import pytest
from paramiko.common import (
    MSG_SERVICE_REQUEST,
    MSG_USERAUTH_REQUEST,
)

from pctfleet.transport.auth import PipelinedAuth, PipelinedTransport
from pctfleet.transport.options import ConnectOptions, connection


class WireLog:
    """Just enough of a Transport for an AuthHandler: records each message sent."""

    server_mode = False
    session_id = b"\x01" * 32
    preferred_pubkeys = ("rsa-sha2-512", "rsa-sha2-256", "ssh-rsa")

    def __init__(self) -> None:
        self.server_extensions: dict = {}  # sshd's EXT_INFO, once read
        self.lock = threading.Lock()
        self.sent: list[int] = []
        self.algorithms: list[str] = []  # of each USERAUTH_REQUEST sent

    def _send_message(self, m: paramiko.Message) -> None:
        self.sent.append(m.asbytes()[0])
        if m.asbytes()[0] == MSG_USERAUTH_REQUEST:
            m.rewind()
            m.get_byte()
            m.get_text(), m.get_text(), m.get_text(), m.get_boolean()  # user, service, method
            self.algorithms.append(m.get_text())

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


def login(key: paramiko.PKey) -> tuple[WireLog, PipelinedAuth]:
    wire = WireLog()
    handler = PipelinedAuth(wire)  # type: ignore[arg-type]
    handler.auth_publickey("root", key, threading.Event())
    return wire, handler


def test_signed_request_follows_the_service_request_at_once(ecdsa):
    wire, handler = login(ecdsa)
    assert wire.sent == [MSG_SERVICE_REQUEST, MSG_USERAUTH_REQUEST]
    handler._parse_service_accept(accept())  # sshd's answer, later: nothing more goes out
    assert wire.sent == [MSG_SERVICE_REQUEST, MSG_USERAUTH_REQUEST]


def test_each_new_attempt_is_pipelined_again(ecdsa):
    wire, handler = login(ecdsa)
    handler._parse_service_accept(accept())
    handler.auth_publickey("root", ecdsa, threading.Event())  # the next key, after a failure
    assert wire.sent == [MSG_SERVICE_REQUEST, MSG_USERAUTH_REQUEST] * 2
    handler._parse_service_accept(accept())
    assert len(wire.sent) == 4


@pytest.fixture(scope="module")
def rsa() -> paramiko.PKey:
    return paramiko.RSAKey.generate(1024)


def test_rsa_waits_for_the_service_accept_while_ext_info_is_unread(rsa):
    """The RSA signature's algorithm depends on sshd's EXT_INFO, read by then."""
    wire, handler = login(rsa)
    assert wire.sent == [MSG_SERVICE_REQUEST]
    handler._parse_service_accept(accept())
    assert wire.sent == [MSG_SERVICE_REQUEST, MSG_USERAUTH_REQUEST]


def test_rsa_is_pipelined_once_ext_info_is_read(rsa):
    wire = WireLog()
    wire.server_extensions = {"server-sig-algs": b"ssh-ed25519,rsa-sha2-256"}
    handler = PipelinedAuth(wire)  # type: ignore[arg-type]
    handler.auth_publickey("root", rsa, threading.Event())
    assert wire.sent == [MSG_SERVICE_REQUEST, MSG_USERAUTH_REQUEST]
    assert wire.algorithms == ["rsa-sha2-256"]  # the one sshd named, as paramiko picks it


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
