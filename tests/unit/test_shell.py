"""The shell layer: every snippet is valid POSIX sh, and values reach it only as quoted data."""

from __future__ import annotations

import shutil
import subprocess
from importlib.resources import files
from pathlib import Path

import pytest

from pctfleet import sh

SH_DIR = Path(str(files("pctfleet.sh")))
SCRIPTS = sorted(SH_DIR.rglob("*.sh"))


def test_there_are_snippets() -> None:
    assert len(SCRIPTS) >= 5


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: str(p.relative_to(SH_DIR)))
def test_dash_reads_it(path: Path) -> None:
    proc = subprocess.run(["dash", "-n", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: str(p.relative_to(SH_DIR)))
def test_shellcheck_finds_nothing(path: Path) -> None:
    tool = shutil.which("shellcheck")
    assert tool, "shellcheck is missing: scripts/bootstrap.sh installs it"
    proc = subprocess.run([tool, "-s", "sh", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


def _run(script: str) -> str:
    return subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=True).stdout


def test_a_library_function_comes_once_and_after_what_it_uses() -> None:
    text = sh.library(["toolchain_id", "cuda_home", "toolchain_id"])
    assert text.count("pctfleet_site() {") == 1
    assert text.index("pctfleet_site() {") < text.index("pctfleet_toolchain_id() {")


@pytest.fixture
def snippets_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Snippets loaded from `tmp_path` instead of the package."""
    monkeypatch.setattr(sh, "files", lambda package: tmp_path)
    sh.source.cache_clear()
    yield tmp_path
    sh.source.cache_clear()


def test_values_are_data_never_code(snippets_in: Path) -> None:
    (snippets_in / "echo.sh").write_text('# inputs: WHAT\nprintf "%s|" "$WHAT" "$@"\n')
    hostile = 'it\'s $(touch pwned) `id` "q"\nline2'
    out = _run(f"cd {snippets_in}\n" + sh.snippet("echo", argv=["a b", "$HOME"], WHAT=hostile))
    assert out == f"{hostile}|a b|$HOME|"
    assert not (snippets_in / "pwned").exists()


def test_inputs_must_match_the_header(snippets_in: Path) -> None:
    (snippets_in / "two.sh").write_text('# inputs: A B\necho "$A$B"\n')
    with pytest.raises(ValueError, match=r"missing \['B'\], unknown \['C'\]"):
        sh.snippet("two", A=1, C=2)


def test_the_kv_helper_round_trips_through_the_parser() -> None:
    from pctfleet.facts.kv import decode_fields

    script = sh.library(["kv"]) + "pf_kv spec \"$(printf 'a\\nb=c')\"\n"
    assert decode_fields(_run(script)) == {"spec": "a\nb=c"}


def test_live_pid_is_a_number_of_a_living_process(tmp_path: Path) -> None:
    dead = subprocess.run(["sh", "-c", "echo $$"], capture_output=True, text=True).stdout
    files_ = {"live": "$$", "dead": dead.strip(), "junk": "12 ; rm -rf /", "empty": ""}
    script = sh.library(["pidfile"])
    for name, content in files_.items():
        script += f'echo "{content}" > {tmp_path}/{name}\n'
        script += f'printf "{name}=%s\\n" "$(pctfleet_live_pid {tmp_path}/{name})"\n'
    script += f'printf "missing=%s\\n" "$(pctfleet_live_pid {tmp_path}/none)"\n'
    lines = dict(line.split("=", 1) for line in _run(script).splitlines())
    assert lines["live"].isdigit()
    assert lines["dead"] == lines["junk"] == lines["empty"] == lines["missing"] == ""


def test_an_env_file_is_exported(tmp_path: Path) -> None:
    (tmp_path / "env").write_text("CUDA_HOME=/opt/x\nA='b c'\n")
    script = sh.library(["envfile"]) + f"pctfleet_source_env {tmp_path}/env\n"
    script += f"pctfleet_source_env {tmp_path}/absent\nsh -c 'echo \"$CUDA_HOME|$A\"'\n"
    assert _run(script) == "/opt/x|b c\n"


@pytest.mark.parametrize(
    "entries",
    [
        ["(libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcuda.so.1", "(libc6) => /usr/lib32/x"],
        ["(libc6) => /usr/lib32/libcuda.so.1", "(libc6,x86-64) => /usr/lib/x86_64-linux-gnu/x"],
    ],
    ids=["64-bit-first", "32-bit-first"],
)
def test_libcuda_is_the_64_bit_linker_cache_entry(tmp_path: Path, entries: list[str]) -> None:
    fake = tmp_path / "ldconfig"
    lines = ["3 libs found in cache", "\tlibcudart.so.13 (libc6,x86-64) => /opt/libcudart.so.13"]
    lines += [f"\tlibcuda.so.1 {entry}" for entry in entries]
    fake.write_text("#!/bin/sh\n" + "".join(f"printf '%b\\n' '{line}'\n" for line in lines))
    fake.chmod(0o755)
    script = f"PATH={tmp_path}:$PATH\n" + sh.library(["libcuda"]) + "pctfleet_libcuda\n"
    assert _run(script).startswith("/usr/lib/x86_64-linux-gnu/")


def test_pidfile_pid_is_the_number_alive_or_not(tmp_path: Path) -> None:
    (tmp_path / "pid").write_text("999999999\n")
    (tmp_path / "junk").write_text("12 ; rm -rf /\n")
    script = sh.library(["pidfile"]) + "".join(
        f'printf "%s|" "$(pctfleet_pidfile_pid {tmp_path}/{name})"\n'
        for name in ("pid", "junk", "none")
    )
    assert _run(script) == "999999999|||"


@pytest.fixture
def health_server():
    """A server on 127.0.0.1 that answers /health 200 and anything else 503."""
    import http.server
    import threading

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            ok = self.path == "/health"
            self.send_response(200 if ok else 503)
            self.end_headers()
            self.wfile.write(b"fine\n" if ok else b"starting\nup")

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_the_health_check_never_goes_through_a_proxy(health_server: str) -> None:
    # A proxy that is not there: a check sent through it gets no answer.
    proxy = "http_proxy=http://127.0.0.1:9 HTTP_PROXY=http://127.0.0.1:9 no_proxy= NO_PROXY="
    script = f"export {proxy}\n" + sh.library(["http"])
    script += f"pctfleet_http {health_server}/health\n"
    script += f"pctfleet_http_get {health_server}/other 5\n"
    script += "pctfleet_http http://127.0.0.1:9/health\n"
    assert _run(script) == "200\n503\nstarting up\n0\n"


def test_a_stale_pid_file_naming_this_script_or_its_parent_stops_nothing(tmp_path: Path) -> None:
    """Containers reuse PIDs after a restart: a stale PID file may name the launch itself."""
    inner = tmp_path / "inner.sh"
    inner.write_text(
        sh.library(["stop"])
        + f'echo $$ > {tmp_path}/self.pid\npctfleet_stop {tmp_path}/self.pid 1 ""\n'
        + f'pctfleet_stop {tmp_path}/parent.pid 1 ""\necho inner-survived\n'
    )
    outer = f"echo $$ > {tmp_path}/parent.pid\nsh {inner}\necho outer-survived\n"
    done = subprocess.run(["sh", "-c", outer], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done
    assert done.stdout == "inner-survived\nouter-survived\n"
    assert not (tmp_path / "self.pid").exists()  # the stale file itself is cleared


def test_encoded_fields_read_back_exactly() -> None:
    from pctfleet.facts.kv import decode_fields, encode_fields

    fields = {"spec": "a\nb=c", "empty": "", "pid": "42"}
    assert decode_fields(encode_fields(fields)) == fields


def test_a_made_snippet_is_reused_only_for_the_same_typed_values() -> None:
    from pctfleet.sh import snippet

    first = snippet("file_b64", FILE="/etc/x", TAIL_LINES=1)
    assert snippet("file_b64", FILE="/etc/x", TAIL_LINES=1) is first  # made once
    assert "TAIL_LINES=True" in snippet("file_b64", FILE="/etc/x", TAIL_LINES=True)  # 1 == True
    assert "FILE=/etc/y" in snippet("file_b64", FILE="/etc/y", TAIL_LINES=1)
    listed = snippet("file_b64", FILE=["/etc/x"], TAIL_LINES=1)  # not a scalar: made each time
    assert listed is not snippet("file_b64", FILE=["/etc/x"], TAIL_LINES=1)


def test_a_snippet_made_again_with_other_values_quotes_its_own() -> None:
    # Snippets are kept by their values' types and values: a float by its bits, so
    # -0.0 (equal to 0.0, hashing alike) and True (equal to 1) each quote as themselves.
    inputs = sh.source("wait_for").inputs
    for first, then in [(0.0, -0.0), (1, True), (1, 1.0)]:
        sh.snippet("wait_for", **dict.fromkeys(inputs, first))
        made = sh.snippet("wait_for", **dict.fromkeys(inputs, then))
        assert f"WF_DELAY={then}\n" in made
