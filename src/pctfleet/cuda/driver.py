"""The NVIDIA driver on both sides of a GPU passthrough: the node's kernel module
and device nodes, a container's CT config and its userspace libraries.

The node side is read by `NODE_READ`, which discovery runs in the same command
as `pct list` (one SSH round trip per node); the container side by
sh/gpu_userspace.sh, inside the probe audit and doctor already make. Every
parser here takes the real tools' output (tests/unit/nvidia_fixtures/h200/)
and never raises: what cannot be read stays None.

A container needs a GPU when its inventory vars set `gpus` (an index, 0
included, a list of indices, or `all`) or, with `gpus` unset, its CT config
passes an NVIDIA device (a `devN: /dev/nvidia*` entry, an `lxc.mount.entry` or
`lxc.cgroup2.devices.allow` line for one, or the LXC nvidia hook). `gpus:
false`, `none` or `[]` says it needs none, whatever its CT config passes. Any
other container is left alone, on a node with or without a driver.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

SECTION = "@@pctfleet-gpu"
QUERY = "index,name,uuid,pci.bus_id,driver_version,memory.total,compute_cap"
# Device nodes are listed before nvidia-smi runs (NVML may create missing ones), and
# nvidia-smi runs only when the module is loaded (so the read never loads one).
NODE_READ = (
    f't() {{ if command -v timeout >/dev/null 2>&1; then timeout 20 "$@"; else "$@"; fi; }}; '
    f"g() {{ echo '{SECTION}' \"$1\"; }}; v=/proc/driver/nvidia/version; "
    "g dev; stat -c '%n %F %t:%T %a' /dev/nvidia* /dev/nvidia-caps/*; "
    "g proc; cat $v; g sys; cat /sys/module/nvidia/version; "
    "if [ -r $v ] && command -v nvidia-smi >/dev/null 2>&1; then "
    "g smi-L; t nvidia-smi -L 2>&1; "
    f"g smi-query; t nvidia-smi --query-gpu={QUERY} --format=csv 2>&1; "
    # modinfo lives in /sbin or /usr/sbin, off a non-root user's PATH on Debian.
    'elif [ ! -r $v ]; then g modinfo; PATH="$PATH:/usr/sbin:/sbin" modinfo -F version nvidia; '
    "fi; g end"
)
VERSION = re.compile(r"(?<![\w.])(\d+\.\d+(?:\.\d+)*)(?![\w.])")
LIB_VERSION = re.compile(r"\.so\.(\d+\.\d+(?:\.\d+)*)$")
READ_VERSION = re.compile(r"\d+\.\d+\.\d+")  # in the strings of a library file
NVIDIA_DEV = re.compile(r"/dev/nvidia[\w/-]*")
DEV_KEY = re.compile(r"dev\d+")
ALLOW_KEY = re.compile(r"lxc\.cgroup2?\.devices\.allow")
NVIDIA_MAJOR = 195  # nvidia0..N and nvidiactl; nvidia-uvm's major is dynamic
CTL_MINOR = 255

# The oldest driver each CUDA major runs on (NVIDIA's minor version compatibility
# table: 13.x >= 580, 12.x >= 525.60.13, 11.x >= 450.80.02).
MIN_DRIVER = {13: "580.65.06", 12: "525.60.13", 11: "450.80.02"}


@dataclass
class Gpu:
    index: int
    name: str
    uuid: str = ""
    bus_id: str = ""
    memory: str = ""
    compute_cap: str = ""


@dataclass
class NodeGpu:
    """A node's NVIDIA driver side; `module` None: no NVIDIA kernel module found."""

    module: str | None = None
    module_from: str | None = None  # proc | sys | nvidia-smi | modinfo (installed, not loaded)
    flavour: str | None = None  # "open" or "proprietary", from /proc/driver/nvidia/version
    gpus: list[Gpu] = field(default_factory=list)
    devices: dict[str, str] = field(default_factory=dict)  # path -> "c 195:0"
    smi_error: str | None = None

    @property
    def loaded(self) -> bool:
        return self.module_from in ("proc", "sys", "nvidia-smi")

    def majors(self) -> dict[str, int]:
        """Device path -> major number, as the node's kernel numbers them."""
        return {path: major for path, (major, _) in self.numbers().items()}

    def numbers(self) -> dict[str, tuple[int, int]]:
        """Device path -> (major, minor), as the node's kernel numbers them."""
        found = {}
        for path, kind in self.devices.items():
            major, _, minor = kind.partition(" ")[2].partition(":")
            if major.isdigit() and minor.isdigit():
                found[path] = (int(major), int(minor))
        return found

    def as_json(self) -> dict[str, Any]:
        return {
            "driver": self.module,
            "driver_from": self.module_from,
            "loaded": self.loaded,
            "flavour": self.flavour,
            "gpus": [g.__dict__ for g in self.gpus],
            "devices": dict(self.devices),
            "nvidia_smi_error": self.smi_error,
        }


