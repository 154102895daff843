"""What machine a measurement ran on: CPU, cores, memory, kernel, load, governor, tool versions."""

from __future__ import annotations

import os
import platform
import shutil
import time
from pathlib import Path
from typing import Any


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
