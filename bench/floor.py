"""The floor: the least any tool can do to confirm the benchmark playbook's end state.

One SSH connection per node, one `pct exec` per container carrying a single
check script, containers in parallel, with pctfleet's own transport
(NodeConnection/PctTarget) and nothing else of pctfleet. The script checks
everything the playbook declares (venv, pinned packages, folder, file
contents, links, env file, no stale process, server alive and /health 200)
with one python3 start for the packages and the health check together.

    python bench/floor.py INVENTORY [PLAYBOOK]   # prints JSON; exit 0 when all converged
"""

from __future__ import annotations

import hashlib
import json
import shlex
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import jinja2
import yaml

from pctfleet.transport.options import ConnectOptions
from pctfleet.transport.pct import PctTarget
from pctfleet.transport.ssh import NodePool

HERE = Path(__file__).resolve().parent
TEMPLATE = HERE / "ansible" / "templates" / "server.env.j2"

PY_CHECK = """import importlib.metadata as m, sys, urllib.request
want = dict(a.split("==") for a in sys.argv[2:])
have = {d.metadata["Name"].lower(): d.version for d in m.distributions()}
bad = [n for n, v in want.items() if have.get(n) != v]
print("packages=" + ("ok" if not bad else "missing:" + ",".join(bad)))
try:
    print("health=%d" % urllib.request.urlopen(sys.argv[1], timeout=3).status)
except Exception as exc:
    print("health=%s" % getattr(exc, "code", 0))
"""


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def check_script(v: dict) -> str:
    """One sh script: prints `fail=<what>` per unmet check, then `done`."""
    q = shlex.quote
    venv, app = v["venv"], v["app_dir"]
    config = f"label={v['bench_label']}\nport={v['server_port']}\n"
    env = jinja2.Template(TEMPLATE.read_text(), keep_trailing_newline=True).render(v)
    url = f"http://127.0.0.1:{v['server_port']}/health"
    checks = [
        (f"[ -x {q(venv + '/bin/python')} ]", "venv"),
        (f"[ -d {q(app)} ] && [ $(stat -c %a {q(app)}) = 755 ]", "app_dir"),
        (f"[ $(sha256sum < {q(app + '/config.txt')} | cut -c1-64) = {sha(config)} ]", "config"),
        (f"[ $(readlink {q(v['bench_root'] + '/current')}) = {q(app)} ]", "link_current"),
        (f"[ $(readlink {q(app + '/python')}) = {q(venv + '/bin/python')} ]", "link_python"),
        (f"[ $(sha256sum < {q(v['server_env_file'])} | cut -c1-64) = {sha(env)} ]", "env_file"),
        (f"[ -s {q(app + '/sglang_standin.py')} ]", "standin"),
        (f"[ ! -e {q(v['stale_pidfile'])} ]", "stale_process"),
        (f'kill -0 "$(cat {q(v["server_pidfile"])})"', "server_pid"),
    ]
    lines = [f"{test} 2>/dev/null || echo fail={name}" for test, name in checks]
    packages = " ".join(q(p) for p in v["bench_packages"])
    lines.append(f"{q(venv + '/bin/python')} -c {q(PY_CHECK)} {q(url)} {packages}")
    lines.append("echo done")
    return "\n".join(lines) + "\n"


def judge(output: str) -> list[str]:
    """The unmet checks in a check script's output (empty: converged)."""
    fields = [line.split("=", 1) for line in output.splitlines() if "=" in line]
    problems = [value for key, value in fields if key == "fail"]
    found = dict(fields)
    if found.get("packages") != "ok":
        problems.append(f"packages ({found.get('packages')})")
    if found.get("health") != "200":
        problems.append(f"health ({found.get('health')})")
    if "done" not in output.splitlines():
        problems.append("script did not finish")
    return problems


def containers(inventory: dict) -> list[tuple[str, str, int, dict]]:
    """(node address, host name, ctid, host vars) from the benchmark's Ansible inventory."""
    found = []
    for group in inventory["all"]["children"].values():
        address = group["vars"]["ansible_host"]
        for name, host in group["hosts"].items():
            found.append((address, name, int(host["proxmox_vmid"]), host))
    return found


def run(inventory_path: Path, playbook: Path, known_hosts: str) -> dict:
    inventory = yaml.safe_load(inventory_path.read_text())
    play_vars = yaml.safe_load(playbook.read_text())[0]["vars"]
    identity = inventory["all"]["vars"]["ansible_ssh_private_key_file"]
    options = ConnectOptions(user="root", identity=identity, known_hosts=known_hosts)
    pool = NodePool()
    jobs = []
    for address, name, ctid, host in containers(inventory):
        target = PctTarget(pool.get(address, address, options), ctid)
        jobs.append((name, target, check_script({**play_vars, **host})))
    try:
        with ThreadPoolExecutor(max_workers=len(jobs)) as pool_ex:
            futures = [(n, t, pool_ex.submit(t.run_script, s, timeout=60)) for n, t, s in jobs]
            results = {n: (t, f.result()) for n, t, f in futures}
    finally:
        pool.close()
    return {
        "containers": {
            name: {"problems": judge(result.text()), "calls": target.calls}
            for name, (target, result) in results.items()
        },
        "connections": pool.connections_opened(),
    }


def main(argv: list[str]) -> int:
    inventory = Path(argv[0])
    playbook = Path(argv[1]) if len(argv) > 1 else HERE / "pctfleet_site.yml"
    known_hosts = argv[2] if len(argv) > 2 else str(inventory.parent.parent / "known_hosts")
    report = run(inventory, playbook, known_hosts)
    print(json.dumps(report, indent=2))
    return 0 if all(not c["problems"] for c in report["containers"].values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
