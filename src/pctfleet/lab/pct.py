"""A stand-in for Proxmox VE's `pct` on a lab node.

It maps `pct exec/status/list/start/stop/reboot/push/pull/config` onto real LXC
containers (lxc-attach, lxc-info, lxc-start, lxc-stop) and reproduces the
messages and exit codes of pve-container 5.x, including its oddities:
`pct push`/`pct pull` that fail inside their worker print the error and
still exit 0.

This file runs as a standalone script (stdlib only, no pctfleet import) so
that it starts fast and works however the package is installed. The node it
belongs to is described by a JSON file named in $PCTFLEET_LAB_NODE, written
by the lab: {"node": "node1", "index": 1, "lxcpath": "...", "pve": "..."}.
"""

from __future__ import annotations

import ctypes
import fcntl
import grp
import json
import os
import pwd
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

EXIT_ERROR = 255  # what Perl's die makes of a CLI handler error
CLEAN_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
CLONE_NEWNS = 0x00020000
REBOOT_TIMEOUT_S = 60  # how long `pct reboot` waits for the shutdown before killing

USAGE = {
    "exec": "pct exec <vmid> [<extra-args>] [OPTIONS]",
    "status": "pct status <vmid> [OPTIONS]",
    "start": "pct start <vmid> [OPTIONS]",
    "stop": "pct stop <vmid> [OPTIONS]",
    "reboot": "pct reboot <vmid> [OPTIONS]",
    "push": "pct push <vmid> <file> <destination> [OPTIONS]",
    "pull": "pct pull <vmid> <path> <destination> [OPTIONS]",
    "list": "pct list",
    "config": "pct config <vmid> [OPTIONS]",
}
# Options each command accepts; True means the option is a boolean flag.
OPTIONS: dict[str, dict[str, bool]] = {
    "exec": {"keep-env": True},
    "status": {"verbose": True},
    "start": {"debug": True, "skiplock": True},
    "stop": {"skiplock": True, "overrule-shutdown": True},
    "reboot": {"timeout": False},
    "push": {"perms": False, "user": False, "group": False},
    "pull": {"perms": False, "user": False, "group": False},
    "list": {},
    "config": {"current": True, "snapshot": False},
}
POSITIONAL = {
    "exec": ["vmid"],
    "status": ["vmid"],
    "start": ["vmid"],
    "stop": ["vmid"],
    "reboot": ["vmid"],
    "push": ["vmid", "file", "destination"],
    "pull": ["vmid", "path", "destination"],
    "list": [],
    "config": ["vmid"],
}


class PctError(Exception):
    """An error that real pct reports on stderr before exiting 255."""


class UsageError(PctError):
    """A parameter error; real pct follows the message with the usage line."""

    def __init__(self, message: str, parse_error: bool = False) -> None:
        super().__init__(message)
        # Getopt failures get PVE's extra "400 unable to parse option" line.
        self.parse_error = parse_error


class ParamError(PctError):
    """PVE's `400 Parameter verification failed.` with one parameter's reason."""

    def __init__(self, param: str, reason: str) -> None:
        super().__init__(f"{param}: {reason}")


@dataclass
class Args:
    command: str
    positional: list[str] = field(default_factory=list)
    options: dict[str, str] = field(default_factory=dict)
    extra: list[str] = field(default_factory=list)


@dataclass
class Node:
    name: str
    index: int
    lxcpath: str
    pve: str
    folder: str = ""  # the node's own folder (where node.json is)

    @classmethod
    def load(cls) -> Node:
        path = os.environ.get("PCTFLEET_LAB_NODE", "")
        if not path:
            raise PctError("pct (lab): PCTFLEET_LAB_NODE is not set")
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        folder = os.path.dirname(path)
        return cls(data["node"], int(data["index"]), data["lxcpath"], data["pve"], folder)

    def lxc_name(self, vmid: int) -> str:
        return f"pctfleet-n{self.index}-{vmid}"

    def conf_rel(self, vmid: int) -> str:
        return f"nodes/{self.name}/lxc/{vmid}.conf"

    def conf_path(self, vmid: int) -> str:
        return os.path.join(self.pve, self.conf_rel(vmid))

    def vmids(self) -> list[int]:
        folder = os.path.join(self.pve, "nodes", self.name, "lxc")
        found = []
        for entry in os.listdir(folder) if os.path.isdir(folder) else []:
            stem, dot, ext = entry.partition(".")
            if dot and ext == "conf" and stem.isdigit():
                found.append(int(stem))
        return sorted(found)


