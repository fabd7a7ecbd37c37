"""No one gets in: host keys on every path, secrets in no output, literal data, tight files.

Against this suite's own lab (see faultlab.py). Every scenario is recorded for
docs/reliability.md.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import stat
import subprocess
import textwrap
import time
import uuid
from pathlib import Path

import pytest
from faultlab import KEYS, FaultLab, scenario

from pctfleet.inventory import load_inventory
from pctfleet.transport.base import TransferError
from pctfleet.transport.connections import build_fleet
from pctfleet.transport.files import _push_stream
from pctfleet.transport.options import ConnectOptions

pytestmark = pytest.mark.lab

CT = "node1/201"


@pytest.fixture(scope="module")
def fl(lab) -> FaultLab:
    """This suite's own lab (the shared `lab` fixture only decides whether labs can run)."""
    return FaultLab().up()


def book(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def exists_in(fl: FaultLab, key: str, path: str) -> bool:
    return (fl.ct_root(key) / path.lstrip("/")).exists()


# -- host keys -------------------------------------------------------------------------

TOUCH = """\
- hosts: all
  tasks:
    - name: a change that must not happen unless the node is trusted
      file: {path: "/tmp/pctfleet-hostkey-{{ mark }}", state: touch}
"""


def _wrong_known_hosts(tmp_path: Path, real: Path) -> Path:
    """The lab's addresses with a key of our own: what a node in the middle would offer."""
    key = tmp_path / "impostor"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    public = key.with_suffix(".pub").read_text().split()[:2]
    lines = [f"{line.split()[0]} {' '.join(public)}\n" for line in real.read_text().splitlines()]
    path = tmp_path / "known_hosts.wrong"
    path.write_text("".join(lines))
    return path


def _commands(fl: FaultLab, touch: Path, mark: str, journal: Path, *conn: str) -> dict:
    """Every path that reaches nodes: run, exec, rollout (no gate), audit, verify, doctor."""
    limit = ["--limit", CT, *conn]
    return {
        "run": ["run", str(touch), "-i", fl.inventory, *limit, "-e", f"mark={mark}",
                "--journal-dir", str(journal)],
        "exec": ["exec", "-i", fl.inventory, *limit, "--", "touch",
                 f"/tmp/pctfleet-hostkey-{mark}"],
        "rollout": ["rollout", str(touch), "-i", fl.inventory, *limit, "--no-gate",
                    "--serial", "1", "-e", f"mark={mark}", "--journal-dir", str(journal)],
        "audit": ["audit", "-i", fl.inventory, *limit, "-p", str(touch), "-e", f"mark={mark}",
                  "--baseline-file", str(journal / "baseline.json")],
        "verify": ["verify", "-i", fl.inventory, *limit],
        "doctor": ["doctor", "-i", fl.inventory, *limit, "--no-probe"],
    }  # fmt: skip


# exit codes each path documents for "could not reach the node"
REFUSED_EXIT = {"run": 3, "exec": 3, "rollout": 2, "audit": 1, "verify": 1, "doctor": 3}


def test_host_keys_unknown_and_changed_are_refused_on_every_path(fl, tmp_path):
    mark = uuid.uuid4().hex[:8]
    touch = book(tmp_path, "touch.yml", TOUCH)
    unknown = tmp_path / "known_hosts.empty"
    unknown.write_text("")
    changed = _wrong_known_hosts(tmp_path, fl.lab.known_hosts)
    changed_text = changed.read_text()
    seen = {}
    with scenario("security", "Unknown host key (run, exec, rollout, audit, verify, doctor)") as s:
        for name, args in _commands(
            fl, touch, mark, tmp_path, "--known-hosts", str(unknown)
        ).items():
            proc = fl.cli(*args)
            out = proc.stdout + proc.stderr
            assert proc.returncode == REFUSED_EXIT[name], (name, out)
            assert "host key for 127.0.13.1 is not in" in out, (name, out)
            assert name == "doctor" or "--accept-new-host-keys" in out, (name, out)
            assert "Traceback" not in out
            seen[name] = proc.returncode
        assert unknown.read_text() == ""
        assert not exists_in(fl, CT, f"/tmp/pctfleet-hostkey-{mark}")
        s.outcome = (
            "refused, naming the fingerprint (and --accept-new-host-keys, except doctor); exits "
            + ", ".join(f"{k} {v}" for k, v in seen.items())
        )
        s.preserved = "known_hosts untouched; nothing ran in the container (no marker file)"

    with scenario("security", "Changed host key, even with --accept-new-host-keys") as s:
        conn = ("--known-hosts", str(changed), "--accept-new-host-keys")
        for name, args in _commands(fl, touch, mark, tmp_path, *conn).items():
            proc = fl.cli(*args)
            out = proc.stdout + proc.stderr
            assert proc.returncode == REFUSED_EXIT[name], (name, out)
            assert "HOST KEY CHANGED for 127.0.13.1" in out, (name, out)
            assert "Traceback" not in out
            seen[name] = proc.returncode
        assert changed.read_text() == changed_text
        assert not exists_in(fl, CT, f"/tmp/pctfleet-hostkey-{mark}")
        s.outcome = "refused with both fingerprints named; exits " + ", ".join(
            f"{k} {v}" for k, v in seen.items()
        )
        s.preserved = "known_hosts untouched (the old key kept); nothing ran in the container"

    with scenario("security", "Unknown host key with --accept-new-host-keys") as s:
        fresh = tmp_path / "new-home" / ".ssh" / "known_hosts"
        conn = ("--known-hosts", str(fresh), "--accept-new-host-keys")
        commands = _commands(fl, touch, mark, tmp_path, *conn)
        for name in ("run", "rollout"):
            fresh.parent.parent.mkdir(exist_ok=True)
            if fresh.parent.exists():
                shutil.rmtree(fresh.parent)
            proc = fl.cli(*commands[name])
            assert proc.returncode == 0, (name, proc.stdout + proc.stderr)
            recorded = fresh.read_text().split()
            real = fl.lab.known_hosts.read_text().splitlines()[0].split()
            assert recorded == real[:3], recorded  # node1's real key, nothing else
            assert stat.S_IMODE(fresh.stat().st_mode) == 0o600
            assert stat.S_IMODE(fresh.parent.stat().st_mode) == 0o700
        assert exists_in(fl, CT, f"/tmp/pctfleet-hostkey-{mark}")
        proc = fl.cli(*_commands(fl, touch, mark, tmp_path, "--known-hosts", str(fresh))["exec"])
        assert proc.returncode == 0, proc.stderr
        s.outcome = (
            "run and rollout connected and recorded node1's real key (one line) in a new "
            "known_hosts (0600, folder 0700); a later exec without the flag was accepted"
        )
        s.preserved = "only the key actually offered was recorded"


# -- secrets ------------------------------------------------------------------------------

SECRETS = """\
- hosts: all
  vars:
    db_password: "pw-{{ canary }}"
    api_key: "ak-{{ canary }}"
    secret_vars: [api_key]
    quiet: "quiet-{{ canary }}"
  tasks:
    - name: config file with the secrets
      copy:
        content: "password={{ db_password }}\\nkey={{ api_key }}\\ntoken={{ hf_token }}\\n"
        dest: "/tmp/pctfleet-secret-{{ canary }}.conf"
        mode: "0600"
    - name: say the password
      debug: {msg: "the password is {{ db_password }}"}
    - name: show the key
      debug: {var: api_key}
    - name: a command that prints them
      shell: "echo {{ db_password | quote }}; echo {{ api_key | quote }} >&2; echo {{ hf_token }}"
    - name: a quiet task
      shell: "echo {{ quiet | quote }}; echo {{ quiet | quote }} >&2; exit 3"
      no_log: true
      ignore_errors: true
    - name: fails and says why
      shell: "echo 'cannot log in as admin:{{ db_password }} with {{ hf_token }}' >&2; exit 1"
"""

BAD_SECRET = """\
- hosts: all
  tasks:
    - name: a private package
      pip:
        name: "git+https://ci:{{ deploy_token }}@git.example.invalid/tools.git"
        virtualenv: /opt/pctfleet-secret-venv
"""


def _grep(canary: str, secrets: list[str], channels: dict[str, str]) -> list[str]:
    return [f"{name}: {s}" for name, text in channels.items() for s in secrets if s in text]


def test_secrets_never_leave_the_container(fl, tmp_path):
    canary = uuid.uuid4().hex[:12]
    secrets = [f"pw-{canary}", f"ak-{canary}", f"tok-{canary}", f"quiet-{canary}"]
    playbook = book(tmp_path, "secrets.yml", SECRETS)
    journals = tmp_path / "journals"
    base = ["-i", fl.inventory, "--limit", CT, "-e", f"canary={canary}",
            "-e", f"hf_token=tok-{canary}"]  # fmt: skip
    channels: dict[str, str] = {}
    with scenario("security", "Secrets and no_log in every output channel") as s:
        runs = {
            "run --check --diff -vv": ["run", str(playbook), *base, "--check", "--diff", "-vv"],
            "run --diff -vv": ["run", str(playbook), *base, "--diff", "-vv"],
            "run --json --diff": ["run", str(playbook), *base, "--json", "--diff"],
            "rollout --json": ["rollout", str(playbook), *base, "--no-gate", "--json",
                               "--serial", "1"],
            "audit --json": ["audit", "-p", str(playbook), *base, "--json",
                             "--baseline-file", str(tmp_path / "baseline.json")],
            "audit": ["audit", "-p", str(playbook), *base,
                      "--baseline-file", str(tmp_path / "baseline.json")],
        }  # fmt: skip
        codes = {}
        for name, args in runs.items():
            if name.startswith(("run", "rollout")):
                args = [*args, "--journal-dir", str(journals / name.split()[0])]
            proc = fl.cli(*args)
            assert "Traceback" not in proc.stderr, proc.stderr
            channels[f"{name} stdout"], channels[f"{name} stderr"] = proc.stdout, proc.stderr
            codes[name] = proc.returncode
        # --resume: the journal kept no secret, so the run asks for it again.
        rollout_id = json.loads(channels["rollout --json stdout"].splitlines()[0])["rollout_id"]
        resume = ["rollout", "--resume", rollout_id, "--journal-dir", str(journals / "rollout")]
        proc = fl.cli(*resume)
        assert proc.returncode == 4 and "-e hf_token=..." in proc.stderr, proc.stderr
        channels["resume without the secret"] = proc.stdout + proc.stderr
        proc = fl.cli(*resume, "--json", "-e", f"hf_token=tok-{canary}")
        assert proc.returncode == 2, proc.stderr  # resumed: the failing task fails again
        assert "cannot log in as admin:******** with ********" in proc.stdout
        channels["resume --json stdout"], channels["resume stderr"] = proc.stdout, proc.stderr
        for path in journals.rglob("*"):
            if path.is_file():
                channels[f"journal {path.name}"] = path.read_text()
        # A secret in an argument that fails validation: the error message itself.
        proc = fl.cli("run", str(book(tmp_path, "bad.yml", BAD_SECRET)), *base,
                      "-e", f"deploy_token=dt-{canary}")  # fmt: skip
        assert proc.returncode == 4, proc.stderr
        channels["input error stderr"] = proc.stdout + proc.stderr
        secrets.append(f"dt-{canary}")

        assert codes["run --diff -vv"] == 2 and codes["run --json --diff"] == 2, codes
        conf = fl.ct_out(CT, f"cat /tmp/pctfleet-secret-{canary}.conf")
        assert f"password=pw-{canary}" in conf and f"token=tok-{canary}" in conf  # really used
        leaks = _grep(canary, secrets, channels)
        assert not leaks, leaks
        everything = "".join(channels.values())
        assert "********" in everything
        assert "output hidden (no_log: true)" in channels["run --json --diff stdout"]
        assert "cannot log in as admin:******** with ********" in everything
        s.outcome = (
            f"{len(channels)} channels grepped (stdout and stderr of run with --diff/-vv, "
            "--check, --json, rollout and its --resume, audit, a validation error; every "
            "journal line): "
            "no secret value found; secrets show as ********, the no_log task as "
            "'output hidden (no_log: true)'"
        )
        s.preserved = (
            "the values did reach the container (the 0600 config file holds them); only "
            "the output is redacted; --resume asks for secret -e values again"
        )


# -- modes and temp files ------------------------------------------------------------------

MODES = """\
- hosts: all
  tasks:
    - {name: private, copy: {content: "p\\n", dest: /opt/pctfleet-modes/private, mode: "0600"}}
    - {name: public, copy: {content: "q\\n", dest: /opt/pctfleet-modes/public, mode: "0644"}}
    - {name: default, copy: {content: "r\\n", dest: /opt/pctfleet-modes/default}}
    - name: owned
      copy: {content: "s\\n", dest: /opt/pctfleet-modes/owned, mode: "0440", owner: nobody,
             group: nogroup}
    - {name: template, template: {src: mode.j2, dest: /opt/pctfleet-modes/templated, mode: "0640"}}
    - {name: folder, file: {path: /opt/pctfleet-modes/dir, state: directory, mode: "0750"}}
    - {name: touched, file: {path: /opt/pctfleet-modes/touched, state: touch, mode: "0604"}}
    - {name: fixed later, copy: {content: "t\n", dest: /opt/pctfleet-modes/fixed}}
    - {name: mode fixed, file: {path: /opt/pctfleet-modes/fixed, mode: "0664"}}
"""

EXPECTED_MODES = {
    "private": "600 root root",
    "public": "644 root root",
    "default": "644 root root",
    "owned": "440 nobody nogroup",
    "templated": "640 root root",
    "dir": "750 root root",
    "touched": "604 root root",
    "fixed": "664 root root",
}

LEFTOVERS = (
    "find / -xdev \\( -name '.pctfleet-push.*' -o -name '*.pctfleet-tmp' "
    "-o -name '.cccl.pctfleet-stage' -o -name '*.pctfleet-old' -o -name 'holder.tmp' "
    "-o -name '*.stale.*' \\) -print 2>/dev/null"
)


def test_files_get_their_declared_modes_and_no_temp_file_stays(fl, tmp_path):
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "mode.j2").write_text("host={{ inventory_hostname }}\n")
    playbook = book(tmp_path, "modes.yml", MODES)
    fl.ct_sh(CT, "rm -rf /opt/pctfleet-modes")
    with scenario("security", "Files written in containers get the modes they declare") as s:
        code, doc, err = fl.run(playbook, "--limit", CT, journal=tmp_path / "j")
        assert code == 0, err
        listing = fl.ct_out(CT, "cd /opt/pctfleet-modes && stat -c '%n %a %U %G' *")
        modes = {line.split()[0]: " ".join(line.split()[1:]) for line in listing.splitlines()}
        assert modes == EXPECTED_MODES
        code, doc, err = fl.run(playbook, "--limit", CT, journal=tmp_path / "j")
        assert code == 0 and doc["containers"][0]["stats"]["changed"] == 0, err
        journal = next((tmp_path / "j").glob("*.jsonl"))
        assert stat.S_IMODE(journal.stat().st_mode) == 0o600
        assert stat.S_IMODE(journal.parent.stat().st_mode) == 0o700
        s.outcome = "modes and owners as declared: " + ", ".join(
            f"{k} {v.split()[0]}" for k, v in EXPECTED_MODES.items()
        )
        s.preserved = "the second run changed nothing; the journal is 0600 in a 0700 folder"

    with scenario("security", "Temporary files: 0600 while written, gone afterwards") as s:
        inventory = load_inventory(fl.inventory)
        fleet = build_fleet(inventory.select(CT), ConnectOptions())
        target = fleet.targets[0]
        root = fl.ct_root(CT) / "opt/pctfleet-modes"
        content = b"secret content\n" * 1000
        seen: dict[str, str] = {}

        class Gated(io.RawIOBase):
            """Sends half, then holds the rest until the temp file was looked at."""

            def __init__(self) -> None:
                self.parts = [content[:7000], content[7000:]]

            def readable(self) -> bool:
                return True

            def read(self, size: int = -1) -> bytes:
                if len(self.parts) == 1:
                    temps = []
                    for _ in range(500):
                        temps = list(root.glob(".pctfleet-push.*"))
                        if temps:
                            break
                        time.sleep(0.01)
                    seen["temps"] = str(len(temps))
                    seen["mode"] = oct(stat.S_IMODE(temps[0].stat().st_mode)) if temps else "-"
                return self.parts.pop(0) if self.parts else b""

        try:
            digest = hashlib.sha256(content).hexdigest()
            _push_stream(target, Gated(), "/opt/pctfleet-modes/pushed", "0640", "", len(content),
                         digest, 30)  # fmt: skip
            assert seen == {"temps": "1", "mode": "0o600"}, seen
            assert stat.S_IMODE((root / "pushed").stat().st_mode) == 0o640
            # A transfer that arrives damaged is refused and leaves the old file alone.
            with pytest.raises(TransferError, match="sha256 mismatch"):
                _push_stream(
                    target,
                    io.BytesIO(b"X" * len(content)),
                    "/opt/pctfleet-modes/pushed",
                    "0640",
                    "",
                    len(content),
                    digest,
                    30,
                )
            assert (root / "pushed").read_bytes() == content
        finally:
            fleet.close()
        leftovers = {key: fl.ct_out(key, LEFTOVERS).split() for key in KEYS}
        assert leftovers == {key: [] for key in KEYS}, leftovers
        s.outcome = (
            "a push's temp file exists once, mode 0600, while its content streams in; the file "
            "lands with its declared 0640; a damaged transfer is refused (sha256 mismatch)"
        )
        s.preserved = (
            "the old file on a refused transfer; in all 4 containers no .pctfleet-push.*, "
            "*.pctfleet-tmp, stage, .pctfleet-old, lock temp or stale lock folders remain"
        )


