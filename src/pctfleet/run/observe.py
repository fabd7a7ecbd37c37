"""What a run tells whoever watches it (a progress display): containers starting and
finishing, tasks starting, and, when asked for, the output of the commands it runs.

The default observer hears nothing and asks for no output, so a run nobody watches
keeps its output in memory as before.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any


class Observer:
    """Hears a run's events; every method is called from the container's worker thread."""

    def container_started(self, run: Any) -> None:
        """A container's play begins."""

    def container_finished(self, run: Any) -> None:
        """A container's play ended (run.status says how)."""

    def task_started(self, run: Any, name: str) -> None:
        """A task begins on a container."""

    def streams(self, run: Any, hide: Callable[[str], str]) -> tuple[Tee | None, Tee | None]:
        """Where a change script's stdout and stderr go as they arrive; None: memory only.

        Whatever is shown of them passes through `hide` first (the run's redaction of
        secret values), as every other text of a result does. A no_log task asks for none.
        """
        return None, None


class Tee(io.BytesIO):
    """Keeps every byte (the task's result needs them) and hands each chunk on as it arrives."""

    def __init__(self, listener: Callable[[bytes], None]) -> None:
        super().__init__()
        self.listener = listener

    def write(self, data: Any) -> int:
        written = super().write(data)
        self.listener(bytes(data))
        return written
