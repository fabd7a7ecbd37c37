"""run_once, meta, serial, max_fail_percentage and any_errors_fatal over a simulated fleet."""

from __future__ import annotations

import textwrap
import threading
from pathlib import Path

import pytest

from pctfleet.errors import PlaybookError
from pctfleet.inventory import load_inventory
from pctfleet.modules import known_args
from pctfleet.playbook.loader import load_playbook
from pctfleet.run.engine import RunOptions
from pctfleet.run.playbookrun import RunRequest, execute, prepare
from pctfleet.run.playflow import Outcome, PlayFlow
from pctfleet.transport.options import ConnectOptions
from pctfleet.transport.sim import build_sim_fleet

INVENTORY = """
nodes:
  pve1:
    containers:
      200: {vars: {me: a}}
      201: {vars: {me: b}}
  pve2:
    containers:
      200: {vars: {me: c}}
      201: {vars: {me: d}}
"""


def run_book(tmp_path: Path, book: str, forks: int = 4) -> tuple[dict, dict]:
    """Each container's run and its simulated target, by key."""
    (tmp_path / "book.yml").write_text(textwrap.dedent(book))
    (tmp_path / "inv.yml").write_text(INVENTORY)
    inv = load_inventory(tmp_path / "inv.yml")
    containers = list(inv.select("all"))
    request = RunRequest(
        tmp_path / "book.yml", inv, containers, ConnectOptions(), RunOptions(), forks=forks
    )
    fleets = []

    def factory(containers, connect):  # noqa: ANN001, ANN202, ARG001
        fleets.append(build_sim_fleet(containers, latency=0.0))
        return fleets[-1]

    runs = execute(prepare(request), fleet_factory=factory)
    targets = {f"{t.node.name}/{t.ctid}": t for t in fleets[0].targets}
    return {r.key: r for r in runs}, targets


def names(run) -> list[str]:  # noqa: ANN001
    return [t.name for t in run.tasks]


RUN_ONCE = """
- hosts: all
  tasks:
    - name: pick
      set_fact: {picked: "{{ me }}"}
      run_once: true
    - name: remote
      command: echo hi
      register: out
      run_once: true
    - block:
        - name: in a block
          command: echo block
      run_once: true
    - name: show
      debug: {msg: "{{ picked }} {{ out.rc }}"}
"""


@pytest.mark.parametrize("forks", [1, 4])
def test_run_once_runs_in_the_first_container_and_its_values_reach_all(tmp_path, forks):
    runs, targets = run_book(tmp_path, RUN_ONCE, forks)
    first, *others = list(runs)
    assert names(runs[first]) == ["pick", "remote", "in a block", "show"]
    for key in others:
        assert names(runs[key]) == ["show"], key  # not reported where it did not run
        assert targets[key].calls == 0, key  # no remote call for it
    assert targets[first].calls >= 2  # the lock, both commands, the release
    assert {r.tasks[-1].msg for r in runs.values()} == {"a 0"}
    assert all(r.status in ("ok", "changed") for r in runs.values())


def test_a_failed_run_once_fails_every_container_and_earlier_failures_never_block(tmp_path):
    runs, targets = run_book(
        tmp_path,
        """
        - hosts: all
          tasks:
            - fail: {msg: early}
              when: me == 'a'
            - name: once
              fail: {msg: "no from {{ me }}"}
              run_once: true
            - debug: {msg: after}
        """,
    )
    assert runs["pve1/200"].message == "task 'fail' failed: early"
    assert "no from b" in runs["pve1/201"].message  # the next active container ran it
    for key in ("pve2/200", "pve2/201"):
        assert runs[key].status == "failed"
        assert runs[key].message == "task 'once' failed in pve1/201 (run_once)"


def test_a_runner_that_raises_still_publishes_its_outcome():
    flow = PlayFlow(["x", "y"])
    flow.enter("x")
    flow.enter("y")
    got: list = []
    waiter = threading.Thread(target=lambda: got.append(flow.claim("t", "y")))
    waiter.start()
    assert flow.claim("t", "x") is None  # x is first in play order: it runs the task
    flow.publish("t", Outcome("x", "failed", "boom"))
    waiter.join(timeout=5)
    assert got and got[0].status == "failed"


