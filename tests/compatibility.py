"""The differential suite's parts, and the renderer of docs/compatibility.md.

tests/integration/test_differential.py runs every playbook of tests/differential/
with ansible-playbook (community.proxmox's proxmox_pct_remote) on one lab container
and with `pctfleet run` on another, twice, and compares what each left under
/srv/pctdiff/<playbook> (type, mode, owner, link target, bytes) and each task's
status. It writes one JSON record per playbook into $PCTFLEET_COMPAT_DIR (default:
<tmp>/pctfleet-compat); this script renders those records:

    flock /tmp/pctfleet-lab.lock .venv/bin/python -m pytest tests/integration/test_differential.py
    .venv/bin/python tests/compatibility.py --out docs/compatibility.md

A corpus playbook is one file: a play per file, named tasks, files only under
/srv/pctdiff/<its name>. Comment lines at its top say more: the first is its
description; `# setup: SH` lays out the start state (after the folder is made);
`# extra_vars: JSON` are passed as -e to both tools.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

CORPUS = Path(__file__).resolve().parent / "differential"
SCRATCH = "/srv/pctdiff"
ENV = "PCTFLEET_COMPAT_DIR"
# Ansible reports gather_facts as a task of its own; pctfleet reads facts with its first probe.
GATHERING = "Gathering Facts"

# Differences that are deliberate: (playbook, aspect, what) -> why. aspect is
# "state", "first" or "second" (the recap of that run). docs/playbooks.md
# ("Differs from Ansible") says the same.
DIVERGENCES: dict[tuple[str, str, str], str] = {
    ("file_tree", "second", "touch a file"): (
        "state: touch on an existing file changes nothing (Ansible's touch with "
        "access_time and modification_time: preserve); Ansible's default updates both "
        "times and reports changed on every run, which would make no run converged"
    ),
    **{
        ("loops", "state", f"b/{name}"): (
            'copy content "{{ item.value }}\\n" with a number keeps its final line '
            "break; ansible-core 2.19 turns a rendered string that reads as a Python "
            "literal into that value (5432), so the line break is lost"
        )
        for name in ("db", "web")
    },
}


@dataclass
class Case:
    name: str
    path: Path
    title: str
    tasks: int
    setup: str = ""
    extra_vars: dict[str, Any] = field(default_factory=dict)

    @property
    def folder(self) -> str:
        return f"{SCRATCH}/{self.name}"


def load_case(path: Path) -> Case:
    """A corpus playbook and what its header comments say."""
    text = path.read_text(encoding="utf-8")
    header: dict[str, str] = {}
    lines = [line[1:].strip() for line in text.splitlines() if line.startswith("#")]
    for line in lines[1:]:
        key, _, value = line.partition(":")
        header[key.strip()] = value.strip()
    plays = yaml.safe_load(text)
    tasks = sum(len(p.get("tasks", [])) + len(p.get("handlers", [])) for p in plays)
    return Case(
        name=path.stem,
        path=path,
        title=lines[0] if lines else path.stem,
        tasks=tasks,
        setup=header.get("setup", ""),
        extra_vars=json.loads(header.get("extra_vars", "{}")),
    )


def corpus(folder: Path = CORPUS) -> list[Case]:
    return [load_case(path) for path in sorted(folder.glob("*.yml"))]


def extra_vars(cases: list[Case]) -> dict[str, Any]:
    """Every case's -e values, for one ansible-playbook run of them all: names must not clash."""
    merged: dict[str, Any] = {}
    for case in cases:
        for key, value in case.extra_vars.items():
            if key in merged and merged[key] != value:
                raise ValueError(f"{case.path}: extra var {key!r} clashes with another playbook")
            merged[key] = value
    return merged


def reset_script(cases: list[Case]) -> str:
    """sh: the scratch folder emptied, each case's folder made and its setup run."""
    lines = [f"rm -rf {SCRATCH}", "set -e"]
    for case in cases:
        lines.append(f"mkdir -p {shlex.quote(case.folder)}")
        if case.setup:
            lines.append(f"( {case.setup} )")
    return "\n".join(lines) + "\n"


# One line per path under the scratch folder: path, type|mode|owner, link target, base64.
SNAPSHOT = f"""
find {SCRATCH} -mindepth 1 | LC_ALL=C sort | while IFS= read -r p; do
  meta=$(stat -c '%F|%a|%U:%G' "$p")
  link=$(readlink "$p" || true)
  data=
  if [ -f "$p" ] && [ ! -L "$p" ]; then data=$(base64 -w0 "$p"); fi
  printf '%s\\t%s\\t%s\\t%s\\n' "$p" "$meta" "$link" "$data"
done
"""


