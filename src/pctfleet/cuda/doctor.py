"""Why would flashinfer's JIT fail here? A diagnosis that changes nothing.

Two round trips per container: one reads every toolchain fact (with the
server's own environment file) and the tail of the server's log; the second
compiles and links the probe with the toolchain the facts found.
"""

from __future__ import annotations

import base64
import shlex
from dataclasses import dataclass, field

from pctfleet.cuda.compile_probe import ProbeResult, parse_probe, probe_script
from pctfleet.cuda.driver import userspace
from pctfleet.cuda.facts import PIP_NAMES, ToolchainFacts, parse_toolchain, toolchain_snippet
from pctfleet.cuda.gpu_rules import HostSide, check_gpu, host_sides, want_cuda
from pctfleet.cuda.known_errors import Finding, scan
from pctfleet.cuda.rules import RuleResult, check, verdict
from pctfleet.cuda.stale import Stale, parse_stale, stale_snippet
from pctfleet.facts import script as framing
from pctfleet.jsonfields import json_fields, plain
from pctfleet.sh import snippet
from pctfleet.transport.base import Target, TransportError

LOG_LINES = 3000
COMPONENTS = tuple(name for name in PIP_NAMES if name != "ninja")


@dataclass
class DoctorRequest:
    venv: str = "/opt/sglang"
    arch: str | None = None  # None: the GPU's, else sm_120
    cuda_toolkit: str | None = None  # None: what torch pins, if torch is there
    env_file: str | None = "/etc/pctfleet/sglang.env"
    server_log: str | None = "/var/log/pctfleet/sglang.log"
    run_probe: bool = True
    site: dict = field(default_factory=dict)  # inventory vars: the server's port and PID file
    host: HostSide | None = None  # the container's node, as discovery read it


@dataclass
class Diagnosis:
    container: str
    status: str = "ok"  # ok | problem | unreachable | ct-missing | ct-stopped | timeout
    message: str = ""
    arch: str = ""
    facts: ToolchainFacts | None = None
    rules: list[RuleResult] = field(default_factory=list)
    probe: ProbeResult | None = None
    findings: list[Finding] = field(default_factory=list)
    verdict: str = ""
    remote_calls: int = 0
    stale: Stale = field(default_factory=Stale)
    host: HostSide | None = None

    @property
    def healthy(self) -> bool:
        return self.status == "ok"

    def components(self) -> dict[str, str | None]:
        facts = self.facts or ToolchainFacts()
        found = {name: facts.versions.get(name) for name in COMPONENTS}
        found.update(
            {
                "nvcc (binary)": facts.nvcc_version,
                "ptxas (binary)": facts.ptxas_version,
                "cicc (PTX header)": facts.cicc_release,
                "CUDART_VERSION": facts.cudart_version,
                "ptxas max PTX": facts.ptxas_max_ptx,
                "CCCL (toolkit)": facts.cccl_version,
                "CCCL (flashinfer)": facts.flashinfer_cccl_version,
                "torch.version.cuda": facts.torch_cuda,
                "driver": facts.driver_version,
                "driver (container libraries)": userspace(facts.raw).version,
                "driver (node kernel module)": self.host.gpu.module
                if self.host and self.host.gpu
                else None,
                "driver CUDA": facts.driver_cuda,
                "GPU compute capability": facts.gpu_cc,
                "g++": facts.gxx_version,
                "ninja": facts.ninja_version,
            }
        )
        return found

    def as_json(self) -> dict:
        found = json_fields(
            self,
            "container status healthy message verdict arch cuda_home components rules probe "
            "findings remote_calls",
            cuda_home=self.facts.cuda_home if self.facts else None,
            components=self.components(),
        )
        if self.host and self.host.gpu:
            found["node"] = {"node": self.host.node, "gpu": self.host.gpu.as_json()}
        if self.stale.processes:
            found["stale_processes"] = [h.to_dict() for h in self.stale.processes]
        if self.stale.cache:
            found["stale_cache"] = plain(self.stale.cache)
        return found


def diagnose(target: Target, request: DoctorRequest) -> Diagnosis:
    """Read, judge, compile: the whole diagnosis of one container."""
    result = Diagnosis(target.name, host=request.host)
    try:
        facts, log, env, result.stale = _read(target, request)
        _judge_reading(result, facts, log, request)
        if request.run_probe and facts.nvcc_version and facts.cuda_home:
            result.probe = _compile(target, facts, result.arch, env)
            result.findings += [
                f
                for f in scan(result.probe.log)
                if f.cause not in {x.cause for x in result.findings}
            ]
    except TransportError as exc:
        result.status, result.message = exc.status, exc.message
        return result
    finally:
        result.remote_calls = target.calls
    _judge(result)
    return result


def _judge_reading(result: Diagnosis, facts: ToolchainFacts, log: str, request) -> None:  # noqa: ANN001
    result.facts = facts
    result.arch = request.arch or _gpu_arch(facts) or "sm_120"
    expected = request.cuda_toolkit or facts.torch_requires_cuda_toolkit
    result.rules = check(facts, arch=result.arch, expected_toolkit=expected)
    space, want = userspace(facts.raw), want_cuda(facts, expected)
    result.rules += check_gpu(request.host, request.site, space, want)
    result.findings = scan(log)


