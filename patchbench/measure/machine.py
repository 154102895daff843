"""What machine a measurement ran on: CPU, cores, memory, kernel, load, governor, tool versions,
and the fingerprint ``merge`` groups machines into classes by (:func:`fingerprint`)."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

# What makes two machines of one class: the fields of the machine info the fingerprint hashes.
# A cloud's instance type is read only from metadata already on the machine (DMI, cloud-init's
# cache), never fetched: nothing reaches the network while measuring.
FINGERPRINT = ("cpu_model", "microcode", "kernel", "numa_nodes", "cpu_count", "instance_type")
# files a cloud or its agent left on the machine that name the instance type
CLOUD_INIT = "/run/cloud-init/instance-data.json"
DMI_PRODUCT = "/sys/class/dmi/id/product_name"
MAX_METADATA = 1 << 20  # bytes of cloud-init's cache read at most


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def _cpu_model() -> str:
    info = _read("/proc/cpuinfo") or ""
    for line in info.splitlines():
        if line.startswith(("model name", "Hardware", "Processor")):
            return line.split(":", 1)[1].strip()
    if platform.system() == "Darwin":
        return _version(["sysctl", "-n", "machdep.cpu.brand_string"]) or platform.processor()
    return platform.processor() or "unknown"


def _microcode() -> str | None:
    """The CPU's microcode revision as /proc/cpuinfo gives it (x86), or None."""
    for line in (_read("/proc/cpuinfo") or "").splitlines():
        if line.startswith("microcode"):
            return line.split(":", 1)[1].strip() or None
    return None


def _numa_nodes() -> int | None:
    """How many NUMA nodes the kernel shows (/sys/devices/system/node/node*), or None."""
    try:
        nodes = [p for p in Path("/sys/devices/system/node").iterdir()
                 if p.name.startswith("node") and p.name[4:].isdigit()]
    except OSError:
        return None
    return len(nodes) or None


def _instance_type() -> str | None:
    """The cloud instance type where metadata already on the machine says it: cloud-init's
    cached instance data (``v1.instance_type``, or ``ds.meta_data.instance_type``), else a DMI
    product name that looks like one (AWS Nitro names the type there). Read from files only,
    bounded; never fetched from a metadata service."""
    try:
        with open(CLOUD_INIT, "rb") as f:
            data = json.loads(f.read(MAX_METADATA).decode("utf-8", "replace"))
    except (OSError, ValueError):
        data = None
    if isinstance(data, dict):
        for path in (("v1", "instance_type"), ("ds", "meta_data", "instance_type"),
                     ("ds", "meta-data", "instance-type")):
            cur: Any = data
            for key in path:
                cur = cur.get(key) if isinstance(cur, dict) else None
            if isinstance(cur, str) and 0 < len(cur) <= 64:
                return cur
    product = _read(DMI_PRODUCT)
    if product and "." in product and " " not in product and len(product) <= 64:
        return product  # e.g. m5.large, c7g.xlarge
    return None


def fingerprint(info: Mapping[str, Any]) -> str:
    """A short stable hash of what makes a machine of one class (:data:`FINGERPRINT` of a run's
    recorded machine info): CPU model, microcode, kernel, NUMA nodes, CPU count and instance
    type, a field the run did not record counted as unknown. Runs recorded before these fields
    existed group by the ones they have."""
    key = {k: info.get(k) for k in FINGERPRINT}
    blob = json.dumps(key, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:12]


def describe(info: Mapping[str, Any]) -> str:
    """The fingerprint's fields in words: ``AMD EPYC 7B13, microcode 0xa0011d1, 2 CPUs, 1 NUMA
    node, kernel 6.1.0, instance n2d-standard-2`` (unknown ones left out)."""
    parts = [str(info["cpu_model"])] if info.get("cpu_model") else []
    if info.get("microcode"):
        parts.append(f"microcode {info['microcode']}")
    if info.get("cpu_count"):
        parts.append(f"{info['cpu_count']} CPUs")
    if info.get("numa_nodes"):
        n = info["numa_nodes"]
        parts.append(f"{n} NUMA node{'s' if n != 1 else ''}")
    if info.get("kernel"):
        parts.append(f"kernel {info['kernel']}")
    if info.get("instance_type"):
        parts.append(f"instance {info['instance_type']}")
    return ", ".join(parts) or "unknown machine"


def _version(argv: list[str]) -> str | None:
    """The first line a tool prints about itself, or None (missing, failing or hanging)."""
    from patchbench.errors import PatchbenchError
    from patchbench.util import cmd

    if shutil.which(argv[0]) is None:
        return None
    try:
        out = cmd.run(argv, timeout=30, check=False)
    except PatchbenchError:
        return None
    text = (out.stdout or out.stderr).strip()
    return text.splitlines()[0] if text else None


def _virtualization() -> str | None:
    """``vm: kvm``, ``container: docker``, both, or None: what this machine runs in (not a build
    backend), from systemd-detect-virt; "none" answers are left out."""
    found = []
    for kind in ("vm", "container"):
        answer = _version(["systemd-detect-virt", f"--{kind}"])
        if answer and answer != "none":
            found.append(f"{kind}: {answer}")
    return ", ".join(found) or None


def _mem_total() -> int | None:
    for line in (_read("/proc/meminfo") or "").splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    return None


def machine_info(tools: dict[str, list[str]] | None = None) -> dict[str, Any]:
    """What the machine is and does now: its hardware, load and kernel, what it runs in and the
    first line each tool prints about itself (hyperfine, git, go, and ``tools``)."""
    uname = platform.uname()
    versions = {"hyperfine": ["hyperfine", "--version"], "git": ["git", "--version"],
                "go": ["go", "version"], **(tools or {})}
    return {
        "system": uname.system,
        "kernel": uname.release,
        "machine": uname.machine,
        "cpu_model": _cpu_model(),
        "microcode": _microcode(),
        "numa_nodes": _numa_nodes(),
        "instance_type": _instance_type(),
        "cpu_count": os.cpu_count(),
        "affinity": sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "memory_bytes": _mem_total(),
        "load_avg": list(os.getloadavg()),
        "governor": _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
        "cpu_mhz": _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq"),
        "virtualization": _virtualization(),
        "cgroup_v2": Path("/sys/fs/cgroup/cgroup.controllers").exists(),
        "python": platform.python_version(),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "tools": {name: _version(argv) for name, argv in versions.items()},
    }


def load_warning() -> str | None:
    """Said before measuring when the machine is busier than its cores (the 1-minute load above
    the number of CPUs): other work then competes with every run, so the runs spread more, the
    intervals are wider and a verdict needs more rounds. None on a machine that is not."""
    try:
        load = os.getloadavg()[0]
    except OSError:
        return None
    cores = os.cpu_count() or 1
    if load <= cores:
        return None
    return (f"the 1-minute load is {load:.1f} on {cores} cores before measuring: other work "
            "competes with every run, so expect wider intervals and more inconclusive verdicts; "
            "run when the machine is quieter, or let the rounds grow until the answer is "
            "decided (--budget, --until-ci)")
