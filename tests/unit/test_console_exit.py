"""The console scripts end without interpreter teardown, and lose nothing by it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from pctfleet import exitcodes


def _console(script: str, *args: str) -> subprocess.CompletedProcess:
    """Run `script`, then pctfleet's console entry point."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script) + ENTRY, *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


ENTRY = "from pctfleet.cli.main import console\nconsole()\n"


def test_stdout_to_a_pipe_arrives_whole():
    # Piped stdout is block-buffered: without the flush before os._exit it is lost.
    done = _console("", "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.lstrip().startswith("Usage:")
    assert "pctfleet lab up" in done.stdout  # the examples, printed last


def test_atexit_handlers_and_threads_still_run(tmp_path: Path):
    marker = tmp_path / "thread-finished"
    done = _console(
        f"""
        import atexit, sys, threading, time
        from pathlib import Path
        import pctfleet.cli.main  # loaded first: the thread must outlive the command
        atexit.register(lambda: print("atexit ran", file=sys.stderr))
        def late():
            time.sleep(0.5)
            Path({str(marker)!r}).write_text("yes")
        threading.Thread(target=late).start()
        sys.argv = ["pctfleet", "lab", "--help"]
        """
    )
    assert done.returncode == 0, done.stderr
    assert "atexit ran" in done.stderr
    assert marker.read_text() == "yes"


def test_the_exit_code_is_the_commands(tmp_path: Path):
    done = _console("", "run", str(tmp_path / "missing.yml"), "--host", "127.0.0.1", "--ct", "1")
    assert done.returncode == exitcodes.BAD_OPTIONS, (done.returncode, done.stderr)
    assert "missing.yml" in done.stderr


def test_output_that_cannot_be_written_is_not_success():
    # Text still buffered when the reader has gone: Python's own exit code for it.
    script = """
    import os, sys
    read, write = os.pipe()
    os.close(read)
    os.dup2(write, 1)
    sys.stdout = open(1, "w", buffering=1 << 20, closefd=False)
    sys.stdout.write("never read")
    from pctfleet.cli.main import leave
    leave(0)
    """
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], timeout=60)
    assert done.returncode == 120


def test_the_programs_keep_dataclass_methods_compiled_beside_the_bytecode():
    from pctfleet.cli import methodcache

    if not methodcache._hookable() or sys.version_info >= (3, 13):
        return  # a Python that builds these methods otherwise: nothing to keep
    path = methodcache.default_path()
    path.unlink(missing_ok=True)
    done = subprocess.run(
        [sys.executable, "-m", "pctfleet", "--help"], capture_output=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert methodcache.MethodCache(path).codes, "the first start wrote nothing"
    assert path.stat().st_mode & 0o077 == 0


def test_ctrl_c_while_threads_finish_keeps_the_code_and_prints_no_traceback():
    script = """
    import _thread, sys, threading, time
    import pctfleet.cli.main
    def interrupt():
        time.sleep(0.8)  # the command is over: the main thread waits for the sleeper
        _thread.interrupt_main()
    threading.Thread(target=interrupt, daemon=True).start()
    threading.Thread(target=time.sleep, args=(3,)).start()  # still running at exit
    sys.argv = ["pctfleet", "lab", "--help"]
    """
    done = _console(script)
    assert done.returncode == exitcodes.INTERRUPTED, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr
