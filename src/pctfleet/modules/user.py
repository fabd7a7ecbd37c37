"""`user`: a local account present (uid, group, groups, shell, home, password) or absent.

The probe reads `getent passwd`, `id -Gn` and, only when a password is given, the
shadow hash. A change is one `useradd`, `usermod` or `userdel` with just the options
that differ, every value quoted.
"""

from __future__ import annotations

from dataclasses import dataclass

from pctfleet.errors import PlaybookError
from pctfleet.modules.args import Args, Context, arg, flag, text
from pctfleet.modules.base import Fact, FactReader, Module, Plan, World, q
from pctfleet.modules.group import account, whole
from pctfleet.sh import snippet


def group_names(value: object, where: str) -> tuple[str, ...]:
    """`groups`: a list or a comma-separated string; '' (or []) means none."""
    items = value if isinstance(value, list | tuple) else str(value).split(",")
    return tuple(account(item.strip(), where) for item in map(str, items) if item.strip())


def no_colon(value: object, where: str) -> str:
    """A passwd field: a `:` or a newline would corrupt /etc/passwd."""
    found = text(value, where)
    if ":" in found or "\n" in found:
        raise PlaybookError(f"a ':' or newline cannot be in a passwd field: {found!r}", where=where)
    return found


@dataclass(frozen=True)
class UserArgs(Args):
    name: str = arg(required=True, aliases=("user",), convert=account)
    state: str = arg("present", choices={"present", "absent"})
    uid: int | None = arg(None, convert=whole)
    group: str | None = arg(None, convert=account)
    groups: tuple[str, ...] | None = arg(None, convert=group_names)
    append: bool = arg(False, convert=flag)
    shell: str | None = arg(None, convert=no_colon)
    home: str | None = arg(None, convert=no_colon)
    create_home: bool = arg(True, aliases=("createhome",), convert=flag)
    move_home: bool = arg(False, convert=flag)
    system: bool = arg(False, convert=flag)
    password: str | None = arg(None, convert=no_colon)
    update_password: str = arg("always", choices={"always", "on_create"})
    comment: str | None = arg(None, convert=no_colon)
    remove: bool = arg(False, convert=flag)
    force: bool = arg(False, convert=flag)

    def check(self, ctx: Context, where: str) -> None:
        if self.home is not None and not self.home.startswith("/"):
            raise self.fail(f"'home' must be an absolute path, got {self.home!r}", where)


@dataclass(frozen=True)
class Account:
    passwd: str = ""  # name:x:uid:gid:gecos:home:shell; empty: no such user
    groups: tuple[str, ...] = ()  # every group, the primary one first
    primary: str = ""
    hash: str | None = None

    def field(self, index: int) -> str:
        parts = self.passwd.split(":")
        return parts[index] if len(parts) == 7 else ""


class AccountFact(FactReader[Account]):
    State = Account

    def command(self, args: UserArgs, want_diff: bool) -> str:
        password = int(args.password is not None)
        return snippet("account_fact", ACCOUNT=args.name, KIND="user", PASSWORD=password)

    def parse(self, reading: Fact) -> Account:
        f = reading.fields()
        hash_ = f.get("hash")
        return Account(
            f.get("passwd", ""), tuple(f.get("groups", "").split()), f.get("primary", ""), hash_
        )

    def converged(self, args: UserArgs, world: World) -> dict[str, str]:
        if args.state == "absent":
            return {}
        primary = args.group or args.name
        uid = args.uid if args.uid is not None else 1000
        home = args.home or f"/home/{args.name}"
        line = f"{args.name}:x:{uid}:{uid}:{args.comment or ''}:{home}:{args.shell or '/bin/sh'}"
        fields = {
            "passwd": line,
            "groups": " ".join((primary, *(args.groups or ()))),
            "primary": primary,
        }
        return fields | ({"hash": args.password} if args.password is not None else {})


def _changes(args: UserArgs, now: Account) -> list[str]:
    """usermod's options for what differs (empty: nothing to do)."""
    options: list[str] = []
    wanted = [
        (args.uid, 2, "-u"),
        (args.comment, 4, "-c"),
        (args.home, 5, "-d"),
        (args.shell, 6, "-s"),
    ]
    for value, index, option in wanted:
        if value is not None and str(value) != now.field(index):
            options += [option, q(value)] + (["-m"] if option == "-d" and args.move_home else [])
    if args.group is not None and args.group != now.primary:
        options += ["-g", q(args.group)]
    if args.groups is not None:
        current = set(now.groups) - {args.group or now.primary}
        missing = set(args.groups) - current
        if missing if args.append else set(args.groups) != current:
            options += (["-a"] if args.append else []) + ["-G", q(",".join(args.groups))]
    return options


def _add(args: UserArgs) -> str:
    options = ["-m" if args.create_home else "-M"] + (["-r"] if args.system else [])
    for value, option in ((args.uid, "-u"), (args.group, "-g"), (args.shell, "-s")):
        if value is not None:
            options += [option, q(value)]
    for value, option in ((args.home, "-d"), (args.comment, "-c")):
        if value is not None:
            options += [option, q(value)]
    if args.groups:
        options += ["-G", q(",".join(args.groups))]
    return f"useradd {' '.join(options)} -- {q(args.name)}\n"


def _result(args: UserArgs, now: Account) -> dict:
    result: dict = {"name": args.name, "state": args.state}
    if args.state == "absent":
        return result | ({"remove": args.remove, "force": args.force})
    result |= {"append": args.append, "system": args.system, "move_home": args.move_home}
    result["createhome"] = args.create_home
    for key, value, index in (
        ("uid", args.uid, 2),
        ("group", None, 3),
        ("comment", args.comment, 4),
        ("home", args.home, 5),
        ("shell", args.shell, 6),
    ):
        found = value if value is not None else now.field(index)
        result[key] = int(found) if key in ("uid", "group") and str(found).isdigit() else found
    if args.groups is not None:
        result["groups"] = ",".join(args.groups)
    if args.password is not None:
        result["password"] = "NOT_LOGGING_PASSWORD"
    return result


class User(Module, name="user", args=UserArgs, fact=AccountFact()):
    """Ensure a local user account, Ansible's `user` (no diff, as there)."""

    registers_output = registers_msg = False

    def plan(self, args: UserArgs, state: Account, check: bool) -> Plan:
        result = _result(args, state)
        if args.state == "absent":
            if not state.passwd:
                return Plan(False, result=result)
            flags = "-r " * args.remove + "-f " * args.force
            return Plan(True, script=f"userdel {flags}-- {q(args.name)}\n", result=result)
        new = not state.passwd
        script = _add(args) if new else ""
        options = [] if new else _changes(args, state)
        if options:
            script = f"usermod {' '.join(options)} -- {q(args.name)}\n"
        hashed = args.password is not None and args.password != state.hash
        if hashed and (new or args.update_password == "always"):
            # The hash goes through stdin, so it is in no process's command line.
            script = f"set -e\n{script}chpasswd -e\n"
            return Plan(
                True, script=script, stdin=f"{args.name}:{args.password}\n".encode(), result=result
            )
        return Plan(bool(script), script=script or None, result=result)
