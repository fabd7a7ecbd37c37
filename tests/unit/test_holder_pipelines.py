"""Holder lines and the health status read as the former pipelines read them.

The references below are the pipelines the probe ran before it started fewer processes
(cat | awk | while find | sed | sort for a port, tr | cut for a command line, find | sed |
sort | awk | sort for GPU holders, `timeout 3 bash` for health). Each case runs the
reference and the library on the same fake /proc tree or real socket, in dash and in bash
under a UTF-8 locale, and their outputs must be the same bytes.
"""

from __future__ import annotations

import http.server
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pctfleet.sh import library
from tests.unit.test_server_scripts import _Health

SHELLS = ["dash", "bash"]

REFERENCE = r"""
ref_port_pids() {
  cat "$1/net/tcp" "$1/net/tcp6" 2>/dev/null |
    awk -v port="$2" 'BEGIN { p = sprintf(":%04X", port) }
      $4 == "0A" && substr($2, length($2) - 4) == p && !seen[$10]++ { print $10 }' |
    while read -r pp_inode; do
      find "$1"/[0-9]*/fd -maxdepth 1 -lname "socket:\\[$pp_inode\\]" 2>/dev/null
    done | sed "s|^$1/||; s|/.*||" | sort -un
}
ref_proc_line() {
  rl_cmd=$(tr '\0\t\n' '   ' < "$1/$2/cmdline" 2>/dev/null | cut -c1-300)
  printf '%s\t%s\t%s\t%s\t%s\n' "$2" "$(pctfleet_proc_field "$1" "$2" 20)" \
    "$(pctfleet_proc_field "$1" "$2" 3)" "$3" "${rl_cmd% }"
}
ref_gpu_pids() {
  for gp_dev in "$2"/nvidia*; do [ -e "$gp_dev" ] && break; done
  [ -e "$gp_dev" ] || return 0
  find "$1"/[0-9]*/fd -maxdepth 1 -lname '/dev/nvidia*' -printf '%p %l\n' 2>/dev/null |
    sed "s|^$1/||; s|/fd/[^ ]* | |" | sort -u |
    awk '{ if ($1 in d) d[$1] = d[$1] ", " $2; else d[$1] = $2 }
      END { for (p in d) print p, d[p] }' |
    sort -n
}
ref_holder_lines() {
  if [ -n "$3" ]; then
    ref_port_pids "$1" "$3" | while read -r hl_pid; do
      ref_proc_line "$1" "$hl_pid" "listening on port $3"
    done
  fi
  if [ -n "$4" ]; then
    printf '%s\n' "$4" | while read -r hl_file; do
      [ -n "$hl_file" ] || continue
      hl_pid=$(pctfleet_live_pid "$hl_file")
      if [ -n "$hl_pid" ]; then ref_proc_line "$1" "$hl_pid" "named by $hl_file"; fi
    done
  fi
  ref_gpu_pids "$1" "$2" | while read -r hl_pid hl_devs; do
    ref_proc_line "$1" "$hl_pid" "holds $hl_devs"
  done
}
ref_http_status() {
  command -v bash >/dev/null 2>&1 && command -v timeout >/dev/null 2>&1 || return 0
  case $1 in http://\[*) return 0 ;; http://*) ;; *) return 0 ;; esac
  timeout 3 bash -c '
    rest=${1%%#*} && rest=${rest#http://} && hostport=${rest%%[/?]*} && path=${rest#"$hostport"}
    case $path in /*) ;; *) path=/$path ;; esac
    host=${hostport%:*} && port=${hostport##*:} && [ "$host" != "$hostport" ] || port=80
    exec 3<>"/dev/tcp/$host/$port" || exit 1
    printf "GET %s HTTP/1.0\r\nHost: %s\r\nConnection: close\r\n\r\n" "$path" "$hostport" >&3
    read -r proto code rest <&3 && case $proto$code in HTTP/*[0-9][0-9][0-9]) ;; *) exit 1 ;; esac
    echo "${code}"' pctfleet_http "$1" 2>/dev/null || echo 0
}
ref_http() {
  ph_status=$(ref_http_status "$1")
  case $ph_status in
    '' | 3??) pctfleet_http_get "$1" 3 | head -n 1 ;;
    *) echo "$ph_status" ;;
  esac
}
"""


