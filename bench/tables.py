"""The benchmark's results as a console table and as docs/benchmarks.md."""

from __future__ import annotations

import os
import platform
import statistics
import time
from importlib import metadata

SCENARIOS = ["converge", "noop", "noop+latency", "audit", "verify"]
TOOLS = ["pctfleet", "ansible", "floor"]
NOOP_TARGET = 40.0  # Ansible's no-op wall time over pctfleet's, at least
FLOOR_TARGET = 1.5  # pctfleet's no-op wall time over the floor's, at most
SIM_MEMORY_MB = 200.0


def machine() -> dict:
    model = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "nproc": os.cpu_count(),
        "cpu_model": model or platform.processor(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "date": time.strftime("%Y-%m-%d %H:%M %Z"),
    }


def versions() -> dict[str, str]:
    found = {}
    for name in ("pctfleet", "paramiko"):
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "?"
    return found


# -- summaries ---------------------------------------------------------------------------


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def summarize(samples: list[dict]) -> dict[tuple[str, str], dict]:
    """(tool, scenario) -> medians of wall, CPU, memory, logins per node, pct calls per ct."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for sample in samples:
        groups.setdefault((sample["tool"], sample["scenario"]), []).append(sample)
    summary = {}
    for key, group in groups.items():
        calls = [c for s in group for c in (s["calls"] or [])]
        summary[key] = {
            "n": len(group),
            "ok": all(s["ok"] for s in group),
            "wall_s": _median([s["wall_s"] for s in group]),
            "wall_min": min(s["wall_s"] for s in group),
            "wall_max": max(s["wall_s"] for s in group),
            "cpu_s": _median([s["cpu_s"] for s in group]),
            "peak_mb": _median([s["peak_tree_mb"] for s in group]),
            "logins": _median([max(s["logins"].values()) for s in group]),
            "sessions": _median([s["sessions_per_ct"] for s in group]),
            "calls_max": max(calls) if calls else None,
            "changed": _median([s["changed"] for s in group if s["changed"] is not None] or [0]),
        }
    return summary


def paired_ratios(samples: list[dict]) -> dict[str, float]:
    """scenario -> median over back-to-back pairs of pctfleet's wall time / the floor's."""
    pairs: dict[str, dict[str, float]] = {}
    for sample in samples:
        if sample.get("pair"):
            pairs.setdefault(sample["pair"], {})[sample["tool"]] = sample["wall_s"]
    by_scenario: dict[str, list[float]] = {}
    for key, walls in pairs.items():
        if walls.get("floor") and walls.get("pctfleet"):
            scenario = key.split("/")[0]
            by_scenario.setdefault(scenario, []).append(walls["pctfleet"] / walls["floor"])
    return {k: round(statistics.median(v), 2) for k, v in by_scenario.items()}


def ratios(summary: dict, samples: list[dict] | None = None) -> dict[str, float | None]:
    paired = paired_ratios(samples or [])

    def wall(tool: str, scenario: str) -> float | None:
        entry = summary.get((tool, scenario))
        return entry["wall_s"] if entry else None

    def div(a: float | None, b: float | None) -> float | None:
        return round(a / b, 2) if a and b else None

    return {
        "ansible_over_pctfleet_noop": div(wall("ansible", "noop"), wall("pctfleet", "noop")),
        "ansible_over_pctfleet_noop_latency": div(
            wall("ansible", "noop+latency"), wall("pctfleet", "noop+latency")
        ),
        "ansible_over_pctfleet_converge": div(
            wall("ansible", "converge"), wall("pctfleet", "converge")
        ),
        "pctfleet_over_floor_noop": paired.get("noop")
        or div(wall("pctfleet", "noop"), wall("floor", "noop")),
        "pctfleet_over_floor_noop_latency": paired.get("noop+latency")
        or div(wall("pctfleet", "noop+latency"), wall("floor", "noop+latency")),
        "gap_noop_s": _gap(wall("ansible", "noop"), wall("pctfleet", "noop")),
        "gap_noop_latency_s": _gap(
            wall("ansible", "noop+latency"), wall("pctfleet", "noop+latency")
        ),
    }


def _gap(a: float | None, b: float | None) -> float | None:
    return round(a - b, 2) if a is not None and b is not None else None


def targets(document: dict) -> list[tuple[str, str, str]]:
    """(target, measured, verdict) for each target of the benchmark."""
    summary = summarize(document["samples"])
    r = ratios(summary, document["samples"])
    rows = []
    noop = r["ansible_over_pctfleet_noop"]
    if noop is not None:
        verdict = (
            "met" if noop >= NOOP_TARGET else f"missed: {noop / NOOP_TARGET:.0%} of the target"
        )
        rows.append((f"no-op: Ansible / pctfleet >= {NOOP_TARGET:g}x", f"{noop:g}x", verdict))
    floor = r["pctfleet_over_floor_noop"]
    if floor is not None:
        verdict = "met" if floor <= FLOOR_TARGET else f"missed by {floor - FLOOR_TARGET:.2f}x"
        measured = f"{floor:g}x (median of back-to-back pairs)"
        rows.append((f"no-op: pctfleet / floor <= {FLOOR_TARGET:g}x", measured, verdict))
    entry = summary.get(("pctfleet", "noop"))
    if entry and entry["calls_max"] is not None:
        one = entry["calls_max"] == 1 and entry["sessions"] == 1
        measured = f"{entry['calls_max']} (tool), {entry['sessions']:g} (sshd)"
        rows.append(("pct exec per converged container = 1", measured, "met" if one else "missed"))
    lat = r["ansible_over_pctfleet_noop_latency"]
    if lat is not None and noop is not None:
        grows = r["gap_noop_latency_s"] > r["gap_noop_s"]
        measured = (
            f"gap {r['gap_noop_s']:g}s -> {r['gap_noop_latency_s']:g}s; ratio {noop:g}x -> {lat:g}x"
        )
        rows.append(
            ("with +latency the gap to Ansible grows", measured, "met" if grows else "missed")
        )
    sim = document.get("simulation") or []
    if sim:
        rows += _sim_targets(sim)
    return rows


def _sim_targets(sim: list[dict]) -> list[tuple[str, str, str]]:
    rows = []
    for mode in ("noop", "audit"):
        points = sorted((p for p in sim if p["mode"] == mode), key=lambda p: p["containers"])
        if len(points) < 2:
            continue
        small, big = points[-2], points[-1]
        scale = big["containers"] / small["containers"]
        growth = big["cpu_s"] / small["cpu_s"] if small["cpu_s"] else float("nan")
        linear = growth <= scale * 1.3
        rows.append(
            (
                f"simulation {mode}: controller CPU grows linearly",
                f"x{growth:.1f} CPU for x{scale:g} containers",
                "met" if linear else "missed",
            )
        )
        peak = big["peak_mb"]
        rows.append(
            (
                f"simulation {mode}: memory < {SIM_MEMORY_MB:g} MB at {big['containers']}",
                f"{peak:.0f} MB",
                "met" if peak < SIM_MEMORY_MB else "missed",
            )
        )
        close = big["wall_s"] <= big["ideal_s"] * 1.25
        rows.append(
            (
                f"simulation {mode}: wall ~ containers/forks x latency",
                f"{big['wall_s']:.1f}s vs {big['ideal_s']:.1f}s",
                "met" if close else f"missed: {big['wall_s'] / big['ideal_s']:.2f}x the ideal",
            )
        )
    return rows


# -- rendering ---------------------------------------------------------------------------


def _fmt(value: float | None, digits: int = 2) -> str:
    if value is None or value != value:  # None or NaN
        return "-"
    return f"{value:.{digits}f}"


def lab_rows(document: dict) -> list[list[str]]:
    summary = summarize(document["samples"])
    rows = []
    for scenario in SCENARIOS:
        for tool in TOOLS:
            entry = summary.get((tool, scenario))
            if not entry:
                continue
            rows.append(
                [
                    scenario,
                    tool,
                    f"{_fmt(entry['wall_s'])} "
                    f"({_fmt(entry['wall_min'])}-{_fmt(entry['wall_max'])})",
                    _fmt(entry["cpu_s"]),
                    _fmt(entry["peak_mb"], 0),
                    _fmt(entry["logins"], 0),
                    _fmt(entry["sessions"], 1),
                    "yes" if entry["ok"] else "NO",
                ]
            )
    return rows


LAB_HEADER = [
    "scenario",
    "tool",
    "wall s, median (min-max)",
    "CPU s",
    "peak MB",
    "SSH logins/node",
    "pct calls/ct",
    "ok",
]
SIM_HEADER = [
    "mode",
    "containers",
    "nodes",
    "wall s",
    "ideal s",
    "CPU s",
    "CPU ms/ct",
    "peak MB",
    "pct calls/ct",
    "changed",
]


def sim_rows(sim: list[dict]) -> list[list[str]]:
    return [
        [
            p["mode"],
            str(p["containers"]),
            str(p["nodes"]),
            _fmt(p["wall_s"]),
            _fmt(p["ideal_s"]),
            _fmt(p["cpu_s"]),
            _fmt(1000 * p["cpu_s"] / p["containers"], 1),
            _fmt(p["peak_mb"], 0),
            _fmt(p["calls_per_ct"], 1),
            str(p["changed"]),
        ]
        for p in sorted(sim, key=lambda p: (p["mode"], p["containers"]))
    ]


def _text_table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows, strict=False)]
    line = "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))
    out = [line, "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in rows]
    return "\n".join(out)


def _md_table(header: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(out)


def console(document: dict) -> str:
    parts = ["", _text_table(LAB_HEADER, lab_rows(document)), ""]
    if document.get("simulation"):
        parts += [_text_table(SIM_HEADER, sim_rows(document["simulation"])), ""]
    parts.append(
        _text_table(["target", "measured", "verdict"], [list(t) for t in targets(document)])
    )
    return "\n".join(parts)


def markdown(document: dict) -> str:
    """docs/benchmarks.md: written by bench/run.py, every number from one invocation."""
    m, v, st = document["machine"], document["versions"], document["settings"]
    lines = [
        "# Benchmarks",
        "",
        "Written by `bench/run.py` (do not edit by hand; run it again). Every number on",
        "this page comes from one invocation, so the ratios compare runs made on the same",
        "machine at the same time. How it is measured: [bench/README.md](../bench/README.md).",
        "",
        f"- machine: {m['nproc']} CPUs, {m['cpu_model']}, kernel {m['kernel']}, "
        f"Python {m['python']}",
        f"- date: {m['date']}; the whole run took {document['seconds'] / 60:.1f} min",
        "- versions: " + ", ".join(f"{k} {val}" for k, val in v.items()),
        f"- lab: 2 nodes x 3 containers; forks {st['forks']} for every tool; "
        f"{st['runs']} samples per cell (median, min-max); latency scenario: "
        f"+{st['latency_ms']} ms each way on every node",
        "",
        "## Targets",
        "",
        _md_table(["target", "measured", "verdict"], [list(t) for t in targets(document)]),
        "",
        "## The lab, side by side",
        "",
        _md_table(LAB_HEADER, lab_rows(document)),
        "",
    ]
    if document.get("simulation"):
        lines += [
            "## The cost of scale (simulated fleet)",
            "",
            _md_table(SIM_HEADER, sim_rows(document["simulation"])),
            "",
        ]
    lines += findings(document)
    return "\n".join(lines) + "\n"


def findings(document: dict) -> list[str]:
    """What the numbers say, and where a target is missed, by how much and why."""
    summary = summarize(document["samples"])
    r = ratios(summary, document["samples"])
    out = ["## What the numbers say", ""]
    pf, fl, an = (summary.get((t, "noop")) for t in ("pctfleet", "floor", "ansible"))
    if pf and fl:
        out.append(_floor_finding(document, pf, fl, r))
    if pf and an:
        out.append(_ansible_finding(pf, fl, an, r))
    if r["gap_noop_latency_s"] is not None:
        out.append(_latency_finding(document, summary, r))
    sim = document.get("simulation") or []
    if sim:
        out.append(_scale_finding(sim))
    out += [
        "",
        "Methods, settings and the one adaptation made to the Ansible plugin (it runs",
        "`/usr/sbin/pct`; the lab's `pct` is on PATH): [bench/README.md](../bench/README.md).",
    ]
    return out


def _floor_finding(document: dict, pf: dict, fl: dict, r: dict) -> str:
    startup = document.get("startup", {})
    ratio = r["pctfleet_over_floor_noop"]
    verdict = "within" if ratio <= FLOOR_TARGET else "outside"
    return (
        f"- **pctfleet against the floor.** A no-op run of pctfleet took {pf['wall_s']:.2f} s, "
        f"the floor {fl['wall_s']:.2f} s ({ratio:g}x, {verdict} the {FLOOR_TARGET:g}x "
        "target). Both make one SSH login per node and one `pct exec` per container; the "
        "difference is the controller and the probe. Starting pctfleet's CLI (interpreter "
        f"and imports) takes {startup.get('pctfleet_cli', float('nan')):.2f} s against "
        f"{startup.get('floor', float('nan')):.2f} s for the floor's imports; pctfleet uses "
        f"{pf['cpu_s']:.2f} s of CPU against {fl['cpu_s']:.2f} s (preflight renders every "
        "task for every container, then the engine renders them again to plan), on two "
        "cores that also run the containers' side; and pctfleet's probe starts python3 "
        "twice in each container (the pip module's package list and the server module's "
        "/health check) where the floor's script starts it once."
    )


def _ansible_finding(pf: dict, fl: dict | None, an: dict, r: dict) -> str:
    ratio = r["ansible_over_pctfleet_noop"]
    text = (
        f"- **Ansible.** Its no-op run took {an['wall_s']:.1f} s with {an['sessions']:.0f} "
        f"`pct` calls per container and {an['logins']:.0f} SSH logins per node: a login per "
        "task and container, then six `pct exec` per module (the home folder, a temporary "
        "folder, the module streamed in through `cat`, chmod, the module run by the "
        "container's Python, the folder removed), more for copy and template, which run a "
        f"stat module first. It used {an['cpu_s']:.1f} s of controller CPU and "
        f"{an['peak_mb']:.0f} MB (the parent and its forks). pctfleet's took "
        f"{pf['wall_s']:.2f} s, {pf['cpu_s']:.2f} s CPU and {pf['peak_mb']:.0f} MB, with "
        f"{pf['sessions']:.0f} call per container and {pf['logins']:.0f} login per node: "
        f"{ratio:g}x faster."
    )
    if ratio < NOOP_TARGET and fl:
        text += (
            f" That is short of the {NOOP_TARGET:g}x target ({ratio / NOOP_TARGET:.0%} of it). No "
            f"tool beats the floor, and Ansible / floor was {an['wall_s'] / fl['wall_s']:.1f}x "
            "here: on the lab every `pct` call starts a Python `pct` shim and `lxc-attach` on "
            "the same two cores as the controller, so the floor is slower here than on a "
            "Proxmox node, and Ansible's time swings with whatever else the machine runs."
        )
    return text


def _latency_finding(document: dict, summary: dict, r: dict) -> str:
    ms = document["settings"]["latency_ms"]
    added = {
        tool: summary[(tool, "noop+latency")]["wall_s"] - summary[(tool, "noop")]["wall_s"]
        for tool in ("pctfleet", "ansible")
    }
    an, lat = summary[("ansible", "noop")], summary[("ansible", "noop+latency")]
    grew = r["gap_noop_latency_s"] > r["gap_noop_s"]
    ratio_grew = r["ansible_over_pctfleet_noop_latency"] > r["ansible_over_pctfleet_noop"]
    text = (
        f"- **Latency.** +{ms} ms each way on every node added {added['pctfleet']:.2f} s to "
        f"pctfleet's no-op and {added['ansible']:.1f} s to Ansible's; the gap went from "
        f"{r['gap_noop_s']:g} s to {r['gap_noop_latency_s']:g} s and the ratio from "
        f"{r['ansible_over_pctfleet_noop']:g}x to {r['ansible_over_pctfleet_noop_latency']:g}x."
    )
    spread = (
        f" Ansible's samples spread over {an['wall_min']:.1f}-{an['wall_max']:.1f} s without "
        f"latency and {lat['wall_min']:.1f}-{lat['wall_max']:.1f} s with it: on this shared "
        "two-core machine the effect is of the order of the noise."
    )
    cpu_bound = (
        f" Ansible's {an['sessions']:.0f} calls per container each wait for round trips, but "
        "on two cores shared with the containers its run is bound by CPU (a `pct` shim and "
        "`lxc-attach` per call, a Python module per task): its six forks wait for the "
        "network behind one another's CPU work, which hides most of the latency. pctfleet's "
        "run is mostly waiting and takes its few round trips (an SSH handshake per node, one "
        "call per container) in full. On a real fleet the containers' side runs on the "
        "nodes' CPUs, and each of Ansible's round trips would add to its time."
    )
    if grew and ratio_grew:
        text += (
            f" Each of Ansible's {an['logins']:.0f} logins per node and {an['sessions']:.0f} "
            "calls per container waits for the round trips; pctfleet's one login per node "
            "and one call per container wait once." + spread
        )
    elif grew:
        text += " The gap grew; the ratio fell." + cpu_bound + spread
    else:
        text += " The gap did not grow in this run." + cpu_bound + spread
    return text


def _scale_finding(sim: list[dict]) -> str:
    top = max(p["containers"] for p in sim)
    big = [p for p in sim if p["containers"] == top]
    per_ct = {p["mode"]: 1000 * p["cpu_s"] / p["containers"] for p in big}
    budget = 1000 * big[0]["latency_s"] / big[0]["forks"]
    text = (
        "- **Scale.** In the simulation every container costs one call, memory stays at "
        f"{max(p['peak_mb'] for p in sim):.0f} MB or less, and controller CPU grows linearly "
        "with the containers ("
        + ", ".join(f"{mode} {ms:.0f} ms per container" for mode, ms in per_ct.items())
        + f" at {top}). The wall time is the calls' time (containers / forks x latency) "
        "while the controller needs less CPU per container than latency / forks "
        f"({budget:.0f} ms here): "
        + "; ".join(f"{p['mode']} {p['wall_s']:.1f} s against {p['ideal_s']:.1f} s" for p in big)
        + "."
    )
    if max(per_ct.values()) >= budget:
        text += (
            " Past that budget one Python process (one core, the GIL) sets the pace, not "
            "the calls: more forks would not help until the controller's CPU per container "
            "comes down."
        )
    return text


# -- uv against pip: the toolchain install (bench/installers.py) -------------------------

INSTALLERS_BEGIN = "<!-- section: installers (bench/installers.py) -->"
INSTALLERS_END = "<!-- end of section: installers -->"
INSTALLERS_HEADER = ["cache", "pip s, median (min-max)", "uv s, median (min-max)", "pip / uv"]


def installers_rows(document: dict) -> list[list[str]]:
    rows = []
    for mode in ("cold", "warm"):
        pip, uv = document["cells"][f"pip/{mode}"], document["cells"][f"uv/{mode}"]
        cells = [
            f"{c['median_s']:.2f} ({min(c['samples']):.2f}-{max(c['samples']):.2f})"
            for c in (pip, uv)
        ]
        rows.append([mode, *cells, f"{pip['median_s'] / uv['median_s']:.1f}x"])
    return rows


def installers_console(document: dict) -> str:
    m = document["machine"]
    title = f"{document['requirement']} on {m['nproc']} CPUs, {m['date']}"
    return title + "\n" + _text_table(INSTALLERS_HEADER, installers_rows(document))


def installers_markdown(document: dict) -> str:
    m, v, cache = document["machine"], document["versions"], document["cache_mb"]
    return "\n".join(
        [
            INSTALLERS_BEGIN,
            "## The CUDA toolchain install: uv against pip",
            "",
            f"Written by `bench/installers.py`. `{document['requirement']}` into a fresh venv",
            f"in the lab's {document['container']}; wall seconds of the installer alone,",
            f"median of {document['runs']} (min-max). Cold: the installer's cache off; warm:",
            "one untimed run first. Every run's installed versions equal the pins.",
            "",
            f"- machine: {m['nproc']} CPUs, {m['cpu_model']}, kernel {m['kernel']}",
            f"- date: {m['date']}; pip {v['pip']}, uv {v['uv']}",
            f"- cache after the warm runs: pip {cache['pip']} MB, uv {cache['uv']} MB",
            *_empty_cache_note(cache),
            "",
            _md_table(INSTALLERS_HEADER, installers_rows(document)),
            INSTALLERS_END,
        ]
    )


def _empty_cache_note(cache: dict) -> list[str]:
    """A warm cell is only warm if the cache holds the wheels: say so when it does not."""
    empty = [name for name, mb in cache.items() if mb < 1]
    return [
        f"- {name}'s cache held nothing after its warm-up run: its warm runs downloaded again"
        for name in empty
    ]


def splice_installers(page: str, document: dict | str) -> str:
    """The page with its installers section replaced (or appended); a str is kept as is."""
    section = document if isinstance(document, str) else installers_markdown(document)
    if INSTALLERS_BEGIN in page and INSTALLERS_END in page:
        head, rest = page.split(INSTALLERS_BEGIN, 1)
        return head + section + rest.split(INSTALLERS_END, 1)[1]
    return page.rstrip("\n") + "\n\n" + section + "\n"


def installers_section(page: str) -> str | None:
    """The installers section of an existing page, to carry into a rewritten one."""
    if INSTALLERS_BEGIN not in page or INSTALLERS_END not in page:
        return None
    body = page.split(INSTALLERS_BEGIN, 1)[1].split(INSTALLERS_END, 1)[0]
    return INSTALLERS_BEGIN + body + INSTALLERS_END