def test_a_later_container_does_not_wait_for_one_that_left():
    flow = PlayFlow(["x", "y"])
    flow.enter("x")
    flow.enter("y")
    flow.leave("x")
    assert flow.claim("t", "y") is None


FLUSH = """
- hosts: pve1
  tasks:
    - {name: one, command: "true", notify: h}
    - meta: flush_handlers
    - {name: two, command: "true"}
    - {name: three, command: "true", notify: h}
  handlers:
    - {name: h, command: "true"}
"""


def test_flush_handlers_runs_notified_handlers_now_and_again_when_notified_later(tmp_path):
    runs, _ = run_book(tmp_path, FLUSH)
    assert names(runs["pve1/200"]) == ["one", "h", "two", "three", "h"]


def test_end_host_ends_one_container_without_failing(tmp_path):
    runs, _ = run_book(
        tmp_path,
        """
        - hosts: all
          tasks:
            - debug: {msg: before}
            - meta: end_host
              when: me == 'b'
            - debug: {msg: after}
        """,
    )
    assert names(runs["pve1/201"]) == ["debug"] and runs["pve1/201"].status == "ok"
    assert runs["pve1/201"].message.startswith("meta: end_host in pve1/201")
    # As in Ansible, the meta whose `when` is false is a skipped task where it was read.
    others = [[(t.name, t.status) for t in r.tasks] for k, r in runs.items() if k != "pve1/201"]
    assert others == [[("debug", "ok"), ("meta", "skipped"), ("debug", "ok")]] * 3
    assert runs["pve1/200"].stats()["skipped"] == 0  # listed, not counted (as Ansible's recap)


def test_end_play_stops_every_container_and_the_next_play_runs(tmp_path):
    runs, _ = run_book(
        tmp_path,
        """
        - hosts: all
          tasks:
            - meta: end_play
            - debug: {msg: never}
        - hosts: all
          tasks:
            - debug: {msg: next play}
        """,
    )
    for run in runs.values():
        assert [t.msg for t in run.tasks] == ["next play"]
        assert run.status == "ok"


SERIAL = """
- hosts: all
  serial: [1, "50%"]
  max_fail_percentage: 0
  tasks:
    - fail: {msg: broken}
      when: me == 'b'
    - debug: {msg: done}
- hosts: all
  tasks:
    - debug: {msg: second play}
"""


def test_serial_stops_after_a_batch_over_max_fail_percentage(tmp_path):
    runs, targets = run_book(tmp_path, SERIAL, forks=1)
    # batches: [pve1/200], [pve1/201, pve2/200], [pve2/201]
    assert runs["pve1/200"].status == "ok" and runs["pve1/201"].status == "failed"
    # Same batch, started after the failure (forks 1): as in Ansible, it runs the
    # task that failed (skipped here) and stops before the next.
    assert runs["pve2/200"].status == "ok" and names(runs["pve2/200"]) == ["fail"]
    assert runs["pve2/200"].tasks[0].status == "skipped"
    assert runs["pve2/201"].status == "untouched" and not runs["pve2/201"].tasks
    assert "batch 2: 1/2 failed, over max_fail_percentage 0" in runs["pve2/201"].message
    assert all("second play" not in [t.msg for t in r.tasks] for r in runs.values())


def test_any_errors_fatal_stops_the_other_containers_before_their_next_task(tmp_path):
    runs, _ = run_book(
        tmp_path,
        """
        - hosts: all
          serial: 2
          any_errors_fatal: true
          tasks:
            - fail: {msg: broken}
              when: me == 'a'
            - debug: {msg: next}
        """,
        forks=1,  # pve1/201 starts after pve1/200 failed: deterministic
    )
    assert runs["pve1/200"].status == "failed"
    # Started after the failure (forks 1): as in Ansible, it runs the task that
    # failed (skipped here) and stops before the next.
    assert names(runs["pve1/201"]) == ["fail"] and runs["pve1/201"].status == "ok"
    assert "any_errors_fatal: pve1/200 failed task 'fail'" in runs["pve1/201"].message
    assert [runs[k].status for k in ("pve2/200", "pve2/201")] == ["untouched"] * 2


