"""Ansible Vault: files and `!vault` values made by the real ansible-vault decrypt,
become Secrets, and every failure is one line with exit code 4."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pctfleet import exitcodes
from pctfleet.inventory import inventory_from_text
from pctfleet.modules import known_args
from pctfleet.playbook import vault
from pctfleet.playbook.loader import load_playbook
from pctfleet.playbook.templating import Secret
from pctfleet.playbook.yamlsrc import load_yaml
from pctfleet.run.engine import ContainerEngine, RunOptions
from pctfleet.run.results import ContainerRun
from pctfleet.transport.local import LocalTarget

FIXTURES = Path(__file__).parent / "vault_fixtures"  # made by ansible-vault
ANSIBLE_VAULT = Path("/var/cache/pctfleet/bench-ansible-venv/bin/ansible-vault")
WHOLE_VENV = ANSIBLE_VAULT.parent.parent / ".pctfleet-bench"  # its installer writes this last
DEFAULT = vault.VaultSecret("default", b"hunter2")  # vars11.yml, inline.yml
OPS = vault.VaultSecret("ops", b"blue-sky")  # vars12.yml


@pytest.fixture(autouse=True)
def _no_passwords():
    vault.set_vault_secrets([])
    yield
    vault.set_vault_secrets([])


def _inline_body() -> str:
    """The `!vault |` block of the checked-in inline fixture (password hunter2)."""
    return (FIXTURES / "inline.yml").read_text().split("inline_secret: ", 1)[1]


def _play(tmp_path: Path, book: str, **options: bool) -> ContainerRun:
    """Run the playbook text on this machine; the run, checked to have succeeded."""
    (tmp_path / "book.yml").write_text(book)
    play = load_playbook(tmp_path / "book.yml", known_args()).plays[0]
    run = ContainerRun("local", 100)
    opts = RunOptions(base_dir=str(tmp_path), lock_wait=5, **options)
    ContainerEngine(LocalTarget(), run, dict(play.vars), opts).play(play.tasks, [])
    assert run.status == "ok", run.message
    return run


def test_a_1_1_file_decrypts_and_its_strings_are_secrets():
    vault.set_vault_secrets([DEFAULT])
    data = load_yaml(FIXTURES / "vars11.yml")
    assert data == {"db_password": "s3cret-from-vault", "db_port": 5432}
    assert isinstance(data["db_password"], Secret) and data.where("db_port").endswith(":2")


def test_a_1_2_envelope_tries_its_own_vault_id_first():
    vault.set_vault_secrets([DEFAULT, OPS])
    tried = []
    real = vault._try
    vault._try = lambda pw, *rest: tried.append(pw) or real(pw, *rest)
    try:
        assert load_yaml(FIXTURES / "vars12.yml") == {"api_token": "tok-ops-1234"}
    finally:
        vault._try = real
    assert tried == [b"blue-sky"]


def test_without_the_right_label_every_password_is_tried():
    vault.set_vault_secrets([DEFAULT, vault.VaultSecret("other", b"blue-sky")])
    assert load_yaml(FIXTURES / "vars12.yml")["api_token"] == "tok-ops-1234"


def test_an_inline_vault_value_decrypts_to_a_secret():
    vault.set_vault_secrets([DEFAULT])
    data = load_yaml(FIXTURES / "inline.yml")
    assert data == {"plain_name": "visible", "inline_secret": "inline-s3cret"}
    assert isinstance(data["inline_secret"], Secret)
    assert not isinstance(data["plain_name"], Secret)


@pytest.mark.parametrize(
    ("name", "secrets", "message"),
    [
        ("vars11.yml", [OPS], "vars11.yml: wrong vault password or corrupted data"),
        (
            "vars12.yml",
            [DEFAULT],
            "vars12.yml: wrong vault password or corrupted data (vault id 'ops')",
        ),
        ("vars11.yml", [], "vars11.yml: vault-encrypted data but no vault password given"),
        ("inline.yml", [OPS], "inline.yml:2: wrong vault password or corrupted data"),
    ],
)
def test_no_or_a_wrong_password_is_one_line_naming_the_place(name, secrets, message):
    vault.set_vault_secrets(secrets)
    with pytest.raises(vault.VaultError) as err:
        load_yaml(FIXTURES / name)
    assert message in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("$ANSIBLE_VAULT;1.1;AES256\nzz11\n", "corrupted (not the hex Ansible writes)"),
        ("$ANSIBLE_VAULT;1.1;AES128\n3031\n", "unsupported vault cipher 'AES128'"),
        ("$ANSIBLE_VAULT;9.9;AES256\n3031\n", "not a vault envelope"),
        ("a: !vault [1, 2]\n", "!vault must tag a text block"),
    ],
)
def test_bad_vault_input_is_one_line(tmp_path, text, message):
    vault.set_vault_secrets([DEFAULT])
    path = tmp_path / "bad.yml"
    path.write_text(text)
    with pytest.raises(vault.VaultError, match=re.escape(message)):
        load_yaml(path)


def test_tampered_data_fails_the_hmac_check(tmp_path):
    vault.set_vault_secrets([DEFAULT])
    header, *body = (FIXTURES / "vars11.yml").read_text().splitlines()
    salt, mac, data = bytes.fromhex("".join(body)).split(b"\n")
    data = (b"1" if data[:1] != b"1" else b"2") + data[1:]  # one ciphertext nibble changed
    hexed = b"\n".join([salt, mac, data]).hex()
    (tmp_path / "t.yml").write_text(f"{header}\n{hexed}\n")
    with pytest.raises(vault.VaultError, match="wrong vault password or corrupted data"):
        load_yaml(tmp_path / "t.yml")


def test_password_file_plain_and_executable(tmp_path):
    plain = tmp_path / "pw.txt"
    plain.write_text("  hunter2 \n")
    script = tmp_path / "pw.sh"
    script.write_text("#!/bin/sh\necho blue-sky\n")
    script.chmod(0o755)
    assert vault.read_password_file(plain).password == b"hunter2"
    assert vault.read_password_file(script, "ops").password == b"blue-sky"
    script.write_text("#!/bin/sh\nexit 3\n")
    with pytest.raises(vault.VaultError, match="pw.sh: the script exited with 3"):
        vault.read_password_file(script)


def test_vault_ids_parse_label_and_source(tmp_path, monkeypatch):
    (tmp_path / "pw").write_text("blue-sky\n")
    monkeypatch.setattr(vault.getpass, "getpass", lambda prompt: f"typed at {prompt}")
    found = vault.gather_secrets([], [f"ops@{tmp_path}/pw", "dev@prompt"], ask=True)
    assert [(s.label, s.password) for s in found] == [
        ("ops", b"blue-sky"),
        ("dev", b"typed at Vault password (dev): "),
        ("default", b"typed at Vault password: "),
    ]
    with pytest.raises(vault.VaultError, match="expected"):
        vault.parse_vault_id("ops@")


def test_an_inventory_may_hold_inline_vault_values():
    vault.set_vault_secrets([DEFAULT])
    inline = _inline_body()
    inline = textwrap.indent(inline, "    ")
    inv = inventory_from_text(
        "nodes:\n  n1:\n    address: 127.0.0.1\n    containers: [200]\n"
        f"vars:\n  db_password: {inline.strip()}\n",
        "inv.yml",
    )
    value = inv.vars_for(inv.containers[0])["db_password"]
    assert value == "inline-s3cret" and isinstance(value, Secret)


def test_a_vaulted_value_is_redacted_in_run_output_and_json(tmp_path):
    vault.set_vault_secrets([DEFAULT])
    # a name no _password/_secret rule hides: only its being vaulted does
    body = _inline_body()
    (tmp_path / "secrets.yml").write_text(f"dsn: {body}")
    run = _play(
        tmp_path,
        "- hosts: all\n  vars_files: [secrets.yml]\n  tasks:\n"
        "    - name: use it\n      debug: {msg: 'pw is {{ dsn }}'}\n",
    )
    shown = run.tasks[0].as_json()
    assert shown["msg"] == "pw is ********", shown


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pctfleet", *args], capture_output=True, text=True, timeout=60
    )


def test_cli_wrong_password_exits_4_with_one_line(tmp_path):
    inv = tmp_path / "inv.yml"
    body = _inline_body()
    inv.write_text(
        "nodes:\n  n1:\n    address: 127.0.0.1\n    containers: [200]\n"
        "vars:\n  db_password: " + body
    )
    (tmp_path / "pw").write_text("not-it\n")
    (tmp_path / "book.yml").write_text("- hosts: all\n  tasks: []\n")
    done = _cli(
        "run",
        str(tmp_path / "book.yml"),
        "-i",
        str(inv),
        "--vault-password-file",
        str(tmp_path / "pw"),
    )
    assert done.returncode == exitcodes.PARSE_ERROR, done.stderr
    assert f"{inv}:6: wrong vault password or corrupted data" in done.stderr
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1


@pytest.mark.skipif(not WHOLE_VENV.exists(), reason=f"real ansible-vault not at {ANSIBLE_VAULT}")
def test_fresh_output_of_the_real_ansible_vault(tmp_path):
    (tmp_path / "a").write_text("pw-a\n")
    (tmp_path / "b").write_text("pw-b\n")
    target = tmp_path / "v.yml"
    target.write_text("k: from-a-file\n")
    av = str(ANSIBLE_VAULT)
    subprocess.run(
        [av, "encrypt", "--vault-id", f"a@{tmp_path}/a", str(target)],
        check=True,
        capture_output=True,
    )
    inline = subprocess.run(
        [av, "encrypt_string", "--vault-id", f"b@{tmp_path}/b", "from-a-string", "--name", "s"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    (tmp_path / "i.yml").write_text(inline)
    vault.set_vault_secrets(vault.gather_secrets([], [f"b@{tmp_path}/b", f"a@{tmp_path}/a"]))
    assert load_yaml(target) == {"k": "from-a-file"}
    assert load_yaml(tmp_path / "i.yml") == {"s": "from-a-string"}


def test_include_vars_of_an_encrypted_file_gives_hidden_values(tmp_path):
    vault.set_vault_secrets([DEFAULT])
    body = _inline_body()
    (tmp_path / "more.yml").write_text(f"dsn: {body}")
    run = _play(
        tmp_path,
        "- hosts: all\n  tasks:\n    - include_vars: {file: more.yml}\n"
        "    - debug: {msg: 'dsn {{ dsn }}'}\n",
    )
    assert run.tasks[1].as_json()["msg"] == "dsn ********"


@pytest.mark.skipif(not WHOLE_VENV.exists(), reason=f"real ansible-vault not at {ANSIBLE_VAULT}")
def test_a_template_in_an_encrypted_file_still_renders(tmp_path):
    (tmp_path / "pw").write_text("pw\n")
    secrets = tmp_path / "secrets.yml"
    secrets.write_text("who: world\ngreeting: 'hello {{ who }}'\n")
    subprocess.run(
        [str(ANSIBLE_VAULT), "encrypt", "--vault-password-file", f"{tmp_path}/pw", str(secrets)],
        check=True,
        capture_output=True,
    )
    vault.set_vault_secrets([vault.read_password_file(tmp_path / "pw")])
    _play(
        tmp_path,
        "- hosts: all\n  vars_files: [secrets.yml]\n  tasks:\n"
        f"    - copy: {{content: '{{{{ greeting }}}}', dest: {tmp_path}/out.txt}}\n",
    )
    assert (tmp_path / "out.txt").read_text() == "hello world"


@pytest.mark.parametrize("command", ["run", "provision", "audit", "verify", "rollout"])
def test_every_command_that_reads_an_inventory_takes_vault_passwords(command):
    shown = _cli(command, "--help").stdout
    for option in ("--vault-password-file", "--vault-id", "--ask-vault-pass"):
        assert option in shown, (command, option)


def test_cli_failing_password_script_exits_4_with_one_line(tmp_path):
    script = tmp_path / "pw.sh"
    script.write_text("#!/bin/sh\nexit 7\n")
    script.chmod(0o755)
    (tmp_path / "inv.yml").write_text(
        "nodes:\n  n1:\n    address: 127.0.0.1\n    containers: [200]\n"
    )
    (tmp_path / "book.yml").write_text("- hosts: all\n  tasks: []\n")
    done = _cli(
        "run",
        str(tmp_path / "book.yml"),
        "-i",
        str(tmp_path / "inv.yml"),
        "--vault-id",
        f"ops@{script}",
    )
    assert done.returncode == exitcodes.PARSE_ERROR, done.stderr
    assert done.stderr == f"error: vault password file {script}: the script exited with 7\n"


def test_a_vaulted_value_is_hidden_in_the_diff_but_written_into_the_target(tmp_path):
    vault.set_vault_secrets([DEFAULT])
    body = _inline_body()
    (tmp_path / "secrets.yml").write_text(f"dsn: {body}")
    run = _play(
        tmp_path,
        "- hosts: all\n  vars_files: [secrets.yml]\n  tasks:\n"
        f"    - copy: {{content: 'dsn={{{{ dsn }}}}', dest: {tmp_path}/app.conf}}\n",
        diff=True,
    )
    shown = str(run.tasks[0].as_json())
    assert "dsn=********" in shown and "inline-s3cret" not in shown, shown
    assert (tmp_path / "app.conf").read_text() == "dsn=inline-s3cret"
