"""Which container runs when: nodes side by side, each node up to its channel limit.

Containers of different nodes never wait for one another; within a node at most
its limit run at once (sshd's MaxSessions, configured in the inventory or
lowered by the transport when a channel is refused, or `--per-node`). `--forks`
is an optional cap over the whole fleet. Without it, the worker threads are as
many as the nodes' limits allow, bounded by MAX_WORKERS so a fleet of 10,000
containers does not start 10,000 threads.
"""

from __future__ import annotations

import heapq
import queue
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

DEFAULT_NODE_LIMIT = 10  # sshd's MaxSessions default
# Enough to keep 256 calls in flight: at 200 ms a call that is over 1,000 calls a
# second, far beyond what the controller's CPU prepares; each thread costs ~100 KB.
MAX_WORKERS = 256


def node_of(container: Any) -> str:
    return container.node.name


def worker_count(
    containers: Sequence[Any],
    forks: int | None,
    limit_of: Callable[[Any], int],
    key: Callable[[Any], str] = node_of,
) -> int:
    """Threads worth starting: what the nodes' limits allow, under --forks and MAX_WORKERS."""
    per_node: dict[str, int] = {}
    allowed: dict[str, int] = {}
    for container in containers:
        name = key(container)
        per_node[name] = per_node.get(name, 0) + 1
        allowed.setdefault(name, max(1, limit_of(container)))
    total = sum(min(per_node[n], allowed[n]) for n in per_node)
    return max(1, min(total, forks or MAX_WORKERS, MAX_WORKERS))


class _Queues:
    """Pending containers by node, and the nodes that may start one now.

    Containers start in their given order, skipping those whose node is at its
    limit: a heap of nodes by their next container's position keeps each pick
    O(log nodes), so 10,000 containers cost no quadratic scan.
    """

    def __init__(self, containers: Sequence[Any], key: Callable[[Any], str]) -> None:
        self.pending: dict[str, deque] = {}
        for position, container in enumerate(containers):
            self.pending.setdefault(key(container), deque()).append((position, container))
        self.ready = [(waiting[0][0], node) for node, waiting in self.pending.items()]
        self.queued = set(self.pending)
        self.in_flight = dict.fromkeys(self.pending, 0)

    def take(self, limit_of: Callable[[Any], int]) -> Any | None:
        """The next container whose node is under its limit, or None."""
        while self.ready:
            _, node = heapq.heappop(self.ready)
            self.queued.discard(node)
            waiting = self.pending[node]
            if self.in_flight[node] >= max(1, limit_of(waiting[0][1])):
                continue  # back in line when one of its containers finishes
            self.in_flight[node] += 1
            container = waiting.popleft()[1]
            self._requeue(node)
            return container
        return None

    def finished(self, node: str) -> None:
        self.in_flight[node] -= 1
        self._requeue(node)

    def _requeue(self, node: str) -> None:
        if self.pending[node] and node not in self.queued:
            self.queued.add(node)
            heapq.heappush(self.ready, (self.pending[node][0][0], node))


MANY_WORKERS = 32  # above this many threads, longer GIL slices (see _gil_slices)
MANY_WORKERS_SLICE = 0.05  # seconds; CPython's default is 0.005


@contextmanager
def _gil_slices(workers: int) -> Iterator[None]:
    """Longer GIL time slices while many worker threads run.

    Workers mostly wait on their nodes and give the GIL up as they do; with
    hundreds of them, CPython's 5 ms forced hand-overs cost more CPU than the
    work itself (measured on 1,000 simulated containers: about 15% of the
    controller's CPU). A thread that waits still wakes when its data arrives.
    """
    if workers <= MANY_WORKERS:
        yield
        return
    before = sys.getswitchinterval()
    sys.setswitchinterval(max(before, MANY_WORKERS_SLICE))
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def schedule(
    containers: Sequence[Any],
    one: Callable[[Any], None],
    forks: int | None,
    per_node: int | None,
    stop: threading.Event,
    limit_of: Callable[[Any], int] | None = None,
    key: Callable[[Any], str] = node_of,
    starting: Callable[[Any], None] | None = None,
    cancelled: Callable[[Any], None] | None = None,
) -> None:
    """`one(container)` for each: nodes side by side, each up to its limit.

    The limit of a container's node is `limit_of(container)` (read again before
    each start, so a limit the transport lowered holds from then on), at most
    `per_node`; at most `forks` run in all when it is given. A container whose
    node is at its limit waits here, not in a worker. `starting(container)` is
    called for every container that starts together before any of them runs
    (PlayFlow: containers in step wait for each other from their first task), and
    `cancelled(container)` for one started so that never ran (an interrupt).
    """
    node_limit = limit_of or (lambda container: DEFAULT_NODE_LIMIT)

    def limit(container: Any) -> int:
        return min(node_limit(container), per_node) if per_node else node_limit(container)

    workers = worker_count(containers, forks, limit, key)
    queues, done = _Queues(containers, key), queue.SimpleQueue[Future]()
    running: dict[Future, str] = {}
    started: dict[Future, Any] = {}
    announced: list[Any] = []  # given to `starting`, not yet submitted
    with _gil_slices(workers), ThreadPoolExecutor(max_workers=workers) as pool:
        try:
            while queues.ready or running:
                taken: list[Any] = []
                while len(running) + len(taken) < workers:
                    if (container := queues.take(limit)) is None:
                        break
                    taken.append(container)
                for container in taken if starting else ():
                    announced.append(container)
                    starting(container)
                for container in taken:
                    future = pool.submit(one, container)
                    running[future], started[future] = key(container), container
                    if announced:
                        announced.pop(0)
                    future.add_done_callback(done.put)
                if not running:
                    break
                future = done.get()
                queues.finished(running.pop(future))
                started.pop(future)
                future.result()
        except KeyboardInterrupt:
            # Start nothing new; tasks already running finish or time out, then we report.
            stop.set()
            never_ran = [started[f] for f in running if f.cancel()]
            submitted = [id(c) for c in started.values()]
            never_ran += [c for c in announced if id(c) not in submitted]
            for container in never_ran if cancelled else ():
                cancelled(container)
            raise


def target_node(target: Any) -> str:
    return getattr(target, "node_key", None) or target.name


def target_limit(target: Any) -> int:
    """The target's node limit as its transport knows it now (lowered on refusal)."""
    return getattr(target, "session_limit", None) or DEFAULT_NODE_LIMIT


def map_targets(targets: Sequence[Any], work: Callable[[Any], Any], forks: int | None) -> list[Any]:
    """`work(target)` for each target, scheduled as containers are; results in order."""
    results: list[Any] = [None] * len(targets)
    indexed = list(enumerate(targets))

    def one(item: tuple[int, Any]) -> None:
        results[item[0]] = work(item[1])

    schedule(
        indexed,
        one,
        forks,
        None,
        threading.Event(),
        lambda item: target_limit(item[1]),
        lambda item: target_node(item[1]),
    )
    return results
