"""The syscall profile's readers: strace output and bpftrace's JSON, both recorded from a real
``runc run`` of a `true` container (Debian's runc 1.1.5; paths renamed, the strace output cut to
the process and mount calls and the first lines), read into counts, failures, times and the
phases of the start; and the syscall table from the kernel headers."""

from __future__ import annotations

from pathlib import Path

import pytest

from patchbench.errors import RequirementError
from patchbench.measure import cpuprofile, mounttrace, syscalls

DATA = Path(__file__).parent / "data"
STRACE = (DATA / "runc-run.strace").read_text()
BPFTRACE = (DATA / "runc-run.bpftrace.json").read_text()
# the numbers the recorded bpftrace output names (x86-64)
NAMES = {0: "read", 1: "write", 3: "close", 56: "clone", 59: "execve", 60: "exit",
         165: "mount", 166: "umount2", 231: "exit_group", 262: "newfstatat", 435: "clone3"}


def test_strace_of_a_runc_start_counts_every_call_once() -> None:
    t = syscalls.parse(STRACE)
    assert t.by_syscall(["mount", "umount2", "pivot_root", "clone", "clone3", "execve",
                         "execveat", "exit_group", "wait4"]) == {
        "mount": 52, "umount2": 2, "pivot_root": 1, "clone": 3, "clone3": 14, "execve": 3,
        "execveat": 1, "exit_group": 4, "wait4": 6}
    assert t.errors_by_syscall(["mount", "pivot_root"]) == {"mount": 9, "pivot_root": 0}
    # -Y: the process name each call was made under; a cut call counts under its start's name
    assert set(t.calls["mount"]) == {"runc:[2:INIT]", "exe"}
    assert t.root == 7421 and t.exit_code == 0
    assert t.wall == pytest.approx(1796308780.948755 - 1796308780.673353)
    assert t.seconds["clone"] > 0 and "exit_group" not in t.seconds  # never returned: no time


def test_the_phases_of_a_runc_start() -> None:
    t = syscalls.parse(STRACE)
    exe = syscalls.container_exec(t)
    # runc re-executes itself (/proc/self/exe, then its cloned binary by descriptor): not the
    # container's process, which is `true`
    assert exe is not None and exe.detail == "/bin/true" and exe.pid == 7434
    ph = syscalls.phases(t)
    assert ph is not None and list(ph) == list(syscalls.PHASES)
    assert ph["cli"] == pytest.approx(1796308780.721749 - 1796308780.673353)  # its first fork
    assert ph["create"] == pytest.approx(1796308780.937504 - 1796308780.721749)
    assert ph["process"] == pytest.approx(1796308780.941412 - 1796308780.937504)
    assert sum(ph.values()) == pytest.approx(t.wall)
    # no process made, no container exec: no phases
    assert syscalls.phases(syscalls.parse('1<true> 1.0 execve("/bin/true", ["true"]) = 0\n'
                                          "1<true> 1.5 +++ exited with 0 +++\n")) is None
    assert syscalls.phases(syscalls.parse("")) is None


def test_cut_calls_failures_threads_and_lines_without_times() -> None:
    out = """\
10<a> 1.000 clone3({flags=CLONE_VM|CLONE_THREAD, child_tid=0x1}, 88) = 11<a> <0.000100>
10<a> 1.100 mount("x", "/y", NULL, MS_BIND, NULL <unfinished ...>
11<a> 1.150 openat(AT_FDCWD, "/nope", O_RDONLY) = -1 ENOENT (No such file or directory) <0.000010>
10<b> 1.200 <... mount resumed>) = -1 EPERM (Operation not permitted) <0.100000>
10<b> 1.300 clone(child_stack=NULL, flags=CLONE_VM|CLONE_VFORK|SIGCHLD) = 12<b> <0.001000>
12<c> 1.310 execve("/bin/sh", ["sh"], 0x1 /* 1 var */) = 0 <0.000500>
12<c> 1.320 lseek(3, 0, SEEK_CUR) = 0x10 <0.000001>
12<c> 1.400 +++ killed by SIGKILL +++
not a strace line
"""
    t = syscalls.parse(out, exit_code=None)
    assert t.by_syscall() == {"clone": 1, "clone3": 1, "execve": 1, "lseek": 1, "mount": 1,
                              "openat": 1}
    assert t.errors == {"mount": {"a": 1}, "openat": {"a": 1}}  # under the name it started in
    assert t.seconds["mount"] == pytest.approx(0.1)
    # a thread's clone makes no process; the vfork-style clone does; the exec; the kill
    assert [(e.what, e.pid, e.detail) for e in t.events] == [
        ("spawn", 10, "clone"), ("exec", 12, "/bin/sh"), ("exit", 12, "SIGKILL")]
    assert t.exit_code is None
    # strace without -ttt (the mounts kind's older fixtures) reads too
    plain = syscalls.parse('5<crun> mount("a", "b", NULL, 0, NULL) = 0\n')
    assert plain.by_syscall() == {"mount": 1} and plain.wall == 0.0


