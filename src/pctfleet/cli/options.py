"""The option groups commands share, each flag and help declared once (see groups.py)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, ClassVar

import typer

from pctfleet import exitcodes
from pctfleet.cli.complete import complete_ct, complete_host, complete_limit
from pctfleet.cli.groups import flag, opt
from pctfleet.textout import visible
from pctfleet.transport.options import ConnectOptions

CONN = "Connection"
SEL = "Selection"


def fail(message: str, code: int) -> typer.Exit:
    typer.secho(f"error: {visible(message)}", err=True, fg="red")
    return typer.Exit(code)


def split_tags(text: str | None) -> set[str] | None:
    """`--tags a,b` as a set (None when not given)."""
    return {t.strip() for t in text.split(",") if t.strip()} if text else None


def tag_sets(tags: str | None, skip_tags: str | None) -> tuple[set[str] | None, set[str] | None]:
    """--tags and --skip-tags, each joined with ansible.cfg's `[tags] run` and `skip`
    (or ANSIBLE_RUN_TAGS, ANSIBLE_SKIP_TAGS), as ansible-playbook joins them (measured:
    the command line's add to the file's); None where neither gives any."""
    from pctfleet import ansiblecfg

    config = ansiblecfg.read()
    joined = []
    for given, variable, key in ((tags, "ANSIBLE_RUN_TAGS", "run"),
                                 (skip_tags, "ANSIBLE_SKIP_TAGS", "skip")):  # fmt: skip
        found = set(config.words(variable, "tags", key)) | (split_tags(given) or set())
        joined.append(found or None)
    return joined[0], joined[1]


def select_containers(
    inventory: Sequence[Path] | Path | None,
    host: str | None,
    ct: str | None,
    limit: str | None,
    playbook_dir: Path | None = None,
):
    """The inventory and the containers a command works on: -i INVENTORY (each -i a
    source, merged in order as Ansible merges them) or --host/--ct. A command that
    runs a playbook gives its folder: group_vars/ and host_vars/ there count too, as
    in ansible-playbook."""
    from pctfleet.inventory import adhoc_inventory, load_inventory, parse_ctids
    from pctfleet.inventory.discover import DiscoveryError
    from pctfleet.inventory.load import resolve_discovery, with_var_files

    sources = [inventory] if isinstance(inventory, Path) else list(inventory or [])
    if sources and host:
        raise fail("give either -i INVENTORY or --host/--ct, not both", exitcodes.BAD_OPTIONS)
    if ct and not host:
        raise fail("--ct needs --host NODE (the node that holds them)", exitcodes.BAD_OPTIONS)
    if not sources and not host:
        sources = configured_inventory()
    if host:
        if not ct:
            raise fail("--host needs --ct (for example --ct 200,201)", exitcodes.BAD_OPTIONS)
        inv = with_var_files(
            adhoc_inventory(host, parse_ctids(ct)), [playbook_dir] if playbook_dir else []
        )
    elif sources:
        try:
            inv = resolve_discovery(load_inventory(sources, playbook_dir))
        except DiscoveryError as exc:
            raise fail(str(exc), exitcodes.UNREACHABLE) from None
    else:
        raise fail(
            "say where: -i INVENTORY, --host NODE --ct 200, or 'inventory =' in ansible.cfg",
            exitcodes.BAD_OPTIONS,
        )
    return inv, inv.select(limit)


def configured_inventory() -> list[Path]:
    """The inventory sources ansible.cfg (or ANSIBLE_INVENTORY) names, comma-separated,
    as ansible-playbook would read them without -i; none where it names none. One
    that is not there is an error naming the setting (Ansible warns and reads on)."""
    from pctfleet import ansiblecfg

    config = ansiblecfg.read()
    origin = "ANSIBLE_INVENTORY" if os.environ.get("ANSIBLE_INVENTORY") else config.path
    for source in config.inventory:
        if not source.exists():
            raise fail(f"{origin}: inventory {source} not found", exitcodes.BAD_OPTIONS)
    return list(config.inventory)


@dataclass
class Selection:
    panel: ClassVar[str] = SEL

    inventory: list[Path] | None = opt(
        "-i --inventory",
        "Inventory: a pctfleet or Ansible YAML file, an Ansible INI file, or a folder of them. "
        "Repeatable: Ansible inventories given several times are read in order, as one.",
        shown="ansible.cfg's inventory, or ANSIBLE_INVENTORY",
    )
    host: str | None = opt(
        "--host", "Ad hoc: a Proxmox node address (use with --ct).", autocompletion=complete_host
    )
    ct: str | None = opt(
        "--ct",
        "Ad hoc: container ids on --host, e.g. 200,201 or 200-205.",
        autocompletion=complete_ct,
    )
    limit: str | None = opt(
        "--limit -l",
        "Ansible host pattern: group, host, glob, ~regex, subscript, @file; also a node, "
        "node/ctid or ctid. '!x' excludes, '&x' intersects.",
        autocompletion=complete_limit,
    )
    vault_password_file: list[Path] | None = opt(
        "--vault-password-file",
        "Ansible Vault password: the file's text, or an executable's output. Repeatable.",
    )
    vault_id: list[str] | None = opt(
        "--vault-id", "LABEL@FILE, FILE, LABEL@prompt or prompt: a vault password. Repeatable."
    )
    ask_vault_pass: bool = flag("--ask-vault-pass", "Prompt for the vault password.")

    VAULT_FIELDS: ClassVar[tuple[str, ...]] = ("vault_password_file", "vault_id", "ask_vault_pass")

    def unlock(self) -> None:
        """Register the vault passwords before any inventory, playbook or vars file is read."""
        from pctfleet import ansiblecfg
        from pctfleet.playbook.vault import gather_secrets, set_vault_secrets

        files = list(self.vault_password_file or [])
        config = ansiblecfg.read()
        if config.vault_password_file is not None:  # added, as ansible-playbook adds it
            files.append(config.vault_password_file)
        listed = config.words("ANSIBLE_VAULT_IDENTITY_LIST", "defaults", "vault_identity_list")
        ids = [*(self.vault_id or []), *listed]
        set_vault_secrets(gather_secrets(files, ids, self.ask_vault_pass))

    def select(self, playbook_dir: Path | None = None):
        self.unlock()
        return select_containers(self.inventory, self.host, self.ct, self.limit, playbook_dir)


@dataclass
class Connection:
    panel: ClassVar[str] = CONN

    user: str | None = opt(
        "--user -u",
        "SSH user on the nodes. A non-root user runs 'sudo -n pct'.",
        shown="root, or ~/.ssh/config",
    )
    port: int | None = opt("--port", "SSH port.", min=1, max=65535, shown="22, or ~/.ssh/config")
    identity: str | None = opt(
        "--identity", "Private key file (ssh-agent and ~/.ssh keys are tried too)."
    )
    known_hosts: str | None = opt(
        "--known-hosts",
        "known_hosts file to check node keys against.",
        shown="/etc/ssh/ssh_known_hosts and ~/.ssh/known_hosts",
    )
    accept_new_host_keys: bool = flag(
        "--accept-new-host-keys",
        "Record unknown node keys (like OpenSSH accept-new). A changed key is always refused.",
    )
    timeout: float = opt("--timeout", "Seconds one remote command may take.", 600.0, min=0.1)
    connect_timeout: float = opt(
        "--connect-timeout",
        "Seconds to connect and authenticate (capped at --timeout).",
        10.0,
        min=0.1,
    )
    persist: float = opt(
        "--persist",
        "Keep each node's login this many seconds after the command, for the next "
        "command to reuse (like OpenSSH ControlPersist; 0: off). "
        "'pctfleet connections' lists them, --close ends them.",
        0.0,
        min=0.0,
        max=7 * 24 * 3600.0,  # a week; never "forever": a forgotten login still ends
        envvar="PCTFLEET_PERSIST",
    )

    def options(self) -> ConnectOptions:
        return ConnectOptions(
            user=self.user,
            port=self.port,
            identity=self.identity,
            known_hosts=self.known_hosts,
            accept_new_host_keys=self.accept_new_host_keys,
            connect_timeout=min(self.connect_timeout, self.timeout),
            command_timeout=self.timeout,
            persist=self.persist,
        )


CONNECTIONS = ("ssh", "local")


@dataclass
class Where:
    """How the hosts are reached: over SSH and pct (the default), or this machine itself."""

    panel: ClassVar[str] = CONN

    connection: str | None = opt(
        "--connection -c",
        "'ssh': containers on Proxmox nodes (SSH, pct exec). 'local': this machine, no "
        "inventory (host 'localhost' on node 'local', ctid 0; vars from the playbook and -e; "
        "a playbook's commands run in its folder, as with ansible-playbook -c local).",
        shown="ssh",
    )
    local: bool = flag("--local", "Short for --connection local.")

    @property
    def is_local(self) -> bool:
        if self.connection is not None and self.connection not in CONNECTIONS:
            raise fail(
                f"--connection: {self.connection!r} is not one of {', '.join(CONNECTIONS)}",
                exitcodes.BAD_OPTIONS,
            )
        if self.local and self.connection == "ssh":
            raise fail("--local means --connection local: give it or --connection ssh, not both",
                       exitcodes.BAD_OPTIONS)  # fmt: skip
        return self.local or self.connection == "local"

    def select(
        self, sel: Selection, conn: Connection | None = None, playbook_dir: Path | None = None
    ):
        """`sel.select()`, or this machine alone; an inventory or a container with it is refused.
        With `conn`, the selected containers' nodes are logged in to in the background."""
        if not self.is_local:
            inv, containers = sel.select(playbook_dir)
            if conn is not None:
                from pctfleet.transport.connections import start_logins

                start_logins(containers, conn.options())
            return inv, containers
        given = (
            ("-i", sel.inventory),
            ("--host", sel.host),
            ("--ct", sel.ct),
            ("--limit", sel.limit),
        )
        named = [name for name, value in given if value]
        if named:
            raise fail(
                f"--connection local works on this machine only: drop {', '.join(named)}",
                exitcodes.BAD_OPTIONS,
            )
        from pctfleet.inventory.load import with_var_files
        from pctfleet.inventory.local import local_inventory

        sel.unlock()  # vaulted playbook vars still need their password
        inventory = with_var_files(local_inventory(), [playbook_dir] if playbook_dir else [])
        return inventory, inventory.containers