# -- injection -------------------------------------------------------------------------------

CANARY = "/tmp/pctfleet-canary-{mark}"
PAYLOADS = [
    "a; touch {canary} && touch {canary} || touch {canary} | touch {canary}",
    "$(touch {canary})`touch {canary}`${{IFS}}touch${{IFS}}{canary}",
    '\' ; touch {canary} ; " ; touch {canary} ; "',
    "line one\ntouch {canary}\n",
    "*",
    "--help -rf",
    "%s %n \\ \\n ~root",
]

INJECT_TASKS = """\
    - name: "{i}: a keeper (and its folder)"
      copy: {{content: "", dest: "/tmp/pctfleet-inj/{i}/keep"}}
      when: inventory_hostname == '{key}'
    - name: "{i}: content and a file name"
      copy: {{content: "{{{{ p{i} }}}}", dest: "/tmp/pctfleet-inj/{i}/f-{{{{ p{i} }}}}"}}
      when: inventory_hostname == '{key}'
    - name: "{i}: argv"
      command: {{argv: [printf, "%s", "{{{{ p{i} }}}}"]}}
      register: out{i}
      when: inventory_hostname == '{key}'
    # A registered stdout loses its final line breaks, as in Ansible.
    - name: "{i}: argv arrives unchanged"
      fail: {{msg: "argv {i} changed"}}
      when: inventory_hostname == '{key}' and out{i}.stdout != p{i}.rstrip('\\r\\n')
    - name: "{i}: environment"
      shell: 'printf %s "$PAYLOAD" > /tmp/pctfleet-inj/{i}/env'
      environment: {{PAYLOAD: "{{{{ p{i} }}}}"}}
      when: inventory_hostname == '{key}'
    - name: "{i}: the quote filter"
      shell: "printf %s {{{{ p{i} | quote }}}} > /tmp/pctfleet-inj/{i}/quoted"
      when: inventory_hostname == '{key}'
    - name: "{i}: a path to remove, only that one"
      file: {{path: "/tmp/pctfleet-inj/{i}/g-{{{{ p{i} | replace('/', '_') }}}}", state: touch}}
      when: inventory_hostname == '{key}'
    - name: "{i}: removed"
      file: {{path: "/tmp/pctfleet-inj/{i}/g-{{{{ p{i} | replace('/', '_') }}}}", state: absent}}
      when: inventory_hostname == '{key}'
"""