def parse_snapshot(text: str) -> dict[str, dict[str, str]]:
    """SNAPSHOT's output as case name -> relative path -> what it is."""
    found: dict[str, dict[str, str]] = {}
    for line in text.splitlines():
        path, meta, link, data = (line.split("\t") + ["", "", ""])[:4]
        case, _, rel = path.removeprefix(SCRATCH + "/").partition("/")
        entry = meta + (f" -> {link}" if link else "") + (f" b64:{data}" if data else "")
        found.setdefault(case, {})[rel or "."] = entry
    return found


def ansible_status(result: dict[str, Any]) -> str:
    if result.get("unreachable"):
        return "unreachable"
    if result.get("failed"):
        return "failed"
    if result.get("skipped"):
        return "skipped"
    return "changed" if result.get("changed") else "ok"


def ansible_recaps(report: dict[str, Any], cases: list[Case], host: str) -> dict[str, list]:
    """ansible.posix.json output of one run of all cases (a play each, in order)."""
    plays = report.get("plays", [])
    recaps: dict[str, list] = {}
    for case, play in zip(cases, plays, strict=False):
        recaps[case.name] = [
            [task["task"]["name"], ansible_status(task["hosts"][host])]
            for task in play.get("tasks", [])
            if host in task.get("hosts", {}) and task["task"]["name"] != GATHERING
        ]
    return recaps


def ansible_stats(report: dict[str, Any], host: str) -> dict[str, int]:
    """Ansible's recap counters for `host`, less its fact gathering (ok once per play
    that gathers): pctfleet reads facts with its first probe, not as a task."""
    stats = dict(report.get("stats", {}).get(host, {}))
    gathered = sum(
        1
        for play in report.get("plays", [])
        for task in play.get("tasks", [])
        if task["task"]["name"] == GATHERING and host in task.get("hosts", {})
    )
    stats["ok"] = stats.get("ok", 0) - gathered
    return stats


def pctfleet_recap(report: dict[str, Any]) -> list:
    """`pctfleet run --json` output of one container."""
    tasks = report["containers"][0]["tasks"] if report.get("containers") else []
    return [[task["name"], task["status"]] for task in tasks]


# Ansible's PLAY RECAP counter -> pctfleet's stats key.
TOTALS = {
    "ok": "ok",
    "changed": "changed",
    "failures": "failed",
    "skipped": "skipped",
    "rescued": "rescued",
    "ignored": "ignored",
}


def pctfleet_stats(report: dict[str, Any]) -> dict[str, int]:
    """`pctfleet run --json` output of one container: its recap counters."""
    return report["containers"][0]["stats"] if report.get("containers") else {}


# The recap counters a task's status adds to (as ContainerRun.stats counts them).
COUNTED = {"ok": ["ok"], "changed": ["ok", "changed"], "skipped": ["skipped"], "failed": ["failed"]}


def compare_totals(
    ansible: dict[str, int], ours: list[dict[str, int]], deliberate: list[dict[str, str]] = ()
) -> list[dict[str, str]]:
    """Ansible's recap of one run of every case against pctfleet's stats summed over its
    runs; a deliberate difference of a task's status moves the counters it touches."""
    expected = {mine: ansible.get(theirs, 0) for theirs, mine in TOTALS.items()}
    for diff in deliberate:
        for key in COUNTED.get(diff["ansible"], []):
            expected[key] -= 1
        for key in COUNTED.get(diff["pctfleet"], []):
            expected[key] += 1
    diffs = []
    for mine, a in expected.items():
        b = sum(stats.get(mine, 0) for stats in ours)
        if a != b:
            diffs.append({"what": f"recap {mine}", "ansible": str(a), "pctfleet": str(b)})
    return diffs


def compare_state(a: dict[str, str], b: dict[str, str]) -> list[dict[str, str]]:
    return [
        {"what": path, "ansible": a.get(path, "absent"), "pctfleet": b.get(path, "absent")}
        for path in sorted(set(a) | set(b))
        if a.get(path) != b.get(path)
    ]


def compare_recap(a: list, b: list) -> list[dict[str, str]]:
    """Task by task, in order; a task one tool ran and the other did not counts too."""
    width = max(len(a), len(b))
    a, b = a + [["", "absent"]] * (width - len(a)), b + [["", "absent"]] * (width - len(b))
    return [
        {"what": x[0] or y[0], "ansible": x[1], "pctfleet": y[1]}
        for x, y in zip(a, b, strict=True)
        if x != y
    ]


@dataclass
class Record:
    """One playbook's outcome: differences per aspect, deliberate ones marked with why."""

    name: str
    title: str
    tasks: int
    aspects: dict[str, list[dict[str, str]]] = field(default_factory=dict)

    def add(self, aspect: str, differences: list[dict[str, str]]) -> None:
        for diff in differences:
            reason = DIVERGENCES.get((self.name, aspect, diff["what"]))
            if reason:
                diff["deliberate"] = reason
        self.aspects.setdefault(aspect, []).extend(differences)

    def unexplained(self) -> list[str]:
        return [
            f"{self.name} [{aspect}] {d['what']}: ansible {d['ansible']!r}, "
            f"pctfleet {d['pctfleet']!r}"
            for aspect, diffs in self.aspects.items()
            for d in diffs
            if "deliberate" not in d
        ]


