"""A Fabric-shaped Python API: `Container(node, ctid).run(cmd)` and `Fleet.run(cmd)`.

    from pctfleet import Container, Fleet
    print(Container("pve1", 200, identity="~/.ssh/pve").run("nvidia-smi").stdout)

A Container is a Proxmox node reached over SSH plus a container id on it;
commands run through `pct exec` as POSIX shell lines. Containers of one node
built by a Fleet share that node's single SSH connection.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pctfleet.inventory import load_inventory
from pctfleet.run.adhoc import ExecOutcome, OutputPlan, run_exec
from pctfleet.transport.base import Target
from pctfleet.transport.connections import build_fleet
from pctfleet.transport.files import pull, push
from pctfleet.transport.options import ConnectOptions
from pctfleet.transport.pct import PctTarget
from pctfleet.transport.ssh import NodeConnection


@dataclass(frozen=True)
class Result:
    """One command in one container. `status` is ok, failed, unreachable, ct-missing,
    ct-stopped or timeout; `exited` is None when the command never finished."""

    container: str
    command: str
    status: str
    exited: int | None
    stdout: str = ""
    stderr: str = ""
    reason: str = ""
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def return_code(self) -> int | None:  # Fabric's name for it
        return self.exited


def _result(command: str, outcome: ExecOutcome) -> Result:
    return Result(
        container=outcome.container,
        command=command,
        status=outcome.status,
        exited=outcome.exit_code,
        stdout=outcome.stdout.decode("utf-8", errors="replace"),
        stderr=outcome.stderr.decode("utf-8", errors="replace"),
        reason=outcome.reason or outcome.status,
        message=outcome.message,
    )


class _Limited(Target):
    """A target whose commands get `timeout` seconds (status `timeout` past it)."""

    def __init__(self, target: Target, timeout: float | None) -> None:
        self.target, self.timeout, self.name = target, timeout, target.name

    @property
    def node_key(self) -> str:
        return self.target.node_key

    @property
    def session_limit(self) -> int:
        return self.target.session_limit

    def _run(self, argv, stdin, timeout, sinks, *, read_only=False):  # noqa: ANN001, ANN202
        limit = timeout if timeout is not None else self.timeout
        return self.target._run(argv, stdin, limit, sinks, read_only=read_only)


def _run_all(
    targets: Sequence[Target], command: str, timeout: float | None, forks: int | None
) -> list[Result]:
    """Results in target order; a target that could not run says why in its status."""
    limited = [_Limited(t, timeout) for t in targets]
    outcomes = run_exec(limited, ["/bin/sh", "-c", command], None, OutputPlan("collect"), forks)
    return [_result(command, o) for o in outcomes]


class Container:
    """Container `ctid` on the Proxmox node at `host` (an address or ~/.ssh/config alias)."""

    def __init__(
        self,
        host: str,
        ctid: int,
        *,
        user: str | None = None,
        port: int | None = None,
        identity: str | None = None,
        known_hosts: str | None = None,
        accept_new_host_keys: bool = False,
        connect_timeout: float = 10.0,
    ) -> None:
        options = ConnectOptions(
            user=user,
            port=port,
            identity=identity,
            known_hosts=known_hosts,
            accept_new_host_keys=accept_new_host_keys,
            connect_timeout=connect_timeout,
        )
        self._target = PctTarget(NodeConnection(host, host, options), ctid)
        self.name = self._target.name

    @classmethod
    def _wrap(cls, target: PctTarget) -> Container:
        self = cls.__new__(cls)
        self._target, self.name = target, target.name
        return self

    def run(self, command: str, *, timeout: float | None = None) -> Result:
        """Run a shell command line. A failing command, a lost node or a missing
        container never raises: check `.ok` and `.status`."""
        return _run_all([self._target], command, timeout, 1)[0]

    def put(self, local: str | Path, remote: str, *, mode: str = "0644") -> None:
        """Copy a local file to `remote` in the container, atomically, checked by sha256.
        Raises pctfleet.transport.base.TransportError (its `.reason` says why)."""
        push(self._target, Path(local), remote, mode=mode)

    def get(self, remote: str, local: str | Path) -> Path:
        """Copy `remote` from the container to `local`, atomically, checked by sha256."""
        return pull(self._target, remote, Path(local))

    def close(self) -> None:
        self._target.node.close()

    def __enter__(self) -> Container:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Fleet:
    """Many containers, one SSH connection per node, commands in parallel."""

    def __init__(self, containers: Sequence[Container], forks: int | None = None) -> None:
        self.containers = list(containers)
        self.forks = forks
        self._pool = None  # the shared node connections, when built from an inventory

    @classmethod
    def from_inventory(
        cls,
        path: str | Path | Sequence[str | Path],
        limit: str | None = None,
        *,
        forks: int | None = None,
        vault_password_file: str | Path | None = None,
        **connect: object,
    ) -> Fleet:
        """The inventory's containers (or those `limit` selects, as --limit does);
        several paths are read as one inventory, as several -i are.
        `connect` takes Container's keyword options and wins over the inventory.
        `vault_password_file` opens vault-encrypted values and group_vars/host_vars
        files, as --vault-password-file does."""
        if vault_password_file is not None:
            from pctfleet.playbook.vault import gather_secrets, set_vault_secrets

            set_vault_secrets(gather_secrets([Path(vault_password_file)], [], False))
        selected = load_inventory(path).select(limit)
        built = build_fleet(selected, ConnectOptions(**connect))  # type: ignore[arg-type]
        fleet = cls([Container._wrap(t) for t in built.targets], forks)
        fleet._pool = built.pool
        return fleet

    def run(self, command: str, *, timeout: float | None = None) -> dict[str, Result]:
        """Run a shell command line in every container; results by `node/ctid`."""
        targets = [c._target for c in self.containers]
        results = _run_all(targets, command, timeout, self.forks)
        return {r.container: r for r in results}

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
        else:
            for container in self.containers:
                container.close()

    def __enter__(self) -> Fleet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