PIP_TASK = """\
    - name: package names with odd extras go to pip as single words
      pip: {{name: [{names}], virtualenv: /opt/pctfleet-inj-venv, extra_args: "--no-index"}}
      when: inventory_hostname == '{key}'
      ignore_errors: true
"""


def test_injected_values_stay_literal(fl, tmp_path):
    mark = uuid.uuid4().hex[:8]
    canary = CANARY.format(mark=mark)
    payloads = [p.format(canary=canary) for p in PAYLOADS]
    where = {i: KEYS[i % len(KEYS)] for i in range(len(payloads))}  # spread: runs in parallel
    values = {f"p{i}": p for i, p in enumerate(payloads)}
    # pip extras cannot hold ']'; the rest of each payload goes in as is
    values.update({f"e{i}": p.replace("]", "") for i, p in enumerate(payloads)})
    variables = tmp_path / "vars.json"
    variables.write_text(json.dumps(values))
    tasks = "".join(INJECT_TASKS.format(i=i, key=where[i]) for i in range(len(payloads)))
    names = ", ".join(f'"six[{{{{ e{i} }}}}]"' for i in range(len(payloads)))
    tasks += PIP_TASK.format(names=names, key=CT)
    playbook = tmp_path / "inject.yml"
    playbook.write_text("- hosts: all\n  tasks:\n" + tasks)
    for key in KEYS:
        fl.ct_sh(key, "rm -rf /tmp/pctfleet-inj")
    with scenario("security", "Injection through vars, paths, argv, env and package names") as s:
        code, doc, err = fl.run(playbook, "-e", f"@{variables}", journal=tmp_path / "j",
                                timeout=600)  # fmt: skip
        assert code == 0, err
        failed = [
            (f"{c['node']}/{c['ctid']}", t["name"])
            for c in doc["containers"]
            for t in c["tasks"]
            if t["status"] == "failed"
        ]
        assert failed == [(CT, "package names with odd extras go to pip as single words")]
        for i, p in enumerate(payloads):
            folder = fl.ct_root(where[i]) / f"tmp/pctfleet-inj/{i}"
            assert (folder / f"f-{p}").read_text() == p, p
            assert (folder / "env").read_text() == p, p
            assert (folder / "quoted").read_text() == p, p
            assert (folder / "keep").exists(), p
            assert not (folder / f"g-{p.replace('/', '_')}").exists(), p
        proc = fl.cli("exec", "-i", fl.inventory, "--limit", CT, "--", "printf", "%s|",
                      *payloads)  # fmt: skip
        assert proc.returncode == 0 and proc.stdout == "".join(f"{p}|" for p in payloads)
        assert all(not exists_in(fl, key, canary) for key in KEYS)
        assert not Path(canary).exists()
        s.outcome = (
            f"{len(payloads)} payloads (; && || | $( ) backticks ${{IFS}} quotes newlines "
            "globs leading dashes backslashes) in file names, contents, argv, environment, "
            "the quote filter, file removal and pip extras, and as `pctfleet exec` "
            "arguments: each arrived byte for byte as data; pip refused the odd "
            "requirements itself"
        )
        s.preserved = (
            "no canary file in any container or on the node; removing 'g-*' removed only "
            "that literal name"
        )


