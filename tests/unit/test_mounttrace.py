"""The mount-syscall counter's bpftrace program and its output parser (no bpftrace needed; the
real tracer is tested in tests/integration/test_containerd.py on a program with known mounts)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from patchbench.errors import BenchmarkError
from patchbench.measure import mounttrace, syscalls


def test_script_follows_roots_and_counts_each_syscall() -> None:
    text = mounttrace.script([1234, 99])
    assert "@tree[cpid] = 1; @tree[1234] = 1; @tree[99] = 1;" in text
    assert "sched_process_fork /@tree[pid]/ { @tree[args->child_pid] = 1; }" in text
    assert "sched_process_exit /@tree[tid]/ { delete(@tree[tid]); }" in text
    for tp in ("open_tree", "mount_setattr", "move_mount", "mount", "umount"):
        assert f"tracepoint:syscalls:sys_enter_{tp}" in text
        assert f"tracepoint:syscalls:sys_exit_{tp}" in text
    assert "sys_enter_umount2" not in text  # the kernel's tracepoint for umount2 is "umount"


def test_script_subset_and_unknown() -> None:
    text = mounttrace.script([], ["mount"])
    assert "sys_enter_mount " in text and "open_tree" not in text
    with pytest.raises(ValueError):
        mounttrace.script([], ["pivot_root"])


def line(name: str, entries: dict[str, int]) -> str:
    return json.dumps({"type": "map", "data": {name: entries}})


def test_parse_counts_per_syscall_and_comm() -> None:
    out = "\n".join([
        json.dumps({"type": "attached_probes", "data": {"probes": 12}}),
        "",
        line("@calls", {
            "tracepoint:syscalls:sys_enter_open_tree,containerd-shim": 16,
            "tracepoint:syscalls:sys_enter_open_tree,ctr": 17,
            "tracepoint:syscalls:sys_enter_mount_setattr,ctr": 17,
            "tracepoint:syscalls:sys_enter_mount,runc:[2:INIT]": 38,
            "tracepoint:syscalls:sys_enter_umount,ctr": 19,
        }),
        line("@errors", {"tracepoint:syscalls:sys_exit_umount,ctr": 1}),
        line("@tree", {"5": 1}),  # any other map is ignored
    ])
    c = mounttrace.parse(out, 0)
    assert c.by_syscall() == {"open_tree": 33, "mount_setattr": 17, "move_mount": 0, "mount": 38,
                              "umount2": 19}
    assert c.by_comm() == {"containerd-shim": 16, "ctr": 53, "runc:[2:INIT]": 38}
    assert c.total() == 107
    assert c.total(["ctr"]) == 53
    assert c.by_syscall(["containerd-shim", "ctr"])["open_tree"] == 33
    assert c.errors == {"umount2": {"ctr": 1}} and c.error_total() == 1
    d = c.as_dict()
    assert d["total"] == 107 and d["exit_code"] == 0


def test_parse_empty_and_unexpected() -> None:
    assert mounttrace.parse("", 3).total() == 0
    assert mounttrace.parse("", 3).exit_code == 3
    with pytest.raises(BenchmarkError):
        mounttrace.parse(line("@calls", {"tracepoint:syscalls:sys_enter_pivot_root,x": 1}), 0)


def test_tracefs_detection(tmp_path: Path) -> None:
    info = tmp_path / "mountinfo"
    info.write_text("22 1 0:21 / /sys rw,nosuid - sysfs sysfs rw\n"
                    "23 22 0:6 / /sys/kernel/debug rw - debugfs debugfs rw\n")
    assert not syscalls.tracefs_mounted(info)
    info.write_text(info.read_text() + "40 22 0:12 / /sys/kernel/tracing rw - tracefs nodev rw\n")
    assert syscalls.tracefs_mounted(info)
    assert not syscalls.tracefs_mounted(tmp_path / "missing")


def test_mount_table_sampler(tmp_path: Path) -> None:
    info = tmp_path / "mountinfo"
    info.write_text("a\nb\n")
    with mounttrace.MountTableSampler(interval=0.01, mountinfo=info) as sampler:
        deadline = time.monotonic() + 5
        while len(sampler.samples) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        info.write_text("a\nb\nc\nd\ne\n")
        seen = len(sampler.samples)
        while len(sampler.samples) < seen + 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        info.write_text("a\n")
    counts = [s.mounts for s in sampler.samples]
    assert counts[0] == 2 and counts[-1] == 1 and 5 in counts
    assert sampler.peak().mounts == 5
    assert all(s.read_seconds >= 0 for s in sampler.samples)
    assert sampler.slowest_read() < 5
    ats = [s.at for s in sampler.samples]
    assert ats == sorted(ats)
