"""The host side of GPU passthrough, as rules over one GPU container and its node.

Each rule answers like those in rules.py (ok True / False / None, evidence,
one-line fix). A container that needs no GPU (see driver.needs_gpu) gets none
of them, so a node without a driver is no error for it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pctfleet.cuda.driver import (
    CTL_MINOR,
    NVIDIA_MAJOR,
    NodeGpu,
    Passthrough,
    Userspace,
    assigned_gpus,
    min_driver,
    needs_gpu,
    passthrough,
)
from pctfleet.cuda.facts import version_tuple
from pctfleet.cuda.rules import RuleResult

RULES = ("gpu-node-driver", "nvidia-uvm", "gpu-devices", "gpu-devices-open", "driver-match",
         "driver-cuda")  # fmt: skip
CTL, UVM = "/dev/nvidiactl", "/dev/nvidia-uvm"


@dataclass
class HostSide:
    """One container's node as discovery read it: its driver facts and the CT's config."""

    node: str
    ctid: int
    gpu: NodeGpu | None = None  # None: the node could not be read
    config: tuple[tuple[str, str], ...] | None = None
    error: str | None = None

    def conf(self) -> str:
        return f"/etc/pve/lxc/{self.ctid}.conf on {self.node}"


def check_gpu(
    host: HostSide | None, variables: dict[str, Any], space: Userspace, want_cuda: str | None
) -> list[RuleResult]:
    """Every host-side rule for a GPU container; [] for any other container."""
    if host is None or not needs_gpu(host.config, variables):
        return []
    if host.gpu is None:
        said = f"{host.node} could not be read: {host.error or 'unknown error'}"
        return [RuleResult(rule, None, said) for rule in RULES]
    node, passed = host.gpu, passthrough(host.config or ())
    rules: list[Callable[[], RuleResult]] = [
        lambda: node_driver(host, node),
        lambda: nvidia_uvm(host, node),
        lambda: devices_passed(host, node, passed, variables.get("gpus")),
        lambda: devices_open(host, node, passed, space, variables.get("gpus")),
        lambda: driver_match(host, node, space),
        lambda: driver_cuda(host, node, want_cuda),
    ]
    return [rule() for rule in rules]


def node_driver(host: HostSide, node: NodeGpu) -> RuleResult:
    """The node has an NVIDIA kernel module loaded."""
    rule = "gpu-node-driver"
    if node.loaded:
        return RuleResult(
            rule, True, f"{host.node}: kernel module {node.module} ({node.module_from})"
        )
    if node.module:
        evidence = (
            f"{host.node}: driver {node.module} installed (modinfo) but its module is not loaded"
        )
        return RuleResult(rule, False, evidence, f"on {host.node}: modprobe nvidia")
    evidence = f"{host.node} has no NVIDIA kernel module (no /proc/driver/nvidia/version)"
    fix = f"install the NVIDIA driver on {host.node}, or move the container to a GPU node"
    return RuleResult(rule, False, evidence, fix)


def nvidia_uvm(host: HostSide, node: NodeGpu) -> RuleResult:
    """/dev/nvidia-uvm exists on the node: it is gone after a reboot until something loads it."""
    rule = "nvidia-uvm"
    if not node.loaded:
        return RuleResult(rule, None, f"{host.node} has no NVIDIA kernel module loaded")
    if UVM in node.devices:
        return RuleResult(rule, True, f"{host.node}: {UVM} ({node.devices[UVM]})")
    fix = (
        f"on {host.node}: nvidia-modprobe -u -c=0, and add nvidia-uvm to "
        "/etc/modules-load.d/nvidia.conf so it is there after a reboot"
    )
    return RuleResult(rule, False, f"{host.node} has no {UVM} (CUDA cannot start)", fix)


def needed(node: NodeGpu, gpus: Any, passed: Passthrough) -> list[str]:  # noqa: ANN401
    """The device nodes a GPU container needs: its GPUs, nvidiactl, nvidia-uvm.

    Its GPUs: those `gpus` assigns; with `gpus` unset, those its CT config already
    passes (one GPU per container is the usual setup); all of the node's for
    `gpus: all`, the nvidia hook, or a config that names no GPU.
    """
    indices = assigned_gpus(gpus)
    if indices is None and gpus is None and not passed.hook:
        indices = passed.gpu_indices() or None
    if indices is None:
        indices = [g.index for g in node.gpus] or sorted(
            int(p.removeprefix("/dev/nvidia")) for p in node.devices if p[11:].isdigit()
        )
    return [f"/dev/nvidia{i}" for i in indices or [0]] + [CTL, UVM]


def devices_passed(host: HostSide, node: NodeGpu, passed: Passthrough, gpus: Any) -> RuleResult:  # noqa: ANN401
    """The CT config passes every device node the container needs (and the cgroup allows it)."""
    rule = "gpu-devices"
    want = needed(node, gpus, passed)
    if passed.hook:
        return RuleResult(rule, True, f"the LXC nvidia hook passes the GPUs ({passed.lines[-1]})")
    missing = [d for d in want if d not in passed.devices]
    mounted = [d for d in want if passed.devices.get(d) == "lxc.mount.entry"]
    blocked = _blocked(node, passed, mounted)
    if not missing and not blocked:
        return RuleResult(rule, True, "passed: " + ", ".join(want))
    problems = [f"not passed: {', '.join(missing)}"] if missing else []
    problems += [
        f"no lxc.cgroup2.devices.allow for {d} (major {m}, minor {n})" for d, (m, n) in blocked
    ]
    fix = _devices_fix(host, passed, missing, blocked)
    return RuleResult(rule, False, "; ".join(problems), fix)


def _blocked(
    node: NodeGpu, passed: Passthrough, paths: list[str]
) -> list[tuple[str, tuple[int, int]]]:
    """The mounted device nodes whose major:minor no cgroup allow line covers."""
    numbers = node.numbers()
    found = []
    for path in paths:
        number = numbers.get(path) or _usual_number(path)
        if number and not passed.allows(*number):
            found.append((path, number))
    return found


def _usual_number(path: str) -> tuple[int, int] | None:
    # A device the node lacks: nvidiaN and nvidiactl have fixed numbers, nvidia-uvm's
    # major is dynamic (its absence is the nvidia-uvm rule's finding).
    if path == CTL:
        return NVIDIA_MAJOR, CTL_MINOR
    return (NVIDIA_MAJOR, int(path[11:])) if path[11:].isdigit() else None


def _devices_fix(
    host: HostSide,
    passed: Passthrough,
    missing: list[str],
    blocked: list[tuple[str, tuple[int, int]]],
) -> str:
    if passed.style == "lxc":
        lines = [f"lxc.mount.entry: {d} {d[1:]} none bind,optional,create=file" for d in missing]
    else:
        used = {int(k[3:]) for k, _ in host.config or () if k[3:].isdigit() and k.startswith("dev")}
        free = (n for n in range(256) if n not in used)
        lines = [f"dev{next(free)}: {d}" for d in missing]
    # A major the config allows nothing of gets the usual `M:*`; one partly allowed, its minors.
    partly = {int(m) for m, _ in passed.allowed if m.isdigit()}
    said = [f"{m}:{n}" if m in partly else f"{m}:*" for _, (m, n) in blocked]
    lines += [f"lxc.cgroup2.devices.allow: c {x} rwm" for x in dict.fromkeys(said)]
    return f"add to {host.conf()}: {'; '.join(lines)}; then pct reboot {host.ctid}"


def devices_open(
    host: HostSide,
    node: NodeGpu,
    passed: Passthrough,
    space: Userspace,
    gpus: Any,  # noqa: ANN401
) -> RuleResult:
    """Inside the container, every device node the config passes can be opened."""
    rule = "gpu-devices-open"
    want = [d for d in needed(node, gpus, passed) if d in passed.devices or passed.hook]
    if not space.devices and not want:
        return RuleResult(rule, None, "no NVIDIA device passed")
    bad = [
        f"{d} ({space.devices.get(d, 'absent')})" for d in want if space.devices.get(d) != "open"
    ]
    if not bad:
        return RuleResult(rule, True, "opens " + ", ".join(want))
    fix = (
        f"pct reboot {host.ctid} on {host.node} (passthrough applies at start); check {host.conf()}"
    )
    return RuleResult(rule, False, "cannot open " + ", ".join(bad), fix)


def driver_match(host: HostSide, node: NodeGpu, space: Userspace) -> RuleResult:
    """The container's userspace driver is the node's kernel module's version."""
    rule = "driver-match"
    if not node.module:
        return RuleResult(rule, None, f"{host.node} has no NVIDIA kernel module")
    have = space.versions()
    fix = (
        f"install the {node.module} userspace driver in the container "
        f"(NVIDIA-Linux-x86_64-{node.module}.run --no-kernel-module), or bind-mount {host.node}'s"
    )
    if not have and space.mounted:
        # A library bind-mounted from the node is the node's own file, even when
        # neither its name nor its strings tell the version.
        said = f"container loads {', '.join(space.mounted)}, bind-mounted from {host.node}"
        return RuleResult(rule, True, f"{said} (the node's own files; {node.module})")
    if not have:
        return RuleResult(rule, False, "no libcuda.so.<version> in the container", fix)
    wrong = {k: v for k, v in have.items() if v != node.module}
    shown = ", ".join(f"{k} {v}" for k, v in have.items())
    where = f" (bind-mounted: {', '.join(space.mounted)})" if space.mounted else ""
    evidence = f"container {shown}{where}; {host.node} kernel module {node.module}"
    return RuleResult(rule, not wrong, evidence, fix)


