"""pctfleet against Ansible's proxmox_pct_remote and the floor, on one lab, in one run.

    .venv/bin/python bench/run.py                 # everything, about 35 minutes
    .venv/bin/python bench/run.py --no-ansible    # pctfleet, the floor and the simulation
    .venv/bin/python bench/run.py --runs 3 --no-sim --docs /tmp/b.md --readme -

Prints a table, writes the raw samples as JSON, regenerates
docs/benchmarks.md (every target marked met, missed or not measured) and the
marked headline block of README.md. Traffic goes only to the lab on
127.0.12.x. See bench/README.md for what is measured and how.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import importlib.util  # noqa: E402

import ansible_env  # noqa: E402
import benchlab  # noqa: E402
import interpreters  # noqa: E402
import simbench  # noqa: E402
import tables  # noqa: E402
from measure import Measured, measure  # noqa: E402

PYTHON = sys.executable
PLAYBOOK = HERE / "pctfleet_site.yml"
LATENCY_MS = 50  # each way, on every node
VERIFY_CHECKS = "server_port_listens or server_health_200"
CONVERGE_RUNS = 3
KEPT_TOOL = tables.KEPT_TOOL  # pctfleet with --persist: its logins kept between runs
KEPT_SECONDS = 900  # longer than any gap between two of its runs (Ansible's no-op included)
PAIRS = 3  # back-to-back floor/pctfleet no-op pairs per round and size
STARTUP_MODULE = HERE / "startup.py"  # measure(inventory, playbook, runs, known_hosts=) -> dict


@dataclass
class Sample:
    """One measured run of one tool in one scenario."""

    tool: str
    scenario: str
    wall_s: float
    cpu_s: float
    peak_tree_mb: float
    maxrss_mb: float
    exit_code: int
    logins: dict[str, int]  # SSH logins per node, from sshd's log
    sessions_per_ct: float  # SSH sessions (each one `pct` call) per container, from sshd's log
    calls: list[int] | None = None  # the tool's own count of pct exec per container
    changed: int | None = None  # containers the run reported as changed
    ok: bool = True
    note: str = ""
    pair: str = ""  # samples compared pair by pair (floor or Ansible, and pctfleet) share this
    containers: int = 0  # the size of the lab this ran on


@dataclass
class Bench:
    lab: benchlab.BenchLab
    runs: int
    samples: list[Sample] = field(default_factory=list)
    checks: list[dict] = field(default_factory=list)
    startups: dict[str, list[float]] = field(default_factory=dict)
    startup_probe: dict | None = None  # bench/startup.py's medians, when it exists
    probe_interpreters: dict | None = None  # Python starts in one container's no-op probe
    size: int = 0  # containers in the inventory the tools are run against now

    @property
    def inventory(self) -> Path:
        return self.lab.inventories.get(self.size, self.lab.inventory)

    def say(self, text: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)

    # -- one measured run ------------------------------------------------------------

    def sample(
        self,
        tool: str,
        scenario: str,
        argv: list[str],
        read: Callable[[Measured], dict],
        env: dict | None = None,
    ) -> Sample:
        before = self.lab.sshd_counts()
        result = measure(argv, env=env, cwd=ROOT)
        after = self.lab.sshd_counts()
        logins = {n: after[n]["logins"] - before[n]["logins"] for n in after}
        sessions = sum(after[n]["sessions"] - before[n]["sessions"] for n in after)
        parsed = read(result)
        sample = Sample(
            tool=tool,
            scenario=scenario,
            wall_s=round(result.wall_s, 3),
            cpu_s=round(result.cpu_s, 3),
            peak_tree_mb=round(result.peak_tree_mb, 1),
            maxrss_mb=round(result.maxrss_mb, 1),
            exit_code=result.exit_code,
            logins=logins,
            sessions_per_ct=round(sessions / (self.size or self.lab.containers()), 2),
            containers=self.size or self.lab.containers(),
            **parsed,
        )
        if not sample.ok:
            self.say(f"  {tool} {scenario}: NOT OK (exit {result.exit_code}) {sample.note}")
            tail = (result.stdout[-1500:] + "\n" + result.stderr[-1500:]).strip()
            print(tail, file=sys.stderr)
        self.say(
            f"  {tool:8} {scenario:13} {sample.containers} cts {sample.wall_s:7.2f}s wall "
            f"{sample.cpu_s:6.2f}s cpu "
            f"{sample.sessions_per_ct:5.1f} pct/ct {max(logins.values())} logins/node"
        )
        self.samples.append(sample)
        return sample

    # -- the tools -----------------------------------------------------------------

    def _pctfleet_common(self) -> list[str]:
        return ["-i", str(self.inventory), "--known-hosts", str(self.lab.info.known_hosts)]

    def pctfleet_run(self, scenario: str, kept: bool = False) -> Sample:
        """The playbook's run; `kept`: with --persist, on logins a keeper holds
        (the bench's own keeper, its socket under the lab's work folder)."""
        argv = [PYTHON, "-m", "pctfleet", "run", str(PLAYBOOK), *self._pctfleet_common()]
        argv += ["--json", "--journal-dir", str(self.lab.work / "runs")]
        read = no_change(read_pctfleet_run) if "noop" in scenario else read_pctfleet_run
        if not kept:
            return self.sample("pctfleet", scenario, argv, read)
        argv += ["--persist", str(KEPT_SECONDS)]
        return self.sample(KEPT_TOOL, scenario, argv, read, env=self.kept_env())

    def kept_env(self) -> dict:
        runtime = self.lab.work / "keeper"
        runtime.mkdir(mode=0o700, exist_ok=True)
        return {**os.environ, "XDG_RUNTIME_DIR": str(runtime)}

    def close_keeper(self) -> None:
        argv = [PYTHON, "-m", "pctfleet", "connections", "--close"]
        subprocess.run(argv, env=self.kept_env(), capture_output=True, timeout=60, check=False)

    def rekeep(self) -> None:
        """A new keeper whose logins take the way the next runs take: the latency relay
        sits in front of each node's sshd for new connections only, so a login kept
        from before it would skip the delay (and one made behind it dies with it)."""
        self.close_keeper()
        size, self.size = self.size, max(self.lab.inventories)  # every node
        self.pctfleet_run("setup", kept=True)
        self.size = size
        self.wait_kept(len(self.lab.node_names()))

    def wait_kept(self, nodes: int, seconds: float = 30.0) -> None:
        """Until the keeper holds every node: its logins happen after the run that asked
        for them, and would otherwise be counted in the next measured run's window."""
        argv = [PYTHON, "-m", "pctfleet", "connections", "--json"]
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            done = subprocess.run(argv, env=self.kept_env(), capture_output=True, text=True)
            kept = json.loads(done.stdout or "{}").get("kept") or []
            if sum(1 for item in kept if item.get("alive")) >= nodes:
                return
            time.sleep(0.2)
        self.say(f"  the keeper did not hold {nodes} nodes within {seconds:g} s")

    def pctfleet_audit(self) -> Sample:
        argv = [PYTHON, "-m", "pctfleet", "audit", *self._pctfleet_common()]
        argv += ["--playbook", str(PLAYBOOK), "--json"]
        argv += ["--baseline-file", str(self.lab.work / "baseline.json")]
        return self.sample("pctfleet", "audit", argv, read_pctfleet_audit)

    def pctfleet_verify(self) -> Sample:
        argv = [PYTHON, "-m", "pctfleet", "verify", *self._pctfleet_common()]
        argv += ["-k", VERIFY_CHECKS, "--json"]
        # verify reads its settings from inventory vars; the playbook's are play vars.
        argv += ["-e", "server_host=127.0.0.1", "-e", "server_pidfile=/run/bench/server.pid"]
        return self.sample("pctfleet", "verify", argv, read_pctfleet_verify)

    def floor(self, scenario: str) -> Sample:
        argv = [PYTHON, str(HERE / "floor.py"), str(self.inventory), str(PLAYBOOK)]
        argv.append(str(self.lab.info.known_hosts))
        return self.sample("floor", scenario, argv, read_floor)

    def ansible_run(self, scenario: str, env: dict) -> Sample:
        argv = ansible_env.playbook_argv(self.inventory)
        read = no_change(read_ansible) if "noop" in scenario else read_ansible
        # One fork per container: every container at once, as pctfleet does.
        env = {**env, "ANSIBLE_FORKS": str(self.size or self.lab.containers())}
        return self.sample("ansible", scenario, argv, read, env=env)

    def state_check(self, after: str) -> None:
        """The floor's checks, unmeasured: did the converge reach the declared state?"""
        import floor

        report = floor.run(self.lab.inventory, PLAYBOOK, str(self.lab.info.known_hosts))
        problems = {k: v["problems"] for k, v in report["containers"].items() if v["problems"]}
        self.checks.append({"after": after, "converged": not problems, "problems": problems})
        if problems:
            self.say(f"  state after {after}: NOT converged: {problems}")

    # -- the blocks ----------------------------------------------------------------

    def converge_rounds(self, aenv: dict | None) -> None:
        """First converges, each from the reset state; the floor's checks confirm each.

        No target rests on them, so CONVERGE_RUNS of them, not --runs.
        """
        for i in range(min(self.runs, CONVERGE_RUNS)):
            self.size = 0  # the whole lab
            self.say(f"first converge, round {i + 1}")
            self.lab.reset()
            self.pctfleet_run("converge")
            self.state_check("pctfleet converge")
            if aenv is not None:
                self.lab.reset()
                self.ansible_run("converge", aenv)
                self.state_check("ansible converge")

    def noop_rounds(self, aenv: dict | None) -> None:
        """Every tool's no-op side by side, round after round, per size, then behind latency.

        The containers hold pctfleet's converged state, which is converged for
        Ansible's playbook too (its server check is the same PID file), so the
        tools take turns and a burst of load on the machine hits them alike.
        pctfleet and the floor take a few seconds each, so they run in pairs,
        back to back, PAIRS times a round; Ansible and pctfleet make one pair a
        round, which goes first alternating. Ratios are taken pair by pair.
        """
        self.size = 0
        self.say("pctfleet converges the containers for the no-op rounds")
        self.pctfleet_run("setup")
        self.measure_startup_probe()
        self.measure_probe_interpreters()
        self.rekeep()
        for i in range(self.runs):
            for size in sorted(self.lab.inventories):
                self.size = size
                self.say(f"no-op, round {i + 1}/{self.runs}, {size} containers")
                self.measure_startup()
                self.paired("noop", i)
                if aenv is not None:
                    self.ansible_pair("noop", i, aenv)
                with self.lab.latency(LATENCY_MS):
                    self.rekeep()
                    self.paired("noop+latency", i)
                self.rekeep()
            self.size = 0
            self.pctfleet_audit()
            self.pctfleet_verify()
        self.close_keeper()
        self.samples = [s for s in self.samples if s.scenario != "setup"]

    def measure_startup(self) -> None:
        """Seconds to start each tool's interpreter and imports, doing nothing else."""
        for name, argv in STARTUP.items():
            self.startups.setdefault(name, []).append(round(measure(argv).wall_s, 3))

    def measure_startup_probe(self) -> None:
        """The CLI's time to its first SSH connect, by bench/startup.py where it exists."""
        module = load_startup()
        if module is None:
            self.say("bench/startup.py is not there: start-up to first connect not measured")
            return
        try:
            self.startup_probe = startup_result(
                module.measure(
                    self.lab.inventory, PLAYBOOK, self.runs, known_hosts=self.lab.info.known_hosts
                )
            )
        except Exception as exc:  # noqa: BLE001 - a broken probe is reported, not fatal
            self.startup_probe = {"error": f"{type(exc).__name__}: {exc}"}
        self.say(f"  start-up: {self.startup_probe}")

    def measure_probe_interpreters(self) -> None:
        """Python interpreters started in one converged container by a no-op run
        (bench/interpreters.py); the run itself is not a sample."""
        node = self.lab.info.nodes[0]
        host = benchlab.host_name(1, node.containers[0])
        common = [*self._pctfleet_common(), "--limit", host]

        def in_container(script: str) -> tuple[int, str]:
            argv = [PYTHON, "-m", "pctfleet", "exec", *common, "--", "sh", "-c", script]
            done = subprocess.run(
                argv, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL
            )
            return done.returncode, done.stdout if done.returncode == 0 else done.stderr

        def noop() -> None:
            argv = [PYTHON, "-m", "pctfleet", "run", str(PLAYBOOK), *common, "--json"]
            argv += ["--journal-dir", str(self.lab.work / "runs")]
            done = subprocess.run(
                argv, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL
            )
            summary = json.loads(done.stdout or "{}").get("summary") or {}
            if done.returncode != 0 or summary.get("changed"):
                raise RuntimeError(f"the no-op run was not one (exit {done.returncode})")

        try:
            starts = interpreters.count_starts(in_container, play_var("venv"), noop)
            self.probe_interpreters = {"container": host, "starts": starts}
        except Exception as exc:  # noqa: BLE001 - reported in the table, not fatal
            self.probe_interpreters = {"container": host, "error": f"{type(exc).__name__}: {exc}"}
        self.say(f"  python starts in {host}'s no-op probe: {self.probe_interpreters}")

    def paired(self, scenario: str, round_: int) -> None:
        for j in range(PAIRS):
            pair = f"floor/{scenario}/{self.size}/{round_}/{j}"
            self.floor(scenario).pair = pair
            self.pctfleet_run(scenario).pair = pair
            self.pctfleet_run(scenario, kept=True).pair = pair

    def ansible_pair(self, scenario: str, round_: int, aenv: dict) -> None:
        """Ansible and pctfleet back to back, pctfleet first in even rounds."""
        pair = f"ansible/{scenario}/{self.size}/{round_}"
        runs = [lambda: self.pctfleet_run(scenario), lambda: self.ansible_run(scenario, aenv)]
        for run in runs if round_ % 2 == 0 else runs[::-1]:
            run().pair = pair
        self.pctfleet_run(scenario, kept=True).pair = pair