# -- what containers print -------------------------------------------------------------------

SSTI = """\
- hosts: all
  tasks:
    - name: a container prints a template that would run code on the controller
      shell: >-
        printf '%s%s cycler.__init__.__globals__.os.system("touch {canary}") %s%s'
        '{{' '{{' '}}' '}}'
      register: out
      changed_when: out.stdout != ''
    - name: the output in a message
      debug: {{msg: "got {{{{ out.stdout }}}}"}}
    - name: the output in a condition
      debug: {{msg: "conditions read it too"}}
      when: out.stdout is search('cycler')
    - name: the output kept for later
      set_fact: {{kept: "saw {{{{ out.stdout }}}}"}}
    - name: the output written back
      copy: {{content: "{{{{ kept }}}}", dest: "{dest}"}}
"""


def test_container_output_is_never_a_template(fl, tmp_path):
    mark = uuid.uuid4().hex[:8]
    canary, dest = f"/tmp/pctfleet-ssti-{mark}", f"/tmp/pctfleet-ssti-{mark}.out"
    payload = f'{{{{ cycler.__init__.__globals__.os.system("touch {canary}") }}}}'
    playbook = book(tmp_path, "ssti.yml", SSTI.format(canary=canary, dest=dest))
    with scenario("security", "A container prints jinja: data, not code on the controller") as s:
        code, doc, err = fl.run(playbook, "--limit", CT, "-v", journal=tmp_path / "j")
        assert code == 0, err
        assert not Path(canary).exists(), "container output ran as code on the controller"
        assert not exists_in(fl, CT, canary)
        tasks = {t["name"]: t for t in doc["containers"][0]["tasks"]}
        assert tasks["the output in a message"]["msg"] == f"got {payload}"
        assert tasks["the output in a condition"]["status"] == "ok"
        assert fl.ct_out(CT, f"cat {dest}") == f"saw {payload}"
        s.outcome = (
            "a command printed `{{ cycler.__init__.__globals__.os.system(...) }}`; registered, "
            "used in a message, a condition, changed_when, set_fact and a file: shown and "
            "written literally"
        )
        s.preserved = "no code ran on the controller (no canary file); exit 0"


