"""The checks that prove playbooks/site.yml's end state, for testinfra.

Run them with `pctfleet verify -i INVENTORY`, or as plain pytest against any
testinfra host: `pytest --hosts='pct://root@pve1?container=200' tests/infra`
(`local://` works too, from inside a container).

Every fact the checks need is read by ONE script, in one call per container
(`gather`); each check (`test_*.py`) judges its part with a function here
that returns a `Verdict`. The shell pieces are the playbook modules' own
(`pctfleet_toolchain_id`, `pctfleet_tree_hash`, the toolchain snippet), so
verify computes exactly what provisioning recorded. The sections are
src/pctfleet/sh/verify_*.sh.

    >>> verdict_jit(Gathered.parse({"jit": "toolchain=ab\\nstamp0=ab"}, ["/c"]))
    Verdict(ok=True, message='1 cache folder(s) stamped for toolchain ab')
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pctfleet.cuda.facts import ToolchainFacts, parse_toolchain, toolchain_snippet
from pctfleet.cuda.rules import check as toolchain_rules
from pctfleet.facts import script as framing
from pctfleet.facts.kv import decode_pairs, encode_lines
from pctfleet.modules.base import Fact
from pctfleet.modules.cccl import MANIFEST
from pctfleet.modules.jitcache import STAMP, cache_dirs
from pctfleet.modules.toolchain import DEFAULT_TOOLKIT
from pctfleet.sh import snippet

# The rules that make a toolchain "matched" (metadata and binaries agree).
TOOLCHAIN_RULES = (
    "toolkit-pinned",
    "nvcc-ptxas",
    "nvcc-cicc",
    "nvcc-cudart",
    "ptx-isa",
    "no-stray-headers",
    # flashinfer's prefill JIT includes curand_kernel.h (through cutlass).
    "curand-headers",
)
SERVER_ENV = ("CUDA_HOME", "FLASHINFER_WORKSPACE_BASE")
ANY_ADDRESS = {"", "0.0.0.0", "::", "*"}


@dataclass
class Verdict:
    ok: bool
    message: str


def repairable(problem: str, tags: str) -> Verdict:
    """A failed verdict naming the provision run that repairs it."""
    return Verdict(False, f"{problem} (fix: provision --tags {tags})")


def check(verdict_of: Callable[[Gathered], Verdict], doc: str) -> Callable[..., None]:
    """A fleet check (a pytest test): judge the host's facts with `verdict_of`.

    The message is noted whether the check passes or not, so `pctfleet verify
    --json` shows what each check saw.
    """

    def test(facts: Gathered, note: Callable[[str], None]) -> None:
        verdict = verdict_of(facts)
        note(verdict.message)
        if not verdict.ok:
            raise AssertionError(verdict.message)

    test.__doc__ = doc
    return test


# -- the one script ---------------------------------------------------------------


def health_url(settings: Mapping[str, str]) -> str:
    """Where the server answers from inside its container (site.yml's ready_url)."""
    host = str(settings["server_host"])
    if host in ANY_ADDRESS:
        host = "127.0.0.1"
    elif ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{int(settings['server_port'])}/health"


def gather_script(settings: Mapping[str, str]) -> str:
    """One sh script printing every fact the checks need, framed per section."""
    venv = str(settings["venv"])
    # Like the playbook's tasks: CUDA_HOME found from the venv, not given.
    folders = cache_dirs({"workspace_base": settings["flashinfer_workspace_base"]})
    server = {
        "PF": settings["server_pidfile"],
        "ENVFILE": settings["server_env_file"],
        "PORT": int(settings["server_port"]),
        "URL": health_url(settings),
        "VENV": venv,
    }
    sections = {
        "toolchain": toolchain_snippet(venv, env_file=settings["server_env_file"]),
        "links": snippet("verify_links", VENV=venv),
        "cccl": snippet("verify_cccl", VENV=venv, MANIFEST=MANIFEST),
        "jit": snippet("verify_jit", argv=[f"{f}/{STAMP}" for f in folders], VENV=venv),
        "server": snippet("verify_server", argv=list(SERVER_ENV), **server),
    }
    return framing.build_script(sections)


# -- what the script printed ----------------------------------------------------------


@dataclass
class Gathered:
    """The facts of one container, by section, and what they were read with."""

    sections: dict[str, Fact]
    settings: dict[str, str] = field(default_factory=dict)
    cache_folders: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @classmethod
    def parse(
        cls,
        outputs: Mapping[str, str],
        folders: list[str],
        settings: Mapping[str, str] | None = None,
    ) -> Gathered:
        """From plain `key=value` section outputs, encoded as `pf_kv` prints them; for tests."""
        sections = {name: Fact(encode_lines(text), 0) for name, text in outputs.items()}
        return cls(sections, dict(settings or {}), list(folders))

    def fields(self, section: str) -> dict[str, str]:
        fact = self.sections.get(section)
        if fact is None:
            raise MissingFacts(f"the fact script printed nothing for '{section}'")
        return fact.fields()

    def lines(self, section: str, key: str) -> list[str]:
        """Every value of a key that may repeat (one `listen=` line per socket)."""
        self.fields(section)
        return [value for name, value in decode_pairs(self.sections[section].output) if name == key]

    def toolchain(self) -> ToolchainFacts:
        self.fields("toolchain")
        return parse_toolchain(self.sections["toolchain"].output)


class MissingFacts(RuntimeError):
    """The fact script did not get through (a section missing): no verdict possible."""


def gather(host: Any, settings: Mapping[str, str]) -> Gathered:
    """Run the script in the host's container (one call on pct://) and frame its output."""
    script = gather_script(settings)
    started = time.monotonic()
    backend = host.backend
    if hasattr(backend, "run_script"):
        result = backend.run_script(script)
    else:
        result = host.run("/bin/sh -c %s", script)
    text = result.stdout_bytes.decode("utf-8", errors="replace")
    sections = framing.parse_output(text, framing.nonce_of(script))
    if not sections:
        detail = result.stderr_bytes.decode("utf-8", errors="replace").strip()[-300:]
        raise MissingFacts(f"the fact script failed (exit {result.rc}): {detail or 'no output'}")
    folders = cache_dirs({"workspace_base": settings["flashinfer_workspace_base"]})
    return Gathered(sections, dict(settings), folders, time.monotonic() - started)


# -- verdicts, one per check --------------------------------------------------------------


def expected_toolkit(settings: Mapping[str, str], facts: ToolchainFacts) -> str:
    """What cuda_toolchain installs: the pinned version, else torch's, else its default."""
    wanted = str(settings.get("cuda_toolkit") or "auto")
    if wanted != "auto":
        return wanted
    return facts.torch_requires_cuda_toolkit or DEFAULT_TOOLKIT


def verdict_toolchain(gathered: Gathered) -> Verdict:
    facts = gathered.toolchain()
    want = expected_toolkit(gathered.settings, facts)
    results = [
        r
        for r in toolchain_rules(facts, arch=None, expected_toolkit=want)
        if r.rule in TOOLCHAIN_RULES
    ]
    # Unknown is not matched: a check that cannot read a version proves nothing.
    bad = [r for r in results if r.ok is not True]
    if bad:
        first = bad[0]
        state = "unknown" if first.ok is None else "mismatch"
        more = f" (+{len(bad) - 1} more)" if len(bad) > 1 else ""
        fix = f"; fix: {first.fix}" if first.fix else ""
        return Verdict(False, f"{first.rule} {state}: {first.evidence}{more}{fix}")
    return Verdict(
        True,
        f"cuda-toolkit {facts.versions.get('cuda-toolkit', want)}: nvcc {facts.nvcc_version}, "
        f"ptxas {facts.ptxas_version}, cicc {facts.cicc_release}, CUDART {facts.cudart_version}, "
        f"PTX {facts.ptx_version} <= {facts.ptxas_max_ptx}; no stray headers; cuRAND headers",
    )


def verdict_links(gathered: Gathered) -> Verdict:
    found = gathered.fields("links")
    home = found.get("cuda_home", "?")
    problems = []
    if "dir:lib64" not in found:
        problems.append(f"{home}/lib64 is not a folder ({_shown(found, 'lib64')})")
    for name in ("lib64/libcudart.so", "lib64/stubs/libcuda.so"):
        if f"file:{name}" not in found:
            problems.append(f"{name} does not resolve to a file ({_shown(found, name)})")
    problems += _driver_problems(found)
    if problems:
        return repairable("; ".join(problems), "links")
    note = " (no driver: pctfleet's symbol-less stub)" if found.get("fallback") else ""
    shown = ", ".join(_shown(found, n) for n in ("lib64", "lib64/libcudart.so"))
    return Verdict(
        True, f"{shown}, stubs/libcuda.so -> {found['real:lib64/stubs/libcuda.so']}{note}"
    )


def _shown(found: Mapping[str, str], name: str) -> str:
    link = found.get(f"link:{name}")
    if link is None:
        return f"{name} missing" if f"real:{name}" not in found else f"{name} (a real file)"
    return f"{name} -> {link}"


def _driver_problems(found: Mapping[str, str]) -> list[str]:
    """With a driver visible, the stub must be the driver's libcuda, not the fallback."""
    driver = found.get("driver_real")
    stub = found.get("real:lib64/stubs/libcuda.so")
    if not driver or not stub or stub == driver:
        return []
    return [f"stubs/libcuda.so resolves to {stub}, not the driver's {driver}"]


def verdict_cccl(gathered: Gathered) -> Verdict:
    found = gathered.fields("cccl")
    where = found.get("dst", "include/cccl")
    if "manifest" not in found:
        return repairable(f"no overlay manifest in {where}", "overlay")
    try:
        manifest = json.loads(base64.b64decode(found["manifest"]))
    except ValueError:
        return Verdict(False, f"{where}/{MANIFEST} is not valid JSON")
    recorded, actual = manifest.get("tree_hash"), found.get("tree_hash")
    tree = str(actual)[:16]
    if recorded != actual:
        changed = f"tree hash {tree}, manifest says {str(recorded)[:16]}"
        return repairable(f"{where} changed since the overlay: {changed}", "overlay")
    version, cccl = found.get("version"), manifest.get("cccl_version")
    if version and cccl not in (None, version):
        return Verdict(False, f"CCCL_VERSION is {version}, manifest says {cccl}")
    return Verdict(True, f"CCCL {cccl} from {manifest.get('source')}, tree hash {tree} as recorded")


def verdict_jit(gathered: Gathered) -> Verdict:
    found = gathered.fields("jit")
    toolchain = found.get("toolchain", "")
    stale = []
    for index, folder in enumerate(gathered.cache_folders):
        stamp = found.get(f"stamp{index}")
        if stamp != toolchain:
            stale.append(f"{folder}: {'no stamp' if stamp is None else 'built for ' + stamp}")
    if not toolchain or stale:
        stamped = f"JIT cache stale for toolchain {toolchain or '(unknown)'}: {'; '.join(stale)}"
        return repairable(stamped, "cache")
    return Verdict(
        True, f"{len(gathered.cache_folders)} cache folder(s) stamped for toolchain {toolchain}"
    )


@dataclass
class ServerProcess:
    pid: str | None
    state: str | None
    argv: list[str]
    environ: dict[str, str]


def server_process(gathered: Gathered) -> ServerProcess:
    found = gathered.fields("server")
    argv = _b64(found.get("cmdline")).split("\0")
    environ = dict(
        item.split("=", 1) for item in _b64(found.get("environ")).split("\0") if "=" in item
    )
    return ServerProcess(found.get("pid"), found.get("state"), [a for a in argv if a], environ)


def _b64(value: str | None) -> str:
    return base64.b64decode(value or "").decode("utf-8", errors="replace")


def verdict_server_pid(gathered: Gathered) -> Verdict:
    pidfile = gathered.settings.get("server_pidfile", "the PID file")
    proc = server_process(gathered)
    if proc.pid is None:
        return repairable(f"no PID file {pidfile}", "server")
    if not proc.pid.isdigit() or proc.state is None:
        return Verdict(False, f"pid {proc.pid!r} from {pidfile} is not running (stale PID file)")
    if proc.state == "Z":
        return Verdict(False, f"pid {proc.pid} is a zombie")
    if not _flashinfer_attention(proc.argv):
        command = " ".join(proc.argv)[:200]
        return Verdict(
            False, f"pid {proc.pid} runs without --attention-backend flashinfer: {command}"
        )
    problems = _env_problems(proc.environ, _env_file(gathered))
    if problems:
        return Verdict(False, f"pid {proc.pid}: " + "; ".join(problems))
    shown = ", ".join(f"{k}={proc.environ[k]}" for k in SERVER_ENV)
    return Verdict(True, f"pid {proc.pid} with --attention-backend flashinfer, {shown}")


def _flashinfer_attention(argv: list[str]) -> bool:
    pairs = zip(argv, argv[1:], strict=False)
    return "--attention-backend=flashinfer" in argv or (
        ("--attention-backend", "flashinfer") in pairs
    )


def _env_file(gathered: Gathered) -> dict[str, str]:
    found = gathered.fields("server")
    return {name: _b64(found[f"file_{name}"]) for name in SERVER_ENV if f"file_{name}" in found}


def _env_problems(environ: Mapping[str, str], env_file: Mapping[str, str]) -> list[str]:
    problems = []
    for name in SERVER_ENV:
        value = environ.get(name)
        if not value:
            problems.append(f"{name} not in its environment")
        elif env_file.get(name) not in (None, value):
            # The file was changed after launch: the server runs with the old value.
            problems.append(f"{name}={value}, but the env file says {env_file[name]}")
    return problems


def verdict_port(gathered: Gathered) -> Verdict:
    port = gathered.settings.get("server_port", "?")
    listeners = [line.split(" ") for line in gathered.lines("server", "listen")]
    if not listeners:
        return Verdict(False, f"nothing listens on port {port}")
    pid = gathered.fields("server").get("pid", "")
    for entry in listeners:
        _, owner, sid = (entry + ["", ""])[:3]
        if owner and pid and pid not in (owner, sid):
            return Verdict(False, f"port {port} is held by pid {owner}, not the server (pid {pid})")
    owners = sorted({entry[1] for entry in listeners if len(entry) > 1 and entry[1]})
    held = f" by pid {', '.join(owners)}" if owners else ""
    return Verdict(True, f"port {port} listens{held}")


def verdict_health(gathered: Gathered) -> Verdict:
    found = gathered.fields("server")
    url = health_url(gathered.settings)
    status = found.get("health", "0")
    if status == "200":
        return Verdict(True, f"GET {url} -> 200")
    body = found.get("health_body", "")
    if status == "0":
        return Verdict(False, f"GET {url} failed: {body}")
    return Verdict(False, f"GET {url} -> {status} {body[:80]}".rstrip())