def both(shell: str, call: str, *args: str, path: str | None = None) -> tuple[bytes, bytes]:
    """`ref_CALL` and `pctfleet_CALL` with the same arguments: their outputs."""
    script = (
        library(["listener", "http"])
        + REFERENCE
        + f'ref_{call} "$@"; echo ==; pctfleet_{call} "$@"\n'
    )
    env = {**os.environ, "LC_ALL": "C.UTF-8", "PATH": path or os.environ["PATH"]}
    argv = [shutil.which(shell) or shell, "-c", script, "sh", *args]
    out = subprocess.run(argv, capture_output=True, env=env, timeout=60).stdout
    ref, _, new = out.partition(b"==\n")
    return ref, new


def _tcp(port: int, state: str, inode: str, v6: bool = False) -> str:
    local = ("0" * 32 if v6 else "0100007F") + f":{port:04X}"
    rest = "00000000:00000000 00:00000000 00000000 0 0"
    return f"   0: {local} 00000000:0000 {state} {rest} {inode} 1\n"


def _proc(root: Path, pid: int, cmdline: bytes, links: dict[str, str]) -> None:
    (root / f"{pid}/fd").mkdir(parents=True)
    for fd, target in links.items():
        (root / f"{pid}/fd/{fd}").symlink_to(target)
    (root / f"{pid}/stat").write_text(
        f"{pid} (a b) c) S 1 {pid // 2} 7 0 " + "0 " * 14 + f"{pid}9 0\n"
    )
    (root / f"{pid}/cmdline").write_bytes(cmdline)


CMDLINES = [
    b"python3\0-m\0sglang.launch_server\0--port\x0030000\0",
    b"",
    b"evil\tname\nx\0--gpu\0",
    b"a" * 300,
    b"a" * 301,
    b"b" * 299 + "\u00e9".encode() + b"\0tail\0",  # a two-byte character across byte 300
    "caf\u00e9 \u00e0 la carte\0".encode(),
    b"x=1 'quoted' [brackets] $HOME\0",
    b"p\0" * 200,
    b"\xff\xfe raw\0",
]


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    """A fake /proc: listeners on 30000 (v4, v6, one inode twice), GPU holders, odd names."""
    proc, dev = tmp_path / "proc", tmp_path / "dev"
    (proc / "net").mkdir(parents=True)
    dev.mkdir()
    (dev / "nvidia0").touch()
    (proc / "net/tcp").write_text(
        "  sl  local_address rem_address   st\n"
        + _tcp(30000, "0A", "555")
        + _tcp(30000, "01", "556")
        + _tcp(3000, "0A", "558")
        + _tcp(30000, "0A", "555")
    )
    (proc / "net/tcp6").write_text("  sl  local_address\n" + _tcp(30000, "0A", "557", v6=True))
    sockets = {100: "555", 1000: "557", 200: "556", 20: "557", 400: "558"}
    for n, (pid, inode) in enumerate(sockets.items()):
        _proc(proc, pid, CMDLINES[n], {"3": f"socket:[{inode}]", "4": f"socket:[{pid}]"})
    (proc / "1000/fd/5").symlink_to("socket:[555]")  # two listening sockets: one line
    gpus = {10: ["/dev/nvidia0"], 11: ["/dev/nvidiactl", "/dev/nvidia0", "/dev/nvidia-uvm"]}
    gpus |= {9: ["/dev/nvidia1", "/dev/null"], 30: ["/dev/null"], 110: ["/dev/nvidia0"] * 2}
    for n, (pid, targets) in enumerate(gpus.items()):
        _proc(proc, pid, CMDLINES[5 + n], {str(fd): t for fd, t in enumerate(targets, 3)})
    return proc, dev


