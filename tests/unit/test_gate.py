"""Rollout's default gate: converged, plus the verify checks of the stack parts deployed."""

from __future__ import annotations

from pathlib import Path

from pctfleet.modules import known_args
from pctfleet.playbook.loader import load_playbook
from pctfleet.run.gate import combine, stack_checks

REPO = Path(__file__).resolve().parents[2]

PLAIN = """
- hosts: all
  tasks:
    - name: folder
      file: {path: /tmp/x, state: directory}
    - name: a program that is not the serving stack's server
      server: {name: other, command: ["sleep", "100"], pidfile: /run/other.pid}
"""

PARTS = """
- hosts: all
  tasks:
    - name: links
      cuda_links: {venv: /opt/v}
  handlers:
    - name: server
      server: {name: sglang, command: ["x"], pidfile: "{{ server_pidfile }}"}
"""


def _checks(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "book.yml"
    path.write_text(text)
    return stack_checks(load_playbook(path, known_args()))


def test_a_playbook_without_stack_parts_gets_no_verify_checks(tmp_path):
    assert _checks(tmp_path, PLAIN) == []


def test_the_checks_follow_the_parts_a_playbook_deploys(tmp_path):
    assert _checks(tmp_path, PARTS) == [
        "test_links_resolve",
        "test_server_pid_alive",
        "test_server_port_listens",
        "test_server_health_200",
    ]


def test_the_site_playbook_gets_every_stack_check():
    book = load_playbook(REPO / "playbooks" / "site.yml", known_args())
    assert sorted(stack_checks(book)) == sorted(
        [
            "test_toolchain_matched",
            "test_cccl_overlay_matches_manifest",
            "test_links_resolve",
            "test_jit_cache_not_stale",
            "test_server_pid_alive",
            "test_server_port_listens",
            "test_server_health_200",
        ]
    )


def test_a_container_passes_only_when_it_passes_every_gate():
    merged = combine(
        [
            {"a/1": (True, ""), "a/2": (False, "not converged")},
            {"a/1": (False, "1 of 3 checks failed"), "a/2": (False, "2 of 3 checks failed")},
        ]
    )
    assert merged == {
        "a/1": (False, "1 of 3 checks failed"),
        "a/2": (False, "not converged; 2 of 3 checks failed"),
    }
