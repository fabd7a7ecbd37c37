"""A simulated fleet: targets that cost time like `pct exec` but reach nothing.

For measuring what the controller itself costs at a scale no lab holds (a
thousand containers on fifty nodes): each call sleeps a configured latency
while holding one of its node's SSH session slots (sshd's MaxSessions, 10 by
default), and probe scripts are answered with the facts a converged
container would print. Everything above the transport (preflight, templating,
the engine's planning, results) is the real code.

>>> node = SimNode("sim1")
>>> target = SimTarget(node, 200, latency=0.0)
>>> target.run(["true"]).exit_code, node.calls
(0, 1)

Converged answers come from `converged_answers`, which renders each task the
way the engine does and writes down the fact its module reads as "already
so". It knows the modules a converged fleet is checked with (command and
shell guards, pip, file, copy, template, server, server_stop); any other
module in the playbook is refused, so a simulation never silently plans a
change it cannot model. Change scripts and pushes succeed without effect:
the simulation is for no-op runs and audits.
"""

from __future__ import annotations

import io
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from pctfleet.facts.kv import encode_lines
from pctfleet.transport.base import SCRIPT_ARGV, CommandTimeout, Sinks, Stdin, Target

# One snippet of a probe script, as pctfleet.facts.script.build_script lays it out:
# _BEGIN, the nonce and key (_HEAD), the body, _CLOSE. Found with str.find, not one
# regular expression: a probe is some 36 kB, which a `.*?` body walks character by character.
_BEGIN = "printf '\\036pctfleet-fact-begin %s %s\\n' "
_HEAD = re.compile(r"(?P<nonce>[0-9a-f]*) '(?P<key>[^']*)'\n\(\n")
_CLOSE = "\n) </dev/null 2>/dev/null\nprintf '\\036pctfleet-fact-end "

Answer = Callable[[str], "str | None"]


def snippet_key(snippet: str) -> tuple[int, int]:
    """A short key for a snippet within this process (answer tables hold thousands of
    them): its length and str hash, computed in C without encoding the text first.
    The simulation's own cost counts in the controller CPU it reports, so it is kept low."""
    return len(snippet), hash(snippet)


class SimNode:
    """One simulated Proxmox node: at most `max_sessions` commands at once.

    `rtt` is the network's round trip to it: the first command logs in (one
    round trip, paid once per node while the node's other callers wait, as on
    the shared SSH connection), and every command then opens a channel and
    runs its call (one round trip each).
    """

    def __init__(self, name: str, max_sessions: int = 10, rtt: float = 0.0) -> None:
        self.name = name
        self.max_sessions = max_sessions
        self.rtt = rtt
        self.calls = 0
        self.logins = 0
        self.peak_sessions = 0
        self._slots = threading.BoundedSemaphore(max_sessions)
        self._lock = threading.Lock()
        self._login = threading.Lock()
        self._active = 0

    def _log_in(self) -> None:
        if self.logins:  # set once, under the lock: read without it after
            return
        with self._login:
            if not self.logins:
                _wait(self.rtt)
                self.logins = 1

    @contextmanager
    def session(self) -> Iterator[None]:
        """Hold one session slot (waits while the node is at its cap), logged in,
        its channel open."""
        with self._slots:
            with self._lock:
                self.calls += 1
                self._active += 1
                self.peak_sessions = max(self.peak_sessions, self._active)
            try:
                self._log_in()
                _wait(2 * self.rtt)  # the channel opened, the call's request and reply
                yield
            finally:
                with self._lock:
                    self._active -= 1


def _wait(seconds: float) -> None:
    # sleep(0) still gives up the GIL: with hundreds of threads that handoff costs more
    # than the controller's work, and a round trip of 0 s is none at all.
    if seconds > 0:
        time.sleep(seconds)


def answer_probe(script: str, answer: Answer) -> str:
    """The output a probe script would print, each snippet answered by `answer`.

    A snippet `answer` does not know (None) prints nothing and exits 0. Answers
    are plain `key=value` lines: they are encoded here as `pf_kv` would print them.
    """
    printed = answer.printed if isinstance(answer, CannedAnswers) else None
    parts = []
    for nonce, key, body in snippets(script):
        output = printed(body) if printed else encode_lines(answer(body) or "")
        begin, end = f"\x1epctfleet-fact-begin {nonce}", f"\x1epctfleet-fact-end {nonce}"
        parts.append(f"{begin} {key}\n{output}{end} {key} 0\n")
    return "".join(parts)


def snippets(script: str) -> Iterator[tuple[str, str, str]]:
    """Each snippet's nonce, key and body, in order: the shortest body that a close
    follows, the search going on after it (as a non-greedy pattern's matches would)."""
    pos = script.find(_BEGIN)
    while pos >= 0:
        head = _HEAD.match(script, pos + len(_BEGIN))
        close = script.find(_CLOSE, head.end()) if head else -1
        if close < 0:
            pos = script.find(_BEGIN, pos + 1)
            continue
        yield head.group("nonce"), head.group("key"), script[head.end() : close]
        pos = script.find(_BEGIN, close + len(_CLOSE))


class CannedAnswers:
    """An `Answer` from a table of readings (plain `key=value` lines by `snippet_key`),
    each also kept as the probe prints it: encoded once, not at every call."""

    def __init__(self, table: dict[tuple[int, int], str]) -> None:
        self._plain = table
        self._printed = {key: encode_lines(reading) for key, reading in table.items()}

    def __call__(self, snippet: str) -> str | None:
        return self._plain.get(snippet_key(snippet))

    def printed(self, snippet: str) -> str:
        """`encode_lines(self(snippet) or "")`."""
        return self._printed.get(snippet_key(snippet), "")


