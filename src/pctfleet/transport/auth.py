"""A login one round trip shorter: the key's signature goes out behind the
service request instead of after sshd's answer to it.

paramiko asks for the "ssh-userauth" service, waits for SERVICE_ACCEPT, and only
then sends the signed USERAUTH_REQUEST. sshd handles a connection's messages in
order (RFC 4253 10: the request is answered before the next message is read),
so both can go in one flight; the SERVICE_ACCEPT that comes back is then only
acknowledged. Over a link of 100 ms a round trip that is 0.1 s off every login.

An RSA key's signature algorithm (rsa-sha2-256/512) is chosen from sshd's
EXT_INFO, which follows its NEWKEYS and may still be on its way when kex has just
ended. So an RSA key is pipelined only when EXT_INFO has been read already; else
it keeps paramiko's order, where the answer to the service request guarantees it.
"""

from __future__ import annotations

import threading

import paramiko
from paramiko.auth_handler import AuthHandler


class PipelinedAuth(AuthHandler):
    """paramiko's client auth, with a public key's request sent behind the service request."""

    def __init__(self, transport: paramiko.Transport) -> None:
        super().__init__(transport)
        self.accepts_due = 0  # SERVICE_ACCEPTs owed for requests already answered here

    def pipelines(self) -> bool:
        if self.auth_method != "publickey":
            return False
        key_type, _ = self._get_key_type_and_bits(self.private_key)
        return "rsa" not in key_type or "server-sig-algs" in self.transport.server_extensions

    def _request_auth(self) -> None:
        super()._request_auth()
        if self.pipelines():
            self.accepts_due += 1
            accepted = paramiko.Message()
            accepted.add_string("ssh-userauth")
            accepted.rewind()
            super()._parse_service_accept(accepted)

    def _parse_service_accept(self, m: paramiko.Message) -> None:
        if self.accepts_due:
            self.accepts_due -= 1
            return
        super()._parse_service_accept(m)


class PipelinedTransport(paramiko.Transport):
    """A client Transport whose public-key logins use PipelinedAuth; the rest is
    paramiko's (SSHClient.connect's `transport_factory`)."""

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