def test_mount_counts_are_a_view_of_the_profile() -> None:
    t = syscalls.parse(STRACE)
    mc = mounttrace.from_trace(t, ["mount", "umount2", "open_tree"])
    assert mc.by_syscall() == {"mount": 52, "umount2": 2, "open_tree": 0}
    assert mc.error_total() == 9 and mc.exit_code == 0
    assert mounttrace.from_trace(syscalls.Trace(exit_code=None)).exit_code == 124  # a hang


def test_bpftrace_output_of_a_runc_start() -> None:
    t = syscalls.parse_bpftrace(BPFTRACE, 0, NAMES)
    assert t.by_syscall(["mount", "umount2", "execve"]) == {"mount": 52, "umount2": 2,
                                                           "execve": 2}
    assert t.errors_by_syscall(["mount"]) == {"mount": 9}
    assert t.exit_code == 0  # the command's exit_group, not bpftrace's own exit
    assert any(n.startswith("syscall_") for n in t.calls)  # a number the table lacks, kept
    ph = syscalls.phases(t)
    assert ph is not None and syscalls.container_exec(t) is not None
    assert syscalls.container_exec(t).detail == "/bin/true"  # type: ignore[union-attr]
    assert all(v >= 0 for v in ph.values()) and sum(ph.values()) == pytest.approx(t.wall)
    # no exit_group of the command: it was killed; killed at the deadline: None
    cut = "\n".join(x for x in BPFTRACE.splitlines() if '"status ' not in x)
    assert syscalls.parse_bpftrace(cut, 0, NAMES).exit_code == syscalls.KILLED
    assert syscalls.parse_bpftrace(cut, None, NAMES).exit_code is None


def test_the_bpftrace_program_starts_counting_at_the_commands_exec() -> None:
    prog = syscalls.bpftrace_script(3)
    assert "if (@execs == 3) { @tree[cpid] = 1; }" in prog
    assert "tracepoint:raw_syscalls:sys_enter /@tree[pid]/" in prog
    assert "args->clone_flags & 0x10000" in prog  # threads are not processes


def test_syscall_names_from_the_kernel_headers(tmp_path: Path) -> None:
    h = tmp_path / "unistd_64.h"
    h.write_text("#ifndef X\n#define __NR_read 0\n#define __NR_newfstatat 262\n"
                 "#define __NR_syscalls 463\n")
    names = syscalls.syscall_names([tmp_path / "missing.h", h])
    assert names[0] == "read" and names[262] == "newfstatat"
    with pytest.raises(RequirementError) as err:
        syscalls.syscall_names([tmp_path / "missing.h"])
    assert "linux-libc-dev" in (err.value.hint or "")


# --- the CPU profile: perf script's samples folded into stacks --------------------------------

PERF = (DATA / "slowstart.perf-script").read_text()  # perf record -e cpu-clock -g, the demo


def test_perf_samples_fold_into_stacks_outermost_first() -> None:
    stacks = cpuprofile.fold(PERF)
    assert sum(stacks.values()) == 39 == PERF.count("cpu-clock:")
    stat = [k for k in stacks if "os.Stat" in k]
    assert len(stat) >= 2  # stats of the planted loop, through different kernel paths
    frames = stat[0].split(";")
    assert frames[:4] == ["ss", "runtime.goexit.abi0", "runtime.main", "main.main"]
    assert frames.index("os.Stat") < frames.index("do_syscall_64")  # the kernel is innermost
    assert all(not f.startswith("0x") and "+0x" not in f for k in stacks for f in k.split(";"))
    share = cpuprofile.total_share(stacks)
    assert share["runtime.main"] == pytest.approx(sum(
        n for k, n in stacks.items() if "runtime.main" in k.split(";")) / 39)
    assert sum(cpuprofile.self_share(stacks).values()) == pytest.approx(1.0)
    # a frame perf could not name is named by its module
    assert cpuprofile.fold("x 1/1 1.0: 1 cpu-clock:\n\t 1a [unknown] (/usr/lib/libc.so.6)\n") == {
        "x;[libc.so.6]": 1}