class SimTarget(Target):
    """Container `ctid` on a SimNode: every call sleeps `latency` inside a session slot."""

    def __init__(
        self, node: SimNode, ctid: int, latency: float, answer: Answer | None = None
    ) -> None:
        self.node = node
        self.ctid = int(ctid)
        self.name = f"{node.name}/{self.ctid}"
        self.latency = latency
        self.answer: Answer = answer or (lambda snippet: None)
        self.calls = 0

    @property
    def node_key(self) -> str:
        return self.node.name

    @property
    def session_limit(self) -> int:
        return self.node.max_sessions

    def _run(
        self,
        argv: list[str],
        stdin: Stdin,
        timeout: float | None,
        sinks: Sinks,
        *,
        read_only: bool = False,
    ) -> tuple[int, float]:
        if timeout is not None and self.latency > timeout:
            raise CommandTimeout(self.name, f"command did not finish within {timeout:g}s")
        with self.node.session():
            _wait(self.latency)
        data = stdin.read() if isinstance(stdin, io.IOBase) else stdin
        output = b""
        if argv[:2] == list(SCRIPT_ARGV[:2]) and data:
            output = answer_probe(data.decode("utf-8", errors="replace"), self.answer).encode()
        sinks.out().write(output)
        return 0, self.latency


@dataclass
class SimFleet:
    """What `pctfleet.run.playbookrun.execute` needs from a fleet: targets, and close()."""

    nodes: dict[str, SimNode]
    targets: list[SimTarget]
    closed: bool = False

    def close(self) -> None:
        self.closed = True

    def connections_opened(self) -> dict[str, int]:
        """One simulated connection per node that was used."""
        return {name: node.logins for name, node in self.nodes.items() if node.calls}


def build_sim_fleet(
    containers: Sequence[Any],
    *,
    latency: float,
    max_sessions: int = 10,
    answers: Callable[[Any], Answer] | None = None,
    rtt: float = 0.0,
) -> SimFleet:
    """A SimTarget per inventory container; containers of one node share its SimNode."""
    nodes: dict[str, SimNode] = {}
    targets = []
    for container in containers:
        name = container.node.name
        node = nodes.get(name) or nodes.setdefault(name, SimNode(name, max_sessions, rtt))
        answer = answers(container) if answers else None
        targets.append(SimTarget(node, container.ctid, latency, answer))
    return SimFleet(nodes, targets)


# -- converged facts ------------------------------------------------------------------


def converged_reading(name: str, module: Any, args: Any, world: Any) -> str:
    """What `module`'s probe prints where its task is already done: its fact says."""
    try:
        fields = module.fact.converged(args, world)
    except (AttributeError, NotImplementedError):
        raise ValueError(f"the simulation has no converged facts for module '{name}'") from None
    return "".join(f"{key}={value}\n" for key, value in fields.items())


def _magic(prepared: Any, play: Any, members: list) -> tuple[Any, frozenset]:
    """The play's magic variables and its containers' keys, built once per play for
    all its containers (not once per container: a fleet of 10,000 asks 10,000 times)."""
    from pctfleet.run.playbookrun import play_magic

    built = prepared.__dict__.setdefault("_sim_magic", {})
    if id(play) not in built:
        keys = frozenset(c.key for c in members)
        built[id(play)] = (play_magic(prepared.request, play, members), keys)
    return built[id(play)]


def converged_answers(prepared: Any, container: Any) -> Answer:
    """Answers for every probe snippet of `container`'s tasks, as if it were converged.

    `prepared` is a `pctfleet.run.playbookrun.PreparedRun`. Tasks whose arguments depend
    on a result known only at run time are left out (they have no probe yet).
    """
    from pctfleet.modules import REGISTRY
    from pctfleet.modules.args import Context
    from pctfleet.modules.base import World
    from pctfleet.playbook.loader import leaves, select_tasks
    from pctfleet.playbook.templating import condition, render
    from pctfleet.run.playbookrun import container_vars

    options = prepared.request.options
    table: dict[tuple[int, int], str] = {}
    for play, members in prepared.plays:
        magic, keys = _magic(prepared, play, members)
        if container.key not in keys:
            continue
        inventory = prepared.request.inventory
        variables = container_vars(inventory, container, play, options.extra_vars, magic)
        world = World()
        tasks = leaves(
            select_tasks(play.task_list(options.force_handlers), options.tags, options.skip_tags)
        )
        for task, scope in _instances([*tasks, *play.handlers], variables, options.base_dir):
            module = REGISTRY[task.module]
            if module.controller:
                continue
            try:
                if task.when and not condition(task.when, scope, where=task.loc):
                    continue
                raw = render(dict(task.args), scope, where=task.loc)
                args = module.prepare(raw, Context(options.base_dir, scope), task.loc)
            except Exception:  # noqa: BLE001 - needs a registered result: no probe to answer
                continue
            snippet = module.probe(args, options.diff)
            if snippet:
                table[snippet_key(snippet)] = converged_reading(task.module, module, args, world)
    return CannedAnswers(table)


def _instances(tasks: list, variables: dict, base_dir: str) -> list[tuple[Any, dict]]:
    """Each task with its variables, once per loop item where its items are known now."""
    from pctfleet.playbook.loops import item_scopes

    out = []
    for task in tasks:
        try:
            out += [(task, scope) for scope in item_scopes(task, variables, base_dir, task.loc)]
        except Exception:  # noqa: BLE001 - loops over a later result: no probe to answer
            continue
    return out
