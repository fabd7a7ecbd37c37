"""Malformed input, generated: one line naming file and line, the documented exit code,
no traceback, and nothing sent anywhere.

Every command runs in-process through the CLI's own entry point (`cli._invoke`)
with the SSH layer's connect replaced by a counter, so "no remote command ran"
is checked directly: every node address is 127.0.13.99, where nothing listens.
A few cases also run as real processes against that address: a connection
attempt there would end as "unreachable" (exit 3), never as a parse error.
Hypothesis runs are bounded (50 examples, no deadline) to keep the suite fast.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shlex
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from pctfleet import exitcodes
from pctfleet.cli import main as cli
from pctfleet.cuda.rules import arch_parts
from pctfleet.errors import EmptySelection, InputError
from pctfleet.inventory import (
    CTID_MAX,
    CTID_MIN,
    NODE_KEYS,
    VAR_NAME_RE,
    inventory_from_text,
    parse_ctids,
)
from pctfleet.modules.modes import file_mode
from pctfleet.modules.pip import parse_requirement
from pctfleet.transport import ssh
from pctfleet.transport.base import NodeUnreachable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from reliability import scenario  # noqa: E402

NO_SSHD = "127.0.13.99"
BOUNDED = settings(
    max_examples=int(os.environ.get("PCTFLEET_BAD_INPUT_EXAMPLES", "50")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)

INVENTORY = f"""\
defaults:
  user: root
  port: 22
nodes:
  pve1:
    address: {NO_SSHD}
    containers:
      200: {{name: web1}}
      201: {{}}
groups:
  web:
    containers: [pve1/200]
"""

PLAYBOOK = """\
- hosts: all
  vars:
    app: demo
  tasks:
    - name: a folder
      file: {path: /opt/demo, state: directory, mode: "0755"}
    - name: a file
      copy: {content: "x\\n", dest: /opt/demo/x.conf}
      when: app == 'demo'
      tags: [conf]
    - name: a command
      command: {argv: ["true"]}
