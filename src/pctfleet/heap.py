"""Fewer garbage collections while a fleet's objects pile up.

CPython collects its youngest generation every 700 net new container objects
(dicts, lists, instances), and the whole heap once enough of them survive. A
run over a fleet builds its inventory and preflight tables in one go and keeps
every container's results (tens of objects each) until it ends: with the
default thresholds, a simulated run over 10,000 containers spent about a sixth
of the controller's CPU in the collector, most of it in full collections that
walked results which stay alive anyway.

Inside `fewer_collections()` the youngest generation is collected every
`YOUNG` net new objects instead. Nothing else changes: reference counting
frees what it always frees, and cyclic garbage is still collected, in larger
batches (a few MB at most wait for it). Nested and concurrent uses share one
setting; the thresholds in force before the first come back after the last.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

YOUNG = 50_000  # CPython's default is 700

_lock = threading.Lock()
_users = 0
_before: tuple[int, ...] = ()


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Collect the youngest generation every YOUNG net new objects while inside."""
    global _users, _before
    with _lock:
        if _users == 0:
            _before = gc.get_threshold()
            if _before[0]:  # 0 means collection is off: leave it off
                gc.set_threshold(max(_before[0], YOUNG), *_before[1:])
        _users += 1
    try:
        yield
    finally:
        with _lock:
            _users -= 1
            if _users == 0:
                gc.set_threshold(*_before)
