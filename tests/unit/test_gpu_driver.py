"""The NVIDIA driver's host side: parsers on verbatim H200 captures (580.159.04),
the lab's nvidia-smi stand-in against them, and each passthrough rule."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pctfleet.cuda import driver as d
from pctfleet.cuda.gpu_rules import HostSide, check_gpu
from pctfleet.cuda.known_errors import scan
from pctfleet.lab.gpu import NodeDriver

H200 = Path(__file__).parent / "nvidia_fixtures" / "h200"
V = "580.159.04"


def fixture(name: str) -> str:
    return (H200 / name).read_text()


def test_kernel_module_version_from_proc_sys_and_query():
    assert d.parse_proc_version(fixture("proc-driver-nvidia-version.txt")) == V
    assert d.plain_version(fixture("sys-module-nvidia-version.txt")) == V
    assert d.plain_version(fixture("nvidia-smi-query-driver.txt")) == V
    proprietary = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.14  Thu Feb 22 2024\n"
    assert d.parse_proc_version(proprietary) == "550.54.14"
    assert d.parse_proc_version("") is None and d.plain_version("modinfo: ERROR") is None


def test_gpus_from_list_and_query_csv():
    (gpu,) = d.parse_smi_list(fixture("nvidia-smi-L.txt"))
    assert (gpu.index, gpu.name, gpu.uuid) == (
        0,
        "NVIDIA H200",
        "GPU-e0c1fb49-7d03-4358-cd92-c1ac93ea16d3",
    )
    row = d.parse_query_csv(fixture("nvidia-smi-query-csv.txt"))[0]
    assert row.driver == V
    assert (row.values["memory.total"], row.values["compute_cap"]) == ("143771 MiB", "9.0")


def test_versions_from_smi_version_table_and_q():
    want = {"nvidia-smi": V, "driver": V, "cuda": "13.0"}
    assert d.parse_smi_version(fixture("nvidia-smi-version.txt")) == want
    assert d.parse_smi_version(fixture("nvidia-smi.txt")) == want
    assert d.parse_smi_version(fixture("nvidia-smi-q.txt")) == {"driver": V, "cuda": "13.0"}


def test_device_nodes_from_stat():
    found = d.parse_dev_stat(fixture("dev-nvidia-stat.txt"))
    assert found["/dev/nvidia0"] == "c 195:0" and found["/dev/nvidiactl"] == "c 195:255"
    assert found["/dev/nvidia-uvm"] == "c 238:0" and found["/dev/nvidia-caps"] == "d"
    assert found["/dev/nvidia-caps/nvidia-cap2"] == "c 241:2"


def test_libraries_from_ldconfig_and_listing():
    cache = d.parse_ldconfig(fixture("ldconfig-nvidia.txt"))
    assert cache["libcuda.so.1"][0] == "/usr/local/nvidia/lib64/libcuda.so.1"
    links = d.parse_ls_links(fixture("nvidia-lib64-ls.txt"))
    assert d.library_version(links["libcuda.so.1"]) == V
    assert d.library_version(links["libnvidia-ml.so.1"]) == V
    assert d.library_version("/usr/lib/libcuda.so.1") is None


def node_text(drop: str = "") -> str:
    parts = {
        "dev": fixture("dev-nvidia-stat.txt"),
        "proc": fixture("proc-driver-nvidia-version.txt"),
        "sys": fixture("sys-module-nvidia-version.txt"),
        "smi-L": fixture("nvidia-smi-L.txt"),
        "smi-query": fixture("nvidia-smi-query-csv.txt"),
    }
    body = "".join(f"{d.SECTION} {k}\n{v}" for k, v in parts.items() if k != drop)
    return body + f"{d.SECTION} end\n"


def test_node_read_parses_whole():
    node = d.parse_node(node_text())
    assert (node.module, node.module_from, node.flavour, node.loaded) == (V, "proc", "open", True)
    assert node.gpus[0].bus_id == "00000000:00:06.0" and node.majors()["/dev/nvidia-uvm"] == 238
    assert d.parse_node("").module is None
    installed = d.parse_node(f"{d.SECTION} modinfo\n{V}\n")
    assert (installed.module, installed.loaded) == (V, False)


def test_stand_in_prints_the_real_formats(tmp_path):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(NodeDriver(V).spec()))
    script = Path(d.__file__).parent.parent / "lab" / "nvidia_smi.py"
    env = {**os.environ, "PCTFLEET_LAB_GPU": str(spec)}

    def smi(*args: str) -> str:
        return subprocess.run([sys.executable, str(script), *args], env=env, capture_output=True,
                              text=True, check=True).stdout  # fmt: skip

    assert smi("-L") == fixture("nvidia-smi-L.txt")
    assert smi("--version") == fixture("nvidia-smi-version.txt")
    query = f"--query-gpu={d.QUERY}"
    assert smi(query, "--format=csv") == fixture("nvidia-smi-query-csv.txt")
    # The table's first line is the time of the call.
    assert smi().splitlines()[1:] == fixture("nvidia-smi.txt").splitlines()[1:]
    spec.write_text(json.dumps(NodeDriver("590.44.01").spec()))
    assert d.parse_smi_version(smi())["driver"] == "590.44.01"


PVE8 = (("dev0", "/dev/nvidia0,gid=44"), ("dev1", "/dev/nvidiactl"), ("dev2", "/dev/nvidia-uvm"))
RAW = (
    ("lxc.cgroup2.devices.allow", "c 195:* rwm"),
    ("lxc.cgroup2.devices.allow", "c 238:* rwm"),
    *(("lxc.mount.entry", f"/dev/{x} dev/{x} none bind,optional,create=file")
      for x in ("nvidia0", "nvidiactl", "nvidia-uvm")),
)  # fmt: skip
OPEN = {f"/dev/{x}": "open" for x in ("nvidia0", "nvidiactl", "nvidia-uvm")}


def judge(config=PVE8, node_text_: str | None = None, space=None, variables=None, cuda="13.0"):
    node = d.parse_node(node_text() if node_text_ is None else node_text_)
    space = space or d.Userspace(libcuda=f"/usr/lib/x86_64-linux-gnu/libcuda.so.{V}", devices=OPEN)
    side = HostSide("pve1", 200, node, config)
    return {r.rule: r for r in check_gpu(side, variables or {}, space, cuda)}


def test_every_rule_passes_for_a_healthy_gpu_container():
    for config in (PVE8, RAW):
        assert {r.rule: r.ok for r in judge(config).values()} == {
            "gpu-node-driver": True, "nvidia-uvm": True, "gpu-devices": True,
            "gpu-devices-open": True, "driver-match": True, "driver-cuda": True,
        }  # fmt: skip


def test_a_container_without_gpu_gets_no_rules_even_on_a_gpu_less_node():
    assert judge(config=(("cores", "2"),), node_text_="") == {}
    assert set(judge(config=(), variables={"gpus": [0]})) >= {"gpu-devices"}


def test_gpu_less_node_fails_a_gpu_container():
    rule = judge(node_text_="")["gpu-node-driver"]
    assert rule.ok is False and "no NVIDIA kernel module" in rule.evidence and rule.fix


def test_driver_match_names_both_versions():
    space = d.Userspace(libcuda="/usr/lib/x86_64-linux-gnu/libcuda.so.580.95.05", devices=OPEN)
    rule = judge(space=space)["driver-match"]
    assert rule.ok is False and "580.95.05" in rule.evidence and V in rule.evidence
    assert "580.159.04" in rule.fix


def test_host_libraries_bind_mounted_pass():
    raw = {
        "gpulib./usr/local/nvidia/lib64/libcuda.so.1": f"/usr/local/nvidia/lib64/libcuda.so.{V}",
        "gpu_ldconfig": fixture("ldconfig-nvidia.txt"),
        "gpu_mounts": "/usr/local/nvidia/lib64\n/proc",
        "gpudev./dev/nvidia0": "open",
    }
    space = d.userspace(raw)
    assert space.version == V and space.mounted == ["/usr/local/nvidia/lib64"]
    rule = judge(space=d.Userspace(**{**space.__dict__, "devices": OPEN}))["driver-match"]
    assert rule.ok is True and "bind-mounted" in rule.evidence


def test_missing_device_lines_name_the_device_and_the_line_to_add():
    rule = judge(config=PVE8[:2])["gpu-devices"]
    assert rule.ok is False and "/dev/nvidia-uvm" in rule.evidence
    assert "dev2: /dev/nvidia-uvm" in rule.fix
    rule = judge(config=RAW[1:])["gpu-devices"]  # the mount entries without the 195 allow
    assert rule.ok is False and "major 195" in rule.evidence
    assert "lxc.cgroup2.devices.allow: c 195:* rwm" in rule.fix
    assigned = judge(variables={"gpus": [0, 1]})["gpu-devices"]
    assert assigned.ok is False and "/dev/nvidia1" in assigned.evidence


def test_devices_that_cannot_be_opened():
    space = d.Userspace(libcuda=f"/x/libcuda.so.{V}", devices={**OPEN, "/dev/nvidia-uvm": "denied"})
    rule = judge(space=space)["gpu-devices-open"]
    assert rule.ok is False and "/dev/nvidia-uvm (denied)" in rule.evidence


def test_no_uvm_on_the_node():
    text = node_text().replace("/dev/nvidia-uvm character", "/dev/gone character")
    rule = judge(node_text_=text)["nvidia-uvm"]
    assert rule.ok is False and "nvidia-modprobe -u" in rule.fix


@pytest.mark.parametrize(("cuda", "ok"), [("13.0", True), ("12.8", True), ("14.0", None)])
def test_driver_supports_the_pinned_cuda(cuda, ok):
    assert judge(cuda=cuda)["driver-cuda"].ok is ok


def test_old_driver_fails_cuda_13():
    text = node_text().replace(V, "570.86.15")
    space = d.Userspace(libcuda="/x/libcuda.so.570.86.15", devices=OPEN)
    rule = judge(node_text_=text, space=space)["driver-cuda"]
    assert rule.ok is False and ">= 580" in rule.evidence and rule.fix


def test_known_errors_name_the_driver_rules():
    (nvml,) = scan("Failed to initialize NVML: Driver/library version mismatch")
    assert nvml.rule == "driver-match"
    (old,) = scan("CUDA driver version is insufficient for CUDA runtime version")
    assert old.rule == "driver"


def four_gpus() -> str:
    """The H200 read with GPUs 1-3 added (minors 1-3, as the kernel numbers them)."""
    more = "".join(f"/dev/nvidia{i} character special file c3:{i} 666\n" for i in (1, 2, 3))
    listed = "".join(f"GPU {i}: NVIDIA H200 (UUID: GPU-{i})\n" for i in (1, 2, 3))
    text = node_text().replace("/dev/nvidiactl ", more + "/dev/nvidiactl ", 1)
    return text.replace(f"{d.SECTION} smi-query", listed + f"{d.SECTION} smi-query", 1)


@pytest.mark.parametrize("zero", [0, "0", [0]])
def test_gpus_zero_is_gpu_index_zero(zero):
    rule = judge(config=(("cores", "2"),), variables={"gpus": zero})["gpu-devices"]
    assert rule.ok is False and "/dev/nvidia0" in rule.evidence


@pytest.mark.parametrize("off", [False, "none", "false", [], ""])
def test_gpus_none_false_or_empty_means_no_gpu_rules(off):
    assert judge(variables={"gpus": off}) == {}


def test_unset_gpus_expects_the_gpus_the_config_passes():
    node = d.parse_node(four_gpus())
    assert [g.index for g in node.gpus] == [0, 1, 2, 3]
    one = (("dev0", "/dev/nvidia2"), ("dev1", "/dev/nvidiactl"), ("dev2", "/dev/nvidia-uvm"))
    rule = judge(config=one, node_text_=four_gpus())["gpu-devices"]
    assert rule.ok is True
    assert rule.evidence == "passed: /dev/nvidia2, /dev/nvidiactl, /dev/nvidia-uvm"
    # A GPU named only by its cgroup minor is expected as a device node too.
    minor = (*RAW, ("lxc.cgroup2.devices.allow", "c 195:3 rwm"))
    rule = judge(config=minor, node_text_=four_gpus())["gpu-devices"]
    assert rule.ok is False and rule.evidence == "not passed: /dev/nvidia3"
    # No GPU named (only nvidiactl): every GPU of the node; `all` too.
    ctl = (("dev0", "/dev/nvidiactl"), ("dev1", "/dev/nvidia-uvm"))
    rule = judge(config=ctl, node_text_=four_gpus())["gpu-devices"]
    assert rule.evidence == "not passed: /dev/nvidia0, /dev/nvidia1, /dev/nvidia2, /dev/nvidia3"
    rule = judge(config=one, node_text_=four_gpus(), variables={"gpus": "all"})["gpu-devices"]
    assert rule.evidence == "not passed: /dev/nvidia0, /dev/nvidia1, /dev/nvidia3"


def test_cgroup_allow_for_one_minor_is_not_the_whole_major():
    gpu0_only = (("lxc.cgroup2.devices.allow", "c 195:0 rwm"), *RAW[1:])
    rule = judge(config=gpu0_only)["gpu-devices"]
    assert rule.ok is False
    assert rule.evidence == "no lxc.cgroup2.devices.allow for /dev/nvidiactl (major 195, minor 255)"
    assert "lxc.cgroup2.devices.allow: c 195:255 rwm" in rule.fix
    # nvidia-uvm's major is the node's (238 on the H200), not 195.
    exact = (("lxc.cgroup2.devices.allow", "c 195:0 rwm"), ("lxc.cgroup2.devices.allow",
             "c 195:255 rwm"), ("lxc.cgroup2.devices.allow", "c 238:0 rwm"), *RAW[2:])  # fmt: skip
    assert judge(config=exact)["gpu-devices"].ok is True
    no_uvm = judge(config=exact[:2] + RAW[2:])["gpu-devices"]
    assert "major 238" in no_uvm.evidence and "c 238:* rwm" in no_uvm.fix


def test_modinfo_runs_with_sbin_on_the_path():
    # Debian keeps modinfo in /sbin (/usr/sbin): off a non-root SSH user's PATH.
    assert 'PATH="$PATH:/usr/sbin:/sbin" modinfo -F version nvidia' in d.NODE_READ
    assert d.NODE_READ.count("PATH=") == 1  # for that command only


SINGLE = "/usr/lib/x86_64-linux-gnu/libcuda.so.1"


def test_single_file_bind_mount_reads_the_version_inside():
    raw = {f"gpulib.{SINGLE}": SINGLE, "gpu_mounts": SINGLE, f"gpulibver.{SINGLE}":
           f"Version {V}. Copyright"}  # fmt: skip
    space = d.userspace(raw)
    assert space.version == V and space.mounted == [SINGLE]
    rule = judge(space=d.Userspace(**{**space.__dict__, "devices": OPEN}))["driver-match"]
    assert rule.ok is True and f"libcuda {V}" in rule.evidence
    old = d.userspace({**raw, f"gpulibver.{SINGLE}": "Version 570.86.15. Copyright"})
    assert judge(space=d.Userspace(**{**old.__dict__, "devices": OPEN}))["driver-match"].ok is False


def test_single_file_bind_mount_without_a_readable_version_is_the_nodes():
    space = d.userspace({f"gpulib.{SINGLE}": SINGLE, "gpu_mounts": SINGLE})
    rule = judge(space=d.Userspace(**{**space.__dict__, "devices": OPEN}))["driver-match"]
    assert rule.ok is True and f"{SINGLE}, bind-mounted from pve1" in rule.evidence


def test_library_version_patterns_pick_the_libraries_own(tmp_path):
    """libcuda holds a table of older drivers before its banner; NVML only its own."""
    script = (Path(d.__file__).parent.parent / "sh" / "gpu_userspace.sh").read_text()
    cuda_re, nvml_re = re.findall(r"gl_re='([^']*)'", script)
    lib = tmp_path / "libcuda.so.1"
    lib.write_bytes(b"\x7fELF\x00565.40\x00570.86.09\x00Version 580.159.04. Copyright (C) 2026")
    nvml = tmp_path / "libnvidia-ml.so.1"
    nvml.write_bytes(b"\x7fELF\x00\x00Y\x00\x00\x00580.159.04\x00/sys/module/%s/initstate\x00")

    def grep(pattern: str, path: Path) -> str:
        return subprocess.run(["grep", "-a", "-o", "-m1", "-E", pattern, str(path)],
                              capture_output=True, text=True).stdout.splitlines()[0]  # fmt: skip

    assert d.READ_VERSION.search(grep(cuda_re, lib)).group(0) == V
    assert grep(nvml_re, nvml) == V
