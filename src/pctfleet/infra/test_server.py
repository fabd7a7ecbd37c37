"""The SGLang server: running from its PID file with flashinfer attention, listening, healthy."""

from pctfleet.infra import check, verdict_health, verdict_port, verdict_server_pid

test_server_pid_alive = check(
    verdict_server_pid,
    "The PID file names a live process: --attention-backend flashinfer, CUDA_HOME set.",
)
test_server_port_listens = check(
    verdict_port, "Something listens on server_port, and it is the server's own process group."
)
test_server_health_200 = check(verdict_health, "GET /health from inside the container answers 200.")