def records_dir() -> Path:
    return Path(os.environ.get(ENV) or Path(tempfile.gettempdir()) / "pctfleet-compat")


def save(records: list[Record], meta: dict[str, Any]) -> Path:
    folder = records_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "records.json"
    data = {"meta": meta, "records": [asdict(r) for r in records]}
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")
    return path


def _cell(diffs: list[dict[str, str]] | None) -> str:
    if diffs is None:
        return "not run"
    unexplained = [d for d in diffs if "deliberate" not in d]
    if unexplained:
        return f"**differs ({len(unexplained)})**"
    return f"same ({len(diffs)} deliberate)" if diffs else "same"


ASPECTS = {"state": "end state", "first": "recap, 1st run", "second": "recap, 2nd run"}


def _agreement(records: list[dict[str, Any]], aspect: str) -> int:
    return sum(
        1
        for r in records
        if aspect in r["aspects"] and all("deliberate" in d for d in r["aspects"][aspect])
    )


def render(data: dict[str, Any]) -> str:
    """docs/compatibility.md from the records the lab test saved."""
    records, meta = data["records"], data["meta"]
    total = len(records)
    lines = [
        "# Compatibility with ansible-playbook",
        "",
        "Generated by `tests/compatibility.py` from the last run of",
        "`tests/integration/test_differential.py`; not edited by hand.",
        "",
        f"Each playbook of `tests/differential/` ran with {meta.get('ansible', 'ansible')}"
        " (connection `proxmox_pct_remote`) on one lab container and with"
        " `pctfleet run` on another, from the same start state, twice. Compared:"
        " what each left in the container (type, mode, owner, link target, bytes)"
        " and every task's status (ok, changed, failed, skipped) on both runs.",
        "",
        f"Corpus: {total} playbooks, {sum(r['tasks'] for r in records)} tasks.",
        "",
    ]
    lines += [
        f"- {label}: {_agreement(records, a)} of {total} agree" for a, label in ASPECTS.items()
    ]
    lines += _totals(meta.get("totals"))
    lines += ["", "| playbook | tasks | " + " | ".join(ASPECTS.values()) + " |"]
    lines.append("|---|---|" + "---|" * len(ASPECTS))
    for r in records:
        cells = [_cell(r["aspects"].get(a)) for a in ASPECTS]
        lines.append(f"| `{r['name']}` ({r['title']}) | {r['tasks']} | " + " | ".join(cells) + " |")
    lines += _deliberate(records)
    if meta.get("seconds") is not None:
        lines += ["", f"The suite took {meta['seconds']:.0f} s."]
    if meta.get("ansible_ran_at"):
        lines += [
            "",
            f"Ansible's side ran at {meta['ansible_ran_at']}; its outcome is kept by a hash of"
            " everything it reads (corpus, -e, versions, the container's system), so a"
            " later run with the same corpus runs pctfleet's side only"
            " (`PCTFLEET_DIFF_FRESH=1` runs Ansible again).",
        ]
    return "\n".join(lines) + "\n"


def _totals(totals: dict[str, list] | None) -> list[str]:
    """The recap counters of the whole corpus (ok, changed, ..., ignored), per run."""
    if totals is None:
        return []
    keys = ", ".join(TOTALS.values())
    cells = [
        f"{run} run " + ("same" if not diffs else "**differs**: " + "; ".join(
            f"{d['what']} ansible {d['ansible']}, pctfleet {d['pctfleet']}" for d in diffs
        ))
        for run, diffs in totals.items()
    ]  # fmt: skip
    return [f"- recap counters of the corpus ({keys}): " + ", ".join(cells)]


def _deliberate(records: list[dict[str, Any]]) -> list[str]:
    rows = [
        f"| `{r['name']}` | {aspect} | {d['what']} | {d['deliberate']} |"
        for r in records
        for aspect, diffs in r["aspects"].items()
        for d in diffs
        if "deliberate" in d
    ]
    if not rows:
        return []
    head = ["", 'Deliberate differences (see playbooks.md, "Differs from Ansible"):', ""]
    return head + ["| playbook | aspect | what | why |", "|---|---|---|---|", *rows]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Render docs/compatibility.md")
    parser.add_argument("--records", type=Path, default=records_dir() / "records.json")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    if not args.records.exists():
        print(f"no records at {args.records}: run the differential lab test first", file=sys.stderr)
        return 2
    text = render(json.loads(args.records.read_text(encoding="utf-8")))
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