def play_var(name: str) -> object:
    """A variable of the benchmark playbook's play, as its YAML sets it."""
    import yaml

    return yaml.safe_load(PLAYBOOK.read_text(encoding="utf-8"))[0]["vars"][name]


def load_startup():  # noqa: ANN201 - the module, or None
    """bench/startup.py, imported by path; None where it is not there."""
    if not STARTUP_MODULE.exists():
        return None
    spec = importlib.util.spec_from_file_location("startup", STARTUP_MODULE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def startup_result(result: dict) -> dict:
    """startup.measure's answer, in the keys tables.py reads (medians in seconds, runs)."""
    return {
        "import_s": result.get("import_s"),
        "first_connect_s": result.get("first_connect_s"),
        "first_exec_s": result.get("first_exec_s"),
        "runs": result.get("runs"),
    }


# -- reading each tool's output ----------------------------------------------------------


def _json(result: Measured) -> dict | None:
    try:
        return json.loads(result.stdout)
    except ValueError:
        return None


def read_pctfleet_run(result: Measured) -> dict:
    data = _json(result)
    if data is None:
        return {"ok": False, "note": "no JSON on stdout"}
    cts = data["containers"]
    changed = sum(1 for c in cts if c["status"] == "changed")
    ok = result.exit_code == 0 and all(c["status"] in {"ok", "changed"} for c in cts)
    return {"calls": [c["remote_calls"] for c in cts], "changed": changed, "ok": ok}


def no_change(read: Callable[[Measured], dict]) -> Callable[[Measured], dict]:
    """A no-op run is only a no-op when nothing changed."""

    def reader(result: Measured) -> dict:
        parsed = read(result)
        if parsed.get("changed"):
            parsed.update(ok=False, note=f"{parsed['changed']} container(s) changed")
        return parsed

    return reader


def read_pctfleet_audit(result: Measured) -> dict:
    data = _json(result)
    if data is None:
        return {"ok": False, "note": "no JSON on stdout"}
    cts = data["containers"]
    clean = all(c["status"] == "clean" for c in cts)
    return {"calls": [c["remote_calls"] for c in cts], "ok": result.exit_code == 0 and clean}


def read_pctfleet_verify(result: Measured) -> dict:
    data = _json(result)
    if data is None:
        return {"ok": False, "note": "no JSON on stdout"}
    passed = all(c["status"] == "passed" for c in data["containers"])
    return {"ok": result.exit_code == 0 and passed}


def read_floor(result: Measured) -> dict:
    data = _json(result)
    if data is None:
        return {"ok": False, "note": "no JSON on stdout"}
    cts = data["containers"].values()
    return {"calls": [c["calls"] for c in cts], "ok": result.exit_code == 0}


def read_ansible(result: Measured) -> dict:
    """PLAY RECAP: `host : ok=12 changed=0 unreachable=0 failed=0 ...` per host."""
    changed, hosts, bad = 0, 0, 0
    for line in result.stdout.splitlines():
        if " : ok=" not in line:
            continue
        fields = dict(part.split("=", 1) for part in line.split(" : ", 1)[1].split())
        hosts += 1
        changed += int(fields.get("changed", "0")) > 0
        bad += int(fields.get("failed", "0")) + int(fields.get("unreachable", "0"))
    ok = result.exit_code == 0 and hosts > 0 and bad == 0
    return {"changed": changed, "ok": ok, "note": "" if ok else f"{hosts} hosts, {bad} failed"}


# -- main ------------------------------------------------------------------------------


STARTUP = {
    "pctfleet_cli": [PYTHON, "-c", "from pctfleet.cli import main; main.app_for(['run'])"],
    "floor": [PYTHON, "-c", "import paramiko, yaml, jinja2, pctfleet.transport.pct"],
}


def write_readme(path: Path, document: dict) -> bool:
    """README.md's marked headline block from this run; False where the page has no block."""
    text = path.read_text(encoding="utf-8")
    if tables.HEADLINE_BEGIN not in text or tables.HEADLINE_END not in text:
        return False
    path.write_text(tables.splice_headline(text, document), encoding="utf-8")
    return True


def write_docs(path: Path, document: dict) -> None:
    """The page, keeping the sections other scripts wrote (bench/installers.py,
    bench/inventories.py: each measures on its own)."""
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    page = tables.markdown(document)
    for section in tables.kept_sections(old):
        page = tables.splice_section(page, section)
    path.write_text(page, encoding="utf-8")


def publish(args: argparse.Namespace, document: dict) -> None:
    """docs/benchmarks.md and README.md's headline block, unless '-'."""
    if str(args.docs) != "-":
        write_docs(args.docs, document)
        print(f"wrote {args.docs}", file=sys.stderr)
    if str(args.readme) != "-":
        done = write_readme(args.readme, document)
        print(f"{'wrote' if done else 'no headline markers in'} {args.readme}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="rounds of no-ops (>= 3)")
    parser.add_argument("--no-ansible", action="store_true", help="skip the Ansible side")
    parser.add_argument("--no-sim", action="store_true", help="skip the simulated fleet")
    parser.add_argument("--json", type=Path, default=benchlab.STATE_DIR / "bench/results.json")
    parser.add_argument(
        "--docs", type=Path, default=ROOT / "docs/benchmarks.md", help="'-' to skip"
    )
    parser.add_argument(
        "--readme", type=Path, default=ROOT / "README.md", help="headline block; '-' to skip"
    )
    parser.add_argument(
        "--render", type=Path, help="measure nothing: print and write docs from this JSON"
    )
    args = parser.parse_args(argv)
    if args.render:
        try:
            document = json.loads(args.render.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            parser.error(f"--render {args.render}: {exc}")
        print(tables.console(document))
        publish(args, document)
        return 0
    if args.runs < 3:
        parser.error("--runs must be at least 3 (each cell is a median)")
    started = time.monotonic()
    # As an installed package has it: with PYTHONDONTWRITEBYTECODE set (as some shells
    # and CI images do) an editable checkout would compile ~90 modules on every start.
    compileall.compile_dir(ROOT / "src/pctfleet", quiet=1)
    bench = Bench(benchlab.bring_up(say=lambda text: print(text, file=sys.stderr)), args.runs)
    versions = tables.versions()
    env = None
    if not args.no_ansible:
        ansible_env.ensure_venv(say=bench.say)
        ansible_env.write_lab_plugin()
        versions.update(ansible_env.versions())
        env = ansible_env.environment(bench.lab.work, bench.lab.info.known_hosts)
    bench.converge_rounds(env)
    bench.noop_rounds(env)
    simulation = []
    if not args.no_sim:
        bench.say("simulated fleet")
        simulation = simbench.curve(say=bench.say)
    document = {
        "machine": tables.machine(),
        "versions": versions,
        "settings": {
            "forks": "pctfleet: its default; ansible: one per container",
            "latency_ms": LATENCY_MS,
            "bytecode": "compiled before measuring (compileall), as an installed package has it",
            "runs": args.runs,
            "pairs": PAIRS,
            "sizes": {str(n): n // benchlab.CONTAINERS for n in bench.lab.inventories},
        },
        "startup": {k: statistics.median(v) for k, v in bench.startups.items()},
        "startup_probe": bench.startup_probe,
        "probe_interpreters": bench.probe_interpreters,
        "samples": [asdict(s) for s in bench.samples],
        "state_checks": bench.checks,
        "simulation": simulation,
        "seconds": round(time.monotonic() - started, 1),
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    print(tables.console(document))
    publish(args, document)
    bench.say(f"wrote {args.json}")
    failed = [s for s in bench.samples if not s.ok] + [
        c for c in bench.checks if not c["converged"]
    ]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