def driver_cuda(host: HostSide, node: NodeGpu, want_cuda: str | None) -> RuleResult:
    """The node's driver runs the CUDA release the toolchain pins (13.x needs >= 580)."""
    rule, need = "driver-cuda", min_driver(want_cuda)
    if not node.module or not need:
        return RuleResult(rule, None, f"driver {node.module}, CUDA {want_cuda}: nothing to compare")
    ok = version_tuple(node.module) >= version_tuple(need)
    evidence = f"{host.node} driver {node.module}; CUDA {want_cuda} needs >= {need}"
    return RuleResult(rule, ok, evidence, f"upgrade {host.node}'s NVIDIA driver to >= {need}")


def want_cuda(facts: Any, expected_toolkit: str | None = None) -> str | None:  # noqa: ANN401
    """The CUDA release the toolchain pins: the operator's, torch's, else nvcc's."""
    return (
        expected_toolkit
        or facts.torch_requires_cuda_toolkit
        or (facts.torch_cuda if facts.torch_cuda != "cpu" else None)
        or facts.nvcc_version
        or facts.versions.get("cuda-toolkit")
    )


def host_sides(found: list[Any], containers: list[Any]) -> dict[str, HostSide]:
    """Container key -> its node's facts and CT config, from discovery's `NodeFound`s."""
    nodes = {f.node.name: f for f in found}
    sides = {}
    for c in containers:
        read = nodes.get(c.node.name)
        if read is None:
            continue
        config = next((ct.config for ct in read.containers if ct.ctid == c.ctid), None)
        gpu = read.gpu if read.gpu is not None and not _unread(read) else None
        sides[c.key] = HostSide(c.node.name, c.ctid, gpu, config, read.error)
    return sides


