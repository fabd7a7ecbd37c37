"""A login one round trip shorter: the key's signature goes out behind the
service request instead of after sshd's answer to it.

paramiko asks for the "ssh-userauth" service, waits for SERVICE_ACCEPT, and only
then sends the signed USERAUTH_REQUEST. OpenSSH's sshd handles a connection's
messages one after the other, and reads the request only once it has answered
the service request, so both can go in one flight; the SERVICE_ACCEPT that comes
back is then only acknowledged. Over a link of 100 ms a round trip that is 0.1 s
off every login.

The request is signed before anything is sent: a key that cannot sign (an agent
that refuses, a hardware key not touched) sends nothing, so no SERVICE_ACCEPT is
left over for the next attempt. The count of accepts still due lives on the
transport, which outlives each attempt's handler, and is raised before the
service request goes out, so an answer that comes back at once is counted.

An RSA key's signature algorithm (rsa-sha2-256/512) is chosen from sshd's
EXT_INFO, which follows its NEWKEYS and may still be on its way when kex has just
ended. So an RSA key is pipelined only when EXT_INFO has been read already; else
it keeps paramiko's order, where the answer to the service request guarantees it.

Two more waits go the same way. The client's identification line may have
been sent already, as soon as TCP connected (transport/early.py): sshd sends its
KEXINIT only once it has read that line, so it is on its way while paramiko
still loads. And a pipelined request may be followed at once by the session
channels the run will want (transport/preopen.py).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import paramiko
from paramiko.auth_handler import AuthHandler
from paramiko.common import cMSG_USERAUTH_REQUEST

from pctfleet.transport import preopen
from pctfleet.transport.early import IDENT, IDENT_LINE, Flight


class PipelinedAuth(AuthHandler):
    """paramiko's client auth, with a public key's request sent behind the service request."""

    def pipelines(self) -> bool:
        if self.auth_method != "publickey":
            return False
        key_type, _ = self._get_key_type_and_bits(self.private_key)
        return "rsa" not in key_type or "server-sig-algs" in self.transport.server_extensions

    def _signed_request(self) -> paramiko.Message:
        """The publickey USERAUTH_REQUEST (RFC 4252 7), built as paramiko builds it."""
        key = self.private_key
        key_type, bits = self._get_key_type_and_bits(key)
        algorithm = self._finalize_pubkey_algorithm(key_type)
        blob = self._get_session_blob(key, "ssh-connection", self.username, algorithm)
        m = paramiko.Message()
        m.add_byte(cMSG_USERAUTH_REQUEST)
        m.add_string(self.username)
        m.add_string("ssh-connection")
        m.add_string("publickey")
        m.add_boolean(True)
        m.add_string(algorithm)
        m.add_string(bits)
        m.add_string(key.sign_ssh_data(blob, algorithm))
        return m

    pipelined = False  # this attempt's request went out behind the service request

    def _request_auth(self) -> None:
        if not self.pipelines():
            super()._request_auth()
            return
        request = self._signed_request()
        self.transport.accepts_due += 1
        super()._request_auth()
        self.transport._send_message(request)
        self.pipelined = True

    def _parse_userauth_failure(self, m: paramiko.Message) -> None:
        preopen.refused(self.transport)
        super()._parse_userauth_failure(m)

    def _parse_service_accept(self, m: paramiko.Message) -> None:
        if getattr(self.transport, "accepts_due", 0):
            self.transport.accepts_due -= 1
            return
        super()._parse_service_accept(m)


class PipelinedTransport(paramiko.Transport):
    """A client Transport whose public-key logins use PipelinedAuth; the rest is
    paramiko's (SSHClient.connect's `transport_factory`)."""

    accepts_due = 0  # SERVICE_ACCEPTs owed for requests PipelinedAuth already sent

    def __init__(
        self,
        sock: object,
        *args: object,
        ident_sent: bool = False,
        channels: int = 0,
        flight: Flight | None = None,
        **kwargs: object,
    ) -> None:
        """`ident_sent`: the identification line already went out on `sock`.
        `channels`: session channels to ask for right behind the login; `flight`
        is told once they are out (transport/preopen.py's `claim`)."""
        super().__init__(sock, *args, **kwargs)
        self.local_version = IDENT  # part of the key exchange's hash: what was sent
        self.channels_wanted = channels
        self.flight = flight
        if ident_sent:
            self.packetizer.write_all = _skip_once(self.packetizer.write_all, IDENT_LINE)

    def auth_publickey(
        self, username: str, key: paramiko.PKey, event: threading.Event | None = None
    ) -> list[str]:
        # paramiko's own method, but for the handler's class.
        if not self.active or not self.initial_kex_done:
            raise paramiko.SSHException("No existing session")
        my_event = event if event is not None else threading.Event()
        handler = self.auth_handler = PipelinedAuth(self)
        preopen.attempt(self)
        handler.auth_publickey(username, key, my_event)
        wanted = self.channels_wanted if handler.pipelined else 0
        if wanted and preopen.ask(self, wanted) and self.flight is not None:
            self.flight.ready(self)
        if event is not None:
            return []
        try:
            return self.auth_handler.wait_for_response(my_event)
        except (paramiko.SSHException, EOFError, OSError):
            # paramiko looks at the connection before at the answer: sshd said yes,
            # then hung up (as at an exec on a channel it refused, preopen.claim).
            # The login stands; the commands see the connection gone.
            if handler.authenticated:
                return []
            raise


def _skip_once(write_all: Callable[[bytes], None], line: bytes) -> Callable[[bytes], None]:
    """paramiko's write_all, less its first write of the identification line that
    early.tcp_connect has sent already."""
    pending = [True]

    def write(data: bytes) -> None:
        if pending[0] and data == line:
            pending[0] = False
            return
        pending[0] = False
        write_all(data)

    return write
