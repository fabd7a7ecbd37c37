"""The local lab: Proxmox-like nodes (sshd + pct) and real LXC containers.

`Lab.up()` brings the lab to its declared state (everything defined exists
and runs), `Lab.down()` removes what the lab started, and the fault methods
break things for real so tests can watch the product cope.
"""

from __future__ import annotations

import fcntl
import ipaddress
import json
import re
import shutil
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import pctfleet.lab.containers as cts
import pctfleet.lab.nodes as nd
import pctfleet.lab.pct as pct_lab
from pctfleet.lab.containers import Container
from pctfleet.lab.inventory import render_inventory
from pctfleet.lab.model import (
    DEFAULT_STATE_DIR,
    ContainerStatus,
    LabError,
    LabInfo,
    LabStatus,
    NodeInfo,
    NodeStatus,
    inside,
)
from pctfleet.lab.nodes import Node
from pctfleet.lab.rootfs import CACHE_DIR, DEFAULT_RECIPE, Recipe, ensure_rootfs
from pctfleet.lab.system import check_host, run, tool, write_if_changed

DEFAULT_ADDRESS_BASE = "127.0.10"
DEFAULT_PORT = 22
FIRST_CTID = 200
# Server ports are 30000 + node*100 + (ctid-200): CTIDs beyond this range collide.
CTID_RANGE = range(FIRST_CTID, FIRST_CTID + 100)
STATE_VERSION = 1

Layout = list[tuple[Node, list[Container]]]


def _quiet(_msg: str) -> None:
    pass