def test_serial_without_failures_runs_every_batch(tmp_path):
    runs, _ = run_book(tmp_path, SERIAL.replace("me == 'b'", "false"))
    assert all([t.msg for t in r.tasks][-1] == "second play" for r in runs.values())


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("  tasks: [{meta: clear_facts}]", "meta action 'clear_facts' is not supported: facts"),
        ("  tasks: [{meta: bogus}]", "meta action 'bogus' is not supported: known: flush"),
        ("  serial: 0\n  tasks: []", "'serial': '0' is not a count"),
        ("  serial: {a: 1}\n  tasks: []", "'serial' must be a count, a percentage or a list"),
        ("  max_fail_percentage: 101\n  tasks: []", "'max_fail_percentage': must be a percen"),
        ("  tasks: [{debug: {}, run_once: 1}]", "'run_once' must be true or false"),
    ],
)
def test_bad_flow_keywords_are_refused_with_their_line(tmp_path, text, message):
    book = tmp_path / "bad.yml"
    book.write_text(f"- hosts: all\n{text}\n")
    with pytest.raises(PlaybookError) as err:
        load_playbook(book, known_args())
    assert message in str(err.value) and f"{book}:" in str(err.value)


def test_a_stopped_run_reports_the_containers_of_later_plays_untouched(tmp_path):
    runs, _ = run_book(
        tmp_path,
        """
        - hosts: pve1
          tasks:
            - fail: {msg: broken}
        - hosts: pve2
          tasks:
            - debug: {msg: never}
        """,
    )
    assert [runs[k].status for k in ("pve2/200", "pve2/201")] == ["untouched"] * 2
    assert "every container failed" in runs["pve2/200"].message


# Container a is slow (a pause the others skip), then fails or ends the play: in
# Ansible's lock step the others run the same task (skipped) and stop before the next.
SLOW_A = """
- hosts: all
{keys}
  tasks:
    - {{name: slow, pause: {{seconds: 1}}, when: "me == 'a'"}}
    - {last}
    - {{name: next, debug: {{msg: next}}}}
"""
FAILS_A = "{name: breaks, fail: {msg: broken}, when: \"me == 'a'\"}"
FAILS_A_FATAL = FAILS_A[:-1] + ", any_errors_fatal: true}"
ENDS_A = "{name: breaks, meta: end_play, when: \"me == 'a'\"}"


SKIPPED = [("slow", "skipped"), ("breaks", "skipped")]


@pytest.mark.parametrize(
    "keys, last, why, ran",
    [
        ("  any_errors_fatal: true", FAILS_A, "any_errors_fatal: pve1/200 failed", SKIPPED),
        ("  max_fail_percentage: 20", FAILS_A, "1/4 failed, over max_fail_percentage", SKIPPED),
        ("", FAILS_A_FATAL, "any_errors_fatal: pve1/200 failed task 'breaks'", SKIPPED),
        ("", ENDS_A, "meta: end_play in pve1/200", SKIPPED[:1]),  # a meta is no result
    ],
)
def test_in_step_the_others_stop_where_ansibles_hosts_stop(tmp_path, keys, last, why, ran):
    runs, _ = run_book(tmp_path, SLOW_A.format(keys=keys, last=last))
    for key in ("pve1/201", "pve2/200", "pve2/201"):
        tasks = [(t.name, t.status) for t in runs[key].tasks]
        assert tasks == ran, key
        assert why in runs[key].message and runs[key].status == "ok"


def test_without_such_a_keyword_the_others_run_on(tmp_path):
    runs, _ = run_book(tmp_path, SLOW_A.format(keys="", last=FAILS_A))
    assert runs["pve1/200"].status == "failed"
    for key in ("pve1/201", "pve2/200", "pve2/201"):
        assert names(runs[key]) == ["slow", "breaks", "next"]
        assert runs[key].finished_at < runs["pve1/200"].finished_at  # not held back


STEP_SHAPES = """
- hosts: all
  any_errors_fatal: true
  tasks:
    - block:
        - {name: inner, pause: {seconds: 0.2}}
      when: "me in ['a', 'c']"
    - {name: once, command: "true", run_once: true}
    - {name: all, command: "true", notify: h}
    - {name: some, command: "true", notify: h0, when: "me == 'b'"}
  handlers:
    - {name: h0, debug: {msg: "first handler: notified in b only"}}
    - {name: h, debug: {msg: handled}}
"""