# --- argument parsing, modelled on PVE::CLIHandler + Getopt::Long ----------


def parse(command: str, argv: list[str]) -> Args:
    """Split argv like Getopt::Long does for pct: options anywhere before `--`."""
    known = OPTIONS[command]
    args = Args(command)
    loose: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            loose.extend(argv[i + 1 :])
            break
        if arg.startswith("-") and len(arg) > 1:
            name, eq, value = arg.lstrip("-").partition("=")
            if name not in known:
                raise UsageError(f"Unknown option: {name}", parse_error=True)
            if not eq and not known[name]:
                if i + 1 >= len(argv):
                    raise UsageError(f"Option {name} requires an argument", parse_error=True)
                i += 1
                value = argv[i]
            elif not eq and known[name]:
                # Booleans take an optional 0/1 right after them.
                if i + 1 < len(argv) and argv[i + 1] in ("0", "1"):
                    i += 1
                    value = argv[i]
                else:
                    value = "1"
            args.options[name] = value
        else:
            loose.append(arg)
        i += 1
    wanted = POSITIONAL[command]
    if command == "exec":
        args.positional, args.extra = loose[:1], loose[1:]
    else:
        args.positional = loose[: len(wanted)]
        if len(loose) > len(wanted):
            raise UsageError("too many arguments")
    if len(args.positional) < len(wanted):
        raise UsageError("not enough arguments")
    return args


def vmid_of(args: Args) -> int:
    raw = args.positional[0]
    if not re.fullmatch(r"[0-9]+", raw):
        raise ParamError("vmid", f"type check ('integer') failed - got '{raw}'")
    vmid = int(raw)
    if vmid < 100:
        raise ParamError("vmid", "value must have a minimum value of 100")
    return vmid


# --- LXC helpers -------------------------------------------------------------


def lxc(node: Node, tool: str, name: str, *extra: str) -> subprocess.CompletedProcess[str]:
    cmd = [tool, "-n", name, "-P", node.lxcpath, *extra]
    return subprocess.run(cmd, capture_output=True, text=True, check=False)


def is_running(node: Node, vmid: int) -> bool:
    out = lxc(node, "lxc-info", node.lxc_name(vmid), "-s", "-H").stdout.strip()
    return out == "RUNNING"


def init_pid(node: Node, vmid: int) -> int:
    out = lxc(node, "lxc-info", node.lxc_name(vmid), "-p", "-H").stdout.strip()
    if not out.isdigit():
        raise PctError(f"unable to get PID for CT {vmid} (not running?)")
    return int(out)


def load_config(node: Node, vmid: int) -> dict[str, str]:
    """Like PVE::LXC::Config->load_config: the CT exists only if its config does."""
    return read_config(node, vmid)[0]


def read_config(node: Node, vmid: int) -> tuple[dict[str, str], list[tuple[str, str]]]:
    """The current config's keys, and its raw `lxc.*` lines in file order (they may
    repeat). Snapshot sections (`[name]`) are not the current config."""
    path = node.conf_path(vmid)
    if not os.path.isfile(path):
        raise PctError(f"Configuration file '{node.conf_rel(vmid)}' does not exist")
    conf: dict[str, str] = {}
    raw: list[tuple[str, str]] = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("["):
                break
            key, sep, value = line.rstrip("\n").partition(": ")
            if key.startswith("lxc.") and sep:
                raw.append((key, value))
            elif sep and not key.startswith("#"):
                conf[key] = value
    return conf, raw


