"""The benchmark's results as a console table and as docs/benchmarks.md."""

from __future__ import annotations

import os
import platform
import re
import statistics
import time
from importlib import metadata

SCENARIOS = ["converge", "noop", "noop+latency", "audit", "verify"]
KEPT_TOOL = "pctfleet-kept"  # pctfleet --persist: every node's login kept from a run before
TOOLS = ["pctfleet", KEPT_TOOL, "ansible", "floor"]
NOOP_TARGET = 40.0  # Ansible's no-op wall time over pctfleet's, at least
FLOOR_TARGET = 1.15  # pctfleet's no-op wall time over the floor's, at most
MIN_PAIRS = 5  # a ratio target is judged on the median of at least this many pairs
STARTUP_TARGET_S = 0.25  # the CLI's start to its first SSH connect
LATENCY_ROUND_TRIPS = 3  # login, channel, call: what added latency may cost a no-op
# What a fresh SSH login costs before its first channel, whoever logs in: the versions,
# the key exchange, authentication (see _latency_finding).
FRESH_LOGIN_ROUND_TRIPS = 3
PROBE_TEST = "tests/integration (the probe's python3 starts per container)"
# (containers, wall s, peak MB) the simulated fleet must stay within, default options
SIM_LIMITS = [(1000, 6.0, 150.0), (10000, 60.0, 500.0)]
SIM_CPU_MS = 3.0  # controller CPU per converged container, at most
SIM_LINEAR = 1.3  # CPU may grow at most this much faster than the containers


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


def _size(sample: dict) -> int:
    return sample.get("containers") or 6  # documents from before sizes: the whole lab


