"""A task's `mode`, read as Ansible reads it: octal (0644, '0644', '644') or symbolic,
chmod's clauses (`u=rw,g=r,o=`, `g+w`, `a+x`, `go-w`, `u=rwX`, `+x`).

A symbolic mode is parsed once, when the task's arguments are, and resolved in the
module's plan against the mode the probe already read: a converged container costs
no call to learn what `g+w` means for its file. The rules are Ansible's
(`AnsibleModule._symbolic_mode_to_octal`), which differ from GNU chmod's in places:
`ua+x` is refused, and `u=`/`g=` clear a folder's set-id bit too (chmod keeps it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pctfleet.errors import PlaybookError, brief

# The umask Ansible's module runs under in a container (022, as pct exec's shell has it):
# a clause without users (`+x`) leaves its bits alone, and a path the task creates starts
# from what it leaves of 0666 (a file) or 0777 (a directory), before `mode` applies.
UMASK = 0o022
NEW_FILE = 0o666 & ~UMASK
NEW_DIRECTORY = 0o777 & ~UMASK

_OPERATOR = re.compile(r"[+=-]")
_USERS = re.compile(r"[ugo]+")
_PERMS = re.compile(r"[rwxXstugo]*")
# What `=` clears for each class: its rwx and its special bit.
_CLASS_BITS = {"u": 0o4700, "g": 0o2070, "o": 0o1007}
_SHIFT = {"u": 6, "g": 3, "o": 0}
_SPECIAL = {("u", "s"): 0o4000, ("g", "s"): 0o2000, ("o", "t"): 0o1000}


@dataclass(frozen=True)
class Clause:
    """One comma-separated part: users (`ugo`, '' for all through the umask) and its
    operator/permissions pairs, applied in order (`u=rw-w+x` is three)."""

    users: str
    actions: tuple[tuple[str, str], ...]

    def apply(self, mode: int, directory: bool) -> int:
        umasked = self.users == ""
        for operator, perms in self.actions:
            # Class by class, each seeing what the one before left (Ansible's order).
            for user in "ugo" if self.users in ("", "a") else self.users:
                bits = _bits(user, perms, mode, directory, umasked)
                mode = _operate(user, operator, bits, mode)
        return mode


@dataclass(frozen=True)
class Mode:
    """A task's `mode`: a fixed octal one, or clauses applied to the path's current mode."""

    text: str  # as written, for messages
    octal: int | None = None
    clauses: tuple[Clause, ...] = ()

    def resolve(self, current: int, directory: bool) -> int:
        """The mode a path whose mode is `current` must end with."""
        if self.octal is not None:
            return self.octal
        for clause in self.clauses:
            current = clause.apply(current, directory)
        return current


def file_mode(value: object, where: str) -> Mode:
    """A task's `mode` argument: octal first (a YAML int is already a number: a bare 644
    is decimal, as in Ansible), else symbolic; anything else is a PlaybookError."""
    if isinstance(value, int):
        return _octal(value, value, where)
    text = str(value)
    digits = text.strip().removeprefix("0o")
    if re.fullmatch(r"[0-7]+", digits):
        return _octal(int(digits, 8), value, where)
    try:
        return Mode(text, clauses=tuple(map(_clause, text.split(","))))
    except ValueError as err:  # Ansible's words, and the value as the task wrote it
        raise PlaybookError(
            f"mode must be in octal or symbolic form, got {brief(value)} ({err})", where=where
        ) from None


def wanted_mode(mode: Mode | None, current: str, directory: bool = False) -> str | None:
    """The 4-digit octal mode a path must end with (None: the task asks for none).

    `current` is the mode the probe read (`PathState.mode`), '' for a path the task
    creates: that one starts from what the umask leaves, as Ansible's new files do.
    """
    if mode is None:
        return None
    have = int(current, 8) if current else (NEW_DIRECTORY if directory else NEW_FILE)
    return f"{mode.resolve(have, directory):04o}"


def stat_text(mode: str) -> str:
    """A 4-digit octal mode as `stat -c %a` prints it ('0640' -> '640', '0000' -> '0')."""
    return f"{int(mode, 8):o}"


def _octal(number: int, value: object, where: str) -> Mode:
    if not 0 <= number <= 0o7777:
        raise PlaybookError(
            f"'mode' must be from '0000' to '07777', got {brief(value)}", where=where
        )
    return Mode(str(value), octal=number)


def _clause(part: str) -> Clause:
    """One clause, checked as Ansible checks it (an empty one changes nothing)."""
    users, *perms = _OPERATOR.split(part)
    operators = _OPERATOR.findall(part)
    if not _USERS.fullmatch("ugo" if users in ("", "a") else users) or not all(
        _PERMS.fullmatch(p) for p in perms
    ):
        raise ValueError(f"bad symbolic permission for mode: {part}")
    return Clause(users, tuple(zip(operators, perms, strict=True)))


def _bits(user: str, perms: str, mode: int, directory: bool, umasked: bool) -> int:
    """The bits `perms` stand for in class `user`: r, w and x (less the umask's for a
    clause without users), X (only for a directory or a mode with some x already), s
    and t (the class's special bit, if it has one), and u, g, o (that class's bits)."""
    shift, bits = _SHIFT[user], 0
    for perm in perms:
        if perm in "rwx":
            bit = {"r": 4, "w": 2, "x": 1}[perm] << shift
            bits |= bit & ~UMASK if umasked else bit
        elif perm == "X":
            bits |= (1 << shift) if directory or mode & 0o111 else 0
        elif perm in "st":
            bits |= _SPECIAL.get((user, perm), 0)
        else:
            bits |= ((mode >> _SHIFT[perm]) & 0o7) << shift
    return bits


def _operate(user: str, operator: str, bits: int, mode: int) -> int:
    if operator == "=":
        return (mode & ~_CLASS_BITS[user] & 0o7777) | bits
    if operator == "+":
        return mode | bits
    return mode & ~bits
