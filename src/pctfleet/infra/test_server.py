"""The SGLang server: running from its PID file with flashinfer attention, listening, healthy."""

from pctfleet.infra import verdict_health, verdict_port, verdict_server_pid


def test_server_pid_alive(facts, note):
    """The PID file names a live process: --attention-backend flashinfer, CUDA_HOME set."""
    verdict = verdict_server_pid(facts)
    note(verdict.message)
    assert verdict.ok, verdict.message


def test_server_port_listens(facts, note):
    """Something listens on server_port, and it is the server's own process group."""
    verdict = verdict_port(facts)
    note(verdict.message)
    assert verdict.ok, verdict.message


def test_server_health_200(facts, note):
    """GET /health from inside the container answers 200."""
    verdict = verdict_health(facts)
    note(verdict.message)
    assert verdict.ok, verdict.message