def _unread(read: Any) -> bool:  # noqa: ANN401 - a NodeFound
    # Without its CT configs a node's GPU containers cannot be told from the others.
    return bool(read.error) and not read.containers


def audit_gpu(
    audits: list[Any], runs: list[Any], found: list[Any], inv: Any, containers: list[Any]
) -> None:  # noqa: ANN401, E501
    """Add the host-side rules' failures to each audit as drift, and its driver columns."""
    from pctfleet.cuda.audit import DriftItem
    from pctfleet.cuda.driver import userspace
    from pctfleet.cuda.facts import parse_toolchain

    sides = host_sides(found, containers)
    by_key = {c.key: c for c in containers}
    raw = {r.key: r.extra_facts.get("fingerprint", "") for r in runs}
    for audit in audits:
        side = sides.get(audit.container)
        if audit.container not in raw or not audit.fingerprint:
            continue
        facts = parse_toolchain(raw[audit.container])
        space = userspace(facts.raw)
        audit.driver = {"container": space.version or "", "node": _node_driver(side)}
        variables = inv.vars_for(by_key[audit.container], {}) if audit.container in by_key else {}
        for result in check_gpu(side, variables, space, want_cuda(facts)):
            if result.ok is False:
                item = DriftItem("gpu", result.rule, "ok", result.evidence, result.fix)
                audit.items.append(item)
                audit.status = "drift"


def _node_driver(side: HostSide | None) -> str:
    return (side.gpu.module or "none") if side and side.gpu else ""