def test_in_step_a_skipped_block_and_run_once_never_deadlock(tmp_path):
    done: list = []
    worker = threading.Thread(target=lambda: done.append(run_book(tmp_path, STEP_SHAPES)))
    worker.start()
    worker.join(timeout=30)
    assert done, "the play did not finish"
    runs, _ = done[0]
    assert all(r.status == "changed" for r in runs.values())
    assert names(runs["pve1/200"]) == ["inner", "once", "all", "some", "h"]
    # once: pve1/200's outcome; h0 runs before h, in the handlers' order
    assert names(runs["pve1/201"]) == ["inner", "all", "some", "h0", "h"]


def two_in_step() -> tuple[PlayFlow, threading.Event]:
    flow = PlayFlow(["x", "y"], lockstep=True)
    for key in ("x", "y"):
        flow.enter(key)
    return flow, threading.Event()


def test_in_step_the_one_furthest_behind_never_waits():
    flow, stop = two_in_step()
    ahead = threading.Thread(target=flow.step, args=("x", (0, 1), stop))
    ahead.start()
    ahead.join(timeout=0.3)
    assert ahead.is_alive()  # x waits for y, which has reached nothing yet
    flow.step("y", (0, 0, 5), stop)  # y is behind x: it goes on at once
    assert ahead.is_alive()
    flow.step("y", (0, 1), stop)  # y reaches x: both go on
    ahead.join(timeout=2)
    assert not ahead.is_alive()


def test_in_step_a_stop_releases_a_waiting_container():
    flow, stop = two_in_step()
    waited = threading.Thread(target=flow.step, args=("x", (0, 3), stop))
    waited.start()
    stop.set()
    waited.join(timeout=2)
    assert not waited.is_alive()


END_PLAY_WHEN = """
- hosts: all
  tasks:
    - {{name: end, meta: end_play, when: "me == '{who}'"}}
    - {{name: after, debug: {{msg: after}}}}
- hosts: all
  tasks:
    - {{name: next play, debug: {{msg: next}}}}
"""


@pytest.mark.parametrize("who, ran", [("a", ["next play"]), ("b", ["after", "next play"])])
def test_end_plays_when_is_read_for_the_first_container_only(tmp_path, who, ran):
    """As in Ansible (end_play bypasses the host loop): true for pve1/200, the first
    container, ends the play everywhere; true only for pve1/201 ends it nowhere."""
    runs, _ = run_book(tmp_path, END_PLAY_WHEN.format(who=who))
    expected = dict.fromkeys(runs, ran)
    if who == "b":  # the first container read a false `when`: a skip, recorded there only
        expected["pve1/200"] = ["end", *ran]
    assert {key: names(run) for key, run in runs.items()} == expected


RESCUE_ALL = """
- hosts: all
  any_errors_fatal: true
  tasks:
    - block:
        - {name: slow, pause: {seconds: 0.5}, when: "me == 'a'"}
        - {name: breaks, fail: {msg: broken}, when: "me == 'a'"}
        - {name: second, debug: {msg: second}}
      rescue:
        - {name: rescue, debug: {msg: "for {{ ansible_failed_task.name | default('none') }}"}}
    - {name: after, debug: {msg: after}}
"""


def test_a_fatal_failure_in_a_block_runs_its_rescue_in_every_container(tmp_path):
    """As ansible-core 2.17 on: any_errors_fatal fails every host of the batch, so a
    host in a block with a rescue runs it (with no failed task of its own), then
    goes on; the block's tasks after the failure run nowhere."""
    runs, _ = run_book(tmp_path, RESCUE_ALL)
    failing = [(t.name, t.status) for t in runs["pve1/200"].tasks]
    assert failing == [("slow", "ok"), ("breaks", "failed"), ("rescue", "ok"), ("after", "ok")]
    assert runs["pve1/200"].tasks[2].msg == "for breaks"
    assert runs["pve1/200"].stats()["rescued"] == 1
    for key in ("pve1/201", "pve2/200", "pve2/201"):
        tasks = [(t.name, t.status, t.msg) for t in runs[key].tasks]
        assert tasks[:2] == [("slow", "skipped", tasks[0][2]), ("breaks", "skipped", tasks[1][2])]
        assert tasks[2:] == [("rescue", "ok", "for none"), ("after", "ok", "after")], key
        assert (runs[key].status, runs[key].stats()["rescued"]) == ("ok", 0)