@dataclass
class Run:
    """What of a playbook runs, and how."""

    tags: str | None = opt("--tags -t", "Only tasks with these tags (comma-separated).")
    skip_tags: str | None = opt("--skip-tags", "Skip tasks with these tags.")
    check: bool = flag("--check -C", "Change nothing; report what would change.")
    diff: bool = flag("--diff -D", "Show before/after of files and package versions.")
    extra_vars: list[str] | None = opt(
        "--extra-vars -e", "k=v, @file.yml or a JSON mapping; highest precedence."
    )
    roles_path: list[str] | None = opt(
        "--roles-path -r", "Folder of roles (repeatable), after roles/ next to the playbook."
    )
    force_handlers: bool = flag(
        "--force-handlers",
        "Run the notified handlers of a container even after a task failed there (a "
        "play's force_handlers wins).",
        shown="ansible.cfg's force_handlers, or ANSIBLE_FORCE_HANDLERS",
    )

    def run_options(self, **more):  # noqa: ANN003 - RunOptions' own fields
        from pctfleet import ansiblecfg
        from pctfleet.inventory import parse_extra_vars
        from pctfleet.run.engine import RunOptions

        given = {"check": self.check, "diff": self.diff, **more}
        given.setdefault("roles_path", self.roles_path or [])
        given.setdefault("force_handlers", self.force_handlers or ansiblecfg.read().force_handlers)
        tags, skip_tags = tag_sets(self.tags, self.skip_tags)
        return RunOptions(
            tags=tags,
            skip_tags=skip_tags,
            extra_vars=parse_extra_vars(self.extra_vars or []),
            **given,
        )