def judge_read(
    container: str, facts: ToolchainFacts, log: str, stale: Stale, request: DoctorRequest
) -> Diagnosis:
    """The verdict from facts another command already read (no compile probe, no call)."""
    result = Diagnosis(container, stale=stale)
    _judge_reading(result, facts, log, request)
    _judge(result)
    return result


def _read(target: Target, request: DoctorRequest) -> tuple[ToolchainFacts, str, dict, Stale]:
    """One call: toolchain facts, the server log's tail and environment file, what is stale."""
    site = {**request.site, "venv": request.venv}
    facts = toolchain_snippet(request.venv, env_file=request.env_file)
    snippets = {"facts": facts + snippet("gpu_userspace")}
    snippets["stale"] = stale_snippet(site)
    if request.server_log:
        snippets["log"] = snippet("file_b64", FILE=request.server_log, TAIL_LINES=LOG_LINES)
    if request.env_file:
        snippets["env"] = snippet("file_b64", FILE=request.env_file, TAIL_LINES="")
    output = framing.run_probe(target, snippets)
    facts = parse_toolchain(output["facts"].output if "facts" in output else "")
    stale = parse_stale(output["stale"].output if "stale" in output else "")
    return facts, _decoded(output.get("log")), _env_values(_decoded(output.get("env"))), stale


def _decoded(fact) -> str:  # noqa: ANN001
    if fact is None or not fact.output.strip():
        return ""
    return base64.b64decode(fact.output.strip()).decode("utf-8", "replace")


def _compile(target: Target, facts: ToolchainFacts, arch: str, env: dict) -> ProbeResult:
    script = probe_script(facts.cuda_home, arch, facts.flashinfer_cccl, "/tmp", env=env)
    return parse_probe(target.run(["/bin/sh", "-c", script], stdin=b"", timeout=600).text())


def _env_values(text: str) -> dict[str, str]:
    """KEY=VALUE lines of the server's environment file (what the probe should see)."""
    values = {}
    for line in text.splitlines():
        key, sep, raw = line.partition("=")
        # A value computed when sourced ($CUDA_HOME, $(...)) is not known here: left out.
        plain = "$" not in raw and not line.lstrip().startswith("#")
        if sep and key.strip().isidentifier() and plain:
            try:
                words = shlex.split(raw)  # the file is sourced by sh: values are quoted
            except ValueError:
                words = [raw.strip()]
            values[key.strip()] = " ".join(words)
    return values


def _gpu_arch(facts: ToolchainFacts) -> str | None:
    """`12.0` from nvidia-smi is sm_120; `9.0` is sm_90."""
    if not facts.gpu_cc or "." not in facts.gpu_cc:
        return None
    major, minor = facts.gpu_cc.split(".", 1)
    return f"sm_{major}{minor}"


def _judge(result: Diagnosis) -> None:
    failing = [r for r in result.rules if r.ok is False]
    probe_failed = result.probe is not None and not (
        result.probe.compile_ok and result.probe.link_ok
    )
    stale = result.stale.lines()
    if failing or probe_failed or result.findings or stale:
        result.status = "problem"
    result.verdict = verdict(result.rules)
    if result.verdict == "healthy" and probe_failed:
        result.verdict = "the compile probe failed: " + (
            result.findings[0].cause if result.findings else "see its log"
        )
    elif result.verdict == "healthy" and result.findings:
        result.verdict = f"the server log shows: {result.findings[0].cause}"
    elif result.verdict == "healthy" and stale:
        result.verdict = stale[0]


def _host_sides(containers: list, connect, forks: int | None) -> dict[str, HostSide]:  # noqa: ANN001
    """Each node's driver facts and CT configs: one discovery command per node.

    This machine (`--local`) has no node to ask: discovery would log in over SSH
    and run pct, which --local promises never to do."""
    from pctfleet.inventory.discover import read_nodes
    from pctfleet.inventory.local import LocalNode

    on_nodes = [c for c in containers if not isinstance(c.node, LocalNode)]
    nodes = list({c.node.name: c.node for c in on_nodes}.values())
    return host_sides(read_nodes(nodes, connect, forks), on_nodes)


def request_for(variables: dict, overrides: dict, host: HostSide | None = None) -> DoctorRequest:
    """Inventory vars first (the same ones site.yml uses), command-line values on top."""
    request = DoctorRequest(
        host=host,
        venv=str(variables.get("venv", "/opt/sglang")),
        env_file=variables.get("server_env_file", DoctorRequest.env_file),
        server_log=variables.get("server_log", DoctorRequest.server_log),
        arch=variables.get("gpu_arch"),
        site=dict(variables),
    )
    for key, value in overrides.items():
        if value is not None:
            setattr(request, key, value)
    return request


def run_doctor(inventory, containers: list, connect, overrides: dict, forks: int | None) -> list:  # noqa: ANN001, E501
    """Diagnose each container in parallel (`--local`'s host through a LocalTarget)."""
    from pctfleet.run.scheduler import map_targets
    from pctfleet.transport.connections import build_fleet

    sides = _host_sides(containers, connect, forks)
    fleet = build_fleet(containers, connect)
    requests = {
        id(t): request_for(inventory.vars_for(c, {}), overrides, sides.get(c.key))
        for c, t in zip(containers, fleet.targets, strict=True)
    }
    try:
        return map_targets(fleet.targets, lambda t: diagnose(t, requests[id(t)]), forks)
    finally:
        fleet.close()
