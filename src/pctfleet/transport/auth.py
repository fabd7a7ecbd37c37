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
"""

from __future__ import annotations

import threading

import paramiko
from paramiko.auth_handler import AuthHandler
from paramiko.common import cMSG_USERAUTH_REQUEST


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

    def _request_auth(self) -> None:
        if not self.pipelines():
            super()._request_auth()
            return
        request = self._signed_request()
        self.transport.accepts_due += 1
        super()._request_auth()
        self.transport._send_message(request)

    def _parse_service_accept(self, m: paramiko.Message) -> None:
        if getattr(self.transport, "accepts_due", 0):
            self.transport.accepts_due -= 1
            return
        super()._parse_service_accept(m)


class PipelinedTransport(paramiko.Transport):
    """A client Transport whose public-key logins use PipelinedAuth; the rest is
    paramiko's (SSHClient.connect's `transport_factory`)."""

    accepts_due = 0  # SERVICE_ACCEPTs owed for requests PipelinedAuth already sent

    def auth_publickey(
        self, username: str, key: paramiko.PKey, event: threading.Event | None = None
    ) -> list[str]:
        # paramiko's own method, but for the handler's class.
        if not self.active or not self.initial_kex_done:
            raise paramiko.SSHException("No existing session")
        my_event = event if event is not None else threading.Event()
        self.auth_handler = PipelinedAuth(self)
        self.auth_handler.auth_publickey(username, key, my_event)
        if event is not None:
            return []
        return self.auth_handler.wait_for_response(my_event)