def test_without_a_rescue_the_others_stop_after_the_failing_task(tmp_path):
    """Measured with ansible-playbook 2.19: every host runs the block's `always`,
    then stops; the block's tasks after the failing one run nowhere."""
    book = RESCUE_ALL.replace("      rescue:\n", "      always:\n")
    runs, _ = run_book(tmp_path, book)
    assert runs["pve1/200"].status == "failed"
    for key in ("pve1/201", "pve2/200", "pve2/201"):
        assert names(runs[key]) == ["slow", "breaks", "rescue"], key  # always runs
        assert "any_errors_fatal: pve1/200 failed" in runs[key].message


def test_a_slow_failure_at_a_blocks_end_still_sends_the_others_to_its_rescue(tmp_path):
    """The others finish the block first and wait at its end: the failure finds them
    there, still inside the block."""
    book = """
- hosts: all
  any_errors_fatal: true
  tasks:
    - block:
        - name: breaks, slowly
          wait_for: {path: /nonexistent/pctfleet-flow, timeout: 1}
          delegate_to: localhost
          when: "me == 'a'"
      rescue:
        - {name: rescue, debug: {msg: rescued}}
    - {name: after, debug: {msg: after}}
"""
    runs, _ = run_book(tmp_path, book)
    assert runs["pve1/200"].tasks[0].status == "failed"
    for key in ("pve1/201", "pve2/200", "pve2/201"):
        assert names(runs[key]) == ["breaks, slowly", "rescue", "after"], key


def test_in_step_a_claim_wakes_when_the_one_before_it_moves_on():
    """y's run_once claim waits for x (earlier in play order) only while x has not gone
    past y's point; x stepping on wakes it at once, not at its 1 s fallback."""
    flow, stop = two_in_step()
    first = threading.Thread(target=flow.step, args=("x", (0, 0), stop))
    first.start()
    flow.step("y", (0, 0), stop)  # both at (0, 0): both go on
    first.join(timeout=2)
    got: list = []
    claim = lambda: got.append(flow.claim("once", "y"))  # noqa: E731
    waiting = threading.Thread(target=claim, daemon=True)
    waiting.start()
    waiting.join(timeout=0.2)
    assert waiting.is_alive()  # x may still reach the task
    threading.Thread(target=flow.step, args=("x", (0, 1), stop), daemon=True).start()
    waiting.join(timeout=0.5)
    assert got == [None]  # y runs it: x went past without reaching it


TWO_BLOCKS = """
- hosts: all
  any_errors_fatal: true
  tasks:
    - block:
        - {{name: one, fail: {{msg: one}}, when: "me in {first}"}}
        - {{name: one next, debug: {{msg: one next}}}}
      rescue:
        - {{name: r1, debug: {{msg: r1}}}}
    - block:
        - {{name: two, fail: {{msg: two}}, when: "me in {second}"}}
        - {{name: two next, debug: {{msg: two next}}}}
      rescue:
        - {{name: r2, debug: {{msg: r2}}}}
      always:
        - {{name: w, debug: {{msg: w}}}}
    - {{name: after, debug: {{msg: after}}}}
"""


def test_containers_failing_together_each_run_their_own_rescue(tmp_path):
    runs, _ = run_book(tmp_path, TWO_BLOCKS.format(first="['a', 'b']", second="[]"))
    for key in ("pve1/200", "pve1/201"):  # both failed 'one' themselves
        assert names(runs[key])[:2] == ["one", "r1"], key
        assert runs[key].stats()["rescued"] == 1, key
    for run in runs.values():
        assert names(run)[-1] == "after" and "one next" not in names(run)


def test_every_fatal_failure_of_a_batch_reaches_the_others(tmp_path):
    runs, _ = run_book(tmp_path, TWO_BLOCKS.format(first="['a']", second="['b']"))
    for run in runs.values():
        assert names(run) == ["one", "r1", "two", "r2", "w", "after"], run.key
