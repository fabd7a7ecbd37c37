"""What the side-by-side tests share: running ansible-playbook (proxmox_pct_remote, the
lab's copy) and pctfleet on the same playbook, reading their task statuses the same
way, looking into a lab container, and keeping Ansible's outcome by its inputs."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from pctfleet.lab import Lab

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from bench import ansible_env  # noqa: E402

# Ansible's side is slow (five pct calls a task) and a pure function of its inputs:
# its outcomes are kept here, keyed by everything they depend on.
CACHE = Path("/var/cache/pctfleet/differential")


def in_container(lab: Lab, node: str, ctid: int, script: str) -> str:
    """`sh -c script` in node/ctid through the node's pct; its stdout."""
    # ssh joins its arguments into one line for the node's shell: quote the script.
    remote = shlex.join(["pct", "exec", str(ctid), "--", "sh", "-c", script])
    done = subprocess.run(
        [*lab.ssh_args(node), remote], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, f"{node}/{ctid}: {done.stderr}"
    return done.stdout


def ansible_status(result: dict) -> str:
    if result.get("skipped"):
        return "skipped"
    if result.get("failed"):
        return "failed"
    return "changed" if result.get("changed") else "ok"


def run_ansible(lab: Lab, work: Path, inventory: Path, book: Path, *more: str) -> dict:
    """ansible-playbook's exit code and each host's [task name, status] list."""
    env = ansible_env.environment(work, lab.info.known_hosts)
    env |= {"ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json", "ANSIBLE_GATHERING": "explicit"}
    argv = [str(ansible_env.VENV / "bin/ansible-playbook"), "-i", str(inventory), str(book)]
    done = subprocess.run([*argv, *more], capture_output=True, text=True, env=env, timeout=600)
    assert done.stdout.strip(), f"ansible-playbook said nothing: {done.stderr[-2000:]}"
    tasks: dict[str, list] = {}
    for play in json.loads(done.stdout)["plays"]:
        for task in play["tasks"]:
            for host, result in task["hosts"].items():
                tasks.setdefault(host, []).append([task["task"]["name"], ansible_status(result)])
    return {"exit": done.returncode, "tasks": tasks}


def run_pctfleet(lab: Lab, work: Path, inventory: Path, book: Path, *more: str) -> dict:
    """`pctfleet run`'s exit code and each container's [task name, status] list."""
    argv = [sys.executable, "-m", "pctfleet", "run", str(book), "--json", "-i", str(inventory)]
    argv += ["--known-hosts", str(lab.info.known_hosts), "--journal-dir", str(work / "runs")]
    done = subprocess.run([*argv, *more], capture_output=True, text=True, timeout=300)
    assert done.stdout.strip(), done.stderr
    runs = json.loads(done.stdout)["containers"]
    tasks = {c["name"]: [[t["name"], t["status"]] for t in c["tasks"]] for c in runs}
    return {"exit": done.returncode, "tasks": tasks}


def ansible_local(
    book: Path, work: Path, *more: str, rc: int = 0, env: dict | None = None
) -> list[dict]:
    """ansible-playbook -c local on this machine (its own venv's python): each task of
    each play, as the ansible.posix.json callback reports it. An exit code other than
    `rc` fails; `env`: more variables (ANSIBLE_CONFIG, ...)."""
    venv = ansible_env.ensure_venv()
    more_env = env or {}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "PYTHON"))}
    env |= {"ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json", "HOME": str(work), **more_env}
    argv = [str(venv / "bin/ansible-playbook"), "-i", "localhost,", "-c", "local", str(book)]
    argv += ["-e", f"ansible_python_interpreter={venv / 'bin/python'}", *more]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == rc, done.stdout[-2000:] + done.stderr[-2000:]
    # With -v Ansible says which config it read before the callback's document.
    document = done.stdout[re.search(r"^\{", done.stdout, re.M).start() :]
    return [task for play in json.loads(document)["plays"] for task in play["tasks"]]


def cache_path(kind: str, inputs: list) -> Path:
    """Where Ansible's outcome for `inputs` (with Ansible's versions) is kept."""
    found = ansible_env.versions()
    keyed = [*inputs, found["ansible-core"], found["community.proxmox"]]
    digest = hashlib.sha256(json.dumps(keyed).encode()).hexdigest()[:24]
    return CACHE / f"{kind}-{digest}.json"


def keep(path: Path, outcome: dict) -> None:
    CACHE.mkdir(parents=True, exist_ok=True)
    path.with_suffix(".tmp").write_text(json.dumps(outcome))
    path.with_suffix(".tmp").replace(path)


def cached(kind: str, inputs: list, compute) -> dict:
    """Ansible's outcome for `inputs`: from the cache, else `compute()` kept there
    (PCTFLEET_DIFF_FRESH=1 computes it again)."""
    path = cache_path(kind, inputs)
    if path.is_file() and not os.environ.get("PCTFLEET_DIFF_FRESH"):
        return json.loads(path.read_text())
    outcome = compute()
    keep(path, outcome)
    return outcome


def pctfleet_local(book: Path, journal: Path, *more: str) -> list[dict]:
    """`pctfleet run BOOK --local --json MORE...` (no ANSIBLE_* in its environment):
    the one container's task entries."""
    argv = [sys.executable, "-m", "pctfleet", "run", str(book), "--local"]
    argv += ["--json", "--journal-dir", str(journal), *more]
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    (run,) = json.loads(done.stdout)["containers"]
    return run["tasks"]


def local_side_by_side(kind: str, inputs: list, tmp_path: Path, files, *more: str):  # noqa: ANN001
    """book.yml run in tmp_path/ansible by ansible-playbook (cached under `kind` and
    `inputs`) and in tmp_path/pctfleet by pctfleet: for each, {"tasks": [[name,
    status, msg], ...], "files": files(folder)}, pctfleet's first."""
    theirs_dir, ours_dir = tmp_path / "ansible", tmp_path / "pctfleet"

    def ansible() -> dict:
        tasks = ansible_local(theirs_dir / "book.yml", theirs_dir, *more)
        hosts = [(t["task"]["name"], t["hosts"]["localhost"]) for t in tasks]
        rows = [[name, ansible_status(h), str(h.get("msg", ""))] for name, h in hosts]
        return {"tasks": rows, "files": files(theirs_dir)}

    theirs = cached(kind, inputs, ansible)
    tasks = pctfleet_local(ours_dir / "book.yml", tmp_path / "runs", *more)
    ours = {"tasks": [[t["name"], t["status"], t["msg"]] for t in tasks], "files": files(ours_dir)}
    return ours, theirs
