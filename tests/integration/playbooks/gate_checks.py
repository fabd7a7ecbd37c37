"""The rollout test's health gate: the stand-in server answers /health with 200."""

PROBE = (
    "p=$(cat /run/pctfleet/rollout-health.pid) && "
    "port=$(tr '\\0' ' ' < /proc/$p/cmdline | sed 's/.*--port \\([0-9]*\\).*/\\1/') && "
    'python3 -c "import sys, urllib.request as u, urllib.error as e\n'
    "try: print(u.urlopen('http://127.0.0.1:%s/health' % sys.argv[1], timeout=3).status)\n"
    'except e.HTTPError as x: print(x.code)" $port'
)


def test_rollout_health(host):
    result = host.run(PROBE)
    assert result.stdout.strip() == "200", f"/health answered {result.stdout.strip()!r}"