LINKS = """\
- hosts: all
  tasks:
    - name: the libcuda / libcudart links
      cuda_links: {{venv: /opt/pctfleet-links, cuda_home: {home}}}
"""


def test_file_names_read_in_a_container_stay_data(fl, tmp_path):
    """A file name planted where a module looks (here lib/libcudart.so.*) is not code."""
    mark = uuid.uuid4().hex[:8]
    home = f"/opt/pctfleet-links-{mark}/cu13"
    planted = f"libcudart.so.1;cd;touch${{IFS}}pctfleet-links-{mark}"
    canary = f"/root/pctfleet-links-{mark}"
    fl.ct_out(CT, f"mkdir -p {home}/lib && : > '{home}/lib/{planted}'")
    with scenario("security", "A file name planted in a container stays data") as s:
        code, doc, err = fl.run(
            book(tmp_path, "links.yml", LINKS.format(home=home)), "--limit", CT,
            journal=tmp_path / "j",
        )  # fmt: skip
        assert code in (0, 2), err  # without gcc the stub cannot be built: that may fail
        assert not exists_in(fl, CT, canary), "a planted file name ran as a command"
        link = fl.ct_out(CT, f"readlink {home}/lib/libcudart.so").strip()
        assert link == planted, link
        s.outcome = (
            f"lib/{planted!r} planted under CUDA_HOME; cuda_links linked libcudart.so to that "
            "name, quoted"
        )
        s.preserved = "no command ran from the name (no canary in the container)"
    fl.ct_sh(CT, f"rm -rf /opt/pctfleet-links-{mark}")