# --- commands ----------------------------------------------------------------


def cmd_exec(node: Node, args: Args) -> int:
    vmid = vmid_of(args)
    load_config(node, vmid)
    if not is_running(node, vmid):
        raise PctError(f"container '{vmid}' not running!")
    if not args.extra:
        # Real pct dies without a newline here, so Perl appends the location.
        raise PctError("missing command at /usr/share/perl5/PVE/CLI/pct.pm line 215.")
    attach = ["lxc-attach", "-n", node.lxc_name(vmid), "-P", node.lxcpath]
    if args.options.get("keep-env") == "1":
        attach.append("--keep-env")
    else:
        # A clean, predictable environment: what PVE 9 makes the default.
        attach += ["--clear-env", "-v", f"PATH={CLEAN_PATH}", "-v", "HOME=/root"]
        for var in ("TERM", "LANG"):
            if os.environ.get(var):
                attach += ["-v", f"{var}={os.environ[var]}"]
    attach += ["--", *args.extra]
    sys.stdout.flush()
    crash_if_armed(node)
    os.execvp("lxc-attach", attach)
    return EXIT_ERROR  # not reached


CRASHES_FILE = "pct-crashes"  # armed by the lab (Lab.pct_crashes): how many exec calls die
REXEC_FAILED = "Device or resource busy - Failed to rexec as memfd"


def crash_if_armed(node: Node) -> None:
    """Die as LXC 5.0's lxc-attach does when it cannot re-execute itself from a sealed
    memfd (its first step, before it attaches): the message, then SIGABRT. Only while
    the lab has armed it, once per armed count."""
    path = os.path.join(node.folder, CRASHES_FILE)
    try:
        handle = open(path, "r+", encoding="ascii")  # noqa: SIM115
    except FileNotFoundError:
        return
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        left = int(handle.read().strip() or 0)
        if left <= 0:
            return
        handle.seek(0)
        handle.truncate()
        handle.write(str(left - 1))
    print(REXEC_FAILED, file=sys.stderr, flush=True)
    os.abort()


def cmd_status(node: Node, args: Args) -> int:
    vmid = vmid_of(args)
    load_config(node, vmid)
    state = "running" if is_running(node, vmid) else "stopped"
    print(f"status: {state}")
    return 0


def cmd_list(node: Node, args: Args) -> int:
    rows = []
    for vmid in node.vmids():
        conf = load_config(node, vmid)
        state = "running" if is_running(node, vmid) else "stopped"
        rows.append((str(vmid), state, conf.get("lock", ""), conf.get("hostname", f"CT{vmid}")))
    if not rows:
        return 0  # real pct prints nothing, not even the header, for no CTs
    fmt = "%-10s %-10s %-12s %-20s"
    print(fmt % ("VMID", "Status", "Lock", "Name"))
    for row in rows:
        print(fmt % row)
    return 0


def cmd_config(node: Node, args: Args) -> int:
    vmid = vmid_of(args)
    conf, raw = read_config(node, vmid)
    # pve-container prints the keys sorted, then the raw lxc.* lines as written.
    for key in sorted(conf):
        if key != "digest":
            print(f"{key}: {conf[key]}")
    for key, value in raw:
        print(f"{key}: {value}")
    return 0


def cmd_start(node: Node, args: Args) -> int:
    vmid = vmid_of(args)
    load_config(node, vmid)
    if is_running(node, vmid):
        raise PctError(f"CT {vmid} already running")
    res = lxc(node, "lxc-start", node.lxc_name(vmid))
    if res.returncode != 0 or not is_running(node, vmid):
        sys.stderr.write(res.stderr)
        raise PctError(f"startup for container '{vmid}' failed")
    return 0


