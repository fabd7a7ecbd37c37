"""What the help and the errors teach works on the lab: each read-only example of
every command's --help, exactly as printed, and each one-line fix, pasted."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

pytestmark = pytest.mark.lab


@pytest.fixture(scope="module")
def info(lab):
    return lab.up(nodes=2, containers=2)


def pctfleet(*args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    code = "from pctfleet.cli.main import main; main()"
    argv = [sys.executable, "-c", code, *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)


def test_the_keyscan_line_of_an_unknown_host_key_lets_the_next_run_in(info, tmp_path):
    known = tmp_path / "known_hosts"
    node = info.nodes[0]
    common = ["--host", node.address, "--ct", "200", "--identity", str(info.identity)]
    refused = pctfleet("exec", *common, "--known-hosts", str(known), "--json", "--", "true")
    message = json.loads(refused.stdout)["results"][0]["message"]
    line = re.search(r"record it: (ssh-keyscan .*)\)$", message)
    assert line, message
    assert line.group(1) == f"ssh-keyscan -t ed25519 {node.address} >> {known}"
    subprocess.run(line.group(1), shell=True, check=True, capture_output=True, timeout=30)
    again = pctfleet("exec", *common, "--known-hosts", str(known), "--", "true")
    assert again.returncode == 0, again.stderr


def test_a_stopped_container_says_pct_start_and_that_line_starts_it(lab, info):
    node = info.nodes[1]
    common = ["--host", node.address, "--ct", "201", "--identity", str(info.identity)]
    common += ["--known-hosts", str(info.known_hosts)]
    lab.stop_container(node.name, 201)
    try:
        stopped = pctfleet("exec", *common, "--", "true")
        assert stopped.returncode != 0
        fix = re.search(r"start it on (\S+): (pct start 201)\)$", stopped.stderr.strip())
        assert fix and fix.group(1) == node.address, stopped.stderr
        ssh = ["ssh", "-i", str(info.identity), "-o", f"UserKnownHostsFile={info.known_hosts}"]
        subprocess.run([*ssh, f"root@{node.address}", fix.group(2)], check=True, timeout=60)
        assert pctfleet("exec", *common, "--", "true").returncode == 0
    finally:
        lab.up(nodes=2, containers=2)  # starts it again if the test stopped early


LAB_INVENTORY = "/var/lib/pctfleet-lab/inventory.yml"
READ_ONLY = {("audit",), ("doctor",), ("verify",), ("inventory", "discover"), ("runs",),
             ("exec",), ("lab", "status"), ("report",)}  # fmt: skip


def printed_examples() -> list[tuple[tuple[str, ...], list[str]]]:
    """Every example of every --help that reads only: as printed, program name first."""
    from tests.unit.test_help import COMMANDS, help_examples

    found = []
    for app, prog, path, command in COMMANDS:
        if command.callback is None or prog != "pctfleet":
            continue
        for line in help_examples(app, prog, path):
            words = shlex.split(line)
            if words[0] == "provision":
                continue  # the provision program's help, shown under `pctfleet provision` too
            placeholder = re.search(r"\b10\.\d+\.\d+\.\d+\b|/tmp/lab18|\d{8}T", line)
            safe = path in READ_ONLY or "--check" in words
            if safe and not placeholder and "--keep" not in words:
                found.append((path, words))
    return found


def test_the_read_only_examples_run_on_the_lab_as_printed(info, tmp_path):
    assert str(info.inventory) == LAB_INVENTORY  # the path every example names
    examples = printed_examples()
    assert len(examples) >= 14, examples

    def run(words: list[str]) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-c", "from pctfleet.cli.main import main; main()", *words[1:]],
            capture_output=True, text=True, timeout=300, cwd=tmp_path, check=False,
        )  # fmt: skip

    # Read-only, so they may overlap as two operators' commands would: three at a time.
    with ThreadPoolExecutor(max_workers=3) as pool:
        done = list(pool.map(run, [words for _, words in examples]))
    for (_, words), proc in zip(examples, done, strict=True):
        shown = f"{shlex.join(words)}: exit {proc.returncode}\n{proc.stderr[-2000:]}"
        assert "Traceback" not in proc.stderr, shown
        assert proc.returncode in (0, 1, 2), shown  # ok, check failed, drift: never 3, 4, 5
        if "--json" in words:
            json.loads(proc.stdout)