MARKUP = r"""- hosts: all
  tasks:
    - name: "write a file [red]x[/red]"
      copy:
        content: "new [/bold] [link=file:///etc/passwd]y[/link]\n"
        dest: DEST
    - name: "fail loudly [red]x[/red]"
      command:
        argv: [sh, -c, 'printf "%s \033[31mred\n" "[/bold] [link=file:///etc/passwd]y[/link] [" >&2; exit 1']
"""  # noqa: E501


def test_container_text_is_printed_as_written_not_as_markup(fl, tmp_path):
    dest = f"/tmp/pctfleet-markup-{uuid.uuid4().hex[:8]}"
    fl.ct_sh(CT, f"printf '%s\\n' 'old [/bold]' > {dest}")
    playbook = book(tmp_path, "markup.yml", MARKUP.replace("DEST", dest))
    with scenario("security", "Markup and terminal codes in task names, stderr and diffs") as s:
        proc = fl.cli("run", str(playbook), "-i", fl.inventory, "--limit", CT, "--diff",
                      "--journal-dir", str(tmp_path / "j"))  # fmt: skip
        out = proc.stdout + proc.stderr
        assert proc.returncode == 2, out
        assert "Traceback" not in out and "MarkupError" not in out, out
        assert "RECAP" in out, out
        for literal in (
            "write a file [red]x[/red]",
            "fail loudly [red]x[/red]",
            "[/bold] [link=file:///etc/passwd]y[/link] [",
            "-old [/bold]",
            "+new [/bold] [link=file:///etc/passwd]y[/link]",
            "\\x1b[31mred",
        ):
            assert literal in out, (literal, out)
        assert "\x1b[31mred" not in out, "a container's terminal codes reached the terminal"
        s.outcome = (
            "a task named `[red]x[/red]` whose command wrote `[/bold]`, a link tag and an "
            "ANSI colour code to stderr, run with --diff: exit 2, recap printed, every string "
            "shown as written, the escape code as `\\x1b`"
        )
        s.preserved = "the run finished and reported; no MarkupError in a worker thread"
    fl.ct_sh(CT, f"rm -f {dest}")
