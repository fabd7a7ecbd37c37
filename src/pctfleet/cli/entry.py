"""The console scripts. Kept apart from cli.main so the dataclass method cache is in
place before cli.main's imports define their classes (see cli.methodcache)."""

from __future__ import annotations

import atexit

from pctfleet.cli import methodcache


def _start() -> None:
    cache = methodcache.install()
    if cache is not None:
        atexit.register(cache.save)


def console() -> None:
    """`pctfleet`."""
    _start()
    from pctfleet.cli.main import console as run

    run()


def provision_console() -> None:
    """`provision`."""
    _start()
    from pctfleet.cli.main import provision_console as run

    run()