@dataclass
class Output:
    as_json: bool = flag("--json", "One JSON document on stdout.")
    verbose: int = opt(
        "--verbose -v",
        "More detail, and each running command's output; repeat for more: the count is "
        "ansible_verbosity (a debug task's `verbosity: 2` shows from -vv on).",
        0,
        count=True,
    )
    journal_dir: Path | None = opt(
        "--journal-dir", "Where run journals go.", shown="~/.local/state/pctfleet/runs"
    )
    keep: str = opt(
        "--keep",
        "Journals kept in --journal-dir when a run starts: a count (200) or days (30d).",
        "200",
    )


@dataclass
class Lock:
    lock_wait: float = opt(
        "--lock-wait",
        "Seconds to wait for another run's lock on a container before giving up on it.",
        300.0,
        min=0,
    )
    lock_lease: float = opt(
        "--lock-lease",
        "Seconds a run keeps a container's lock between two of its calls.",
        60.0,
        min=1,
        hidden=True,
    )


FORKS_HELP = (
    "At most this many containers at once over the whole fleet. Default: no global cap;"
    " each node runs up to its channel limit at once (inventory max_sessions, else 10)."
)
Forks = Annotated[int | None, typer.Option("--forks", "-f", min=1, help=FORKS_HELP)]
DEFAULT_PLAYBOOK = Path("playbooks/site.yml")


def default_playbook(playbook: Path) -> Path:
    """The default playbook is found in the working folder, else the one shipped with us."""
    if playbook != DEFAULT_PLAYBOOK or playbook.exists():
        return playbook
    shipped = Path(__file__).resolve().parent.parent / "data" / "playbooks" / "site.yml"
    return shipped if shipped.exists() else playbook