def cmd_stop(node: Node, args: Args) -> int:
    vmid = vmid_of(args)
    load_config(node, vmid)
    if not is_running(node, vmid):
        raise PctError(f"CT {vmid} not running")
    # A hard stop, like `pct stop` (as opposed to `pct shutdown`).
    res = lxc(node, "lxc-stop", node.lxc_name(vmid), "--kill")
    if res.returncode != 0 and is_running(node, vmid):
        sys.stderr.write(res.stderr)
        raise PctError(f"stopping CT {vmid} failed")
    return 0


def cmd_reboot(node: Node, args: Args) -> int:
    """Like PVE::LXC::vm_reboot: a clean shutdown (killed after --timeout s), then a start."""
    vmid = vmid_of(args)
    load_config(node, vmid)
    raw = args.options.get("timeout", str(REBOOT_TIMEOUT_S))
    if not re.fullmatch(r"[0-9]+", raw):
        raise ParamError("timeout", f"type check ('integer') failed - got '{raw}'")
    if not is_running(node, vmid):
        # The API handler is shared with qemu-server, hence "VM".
        raise PctError(f"VM {vmid} not running")
    # lxc-stop sends the halt signal and kills only when the timeout runs out.
    lxc(node, "lxc-stop", node.lxc_name(vmid), "-t", raw)
    if is_running(node, vmid):
        raise PctError("container did not stop")
    res = lxc(node, "lxc-start", node.lxc_name(vmid))
    if res.returncode != 0 or not is_running(node, vmid):
        sys.stderr.write(res.stderr)
        raise PctError(f"startup for container '{vmid}' failed")
    return 0


def cmd_push(node: Node, args: Args) -> int:
    vmid = vmid_of(args)
    src, dest = args.positional[1], args.positional[2]
    conf_check_running(node, vmid, "can only push files to a running CT")
    pid = init_pid(node, vmid)
    return run_worker(lambda: push_worker(pid, src, dest, args.options))


def cmd_pull(node: Node, args: Args) -> int:
    vmid = vmid_of(args)
    path, dest = args.positional[1], args.positional[2]
    load_config(node, vmid)
    if not is_running(node, vmid):
        # pve-container dies without a newline here; Perl appends the location.
        raise PctError(
            "can only pull files from a running VM at /usr/share/perl5/PVE/CLI/pct.pm line 466."
        )
    pid = init_pid(node, vmid)
    return run_worker(lambda: pull_worker(pid, path, dest, args.options))


def conf_check_running(node: Node, vmid: int, message: str) -> None:
    load_config(node, vmid)
    if not is_running(node, vmid):
        raise PctError(message)


# --- push/pull workers: the same steps as pve-container's -------------------


