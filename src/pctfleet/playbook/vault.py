"""Ansible Vault: decrypt `$ANSIBLE_VAULT;1.1;AES256` and `;1.2;AES256;<id>` data.

The format is ansible-core's VaultAES256: the envelope is a header line then
hex text; that hex decodes to three lines, hex(salt), hex(HMAC) and
hex(ciphertext). PBKDF2-HMAC-SHA256 (10000 iterations) turns password and
salt into 80 bytes: AES key (32), HMAC key (32), counter IV (16). The
HMAC-SHA256 of the ciphertext is checked before AES-256-CTR decryption and
PKCS7 unpadding.

Passwords are registered once per command (`set_vault_secrets`) and tried by
`decrypt`: the envelope's vault id first, then every other one, as Ansible
does. Plaintext only ever lives in memory.
"""

from __future__ import annotations

import functools
import getpass
import hmac
import os
import subprocess
from binascii import Error as HexError
from binascii import unhexlify
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pctfleet.errors import InputError

HEADER = "$ANSIBLE_VAULT"
DEFAULT_ID = "default"
_NO_PASSWORD = (
    "vault-encrypted data but no vault password given "
    "(--ask-vault-pass, --vault-password-file or --vault-id)"
)


class VaultError(InputError):
    """Vaulted data that cannot be decrypted: no password, a wrong one, bad format."""


@dataclass(frozen=True)
class VaultSecret:
    label: str
    password: bytes

    def __repr__(self) -> str:
        return f"VaultSecret({self.label!r})"


_secrets: list[VaultSecret] = []


def set_vault_secrets(secrets: Iterable[VaultSecret]) -> None:
    """The passwords `decrypt` tries from now on (replacing earlier ones)."""
    _secrets[:] = list(secrets)


def is_vaulted(text: str) -> bool:
    return text.lstrip().startswith(HEADER)


def _envelope(text: str, where: str) -> tuple[str, str]:
    """(vault id or "", hex body) of an envelope; checks version and cipher."""
    lines = text.strip().splitlines()
    parts = [p.strip() for p in lines[0].split(";")]
    if len(parts) < 3 or parts[0] != HEADER or parts[1] not in ("1.1", "1.2"):
        raise VaultError(f"not a vault envelope Ansible writes: {lines[0][:60]!r}", where=where)
    if parts[2] != "AES256":
        raise VaultError(f"unsupported vault cipher {parts[2]!r} (only AES256)", where=where)
    vault_id = parts[3] if len(parts) > 3 else ""
    return vault_id, "".join(line.strip() for line in lines[1:])


def _parse_body(body: str, where: str) -> tuple[bytes, bytes, bytes]:
    """(salt, hmac, ciphertext) from the hex body."""
    try:
        salt, mac, data = unhexlify(body).split(b"\n", 2)
        return unhexlify(salt), unhexlify(mac), unhexlify(data)
    except (HexError, ValueError):
        raise VaultError(
            "vault data is corrupted (not the hex Ansible writes)", where=where
        ) from None


@functools.lru_cache(maxsize=64)
def _keys(password: bytes, salt: bytes) -> tuple[bytes, bytes, bytes]:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.pbkdf2 import PBKDF2HMAC

    kdf = PBKDF2HMAC(algorithm=hashes.SHA256(), length=80, salt=salt, iterations=10000)
    derived = kdf.derive(password)
    return derived[:32], derived[32:64], derived[64:80]


def _try(password: bytes, salt: bytes, mac: bytes, data: bytes) -> bytes | None:
    """The plaintext, or None when the HMAC says this is not the password."""
    from cryptography.hazmat.primitives import hashes, padding
    from cryptography.hazmat.primitives import hmac as chmac
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    aes_key, mac_key, iv = _keys(password, salt)
    check = chmac.HMAC(mac_key, hashes.SHA256())
    check.update(data)
    if not hmac.compare_digest(check.finalize(), mac):
        return None
    decryptor = Cipher(algorithms.AES(aes_key), modes.CTR(iv)).decryptor()
    unpadder = padding.PKCS7(128).unpadder()
    return unpadder.update(decryptor.update(data) + decryptor.finalize()) + unpadder.finalize()


def _ordered(vault_id: str) -> list[VaultSecret]:
    first = [s for s in _secrets if s.label == vault_id]
    return first + [s for s in _secrets if s.label != vault_id]


def decrypt(text: str, where: str) -> str:
    """The plaintext of a vault envelope; VaultError (one line, `where`) if it can't be had."""
    vault_id, body = _envelope(text, where)
    if not _secrets:
        raise VaultError(_NO_PASSWORD, where=where)
    salt, mac, data = _parse_body(body, where)
    for secret in _ordered(vault_id):
        try:
            plain = _try(secret.password, salt, mac, data)
        except ValueError:
            plain = None  # bad padding: the data was tampered with
        if plain is not None:
            try:
                return plain.decode("utf-8")
            except UnicodeDecodeError:
                raise VaultError("decrypted vault data is not UTF-8 text", where=where) from None
    named = f" (vault id {vault_id!r})" if vault_id else ""
    raise VaultError(f"wrong vault password or corrupted data{named}", where=where)


# ---------------------------------------------------------------- where passwords come from


def read_password_file(path: str | Path, label: str = DEFAULT_ID) -> VaultSecret:
    """An executable file is run and its stdout is the password; any other
    file holds it (surrounding blank space and line breaks dropped), as Ansible reads it."""
    path = Path(path)
    where = f"vault password file {path}"
    if not path.is_file():
        raise VaultError("not found (or not a file)", where=where)
    if os.access(path, os.X_OK):
        try:
            done = subprocess.run([str(path.resolve())], stdout=subprocess.PIPE, check=False)
        except OSError as err:
            raise VaultError(f"cannot run it: {err.strerror or err}", where=where) from None
        if done.returncode != 0:
            raise VaultError(f"the script exited with {done.returncode}", where=where)
        password = done.stdout.strip(b"\r\n")
    else:
        try:
            password = path.read_bytes().strip()
        except OSError as err:
            raise VaultError(f"cannot read it: {err.strerror or err}", where=where) from None
    if not password:
        raise VaultError("the vault password is empty", where=where)
    return VaultSecret(label, password)


def _prompt(label: str) -> VaultSecret:
    shown = "" if label == DEFAULT_ID else f" ({label})"
    try:
        password = getpass.getpass(f"Vault password{shown}: ")
    except (EOFError, KeyboardInterrupt):
        raise VaultError("no vault password entered") from None
    if not password:
        raise VaultError("the vault password is empty")
    return VaultSecret(label, password.encode("utf-8"))


def parse_vault_id(text: str) -> VaultSecret:
    """`--vault-id [label@]SOURCE`: SOURCE is `prompt` or a password file."""
    label, sep, source = text.partition("@")
    if not sep:
        label, source = DEFAULT_ID, text
    if not label or not source:
        raise VaultError(f"--vault-id: expected [label@]SOURCE, got {text!r}")
    if source == "prompt":
        return _prompt(label)
    return read_password_file(source, label)


def gather_secrets(
    password_files: Sequence[Path | str] = (), vault_ids: Sequence[str] = (), ask: bool = False
) -> list[VaultSecret]:
    """The passwords the command line names, in the order given."""
    found = [parse_vault_id(v) for v in vault_ids]
    found += [read_password_file(p) for p in password_files]
    if ask:
        found.append(_prompt(DEFAULT_ID))
    return found