class Lab:
    """A lab rooted at `state_dir`; nodes are `<address_base>.1`, `.2`, ..."""

    def __init__(
        self,
        state_dir: Path = DEFAULT_STATE_DIR,
        address_base: str | None = None,
        port: int | None = None,
        *,
        rootfs_cache: Path = CACHE_DIR,
        say: Callable[[str], None] = _quiet,
    ) -> None:
        self.state_dir = Path(state_dir).absolute()
        # Unset means: whatever the existing lab in state_dir uses, else the default.
        try:
            existing = self._load_state() or {}
        except LabError:
            existing = {}  # a corrupt lab.json must not stand in the way of `down`
        self.address_base = address_base or existing.get("address_base", DEFAULT_ADDRESS_BASE)
        self.port = port or existing.get("port", DEFAULT_PORT)
        self.rootfs_cache = rootfs_cache
        self.say = say
        self._validate_address_base()

    # --- paths -----------------------------------------------------------------

    identity = inside("state_dir", "id_ed25519")
    known_hosts = inside("state_dir", "known_hosts")
    inventory = inside("state_dir", "inventory.yml")
    state_file = inside("state_dir", "lab.json")
    lxcpath = inside("state_dir", "lxc")

    def _validate_address_base(self) -> None:
        try:
            first = ipaddress.IPv4Address(f"{self.address_base}.1")
        except ValueError:
            raise LabError(
                f"address base {self.address_base!r} must be three octets, like 127.0.10"
            ) from None
        if not first.is_loopback:
            # The lab only ever listens on (and tests only ever connect to) 127/8.
            raise LabError(f"address base {self.address_base!r} is not in 127.0.0.0/8")

    # --- model -------------------------------------------------------------------

    def _node(self, index: int) -> Node:
        return Node(index, f"{self.address_base}.{index}", self.port, self.state_dir)

    def _container(self, node: Node, ctid: int, recipe: Recipe = DEFAULT_RECIPE) -> Container:
        return Container(node.index, ctid, self.lxcpath, recipe)

    def _load_state(self) -> dict[str, Any] | None:
        try:
            return json.loads(self.state_file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except ValueError as exc:
            raise LabError(f"{self.state_file} is corrupt ({exc}); run `lab down`") from None

    def _layout(self) -> Layout:
        state = self._load_state()
        if state is None:
            raise LabError(f"no lab in {self.state_dir}; run `pctfleet lab up` first")
        return layout_of(state, self.state_dir, self.lxcpath)

    def _find(self, node: str) -> tuple[Node, list[int]]:
        found, ctids = self._find_node(node)
        return found, [ct.ctid for ct in ctids]

    def _find_node(self, node: str) -> tuple[Node, list[Container]]:
        for candidate, ctids in self._layout():
            if candidate.name == node:
                return candidate, ctids
        raise LabError(f"no node named {node!r} in the lab at {self.state_dir}")

    def _find_ct(self, node: str, ctid: int) -> Container:
        _, found = self._find_node(node)
        for ct in found:
            if ct.ctid == ctid:
                return ct
        raise LabError(f"{node} has no container {ctid} (it has {[c.ctid for c in found]})")

    @contextmanager
    def _locked(self) -> Iterator[None]:
        # Outside state_dir, because `down` deletes state_dir.
        lock = self.state_dir.with_name(f".{self.state_dir.name}.lock")
        lock.parent.mkdir(parents=True, exist_ok=True)
        with open(lock, "w") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            yield

    # --- up ----------------------------------------------------------------------

    def up(
        self,
        nodes: int = 2,
        containers: int = 2,
        suite: str = "bookworm",
        init: str = "minimal",
    ) -> LabInfo:
        """Make every defined node and container exist and run; add missing ones.

        `suite` and `init` are for the containers this call creates; existing
        ones keep the flavour recorded in lab.json.
        """
        if not 1 <= nodes <= 254 or not 1 <= containers <= 100:
            raise LabError("nodes must be 1..254 and containers 1..100")
        recipe = Recipe(suite, init)
        check_host()
        with self._locked():
            state = self._load_state()
            self._check_compatible(state)
            if state:
                nodes = max(nodes, len(state["nodes"]))
                containers = max(containers, per_node(state))
            layout = planned_layout(state, self, nodes, containers, recipe)
            self._ensure_client_key()
            for node, found in layout:
                self._up_node(node, found)
            return self._write_outputs(layout, containers)

    def _check_compatible(self, state: dict[str, Any] | None) -> None:
        if state is None:
            return
        if state.get("address_base") != self.address_base or state.get("port") != self.port:
            raise LabError(
                f"the lab in {self.state_dir} uses {state.get('address_base')}.N port "
                f"{state.get('port')}; run `pctfleet lab down` before changing that"
            )

    def _ensure_client_key(self) -> None:
        self.state_dir.mkdir(mode=0o755, parents=True, exist_ok=True)
        if not self.identity.exists():
            cmd = [tool("ssh-keygen"), "-q", "-t", "ed25519", "-N", "", "-C", "pctfleet-lab"]
            run([*cmd, "-f", str(self.identity)])
        self.identity.chmod(0o600)

    def _up_node(self, node: Node, found: list[Container]) -> None:
        pub = self.identity.with_suffix(".pub")
        if nd.ensure_files(node, self.lxcpath, pub):
            nd.reload_sshd(node)
        for ct in found:
            self._up_container(node, ct)
        if nd.lacks_root_bashrc(node):
            nd.stop_listener(node)  # its sessions stay up; the new one binds the file
        nd.start_sshd(node)

    def _up_container(self, node: Node, ct: Container) -> None:
        cts.ensure_defined(ct, ensure_rootfs(self.rootfs_cache, self.say, ct.recipe))
        nd.ensure_ct_config(node, ct)
        cts.start(ct)
        cts.wait_booted(ct)

    def _info(self, layout: Layout) -> LabInfo:
        return LabInfo(
            state_dir=self.state_dir,
            inventory=self.inventory,
            identity=self.identity,
            known_hosts=self.known_hosts,
            nodes=[NodeInfo(n.name, n.address, n.port, [c.ctid for c in cs]) for n, cs in layout],
        )

    def _write_outputs(self, layout: Layout, containers: int) -> LabInfo:
        info = self._info(layout)
        hosts = "".join(f"{n.address} {nd.host_public_key(n)}\n" for n, _ in layout)
        write_if_changed(self.known_hosts, hosts)
        flavours = {(n.name, c.ctid): c.recipe for n, cs in layout for c in cs}
        write_if_changed(self.inventory, render_inventory(info, self.port, flavours))
        state = {
            "version": STATE_VERSION,
            "address_base": self.address_base,
            "port": self.port,
            "lxcpath": str(self.lxcpath),
            "rootfs": str(self.rootfs_cache / DEFAULT_RECIPE.name),
            "containers_per_node": containers,
            "nodes": [self._node_record(n, c) for n, c in layout],
        }
        write_if_changed(self.state_file, json.dumps(state, indent=2) + "\n")
        return info

    def _node_record(self, node: Node, found: list[Container]) -> dict[str, Any]:
        return {
            "name": node.name,
            "index": node.index,
            "address": node.address,
            "port": node.port,
            "sshd_pidfile": str(node.pidfile),
            "sshd_pid": node.sshd_pid(),
            "sshd_config": str(node.config_for(node.port)),
            "relay_pidfile": str(node.relay_pidfile),
            "containers": [c.ctid for c in found],
            "lxc_names": {str(c.ctid): c.name for c in found},
            "flavours": {
                str(c.ctid): {"suite": c.recipe.suite, "init": c.recipe.init} for c in found
            },
        }

    # --- extra containers --------------------------------------------------------

    def add_container(
        self, node: str, ctid: int, suite: str = "bookworm", init: str = "minimal"
    ) -> ContainerStatus:
        """Add one container of the given flavour to `node` (a no-op if it exists as asked)."""
        recipe = Recipe(suite, init)
        if ctid not in CTID_RANGE:
            raise LabError(
                f"CTID {ctid} is outside {CTID_RANGE.start}..{CTID_RANGE.stop - 1}, the range "
                "whose server ports (30000 + node*100 + ctid-200) cannot collide"
            )
        check_host()
        with self._locked():
            state = self._load_state()
            if state is None:
                raise LabError(f"no lab in {self.state_dir}; run `pctfleet lab up` first")
            layout = layout_of(state, self.state_dir, self.lxcpath)
            where = next((pair for pair in layout if pair[0].name == node), None)
            if where is None:
                raise LabError(f"no node named {node!r} in the lab at {self.state_dir}")
            found_node, found = where
            ct = check_addable(node, found, self._container(found_node, ctid, recipe))
            if ct not in found:
                found.append(ct)
                found.sort(key=lambda c: c.ctid)
            self._up_container(found_node, ct)
            self._write_outputs(layout, per_node(state))
            return container_status(ct)

    def restart_container(self, node: str, ctid: int) -> None:
        """A clean shutdown (systemd runs its stop jobs) and a fresh boot."""
        ct = self._find_ct(node, ctid)
        cts.stop(ct)
        cts.start(ct)
        cts.wait_booted(ct)

    @property
    def info(self) -> LabInfo:
        """What the last `up` made, read back from lab.json."""
        return self._info(self._layout())

    # --- status ------------------------------------------------------------------

    def status(self) -> LabStatus:
        state = self._load_state()
        if state is None:
            return LabStatus(self.state_dir, exists=False)
        result = LabStatus(self.state_dir, exists=True)
        for node, ctids in self._layout():
            pid = node.sshd_pid()
            node_status = NodeStatus(
                node.name, node.address, node.port, pid is not None, pid, nd.relay_mode(node)
            )
            for ct in ctids:
                node_status.containers.append(container_status(ct))
            result.nodes.append(node_status)
        return result

    # --- down --------------------------------------------------------------------

    def down(self) -> None:
        """Stop only what the lab started (PID files, lxc-stop) and remove state_dir.

        The rootfs cache and the pip cache are kept.
        """
        with self._locked():
            if not self.state_dir.exists():
                return
            for node in self._nodes_on_disk():
                nd.stop_relay(node)
                nd.stop_everything(node)
            # lxc-stop takes about half a second per container however fast
            # init exits, so stop them side by side.
            found = self._containers_on_disk()
            with ThreadPoolExecutor(max_workers=8) as pool:
                list(pool.map(self._stop_quietly, found))
            still_running = [ct.name for ct in found if cts.state(ct) == "running"]
            if still_running:
                raise LabError(f"could not stop {still_running}; state kept in {self.state_dir}")
            shutil.rmtree(self.state_dir)

    @staticmethod
    def _stop_quietly(ct: Container) -> None:
        # Failures surface through the state check that follows.
        with suppress(LabError):
            cts.stop(ct)

    def _nodes_on_disk(self) -> list[Node]:
        # From the directories, not lab.json, so a half-made lab is cleaned up too.
        found = []
        for path in self.state_dir.glob("node*"):
            m = re.fullmatch(r"node(\d+)", path.name)
            if m and path.is_dir():
                found.append(self._node(int(m.group(1))))
        return found

    def _containers_on_disk(self) -> list[Container]:
        found = []
        for path in self.lxcpath.glob("pctfleet-n*-*"):
            m = re.fullmatch(r"pctfleet-n(\d+)-(\d+)", path.name)
            if m and (path / "config").exists():
                found.append(Container(int(m.group(1)), int(m.group(2)), self.lxcpath))
        return found

    # --- faults ------------------------------------------------------------------

    def stop_container(self, node: str, ctid: int) -> None:
        cts.stop(self._find_ct(node, ctid))

    def start_container(self, node: str, ctid: int) -> None:
        cts.start(self._find_ct(node, ctid))

    def kill_sshd(self, node: str) -> None:
        """Kill the node's sshd listener and its live sessions (SIGKILL)."""
        nd.kill_sshd(self._find(node)[0])

    def start_sshd(self, node: str) -> None:
        nd.start_sshd(self._find(node)[0])

    @contextmanager
    def hang(self, node: str) -> Iterator[None]:
        """While inside: connections to the node are accepted and get no bytes."""
        with self._behind_relay(node, "hang", 0):
            yield

    @contextmanager
    def latency(self, node: str, ms: int) -> Iterator[None]:
        """While inside: every chunk to and from the node's sshd waits `ms` ms."""
        if ms < 0:
            raise LabError("latency must be >= 0 ms")
        with self._behind_relay(node, "delay", ms):
            yield

    @contextmanager
    def max_sessions(self, node: str, sessions: int) -> Iterator[None]:
        """While inside: the node's sshd opens at most `sessions` channels on one
        connection (MaxSessions), as a hardened node's may; then the lab's 10 again."""
        with self.sshd_setting(node, "MaxSessions", str(sessions)):
            yield

    @contextmanager
    def sshd_setting(self, node: str, keyword: str, value: str) -> Iterator[None]:
        """While inside: the node's sshd says `keyword value`, as a node whose admin
        set it does (a `Banner`, a lower `MaxSessions`); then the lab's own again.
        Both of its configs say so (the one behind a fault relay too), first, as sshd
        takes a keyword's first value."""
        if not keyword.isalnum() or "\n" in value:
            raise LabError(f"not an sshd_config setting: {keyword!r} {value!r}")
        found, _ = self._find(node)
        configs = [found.config_for(port) for port in (found.port, found.private_port())]
        texts = [config.read_text() for config in configs]
        for config, text in zip(configs, texts, strict=True):
            config.write_text(f"{keyword} {value}\n{text}")
        nd.reload_sshd(found)
        try:
            yield
        finally:
            for config, text in zip(configs, texts, strict=True):
                config.write_text(text)
            nd.reload_sshd(found)

    @contextmanager
    def root_bashrc(self, node: str, text: str) -> Iterator[None]:
        """While inside: root's ~/.bashrc on the node says `text` (every command the
        node's sshd runs reads it first, as on a node whose admin added a greeting
        there); then a fresh Proxmox node's again."""
        found, _ = self._find(node)
        nd.set_root_bashrc(found, text)
        try:
            yield
        finally:
            nd.set_root_bashrc(found, nd.ROOT_BASHRC)

    @contextmanager
    def pct_crashes(self, node: str, times: int) -> Iterator[None]:
        """While inside: the node's next `times` `pct exec` calls die before they enter
        their container, as LXC 5.0's lxc-attach does when sealing its memfd copy of
        itself fails (its message, then SIGABRT); then none."""
        found, _ = self._find(node)
        path = found.dir / pct_lab.CRASHES_FILE
        path.write_text(str(times), encoding="ascii")
        try:
            yield
        finally:
            path.unlink(missing_ok=True)

    def pct_crashes_left(self, node: str) -> int:
        """How many armed crashes of `pct_crashes` have not happened yet."""
        found, _ = self._find(node)
        path = found.dir / pct_lab.CRASHES_FILE
        return int(path.read_text(encoding="ascii") or 0) if path.exists() else 0

    @contextmanager
    def _behind_relay(self, name: str, mode: str, ms: int) -> Iterator[None]:
        node, _ = self._find(name)
        if nd.relay_pid(node) is not None:
            raise LabError(f"{name} already has a fault relay in front of its sshd")
        # sshd moves to a private port with the same host key, so known_hosts
        # still matches whatever answers on the public port.
        nd.stop_listener(node)
        try:
            nd.start_sshd(node, node.private_port())
            nd.start_relay(node, mode, ms)
            yield
        finally:
            nd.stop_relay(node)
            nd.stop_listener(node)
            nd.start_sshd(node)

    # --- convenience ---------------------------------------------------------------

    def ssh_args(self, node: str) -> list[str]:
        """OpenSSH client argv (without the remote command) for root on `node`."""
        found, _ = self._find(node)
        return [
            "ssh",
            "-i", str(self.identity),
            "-o", f"UserKnownHostsFile={self.known_hosts}",
            "-o", "StrictHostKeyChecking=yes",
            "-o", "BatchMode=yes",
            "-o", "ConnectTimeout=5",
            "-p", str(found.port),
            f"root@{found.address}",
        ]  # fmt: skip


# --- lab.json -> model ------------------------------------------------------------


def recipe_of(record: dict[str, Any], ctid: int) -> Recipe:
    """A container's flavour from its node record; labs from before flavours are bookworm."""
    flavour = record.get("flavours", {}).get(str(ctid), {})
    return Recipe(flavour.get("suite", "bookworm"), flavour.get("init", "minimal"))


def layout_of(state: dict[str, Any], state_dir: Path, lxcpath: Path) -> Layout:
    layout: Layout = []
    for n in state["nodes"]:
        node = Node(n["index"], n["address"], n["port"], state_dir)
        found = [Container(node.index, c, lxcpath, recipe_of(n, c)) for c in n["containers"]]
        layout.append((node, found))
    return layout


def per_node(state: dict[str, Any]) -> int:
    """How many containers `up` gives each node (extra ones from `add` not counted)."""
    if "containers_per_node" in state:
        return int(state["containers_per_node"])
    return max(len(n["containers"]) for n in state["nodes"])


def planned_layout(
    state: dict[str, Any] | None, lab: Lab, nodes: int, containers: int, recipe: Recipe
) -> Layout:
    """Every node 1..nodes with CTs 200.. plus what lab.json already has, flavours kept."""
    known = layout_of(state, lab.state_dir, lab.lxcpath) if state else []
    existing = {n.name: cs for n, cs in known}
    layout: Layout = []
    for index in range(1, nodes + 1):
        node = lab._node(index)
        kept = {c.ctid: c for c in existing.get(node.name, [])}
        for ctid in range(FIRST_CTID, FIRST_CTID + containers):
            kept.setdefault(ctid, Container(index, ctid, lab.lxcpath, recipe))
        layout.append((node, [kept[c] for c in sorted(kept)]))
    return layout


def check_addable(node: str, found: list[Container], wanted: Container) -> Container:
    """The container to bring up: `wanted`, or the same one already there.

    An existing CTID of another flavour is an error, never recreated: its upper
    layer may hold work."""
    for ct in found:
        if ct.ctid != wanted.ctid:
            continue
        if ct.recipe != wanted.recipe:
            have, want = ct.recipe, wanted.recipe
            raise LabError(
                f"{node} already has CT {ct.ctid} as {have.suite}/{have.init}, not "
                f"{want.suite}/{want.init}; pick another CTID"
            )
        return ct
    return wanted


def container_status(ct: Container) -> ContainerStatus:
    return ContainerStatus(
        ct.ctid, ct.name, ct.hostname, cts.state(ct), ct.recipe.suite, ct.recipe.init
    )