@pytest.mark.parametrize("shell", SHELLS)
def test_port_and_gpu_holders_read_as_before_in_a_fake_proc(shell: str, tree) -> None:
    proc, dev = tree
    pidfiles = proc.parent / "pidfiles"
    (proc.parent / "a.pid").write_text(f"{os.getpid()}\n")
    pidfiles.write_text(f"{proc.parent}/a.pid\n  {proc.parent}/a.pid  \n\n/nowhere.pid\n")
    for port in ["30000", "3000", "31000"]:
        ref, new = both(shell, "holder_lines", str(proc), str(dev), port, pidfiles.read_text())
        assert new == ref and ref, port
    ref, new = both(shell, "port_pids", str(proc), "30000")
    assert new == ref == b"20\n100\n1000\n"
    ref, new = both(shell, "gpu_pids", str(proc), str(dev))
    assert new == ref and ref.splitlines()[0] == b"9 /dev/nvidia1"
    (proc / "net/tcp6").unlink()  # a kernel without IPv6: its table is missing
    assert both(shell, "port_pids", str(proc), "30000") == (b"100\n1000\n", b"100\n1000\n")


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize("cmdline", CMDLINES, ids=ascii)
def test_a_command_line_reads_as_tr_and_cut_read_it(shell: str, cmdline: bytes, tmp_path) -> None:
    _proc(tmp_path, 42, cmdline, {})
    ref, new = both(shell, "proc_line", str(tmp_path), "42", "why")
    assert new == ref and ref.startswith(b"42\t429\t21\twhy\t")


@pytest.mark.parametrize("shell", SHELLS)
def test_a_real_listener_is_found_as_before_and_no_listener_is_nothing(shell: str) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.5", 0))
        listener.listen()
        port = str(listener.getsockname()[1])
        ref, new = both(shell, "holder_lines", "/proc", "/nonexistent", port, "")
        assert new == ref and ref.startswith(f"{os.getpid()}\t".encode())
    assert both(shell, "holder_lines", "/proc", "/nonexistent", port, "") == (b"", b"")


@pytest.fixture
def health() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("shell", SHELLS)
def test_the_health_status_reads_as_before(shell: str, health: str, tmp_path: Path) -> None:
    urls = [
        f"{health}/health",
        f"{health}/sick",
        f"{health}/moved",
        f"{health}/x#y",
        "http://127.0.0.1:9/",
    ]
    urls += [health.replace("http", "https"), "http://[::1]:9/"]
    for url in urls:
        ref, new = both(shell, "http", url)
        assert new == ref and ref.strip().isdigit(), url
    # No bash in the container: both ask Python, which follows the redirect.
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin/python3").symlink_to(os.path.realpath(sys.executable))
    for tool in ["head", "timeout"]:
        (tmp_path / "bin" / tool).symlink_to(shutil.which(tool) or tool)
    ref, new = both(shell, "http", f"{health}/moved", path=str(tmp_path / "bin"))
    assert new == ref == b"200\n"


@pytest.fixture(params=["never accepted", "accepted, never answered"])
def silent_port(request: pytest.FixtureRequest) -> Iterator[int]:
    """A port that takes a connection and never answers: a full accept queue, or a read."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = listener.getsockname()[1]
        queued = []
        if request.param == "never accepted":  # the queue holds one: a connect then hangs
            for _ in range(3):
                client = socket.socket()
                client.setblocking(False)
                client.connect_ex(("127.0.0.1", port))
                queued.append(client)
        yield port
        for client in queued:
            client.close()


@pytest.mark.parametrize("shell", SHELLS)
def test_a_port_nobody_answers_on_is_0_within_the_3_seconds(shell: str, silent_port: int) -> None:
    script = library(["http"]) + f"pctfleet_http_read http://127.0.0.1:{silent_port}/health\n"
    script += 'echo "$ph_status"\n'
    start = time.monotonic()
    done = subprocess.run([shell, "-c", script], capture_output=True, text=True, timeout=30)
    assert done.stdout == "0\n" and time.monotonic() - start < 5, done