def sections(text: str) -> dict[str, str]:
    """`@@pctfleet-gpu NAME` blocks -> {NAME: its text}."""
    found: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        if line.startswith(SECTION + " "):
            current = found.setdefault(line[len(SECTION) + 1 :].strip(), [])
        elif current is not None:
            current.append(line)
    return {name: "\n".join(lines) for name, lines in found.items()}


def parse_node(text: str) -> NodeGpu:
    """The output of `NODE_READ` -> the node's facts."""
    part = sections(text)
    node = NodeGpu(devices=parse_dev_stat(part.get("dev", "")))
    node.gpus = parse_smi_list(part.get("smi-L", ""))
    _merge_query(node.gpus, parse_query_csv(part.get("smi-query", "")))
    smi = next((g.driver for g in parse_query_rows(part.get("smi-query", ""))), None)
    candidates = (
        ("proc", parse_proc_version(part.get("proc", ""))),
        ("sys", plain_version(part.get("sys", ""))),
        ("nvidia-smi", smi),
        ("modinfo", plain_version(part.get("modinfo", ""))),
    )
    node.module_from, node.module = next(((s, v) for s, v in candidates if v), (None, None))
    if "Open Kernel Module" in part.get("proc", ""):
        node.flavour = "open"
    elif "Kernel Module" in part.get("proc", ""):
        node.flavour = "proprietary"
    said = part.get("smi-L", "").strip()
    if said and not node.gpus:
        node.smi_error = said.splitlines()[0][:200]
    return node


def parse_proc_version(text: str) -> str | None:
    """/proc/driver/nvidia/version: `NVRM version: NVIDIA UNIX ... Kernel Module  580.159.04`."""
    for line in text.splitlines():
        if line.startswith("NVRM version:"):
            hit = VERSION.search(line.partition("Kernel Module")[2] or line)
            return hit.group(1) if hit else None
    return None


def plain_version(text: str) -> str | None:
    """A file or a tool that prints only the version (/sys/module/nvidia/version, modinfo -F)."""
    first = text.strip().splitlines()[0].strip() if text.strip() else ""
    return first if VERSION.fullmatch(first) else None


def parse_smi_list(text: str) -> list[Gpu]:
    """`nvidia-smi -L`: `GPU 0: NVIDIA H200 (UUID: GPU-...)`; MIG lines are left out."""
    gpus = []
    for line in text.splitlines():
        hit = re.match(r"GPU (\d+): (.*?)(?: \(UUID: ([^)]*)\))?\s*$", line)
        if hit:
            gpus.append(Gpu(int(hit.group(1)), hit.group(2), hit.group(3) or ""))
    return gpus


@dataclass
class QueryRow:
    values: dict[str, str]

    @property
    def driver(self) -> str | None:
        value = self.values.get("driver_version", "")
        return value if VERSION.fullmatch(value) else None