def run_worker(work: Callable[[], None]) -> int:
    """Run `work` in a forked child, like PVE's fork_worker in CLI mode.

    A failure inside the worker is printed on stderr, but the push/pull
    command itself still exits 0: that is how real pct behaves.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    child = os.fork()
    if child == 0:
        code = 0
        try:
            work()
        except Exception as exc:  # noqa: BLE001 - every failure is reported the same way
            msg = str(exc).strip().replace("\n", " ")
            os.write(2, (msg + "\n").encode())
            code = 1
        os._exit(code)
    os.waitpid(child, 0)
    return 0


def enter_mount_ns(pid: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(f"/proc/{pid}/ns/mnt", os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNS) != 0:
            raise OSError("failed to enter the container's mount namespace")
    finally:
        os.close(fd)
    os.chdir("/")


def push_worker(pid: int, src: str, dest: str, opts: dict[str, str]) -> None:
    try:
        srcfd = os.open(src, os.O_RDONLY)
    except OSError:
        raise OSError(f"failed to open {src} for reading") from None
    # Entering the CT's mount namespace first means names in --user/--group
    # resolve against the container's /etc/passwd, as in pve-container.
    enter_mount_ns(pid)
    destfd = create_file(dest, opts)
    copy_fd(srcfd, destfd)


def pull_worker(pid: int, path: str, dest: str, opts: dict[str, str]) -> None:
    destfd = create_file(dest, opts)
    enter_mount_ns(pid)
    try:
        srcfd = os.open(path, os.O_RDONLY)
    except OSError as exc:
        raise OSError(f"failed to open {path}: {exc.strerror}") from None
    copy_fd(srcfd, destfd)


def copy_fd(src: int, dst: int) -> None:
    while chunk := os.read(src, 1 << 20):
        view = memoryview(chunk)
        while view:
            view = view[os.write(dst, view) :]
    os.close(src)
    os.close(dst)


def parse_perms(raw: str) -> int:
    # pct assumes octal unless the value starts with 0; then strtoul(..., 0).
    text = raw if raw.startswith("0") else f"0{raw}"
    try:
        if text.lower().startswith("0x"):
            return int(text[2:], 16)
        return int(text, 8)
    except ValueError:
        raise OSError(f"invalid mode: '{text}'") from None


def resolve_ids(opts: dict[str, str]) -> tuple[int | None, int | None]:
    uid = gid = None
    if "user" in opts:
        uid = _numeric_id(opts["user"], "uid", lambda name: pwd.getpwnam(name).pw_uid)
    if "group" in opts:
        gid = _numeric_id(opts["group"], "gid", lambda name: grp.getgrnam(name).gr_gid)
    return uid, gid


def _numeric_id(name: str, kind: str, lookup: Callable[[str], int]) -> int:
    try:
        return int(name) if name.isdigit() else lookup(name)
    except KeyError:
        raise OSError(f"failed to get {kind} for: {name}") from None


def create_file(path: str, opts: dict[str, str]) -> int:
    """pve-container's create_file: explicit perms, owner, then truncate."""
    uid, gid = resolve_ids(opts)
    perms = parse_perms(opts["perms"]) if "perms" in opts else None
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0)
        if perms is None:
            umask = os.umask(0)
            os.umask(umask)
            perms = 0o666 & ~umask
    except OSError:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        except OSError as exc:
            raise OSError(f"failed to create file: {path}: {exc.strerror}") from None
    if perms is not None:
        os.fchmod(fd, perms)
    if uid is not None or gid is not None:
        st = os.fstat(fd)
        try:
            os.fchown(fd, st.st_uid if uid is None else uid, st.st_gid if gid is None else gid)
        except OSError as exc:
            raise OSError(f"failed to change file owner: {exc.strerror}") from None
    return fd


# --- entry point --------------------------------------------------------------

COMMANDS = {
    "exec": cmd_exec,
    "status": cmd_status,
    "list": cmd_list,
    "config": cmd_config,
    "start": cmd_start,
    "stop": cmd_stop,
    "reboot": cmd_reboot,
    "push": cmd_push,
    "pull": cmd_pull,
}


def report(command: str, exc: PctError) -> int:
    if isinstance(exc, ParamError):
        print(f"400 Parameter verification failed.\n{exc}", file=sys.stderr)
        print(USAGE[command], file=sys.stderr)
    elif isinstance(exc, UsageError):
        if exc.parse_error:
            print(f"{exc}\n400 unable to parse option", file=sys.stderr)
        else:
            print(f"400 {exc}", file=sys.stderr)
        print(USAGE[command], file=sys.stderr)
    else:
        print(exc, file=sys.stderr)
    return EXIT_ERROR


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in COMMANDS:
        shown = f"pct {argv[0]}" if argv else "pct"
        print(f"unknown command '{shown}'", file=sys.stderr)
        print("USAGE: pct <COMMAND> [ARGS] [OPTIONS]", file=sys.stderr)
        for usage in USAGE.values():
            print(f"       {usage}", file=sys.stderr)
        return EXIT_ERROR
    command = argv[0]
    try:
        node = Node.load()
        return COMMANDS[command](node, parse(command, argv[1:]))
    except PctError as exc:
        return report(command, exc)


if __name__ == "__main__":
    sys.exit(main())