"""


# -- running the CLI in-process, with connections counted ----------------------------------


class Connects:
    count = 0


@pytest.fixture(scope="module")
def connects():
    """Every attempt to open an SSH connection is counted and refused."""

    def refuse(self):  # noqa: ANN001
        Connects.count += 1
        raise NodeUnreachable(self.node, "connection refused (test)")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ssh.NodeConnection, "_connect", refuse)
        yield Connects


def invoke(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli._invoke(cli.app, list(args))
        except SystemExit as exc:  # typer's --help and friends
            code = exc.code if isinstance(exc.code, int) else 1
    return code, out.getvalue(), err.getvalue()


def assert_rejected(
    result: tuple[int, str, str], code: int, connects: type[Connects], where: str | None = None
) -> str:
    """Exit `code`, one error line (naming `where`), no traceback, no connection."""
    got, out, err = result
    assert got == code, (got, err)
    assert "Traceback" not in err + out
    assert connects.count == 0, "a connection was attempted"
    if code == exitcodes.PARSE_ERROR:
        assert err.startswith("error: ") and err.strip().count("\n") == 0, err
    else:
        assert "error: " in err.lower(), err  # click's "Error: ..." or ours
    if where is not None:
        assert where in err, (where, err)
    return err.strip().splitlines()[-1]


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    inventory, playbook = tmp_path / "inv.yml", tmp_path / "book.yml"
    inventory.write_text(INVENTORY)
    playbook.write_text(PLAYBOOK)
    return {"dir": tmp_path, "inventory": inventory, "playbook": playbook}


def with_line(text: str, line: int, new: str) -> str:
    """`text` with its line number `line` (1-based) replaced by `new`."""
    lines = text.splitlines()
    lines[line - 1] = new
    return "\n".join(lines) + "\n"


def scalar(value: object) -> str:
    """A YAML flow scalar for any JSON-able value (JSON is valid YAML)."""
    return json.dumps(value)


# -- strategies -----------------------------------------------------------------------------

TEXT = st.text(
    alphabet=st.sampled_from(list("abz09 -_;$()`'\"|&*?!{}[]<>#:,.\\/~%@=+\t") + ["é", "\u00a0"]),
    min_size=1,
    max_size=12,
)
NUMBERS = st.one_of(
    st.integers(min_value=-(10**12), max_value=10**12), st.floats(allow_nan=False), st.booleans()
)


def _not_int_in(low: int, high: int):
    def bad(value: object) -> bool:
        if isinstance(value, bool):
            return True
        if isinstance(value, int):
            return not low <= value <= high
        if isinstance(value, str):
            return not re.fullmatch(r"\s*[0-9]{1,12}\s*", value) or not low <= int(value) <= high
        return True

    return bad


def _accepted(parse, value: object) -> bool:
    try:
        parse(value)
    except (InputError, ValueError, TypeError):
        return False
    return True


BAD_PORTS = st.one_of(NUMBERS, TEXT).filter(_not_int_in(1, 65535))
BAD_CTIDS = st.one_of(NUMBERS, TEXT).filter(_not_int_in(CTID_MIN, CTID_MAX))
BAD_WORDS = st.one_of(
    TEXT.map(lambda t: "-" + t),
    TEXT.filter(lambda t: any(c.isspace() for c in t)),
    st.integers() | st.booleans(),  # (YAML reads 1e-05 as a string: a fine user name)
    st.just(""),
)
UNBALANCED = TEXT.filter(lambda t: "{" not in t and not _accepted(shlex.split, t))
BAD_NUMBERS = st.one_of(
    st.sampled_from(["nan", "inf", "-1", "ten", "5s", "1,5", ""]),
    st.integers(max_value=-1),
    TEXT.filter(lambda t: "{" not in t and not _accepted(float, t)),
)
NO_DIGITS = TEXT.filter(lambda t: not any(c.isdigit() for c in t))  # what click cannot read
NAMES = st.from_regex(r"[a-z][a-z_]{2,10}", fullmatch=True)
BAD_IDENTIFIERS = TEXT.filter(lambda t: not VAR_NAME_RE.match(t))

# (line, what replaces it) for one fault in INVENTORY; the error must name that line.
INVENTORY_FAULTS = st.one_of(
    BAD_PORTS.map(lambda v: (3, f"  port: {scalar(v)}")),
    BAD_WORDS.map(lambda v: (2, f"  user: {scalar(v)}")),
    BAD_WORDS.map(lambda v: (6, f"    address: {scalar(v)}")),
    BAD_CTIDS.map(lambda v: (8, f"      {scalar(v)}: {{name: web1}}")),
    st.one_of(NUMBERS, TEXT, st.lists(NAMES, max_size=2)).map(
        lambda v: (9, f"      201: {scalar(v)}")
    ),
    NAMES.filter(lambda n: n not in NODE_KEYS).map(lambda n: (6, f"    {n}: {NO_SSHD}")),
    TEXT.filter(lambda t: t.strip() not in {"pve1/200", "pve1/201", "web1", "200", "201"}).map(
        lambda v: (12, f"    containers: [{scalar(v)}]")
    ),
    BAD_IDENTIFIERS.map(lambda v: (9, f"      201: {{vars: {{{scalar(v)}: 1}}}}")),
)


@pytest.mark.parametrize("command", ["exec", "run"])
def test_malformed_inventories(files, connects, command):
    seen: Counter = Counter()

    @BOUNDED
    @given(INVENTORY_FAULTS)
    def check(fault: tuple[int, str]) -> None:
        connects.count = 0
        line, new = fault
        path = files["dir"] / "fault.yml"
        path.write_text(with_line(INVENTORY, line, new))
        args = ["exec", "-n", "-i", str(path), "--", "true"]
        if command == "run":
            args = ["run", str(files["playbook"]), "-i", str(path)]
        message = assert_rejected(invoke(*args), exitcodes.PARSE_ERROR, connects, f"{path}:")
        seen[line] += 1
        number = re.search(re.escape(str(path)) + r":(\d+)", message)
        assert number and int(number.group(1)) in (line, line - 1, line + 1), (fault, message)

    with scenario("bad-input", f"Malformed inventories ({command})") as s:
        check()
        s.outcome = (
            f"{sum(seen.values())} generated inventories, one fault each (ports, users, "
            "addresses, CTIDs, container entries, unknown keys, group members, variable "
            "names): exit 4, one line 'error: FILE:LINE: ...' at the fault, no traceback"
        )
        s.preserved = "no connection attempted (connect counter 0)"


PLAYBOOK_FAULTS = st.one_of(
    NAMES.map(lambda n: (6, f"      {n}x: {{path: /opt/demo}}")),
    NAMES.map(lambda n: (6, f"      file: {{path: /opt/demo, {n}x: 1}}")),
    st.one_of(TEXT, NUMBERS)
    .filter(lambda v: "{" not in str(v) and not _accepted(lambda m: file_mode(m, "x"), v))
    .map(lambda v: (6, f"      file: {{path: /opt/demo, state: directory, mode: {scalar(v)}}}")),
    NAMES.map(lambda n: (6, f"      file: {{path: /opt/demo, state: {n}x}}")),
    st.sampled_from(["app ==", "(((", "app | nofilter", "app is nothing_at_all", "{{", "%}"]).map(
        lambda e: (9, f"      when: {scalar(e)}")
    ),
    st.one_of(
        st.booleans(),
        st.dictionaries(NAMES, NUMBERS, min_size=1),
        st.lists(st.lists(NAMES, min_size=1), min_size=1),
    ).map(lambda v: (10, f"      tags: {scalar(v)}")),
    NAMES.map(lambda n: (8, f'      copy: {{content: "{{{{ {n}_undefined }}}}", dest: /x}}')),
    TEXT.filter(lambda t: not t.startswith("/") and "{" not in t).map(
        lambda v: (8, f"      copy: {{content: x, dest: {scalar(v)}}}")
    ),
    TEXT.filter(
        lambda t: "{" not in t and not _accepted(lambda r: parse_requirement(r, ""), t)
    ).map(lambda v: (12, f"      pip: {{name: {scalar(v)}}}")),
    BAD_IDENTIFIERS.map(lambda v: (12, f"      register: {scalar(v)}")),
    BAD_IDENTIFIERS.map(lambda v: (12, f"      environment: {{{scalar(v)}: x}}")),
    st.one_of(TEXT, st.integers(max_value=-1)).map(lambda v: (12, f"      no_log: {scalar(v)}")),
    st.sampled_from(["x: [", "  - {", "tasks: !!python/object:os.system x", "\t- bad"]).map(
        lambda v: (7, v)
    ),
    # Values only a module reads: word splitting, numbers, a GPU architecture.
    UNBALANCED.map(lambda v: (12, f"      command: {{cmd: {scalar('echo ' + v)}}}")),
    UNBALANCED.map(lambda v: (12, f"      server: {{name: s, command: {scalar('run ' + v)}}}")),
    UNBALANCED.map(lambda v: (12, f"      pip: {{name: six, extra_args: {scalar(v)}}}")),
    st.tuples(st.sampled_from(["stop_grace", "ready_timeout", "ready_port"]), BAD_NUMBERS).map(
        lambda kv: (12, f"      server: {{name: s, command: run, {kv[0]}: {scalar(kv[1])}}}")
    ),
    BAD_NUMBERS.map(lambda v: (12, f"      server_stop: {{pidfile: /x.pid, grace: {scalar(v)}}}")),
    BAD_NUMBERS.map(lambda v: (12, f"      flashinfer_cache: {{stop_grace: {scalar(v)}}}")),
    TEXT.filter(lambda t: "{" not in t and not arch_parts(t)[0]).map(
        lambda v: (12, f"      compile_probe: {{venv: /opt/v, arch: {scalar(v)}}}")
    ),
)


def test_malformed_playbooks(files, connects):
    seen: Counter = Counter()

    @BOUNDED
    @given(PLAYBOOK_FAULTS)
    def check(fault: tuple[int, str]) -> None:
        connects.count = 0
        line, new = fault
        path = files["dir"] / "fault.yml"
        text = with_line(PLAYBOOK, line, new)
        if line == 12 and not new.lstrip().startswith("pip"):
            text = PLAYBOOK + new + "\n"  # a keyword added to the last task
        path.write_text(text)
        args = ["run", str(path), "--host", NO_SSHD, "--ct", "200", "--journal-dir",
                str(files["dir"] / "journal")]  # fmt: skip
        message = assert_rejected(invoke(*args), exitcodes.PARSE_ERROR, connects, f"{path}:")
        number = re.search(re.escape(str(path)) + r":(\d+)", message)
        assert number, message
        # The line of the fault, or of the task holding it (tasks start at 5, 7 and 11).
        assert int(number.group(1)) in {line - 1, line, line + 1, 5, 7, 11, 13}, (fault, message)
        seen[line] += 1

    with scenario("bad-input", "Malformed playbooks") as s:
        check()
        s.outcome = (
            f"{sum(seen.values())} generated playbooks, one fault each (unknown modules and "
            "arguments, modes, states, conditions, tags, undefined variables, relative paths, "
            "package names with shell characters, register and environment names, no_log, "
            "YAML syntax): exit 4, one line 'error: FILE:LINE: ...', no traceback"
        )
        s.preserved = "no connection attempted (connect counter 0)"


BAD_EXTRA_VARS = st.one_of(
    st.sampled_from(["=x", "1a=b", "a", "a b", "a='b", "{bad", "[1, 2]", "@", "- x", "{1: 2}"]),
    TEXT.map(lambda t: f"{t}=v").filter(lambda t: not VAR_NAME_RE.match(t.split("=")[0])),
    st.text(min_size=1, max_size=30),
)


def test_extra_vars(files, connects):
    seen: Counter = Counter()

    @BOUNDED
    @given(BAD_EXTRA_VARS)
    def check(text: str) -> None:
        before = connects.count
        args = ["run", str(files["playbook"]), "--host", NO_SSHD, "--ct", "200", "-e", text,
                "--journal-dir", str(files["dir"] / "journal")]  # fmt: skip
        code, out, err = invoke(*args)
        assert "Traceback" not in err + out
        if code == exitcodes.UNREACHABLE:  # a valid -e: the run went on to the node
            seen["valid"] += 1
            return
        assert code == exitcodes.PARSE_ERROR, (text, code, err)
        assert connects.count == before, "a connection was attempted"
        assert err.startswith("error: ") and err.strip().count("\n") == 0, err
        seen["rejected"] += 1

    with scenario("bad-input", "Malformed extra vars (-e)") as s:
        check()
        connects.count = 0
        s.outcome = (
            f"{seen['rejected']} malformed -e values: exit 4 with one line, no traceback "
            f"({seen['valid']} generated values were valid and reached the run as data)"
        )
        s.preserved = "no connection attempted for any malformed value"


def _limit_is_bad(pattern: str) -> bool:
    """An unknown or malformed pattern (exit 4); one that selects nothing is exit 5."""
    try:
        inventory_from_text(INVENTORY, "inv").select(pattern)
    except EmptySelection:
        return False
    except InputError:
        return True
    return False


# option -> (strategy of bad values, documented exit code, commands it belongs to)
BAD_OPTIONS = {
    "--ct": (
        BAD_CTIDS.map(str).filter(lambda t: t.strip() and not _accepted(parse_ctids, t)),
        exitcodes.PARSE_ERROR,
        ["exec", "run", "audit"],
    ),
    "--port": (
        st.one_of(st.integers().filter(lambda n: not 1 <= n <= 65535).map(str), NO_DIGITS),
        exitcodes.BAD_OPTIONS,
        ["exec", "run", "audit", "rollout"],
    ),
    "--forks": (
        st.one_of(st.integers(max_value=0).map(str), NO_DIGITS),
        exitcodes.BAD_OPTIONS,
        ["exec", "run"],
    ),
    "--timeout": (
        st.floats(max_value=0.09).map(str) | NO_DIGITS,
        exitcodes.BAD_OPTIONS,
        ["exec", "run", "audit", "verify"],
    ),
    "--connect-timeout": (
        st.floats(max_value=0.09).map(str) | NO_DIGITS,
        exitcodes.BAD_OPTIONS,
        ["exec", "run", "rollout"],
    ),
    "--limit": (
        TEXT.filter(lambda t: t.strip() and _limit_is_bad(t)),
        exitcodes.PARSE_ERROR,
        ["exec", "run", "audit", "verify", "rollout"],
    ),
    "--serial": (
        TEXT.filter(lambda t: not re.fullmatch(r"[\d%, ]+", t)),
        exitcodes.PARSE_ERROR,
        ["rollout"],
    ),
    "--max-fail-percent": (
        st.one_of(st.floats(min_value=100.01), st.floats(max_value=-0.01)).map(str),
        exitcodes.BAD_OPTIONS,
        ["rollout"],
    ),
    "--per-node": (st.integers(max_value=0).map(str), exitcodes.BAD_OPTIONS, ["rollout"]),
    "--lock-wait": (st.floats(max_value=-0.01).map(str), exitcodes.BAD_OPTIONS, ["run"]),
    "-i": (TEXT.map(lambda t: f"/nonexistent/{t}"), exitcodes.PARSE_ERROR, ["exec", "run"]),
}


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


@st.composite
def bad_command_lines(draw) -> tuple[str, list[str], int]:
    option = draw(st.sampled_from(sorted(BAD_OPTIONS)))
    values, code, commands = BAD_OPTIONS[option]
    command = draw(st.sampled_from(commands))
    value = draw(values)
    return option, [command, value], code


def test_bad_command_lines(files, connects):
    seen: Counter = Counter()

    @BOUNDED
    @given(bad_command_lines())
    def check(case: tuple[str, list[str], int]) -> None:
        connects.count = 0
        option, (command, value), code = case
        assume("\x00" not in value)
        inventory, playbook = str(files["inventory"]), str(files["playbook"])
        journal = ["--journal-dir", str(files["dir"] / "journal")]
        base = {
            "exec": ["exec", "-n", "-i", inventory],
            "run": ["run", playbook, "-i", inventory, *journal],
            "audit": ["audit", "-i", inventory, "-p", playbook],
            "verify": ["verify", "-i", inventory],
            "rollout": ["rollout", playbook, "-i", inventory, "--no-gate", *journal],
        }[command]
        if option in {"--ct", "-i"}:
            base = [w for w in base if w not in {"-i", inventory}]
            if option == "--ct":
                base += ["--host", NO_SSHD]
        args = [*base, *((option, value) if option == "-i" else (f"{option}={value}",))]
        if command == "exec":
            args += ["--", "true"]
        assert_rejected(invoke(*args), code, connects)
        seen[option] += 1

    with scenario("bad-input", "Malformed command-line values") as s:
        check()
        s.outcome = (
            f"{sum(seen.values())} generated command lines, one bad value each "
            f"({', '.join(sorted(seen))}) across exec, run, audit, verify and rollout: "
            "exit 5 for option errors, 4 for bad ids, patterns, batch sizes and files; "
            "never a traceback"
        )
        s.preserved = "no connection attempted (connect counter 0)"


# -- CTIDs and ports are numbers in range before anything connects -------------------------

HOSTILE = ["200;touch /tmp/x", "200 && id", "$(id)", "`id`", "200\n201", "-200", "99",
           "1000000000", "0x100", "2e2", "２００", "200-", "-", ""]  # fmt: skip


def test_ctids_and_ports_are_checked_before_any_connection(files, connects):
    connects.count = 0
    with scenario("bad-input", "Hostile CTIDs and ports") as s:
        for ctid in HOSTILE:
            assert_rejected(
                invoke("exec", "-n", "--host", NO_SSHD, f"--ct={ctid}", "--", "true"),
                exitcodes.PARSE_ERROR if ctid else exitcodes.BAD_OPTIONS,  # "" is no --ct
                connects,
            )
            path = files["dir"] / "ct.yml"
            path.write_text(with_line(INVENTORY, 8, f"      {scalar(ctid)}: {{name: web1}}"))
            assert_rejected(
                invoke("exec", "-n", "-i", str(path), "--", "true"),
                exitcodes.PARSE_ERROR,
                connects,
                f"{path}:8",
            )
        for port in ["0", "65536", "22;id", "-1", "ssh", "0x16", "22 22"]:
            assert_rejected(
                invoke(
                    "exec", "-n", "--host", NO_SSHD, "--ct", "200", f"--port={port}", "--", "true"
                ),
                exitcodes.BAD_OPTIONS,
                connects,
            )
            path = files["dir"] / "port.yml"
            path.write_text(with_line(INVENTORY, 3, f"  port: {scalar(port)}"))
            assert_rejected(
                invoke("exec", "-n", "-i", str(path), "--", "true"),
                exitcodes.PARSE_ERROR,
                connects,
                f"{path}:3",
            )
        s.outcome = (
            f"{len(HOSTILE)} hostile CTIDs (shell characters, newline, sign, hex, exponent, "
            "full-width digits, out of range) and 7 ports, on the command line and in an "
            "inventory: exit 4 (5 for --port), one line naming FILE:LINE"
        )
        s.preserved = "no connection attempted (connect counter 0)"


# -- the same, as real processes against an address where nothing listens -------------------


def pctfleet(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pctfleet", *args], capture_output=True, text=True, timeout=60
    )


def test_real_processes_fail_on_input_not_on_the_network(files):
    with scenario("bad-input", "Parse errors come before the network (real processes)") as s:
        control = pctfleet("exec", "-i", str(files["inventory"]), "--limit", "pve1/200",
                           "--connect-timeout", "2", "--", "true")  # fmt: skip
        assert control.returncode == exitcodes.UNREACHABLE, control.stderr
        assert "cannot reach 127.0.13.99:22" in control.stderr
        bad_inventory = files["dir"] / "bad.yml"
        bad_inventory.write_text(with_line(INVENTORY, 8, '      "200; touch /tmp/x": {}'))
        bad_book = files["dir"] / "bad-book.yml"
        bad_book.write_text(with_line(PLAYBOOK, 6, '      file: {path: /opt/demo, mode: "9"}'))
        cases = [
            ("exec", "-i", str(bad_inventory), "--", "true"),
            ("exec", "--host", NO_SSHD, "--ct", "200;id", "--", "true"),
            ("run", str(bad_book), "-i", str(files["inventory"])),
            ("run", str(files["playbook"]), "-i", str(files["inventory"]), "-e", "a='b"),
            ("audit", "-i", str(files["inventory"]), "--limit", "nope*"),
        ]
        for args in cases:
            proc = pctfleet(*args)
            assert proc.returncode == exitcodes.PARSE_ERROR, (args, proc.stderr)
            assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
            assert "cannot reach" not in proc.stderr and "unreachable" not in proc.stderr
        s.outcome = (
            f"control: a valid inventory at {NO_SSHD} ends 'unreachable' (exit 3); "
            f"{len(cases)} malformed ones (inventory CTID, --ct, playbook mode, -e, --limit) "
            "end with exit 4 and one line, before any connection"
        )
        s.preserved = "nothing reached the network: no 'cannot reach' in any of them"
