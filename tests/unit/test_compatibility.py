"""The differential suite's parts without a lab or Ansible: corpus, parsers, the report."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pctfleet.modules import known_args
from pctfleet.playbook.loader import load_playbook

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import compatibility as compat  # noqa: E402

ANSIBLE_JSON = {
    "plays": [
        {
            "tasks": [
                {"task": {"name": "write"}, "hosts": {"h": {"changed": True}}},
                {"task": {"name": "skip"}, "hosts": {"h": {"changed": False, "skipped": True}}},
                {"task": {"name": "fail"}, "hosts": {"h": {"changed": True, "failed": True}}},
            ]
        },
        {"tasks": [{"task": {"name": "other host"}, "hosts": {"x": {"changed": True}}}]},
    ]
}


@pytest.mark.parametrize("case", compat.corpus(), ids=lambda c: c.name)
def test_every_corpus_playbook_loads_and_keeps_to_its_folder(case):
    plays = load_playbook(case.path, known_args()).plays
    assert len(plays) == 1, "one play per corpus file: ansible's plays are matched by order"
    names = [t.name for t in plays[0].tasks + plays[0].handlers if not getattr(t, "implicit", 0)]
    assert len(names) == len(set(names)), "task names identify tasks in the recap"
    assert f"{compat.SCRATCH}/{case.name}" in case.path.read_text()


def test_corpus_headers_give_setup_and_extra_vars(tmp_path):
    (tmp_path / "b.yml").write_text(
        '# what it shows\n# setup: touch x\n# extra_vars: {"k": 1}\n'
        "- hosts: all\n  tasks: [{name: t, debug: {msg: m}}]\n  handlers: [{name: h, debug: {}}]\n"
    )
    (tmp_path / "a.yml").write_text("- hosts: all\n  tasks: []\n")
    a, b = compat.corpus(tmp_path)
    assert (a.name, a.title, a.tasks, a.extra_vars) == ("a", "a", 0, {})
    assert (b.title, b.setup, b.extra_vars, b.tasks) == ("what it shows", "touch x", {"k": 1}, 2)
    script = compat.reset_script([a, b])
    assert script.index("rm -rf /srv/pctdiff") < script.index(
        "mkdir -p /srv/pctdiff/b\n( touch x )"
    )
    b2 = compat.Case("c", tmp_path, "", 0, extra_vars={"k": 2})
    with pytest.raises(ValueError, match="'k' clashes"):
        compat.extra_vars([b, b2])


def test_recaps_from_both_tools_and_their_comparison():
    cases = [compat.Case("one", Path("one.yml"), "", 3), compat.Case("two", Path("two.yml"), "", 1)]
    theirs = compat.ansible_recaps(ANSIBLE_JSON, cases, "h")
    assert theirs == {
        "one": [["write", "changed"], ["skip", "skipped"], ["fail", "failed"]],
        "two": [],
    }
    ours = compat.pctfleet_recap(
        {
            "containers": [
                {
                    "tasks": [
                        {"name": "write", "status": "changed"},
                        {"name": "skip", "status": "ok"},
                    ]
                }
            ]
        }
    )
    assert compat.compare_recap(theirs["one"], ours) == [
        {"what": "skip", "ansible": "skipped", "pctfleet": "ok"},
        {"what": "fail", "ansible": "failed", "pctfleet": "absent"},
    ]


def test_recap_totals_sum_pctfleet_runs_against_ansible_recap():
    ansible = {"ok": 7, "changed": 2, "failures": 0, "skipped": 1, "rescued": 1, "ignored": 1}
    ours = [
        compat.pctfleet_stats({"containers": [{"stats": {"ok": 4, "changed": 2, "ignored": 1}}]}),
        {"ok": 3, "failed": 0, "skipped": 1, "rescued": 1, "ignored": 0},
    ]
    assert compat.compare_totals(ansible, ours) == []
    ours[1]["ignored"] = 1
    assert compat.compare_totals(ansible, ours) == [
        {"what": "recap ignored", "ansible": "1", "pctfleet": "2"}
    ]
    # A deliberate difference (Ansible changed, pctfleet ok) moves the changed counter.
    ours[1]["ignored"], ours[0]["changed"] = 0, 1
    touch = {"what": "touch", "ansible": "changed", "pctfleet": "ok", "deliberate": "why"}
    assert compat.compare_totals(ansible, ours, [touch]) == []
    text = compat.render({"meta": {"totals": {"first": [], "second": []}}, "records": []})
    assert "ignored): first run same, second run same" in text


def test_snapshot_lines_become_entries_per_playbook_and_compare():
    text = (
        "/srv/pctdiff/one/f\tregular file|644|root:root\t\taGk=\n"
        "/srv/pctdiff/one/l\tsymbolic link|777|root:root\t/x\t\n"
        "/srv/pctdiff/two\tdirectory|755|root:root\t\t\n"
    )
    snap = compat.parse_snapshot(text)
    assert snap["one"] == {
        "f": "regular file|644|root:root b64:aGk=",
        "l": "symbolic link|777|root:root -> /x",
    }
    assert snap["two"] == {".": "directory|755|root:root"}
    other = {"f": "regular file|600|root:root b64:aGk="}
    assert [d["what"] for d in compat.compare_state(snap["one"], other)] == ["f", "l"]


def test_the_report_counts_agreement_and_names_deliberate_differences(monkeypatch):
    monkeypatch.setitem(compat.DIVERGENCES, ("two", "first", "t"), "on purpose")
    same = compat.Record("one", "first one", 2)
    for aspect in compat.ASPECTS:
        same.add(aspect, [])
    known = compat.Record("two", "second", 3)
    known.add("state", [])
    known.add("first", [{"what": "t", "ansible": "ok", "pctfleet": "changed"}])
    known.add("second", [{"what": "u", "ansible": "ok", "pctfleet": "changed"}])
    assert known.unexplained() == ["two [second] u: ansible 'ok', pctfleet 'changed'"]
    data = {
        "meta": {"ansible": "ansible-core 2.19", "seconds": 61.4, "ansible_ran_at": "T1"},
        "records": [compat.asdict(same), compat.asdict(known)],
    }
    text = compat.render(data)
    assert "Corpus: 2 playbooks, 5 tasks." in text
    assert "- recap, 1st run: 2 of 2 agree" in text
    assert "- recap, 2nd run: 1 of 2 agree" in text
    assert "| `two` (second) | 3 | same | same (1 deliberate) | **differs (1)** |" in text
    assert "| `two` | first | t | on purpose |" in text
    assert "The suite took 61 s." in text
    assert "Ansible's side ran at T1;" in text


def test_the_renderer_writes_the_file_and_refuses_without_records(tmp_path, capsys):
    records = tmp_path / "records.json"
    assert compat.main(["--records", str(records)]) == 2
    assert "run the differential lab test first" in capsys.readouterr().err
    records.write_text('{"meta": {}, "records": []}')
    out = tmp_path / "compatibility.md"
    assert compat.main(["--records", str(records), "--out", str(out)]) == 0
    assert "Corpus: 0 playbooks, 0 tasks." in out.read_text()


def test_ansible_stats_leave_out_fact_gathering():
    gather = {"task": {"name": compat.GATHERING}, "hosts": {"h": {}}}
    other = {"task": {"name": "copy"}, "hosts": {"h": {}}}
    report = {
        "plays": [{"tasks": [gather, other]}, {"tasks": [other]}],
        "stats": {"h": {"ok": 3, "changed": 1}},
    }
    assert compat.ansible_stats(report, "h") == {"ok": 2, "changed": 1}
    assert compat.ansible_stats(report, "missing") == {"ok": 0}