def sizes(document: dict) -> dict[int, int]:
    """containers -> nodes, for each lab size the no-ops ran on."""
    given = (document.get("settings") or {}).get("sizes")
    if given:
        return {int(k): int(v) for k, v in sorted(given.items(), key=lambda kv: int(kv[0]))}
    found = sorted({_size(s) for s in document["samples"] if s["scenario"] == "noop"})
    return {n: max(1, n // 3) for n in found}


def summarize(samples: list[dict]) -> dict[tuple[str, str, int], dict]:
    """(tool, scenario, containers) -> medians of wall, CPU, memory, logins, pct calls."""
    groups: dict[tuple[str, str, int], list[dict]] = {}
    for sample in samples:
        groups.setdefault((sample["tool"], sample["scenario"], _size(sample)), []).append(sample)
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


def pair_ratios(
    samples: list[dict], other: str, tool: str = "pctfleet"
) -> dict[tuple[str, int], list[float]]:
    """(scenario, containers) -> one ratio per pair of runs taken back to back.

    other "floor": pctfleet's wall time over the floor's; other "ansible":
    Ansible's over pctfleet's. Pairs are named "<other>/scenario/size/round[/j]";
    older documents named floor pairs "scenario/round/j".
    """
    pairs: dict[str, dict[str, dict]] = {}
    for sample in samples:
        pair = sample.get("pair") or ""
        kind = pair.split("/")[0] if pair.split("/")[0] in ("floor", "ansible") else "floor"
        if pair and kind == other:
            pairs.setdefault(pair, {})[sample["tool"]] = sample
    out: dict[tuple[str, int], list[float]] = {}
    for runs in pairs.values():
        pf, theirs = runs.get(tool), runs.get(other)
        if not pf or not theirs or not pf["wall_s"] or not theirs["wall_s"]:
            continue
        ratio = (
            theirs["wall_s"] / pf["wall_s"]
            if other == "ansible"
            else pf["wall_s"] / theirs["wall_s"]
        )
        out.setdefault((pf["scenario"], _size(pf)), []).append(ratio)
    return out


# -- targets -----------------------------------------------------------------------------

Row = tuple[str, str, str]


def targets(document: dict) -> list[Row]:
    """(target, measured, verdict) for every target: met, missed (why) or not measured (why)."""
    samples = document["samples"]
    summary = summarize(samples)
    rows: list[Row] = []
    for size, nodes in sizes(document).items():
        where = _where(size, nodes)
        for tool in TOOLS[:2] if summary.get((KEPT_TOOL, "noop", size)) else TOOLS[:1]:
            rows.append(_pair_target(samples, size, where, "ansible", tool))
            rows.append(_pair_target(samples, size, where, "floor", tool))
        rows.append(_calls_target(summary.get(("pctfleet", "noop", size)), where))
    rows.append(startup_target(document.get("startup_probe")))
    rows.append(interpreters_target(document.get("probe_interpreters")))
    for size, nodes in sizes(document).items():
        rows.append(latency_target(document, summary, size, nodes))
        if summary.get((KEPT_TOOL, "noop+latency", size)):
            rows.append(latency_target(document, summary, size, nodes, KEPT_TOOL))
    rows += sim_targets(document.get("simulation") or [])
    return rows


def _where(size: int, nodes: int) -> str:
    return f"{size} containers, {nodes} node{'s' if nodes > 1 else ''}"


def _ratio_row(label: str, ratios: list[float], target: float, at_least: bool) -> Row:
    median = statistics.median(ratios)
    measured = f"{median:.2f}x (median of {len(ratios)} pairs, {min(ratios):.2f}-{max(ratios):.2f})"
    if len(ratios) < MIN_PAIRS:
        return label, measured, f"not measured: {len(ratios)} pairs, the target asks >= {MIN_PAIRS}"
    if (median >= target) if at_least else (median <= target):
        return label, measured, "met"
    if at_least:
        return label, measured, f"missed: {median / target:.0%} of the target"
    return label, measured, f"missed: {median - target:.2f}x over"


# other tool -> (what is compared, target, the ratio must be at least it, why none)
RATIO_TARGETS = {
    "ansible": ("Ansible / pctfleet >=", NOOP_TARGET, True, "no Ansible runs (--no-ansible)"),
    "floor": ("pctfleet / floor <=", FLOOR_TARGET, False, "no pctfleet/floor pairs"),
}


def _pair_target(
    samples: list[dict], size: int, where: str, other: str, tool: str = "pctfleet"
) -> Row:
    compared, target, at_least, none = RATIO_TARGETS[other]
    label = f"no-op, {where}: {compared} {target:g}x{_kept_label(tool)}"
    ratios = pair_ratios(samples, other, tool).get(("noop", size))
    if not ratios:
        return label, "-", f"not measured: {none}"
    label, measured, verdict = _ratio_row(label, ratios, target, at_least)
    if other == "ansible" and verdict.startswith("missed"):
        verdict += _floor_against_ansible(samples, size)
    return label, measured, verdict


def _floor_against_ansible(samples: list[dict], size: int) -> str:
    """What the floor itself reaches against Ansible in the same run (medians): the
    most that a tool doing only the floor's work could show."""
    summary = summarize(samples)
    ansible, floor = summary.get(("ansible", "noop", size)), summary.get(("floor", "noop", size))
    if not ansible or not floor or not floor["wall_s"]:
        return ""
    ratio = ansible["wall_s"] / floor["wall_s"]
    return f"; Ansible / floor in this run: {ratio:.1f}x (their medians)"


def _kept_label(tool: str) -> str:
    return " (pctfleet --persist: logins kept from the run before)" if tool == KEPT_TOOL else ""


def _calls_target(entry: dict | None, where: str) -> Row:
    label = f"no-op, {where}: pct exec per converged container = 1"
    if not entry or entry["calls_max"] is None:
        return label, "-", "not measured: no pctfleet no-op"
    measured = f"{entry['calls_max']} (tool), {entry['sessions']:g} (sshd)"
    one = entry["calls_max"] == 1 and entry["sessions"] == 1
    return label, measured, "met" if one else "missed: more than one call"


def startup_target(probe: dict | None) -> Row:
    """bench/startup.py's medians against the start-up target, or why there are none."""
    label = f"CLI reaches first SSH connect within {STARTUP_TARGET_S:g} s"
    if probe is None:
        return label, "-", "not measured: bench/startup.py not present"
    if probe.get("error"):
        return label, "-", f"not measured: bench/startup.py failed ({probe['error']})"
    first = probe.get("first_connect_s")
    if first is None:
        return label, "-", "not measured: bench/startup.py gave no first_connect_s"
    imports = probe.get("import_s")
    measured = f"{first:.3f} s (median of {probe.get('runs', '?')}"
    measured += f"; imports {imports:.3f} s" if imports is not None else ""
    sent = probe.get("first_exec_s")
    # The connect is the TCP connect, opened as soon as the inventory is read; the
    # login and the first command follow: say when that command left, too.
    measured += f"; first pct exec sent at {sent:.3f} s)" if sent is not None else ")"
    if first <= STARTUP_TARGET_S:
        return label, measured, "met"
    return label, measured, f"missed: {first - STARTUP_TARGET_S:.3f} s over"


def interpreters_target(probe: dict | None) -> Row:
    """Python starts counted in one container during a no-op (bench/interpreters.py)."""
    label = "converged probe starts at most one interpreter per container"
    if probe is None:
        return label, f"measured by {PROBE_TEST}", "not measured by this run"
    if probe.get("error"):
        return label, "-", f"not measured: {probe['error']}"
    starts = probe.get("starts") or []
    called = ", ".join(line.split()[0] for line in starts) or "none"
    measured = f"{len(starts)} in {probe.get('container')}'s no-op ({called})"
    if len(starts) <= 1:
        return label, measured, "met"
    return label, measured, f"missed: {len(starts)} interpreters"


def latency_target(
    document: dict, summary: dict, size: int, nodes: int, tool: str = "pctfleet"
) -> Row:
    """Growth of the no-op behind latency, against LATENCY_ROUND_TRIPS round trips.

    Nodes are worked on in parallel, so a per-node cost of k round trips
    shows once in the wall time, whatever the number of nodes: the allowance
    is k round trips overall, not k per node added up.
    """
    ms = (document.get("settings") or {}).get("latency_ms")
    label = f"no-op +latency, {_where(size, nodes)}: grows <= {LATENCY_ROUND_TRIPS} round trips"
    label += _kept_label(tool)
    base, lat = (
        summary.get((tool, "noop", size)),
        summary.get((tool, "noop+latency", size)),
    )
    if not ms or not base or not lat:
        return label, "-", "not measured: no no-op behind latency"
    rtt = 2 * ms / 1000
    allowed, grew = LATENCY_ROUND_TRIPS * rtt, lat["wall_s"] - base["wall_s"]
    measured = (
        f"{grew:+.2f} s ({base['wall_s']:.2f} -> {lat['wall_s']:.2f} s) = {grew / rtt:.1f} "
        f"round trips of {rtt:.2f} s; allowed {allowed:.2f} s"
    )
    floor = _growth(summary, "floor", size)
    if floor is not None:
        measured += f"; the floor {floor:+.2f} s"
    spread = base["wall_max"] - base["wall_min"]
    # Where one no-op's samples differ by more than the allowance, the verdict is the noise's.
    noise = f" (no-op samples spread {spread:.2f} s: within the noise)" if spread > allowed else ""
    if grew <= allowed:
        return label, measured, "met" + noise
    fresh = f"; a fresh login alone takes {FRESH_LOGIN_ROUND_TRIPS} round trips"
    why = "" if tool == KEPT_TOOL else fresh  # a kept login paid no login in the run
    return label, measured, f"missed: {grew - allowed:.2f} s over{why}" + noise


def _growth(summary: dict, tool: str, size: int) -> float | None:
    base, lat = summary.get((tool, "noop", size)), summary.get((tool, "noop+latency", size))
    return lat["wall_s"] - base["wall_s"] if base and lat else None


def sim_targets(sim: list[dict]) -> list[Row]:
    """Wall and memory limits at 1,000 and 10,000, linear CPU, CPU per container."""
    rows: list[Row] = []
    for mode in sorted({p["mode"] for p in sim}) or ["noop", "audit"]:
        points = {p["containers"]: p for p in sim if p["mode"] == mode}
        for size, wall, mb in SIM_LIMITS:
            rows.append(
                _limit(
                    f"simulation {mode}, {size:,} containers: wall <= {wall:g} s",
                    points.get(size),
                    "wall_s",
                    wall,
                    "s",
                )
            )
            rows.append(
                _limit(
                    f"simulation {mode}, {size:,} containers: peak <= {mb:g} MB",
                    points.get(size),
                    "peak_mb",
                    mb,
                    "MB",
                )
            )
        rows.append(_linear(mode, points))
        rows.append(_cpu_per_container(mode, points))
    return rows


def _limit(label: str, point: dict | None, key: str, limit: float, unit: str) -> Row:
    if point is None or point.get(key) is None:
        return label, "-", "not measured: no such point in the simulation"
    value = point[key]
    measured = f"{value:.1f} {unit}"
    return label, measured, "met" if value <= limit else f"missed: {value / limit:.1f}x the limit"


def _linear(mode: str, points: dict[int, dict]) -> Row:
    label = f"simulation {mode}: controller CPU grows linearly"
    if len(points) < 2:
        return label, "-", "not measured: fewer than two sizes"
    small, big = (points[n] for n in sorted(points)[-2:])
    scale = big["containers"] / small["containers"]
    if not small["cpu_s"]:
        return label, "-", "not measured: no CPU time at the smaller size"
    growth = big["cpu_s"] / small["cpu_s"]
    measured = (
        f"x{growth:.1f} CPU for x{scale:g} containers "
        f"({small['containers']:,} -> {big['containers']:,})"
    )
    if growth <= scale * SIM_LINEAR:
        return label, measured, "met"
    return label, measured, f"missed: {growth / scale:.2f}x faster than the containers"


def _cpu_per_container(mode: str, points: dict[int, dict]) -> Row:
    label = f"simulation {mode}: controller CPU <= {SIM_CPU_MS:g} ms per container"
    if not points:
        return label, "-", "not measured: no simulation"
    big = points[max(points)]
    per_ct = 1000 * big["cpu_s"] / big["containers"]
    measured = f"{per_ct:.1f} ms at {big['containers']:,}"
    return (
        label,
        measured,
        "met" if per_ct <= SIM_CPU_MS else f"missed: {per_ct - SIM_CPU_MS:.1f} ms over",
    )


# -- rendering ---------------------------------------------------------------------------


def _fmt(value: float | None, digits: int = 2) -> str:
    if value is None or value != value:  # None or NaN
        return "-"
    return f"{value:.{digits}f}"


def lab_rows(document: dict) -> list[list[str]]:
    summary = summarize(document["samples"])
    rows = []
    for scenario in SCENARIOS:
        for size in sorted({key[2] for key in summary}):
            for tool in TOOLS:
                entry = summary.get((tool, scenario, size))
                if entry:
                    rows.append([scenario, str(size), tool, *_lab_cells(entry)])
    return rows


def _lab_cells(entry: dict) -> list[str]:
    return [
        f"{_fmt(entry['wall_s'])} ({_fmt(entry['wall_min'])}-{_fmt(entry['wall_max'])})",
        _fmt(entry["cpu_s"]),
        _fmt(entry["peak_mb"], 0),
        _fmt(entry["logins"], 0),
        _fmt(entry["sessions"], 1),
        "yes" if entry["ok"] else "NO",
    ]


LAB_HEADER = [
    "scenario",
    "containers",
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
    """One row a point; keys a point lacks show as '-'."""
    return [
        [
            p["mode"],
            str(p["containers"]),
            str(p.get("nodes", "-")),
            _fmt(p.get("wall_s")),
            _fmt(p.get("ideal_s")),
            _fmt(p.get("cpu_s")),
            _fmt(1000 * p["cpu_s"] / p["containers"], 1) if p.get("cpu_s") is not None else "-",
            _fmt(p.get("peak_mb"), 0),
            _fmt(p.get("calls_per_ct"), 1),
            str(p.get("changed", "-")),
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


def _settings_line(document: dict) -> str:
    st = document["settings"]
    labs = " and ".join(
        f"{nodes} node{'s' if nodes > 1 else ''} ({size} containers)"
        for size, nodes in sizes(document).items()
    )
    return (
        f"- lab: {labs}; pctfleet with its default concurrency (no `--forks`), Ansible "
        f"with one fork per container; {st['runs']} rounds (no-op: {st.get('pairs', 3)} "
        "pctfleet/floor pairs back to back and one pctfleet/Ansible pair a round, the "
        "first alternating); cells are medians (min-max); latency scenario: "
        f"+{st['latency_ms']} ms each way on every node"
        + (f"; pctfleet's bytecode: {st['bytecode']}" if st.get("bytecode") else "")
    )


def markdown(document: dict) -> str:
    """docs/benchmarks.md: written by bench/run.py, every number from one invocation."""
    m, v = document["machine"], document["versions"]
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
        _settings_line(document),
        "",
        "## Targets",
        "",
        _md_table(["target", "measured", "verdict"], [list(t) for t in targets(document)]),
        "",
        "## The lab, side by side",
        "",
        _md_table(LAB_HEADER, lab_rows(document)),
        "",
        f"`{KEPT_TOOL}` is the same `pctfleet run` with `--persist`: a run before it (not",
        "measured) left each node's login with the connection keeper, so it logs in nowhere",
        "and imports no SSH library. `pctfleet` is a run with nothing kept: every login is",
        "its own, as on a first run, and so is the floor's.",
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
    """What the numbers say, on the largest lab size."""
    summary = summarize(document["samples"])
    size = max(sizes(document) or [6])
    out = ["## What the numbers say", ""]
    pf, fl, an = (summary.get((t, "noop", size)) for t in ("pctfleet", "floor", "ansible"))
    if pf and fl:
        out.append(_floor_finding(document, pf, fl, size))
    if pf and an:
        out.append(_ansible_finding(pf, fl, an, size))
    lat = summary.get(("pctfleet", "noop+latency", size))
    if pf and lat:
        out.append(_latency_finding(document, summary, size))
    out += [
        "",
        "Methods, settings and the one adaptation made to the Ansible plugin (it runs",
        "`/usr/sbin/pct`; the lab's `pct` is on PATH): [bench/README.md](../bench/README.md).",
    ]
    return out


def _floor_finding(document: dict, pf: dict, fl: dict, size: int) -> str:
    startup = document.get("startup", {})
    return (
        f"- **pctfleet against the floor** ({size} containers). A no-op run of pctfleet "
        f"took {pf['wall_s']:.2f} s and {pf['cpu_s']:.2f} s of CPU with "
        f"{pf['logins']:.0f} SSH login per node and {pf['sessions']:g} `pct` call per "
        f"container; the floor {fl['wall_s']:.2f} s and {fl['cpu_s']:.2f} s with "
        f"{fl['logins']:.0f} and {fl['sessions']:g}. Starting pctfleet's CLI as far as "
        "its command (interpreter, typer and the `run` command's module) took "
        f"{startup.get('pctfleet_cli', float('nan')):.2f} s, the floor's start with its "
        f"imports (paramiko, yaml, jinja2) {startup.get('floor', float('nan')):.2f} s; "
        "pctfleet loads its SSH library and engine after that, while the inventory and "
        "the playbook load. The rest of the difference is the controller's work and the "
        "probe in each container."
    )


def _ansible_finding(pf: dict, fl: dict | None, an: dict, size: int) -> str:
    ratio = an["wall_s"] / pf["wall_s"]
    text = (
        f"- **Ansible** ({size} containers). Its no-op run took {an['wall_s']:.1f} s with "
        f"{an['sessions']:.0f} `pct` calls per container and {an['logins']:.0f} SSH logins "
        "per node: a login per task and container, then six `pct exec` per module (the "
        "home folder, a temporary folder, the module streamed in through `cat`, chmod, "
        "the module run by the container's Python, the folder removed), more for copy and "
        f"template, which run a stat module first. It used {an['cpu_s']:.1f} s of "
        f"controller CPU and {an['peak_mb']:.0f} MB (the parent and its forks); pctfleet "
        f"{pf['wall_s']:.2f} s, {pf['cpu_s']:.2f} s CPU and {pf['peak_mb']:.0f} MB: "
        f"{ratio:.1f}x faster on the medians."
    )
    if fl:
        text += (
            f" Ansible / floor was {an['wall_s'] / fl['wall_s']:.1f}x: the floor is the"
            " least work that confirms the state, so that caps the ratio any tool can reach"
            " against Ansible here. Every `pct` call is an SSH session that runs root's"
            " ~/.bashrc (a fresh Proxmox node's, comments only), the lab's `pct` stand-in"
            " (Python) and `lxc-attach`, on the same two cores as the controller; what a"
            " real node's Perl `pct` costs per call is not measured here."
        )
    return text


def _latency_finding(document: dict, summary: dict, size: int) -> str:
    ms = document["settings"]["latency_ms"]
    rtt = 2 * ms / 1000
    grew = {t: _growth(summary, t, size) for t in ("pctfleet", "floor")}
    text = (
        f"- **Latency** ({size} containers). +{ms} ms each way on every node (a round "
        f"trip {rtt:.2f} s) added {grew['pctfleet']:.2f} s to pctfleet's no-op "
        f"({grew['pctfleet'] / rtt:.1f} round trips)"
    )
    if grew["floor"] is not None:
        text += f" and {grew['floor']:.2f} s to the floor's ({grew['floor'] / rtt:.1f})"
    return (
        text
        + (
            f". The target allows {LATENCY_ROUND_TRIPS} round trips (login, channel, call) "
            "per node; nodes are worked on in parallel, so that is "
            f"{LATENCY_ROUND_TRIPS * rtt:.2f} s of wall time whatever the number of nodes. "
            "A first login takes three round trips: the versions (pctfleet sends its "
            "identification line the moment TCP connects, so sshd's KEXINIT is on its way "
            "while paramiko still loads), the key exchange, then authentication, which "
            "carries the rest: the signed request goes right behind the service request, "
            "the session channels the run will want right behind that, and each "
            "container's probe right behind its channel (it only reads, so it is sent on "
            "the number OpenSSH will give the channel, before sshd has said so), and sshd "
            "opens the channels and starts the probes the moment the login is done; the "
            "floor waits a round trip more for its channel and one for its call. sshd opens a "
            "session's window for stdin only once the command has started, a round trip "
            "after the exec request, but `pct` takes longer than that to start reading it "
            "(measured on this lab: carrying the probe in the node's command line instead, so "
            "no stdin waits for the window, did not change the growth). So a run that logs "
            "in waits about four round trips (TCP's handshake, then those three), less what "
            "other work hides: pctfleet logs in "
            "while it loads its engine and prepares the playbook, and on this lab the nodes' "
            "`pct` calls run on "
            "the controller's two cores, so part of the wait overlaps work that would "
            "otherwise queue for a core"
        )
        + _kept_growth(summary, size, rtt)
    )


def _kept_growth(summary: dict, size: int, rtt: float) -> str:
    kept = _growth(summary, KEPT_TOOL, size)
    if kept is None:
        return "."
    return (
        f"; a run on a kept login (`--persist`) pays only the channel and the call: it "
        f"grew {kept:.2f} s ({kept / rtt:.1f} round trips)."
    )


# -- README.md's headline numbers --------------------------------------------------------

HEADLINE_BEGIN = "<!-- headline: written by bench/run.py -->"
HEADLINE_END = "<!-- end of headline -->"


def headline(document: dict) -> str:
    """README.md's paragraph of benchmark numbers, from one run."""
    summary = summarize(document["samples"])
    parts = []
    for size, nodes in sizes(document).items():
        parts.append(_headline_size(document, summary, size, nodes))
    parts = [p for p in parts if p]
    sim = {p["containers"]: p for p in document.get("simulation") or [] if p["mode"] == "noop"}
    if sim:
        big = sim[max(sim)]
        call = f" ({big['latency_s']:g} s a call)" if big.get("latency_s") else ""
        parts.append(
            f"A simulated fleet of {big['containers']:,} containers on {big.get('nodes', '?')} "
            f"nodes{call}: no-op {big['wall_s']:.1f} s, {big['peak_mb']:.0f} MB, "
            f"{1000 * big['cpu_s'] / big['containers']:.1f} ms of controller CPU a container."
        )
    parts.append(
        "Every target, met or missed, with machine, date and versions, is in "
        "docs/benchmarks.md (`python bench/run.py`)."
    )
    return "\n".join(parts)


def _headline_size(document: dict, summary: dict, size: int, nodes: int) -> str:
    pf = summary.get(("pctfleet", "noop", size))
    if not pf:
        return ""
    text = (
        f"On the lab's {nodes} node{'s' if nodes > 1 else ''} x 3 containers a no-op run of "
        f"the benchmark playbook takes pctfleet {pf['wall_s']:.2f} s ({pf['logins']:.0f} SSH "
        f"login per node, {pf['sessions']:g} `pct exec` per container)"
    )
    an = pair_ratios(document["samples"], "ansible").get(("noop", size))
    fl = pair_ratios(document["samples"], "floor").get(("noop", size))
    if an:
        text += (
            f": {statistics.median(an):.1f}x faster than Ansible's `proxmox_pct_remote` "
            f"({min(an):.0f}-{max(an):.0f}x over {len(an)} pairs)"
        )
    if fl:
        text += f", {statistics.median(fl):.2f}x a hand-written single-call floor"
    return text + "." + _headline_kept(document, summary, size)


def _headline_kept(document: dict, summary: dict, size: int) -> str:
    """The same no-op with --persist, on logins kept from the run before."""
    kept = summary.get((KEPT_TOOL, "noop", size))
    if not kept:
        return ""
    text = f" With `--persist` (logins kept between commands) it takes {kept['wall_s']:.2f} s"
    an = pair_ratios(document["samples"], "ansible", KEPT_TOOL).get(("noop", size))
    fl = pair_ratios(document["samples"], "floor", KEPT_TOOL).get(("noop", size))
    if an:
        text += f": {statistics.median(an):.1f}x faster than Ansible"
    if fl:
        text += f", {statistics.median(fl):.2f}x the floor"
    return text + "."


def splice_headline(page: str, document: dict) -> str:
    """The page with the text between the headline markers replaced by this run's."""
    head, rest = page.split(HEADLINE_BEGIN, 1)
    tail = rest.split(HEADLINE_END, 1)[1]
    return head + HEADLINE_BEGIN + "\n" + headline(document) + "\n" + HEADLINE_END + tail


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
    return splice_section(page, section)


# Sections other scripts write (each measures on its own); bench/run.py keeps them.
_SECTION = re.compile(r"<!-- section: (\S+) \(.*?\) -->.*?<!-- end of section: \1 -->", re.S)


def kept_sections(page: str) -> list[str]:
    """The sections of an existing page, to carry into a rewritten one."""
    return [found.group(0) for found in _SECTION.finditer(page)]


def splice_section(page: str, section: str) -> str:
    """The page with the section of the same name replaced, or appended."""
    name = _SECTION.match(section).group(1)
    for found in _SECTION.finditer(page):
        if found.group(1) == name:
            return page[: found.start()] + section + page[found.end() :]
    return page.rstrip("\n") + "\n\n" + section + "\n"