def parse_query_rows(text: str) -> list[QueryRow]:
    """`nvidia-smi --query-gpu=... --format=csv`: a header (`memory.total [MiB]`), then rows."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines or "," not in lines[0] and "driver_version" not in lines[0]:
        return []
    names = [h.strip().partition(" [")[0] for h in lines[0].split(",")]
    rows = []
    for line in lines[1:]:
        cells = [c.strip() for c in line.split(",")]
        if len(cells) == len(names):
            rows.append(QueryRow(dict(zip(names, cells, strict=True))))
    return rows


def parse_query_csv(text: str) -> dict[int, QueryRow]:
    return {
        int(r.values["index"]): r
        for r in parse_query_rows(text)
        if r.values.get("index", "").isdigit()
    }


def _merge_query(gpus: list[Gpu], rows: dict[int, QueryRow]) -> None:
    for gpu in gpus:
        row = rows.get(gpu.index)
        if row:
            gpu.bus_id = row.values.get("pci.bus_id", "")
            gpu.memory = row.values.get("memory.total", "")
            gpu.compute_cap = row.values.get("compute_cap", "")


def parse_smi_version(text: str) -> dict[str, str]:
    """`nvidia-smi --version` (or its table header) -> {"nvidia-smi", "driver", "cuda": version}."""
    found = {}
    for key, pattern in (
        ("nvidia-smi", r"NVIDIA-SMI(?: version)?\s*:?\s*(\d[\d.]*)"),
        ("driver", r"(?i:driver version)\s*:\s*(\d[\d.]*)"),
        ("cuda", r"CUDA Version\s*:\s*(\d[\d.]*)"),
    ):
        hit = re.search(pattern, text)
        if hit:
            found[key] = next(g for g in hit.groups() if g)
    return found


def parse_dev_stat(text: str) -> dict[str, str]:
    """`stat -c '%n %F %t:%T %a'` lines -> {path: "c MAJOR:MINOR"} (majors in decimal)."""
    found = {}
    for line in text.splitlines():
        words = line.split()
        if len(words) < 4 or not words[0].startswith("/dev/"):
            continue
        kind = " ".join(words[1:-2])
        if kind == "character special file":
            major, _, minor = words[-2].partition(":")
            try:
                found[words[0]] = f"c {int(major, 16)}:{int(minor, 16)}"
            except ValueError:
                continue
        elif kind == "directory":
            found[words[0]] = "d"
    return found


def parse_ldconfig(text: str) -> dict[str, list[str]]:
    """`ldconfig -p` lines -> {soname: [paths, 64-bit first]} (the linker's choice first)."""
    found: dict[str, list[tuple[bool, str]]] = {}
    for line in text.splitlines():
        hit = re.match(r"\s*(\S+) \(([^)]*)\) => (\S+)\s*$", line)
        if hit:
            found.setdefault(hit.group(1), []).append(("64" not in hit.group(2), hit.group(3)))
    return {
        name: [p for _, p in sorted(paths, key=lambda e: e[0])] for name, paths in found.items()
    }


def library_version(path: str | None) -> str | None:
    """`.../libcuda.so.580.159.04` -> '580.159.04'; None for `libcuda.so.1` or no path."""
    hit = LIB_VERSION.search(path or "")
    return hit.group(1) if hit else None


def parse_ls_links(text: str) -> dict[str, str]:
    """`ls -l` lines -> {name: link target} for the symbolic links among them."""
    found = {}
    for line in text.splitlines():
        if line.startswith("l") and " -> " in line:
            left, _, target = line.partition(" -> ")
            found[left.split()[-1].rsplit("/", 1)[-1]] = target.strip()
    return found


# --- the container's side (facts from sh/gpu_userspace.sh) ------------------------


@dataclass
class Userspace:
    """The driver libraries one container loads, and the device nodes it can open."""

    libcuda: str | None = None  # the real file, e.g. /usr/lib/x86_64-linux-gnu/libcuda.so.580.95.05
    nvml: str | None = None
    smi: dict[str, str] = field(default_factory=dict)
    devices: dict[str, str] = field(default_factory=dict)  # path -> open | denied
    mounted: list[str] = field(default_factory=list)  # library folders bind-mounted in
    # Versions read inside a library whose file name carries none (a single file
    # bind-mounted as libcuda.so.1): {"libcuda" | "libnvidia-ml": version}.
    read: dict[str, str] = field(default_factory=dict)

    @property
    def version(self) -> str | None:
        """The userspace driver's version: libcuda's, else NVML's, else nvidia-smi's."""
        found = self.versions()
        return found.get("libcuda") or found.get("libnvidia-ml") or found.get("nvidia-smi")

    def versions(self) -> dict[str, str]:
        found = {
            "libcuda": library_version(self.libcuda) or self.read.get("libcuda"),
            "libnvidia-ml": library_version(self.nvml) or self.read.get("libnvidia-ml"),
        }
        found["nvidia-smi"] = self.smi.get("nvidia-smi")
        return {k: v for k, v in found.items() if v}


def userspace(raw: dict[str, str]) -> Userspace:
    """Facts as `parse_toolchain` keeps them in `raw` -> what the container holds."""
    real = {k.removeprefix("gpulib."): v for k, v in raw.items() if k.startswith("gpulib.")}
    cache = parse_ldconfig(raw.get("gpu_ldconfig", ""))
    found = Userspace(smi=parse_smi_version(raw.get("gpu_smi", "")))
    for attr, soname in (("libcuda", "libcuda.so.1"), ("nvml", "libnvidia-ml.so.1")):
        paths = cache.get(soname, []) + [p for p in real if p.endswith("/" + soname)]
        chosen = next((p for p in paths if p in real), None)
        setattr(found, attr, real.get(chosen or ""))
        hit = READ_VERSION.search(raw.get(f"gpulibver.{chosen}", ""))
        if hit:
            found.read[soname.partition(".")[0]] = hit.group(0)
    found.devices = {
        k.removeprefix("gpudev."): v for k, v in raw.items() if k.startswith("gpudev.")
    }
    mounts = [m for m in raw.get("gpu_mounts", "").splitlines() if m.strip()]
    libs = [p for p in (found.libcuda, found.nvml) if p]
    found.mounted = [
        m for m in mounts if any(p == m or p.startswith(m.rstrip("/") + "/") for p in libs)
    ]
    return found


# --- the CT config's side -------------------------------------------------------


@dataclass
class Passthrough:
    """What a CT config passes: device paths, cgroup allows, the nvidia hook."""

    devices: dict[str, str] = field(default_factory=dict)  # path -> the key that passes it
    # (major, minor) char devices allowed, as written: "*" stands for any.
    allowed: set[tuple[str, str]] = field(default_factory=set)
    hook: bool = False
    lines: list[str] = field(default_factory=list)

    @property
    def any(self) -> bool:
        nvidia = any(major == str(NVIDIA_MAJOR) for major, _ in self.allowed)
        return bool(self.devices or self.hook or nvidia)

    def allows(self, major: int, minor: int) -> bool:
        return any(m in ("*", str(major)) and n in ("*", str(minor)) for m, n in self.allowed)

    def gpu_indices(self) -> list[int]:
        """The GPUs this config names: /dev/nvidiaN entries and cgroup minors of major 195."""
        found = {int(p[11:]) for p in self.devices if p[11:].isdigit()}
        found |= {
            int(n) for m, n in self.allowed
            if m == str(NVIDIA_MAJOR) and n.isdigit() and int(n) != CTL_MINOR
        }  # fmt: skip
        return sorted(found)

    @property
    def style(self) -> str:
        """How this config passes devices: "dev" (PVE 8 devN:) or "lxc" (raw lines)."""
        return "lxc" if any(k.startswith("lxc.") for k in self.devices.values()) else "dev"


def passthrough(config: tuple[tuple[str, str], ...]) -> Passthrough:
    """The NVIDIA passthrough of a `pct config` (key, value) list."""
    found = Passthrough()
    for key, value in config:
        if DEV_KEY.fullmatch(key):
            path = value.split(",")[0].removeprefix("path=")
            if NVIDIA_DEV.fullmatch(path):
                found.devices[path] = key
                found.lines.append(f"{key}: {value}")
        elif key == "lxc.mount.entry" and NVIDIA_DEV.match(value.split()[0] if value else ""):
            found.devices[value.split()[0].rstrip("/")] = key
            found.lines.append(f"{key}: {value}")
        elif ALLOW_KEY.fullmatch(key):
            _allowed(found, value, f"{key}: {value}")
        elif key.startswith("lxc.hook.") and "nvidia" in value:
            found.hook = True
            found.lines.append(f"{key}: {value}")
    return found


def _allowed(found: Passthrough, value: str, line: str) -> None:
    words = value.split()
    if words and words[0] == "a":
        found.allowed.add(("*", "*"))
    elif len(words) >= 2 and words[0] == "c":
        major, _, minor = words[1].partition(":")
        found.allowed.add((major, minor or "*"))
        if major in ("*", str(NVIDIA_MAJOR)):
            found.lines.append(line)


def assigned_gpus(value: Any) -> list[int] | None:  # noqa: ANN401 - an inventory var
    """The `gpus` inventory var -> indices; None for "all" (or unset)."""
    if value is None or value is True or str(value).strip().lower() == "all":
        return None
    items = value if isinstance(value, list) else str(value).replace(",", " ").split()
    return sorted({int(i) for i in items if str(i).strip().isdigit()})


def needs_gpu(config: tuple[tuple[str, str], ...] | None, variables: dict[str, Any]) -> bool:
    """A GPU container: `gpus` set in the inventory, or NVIDIA passthrough in its CT config."""
    wanted = variables.get("gpus")
    if wanted is None:
        return passthrough(config or ()).any
    return not no_gpus(wanted)


def no_gpus(value: Any) -> bool:  # noqa: ANN401 - an inventory var
    """`gpus: false`, `none` or `[]` (0 is GPU index 0, not false: compared with `is`)."""
    if value is False or (isinstance(value, list) and not value):
        return True
    return isinstance(value, str) and value.strip().lower() in ("", "none", "false", "no")


def min_driver(cuda: str | None) -> str | None:
    """The oldest driver the CUDA release `cuda` runs on (None for an unknown major)."""
    hit = VERSION.search(cuda or "") or re.match(r"\s*(\d+)", cuda or "")
    return MIN_DRIVER.get(int(hit.group(1).split(".")[0])) if hit else None
