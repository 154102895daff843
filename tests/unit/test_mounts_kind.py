"""The ``mounts`` scenario kind: strace output parsed into counts (cut calls, failures, other
syscalls, signals), the config, the counts per build and their spread, the change against the
baseline, the gate rule, the typed result, the report section, and a run under strace of a
small program that makes a known number of (failing, harmless) mount syscalls per variant."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from patchbench import build, results, scenarios
from patchbench.config.scenarios import AnyScenario
from patchbench.gate import failures
from patchbench.measure import mounttrace
from patchbench.report.blocks import Across, View
from patchbench.runs import document
from patchbench.scenarios import mounts
from patchbench.scenarios.mounts import KIND, MountsConfig, MountsResult, MountStart
from patchbench.util.layout import Layout
from tests.support import scenario_md

STRACE = """\
4100<crun> mount("proc", "/proc", "proc", 0, NULL) = 0
4100<crun> open_tree(3, "", OPEN_TREE_CLONE|AT_EMPTY_PATH) = 5
4101<crun> mount(NULL, "/", NULL, MS_REC|MS_SLAVE, NULL <unfinished ...>
4100<crun> umount2("/old", MNT_DETACH) = -1 EINVAL (Invalid argument)
4101<crun> <... mount resumed>)     = -1 EPERM (Operation not permitted)
4102<3:[2:0]> mount_setattr(4, "", AT_EMPTY_PATH|AT_RECURSIVE, {attr_set=MOUNT_ATTR_RDONLY, ...}, 32) = 0
4100<crun> --- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED, si_pid=4101} ---
4100<crun> fsopen("tmpfs", FSOPEN_CLOEXEC) = 6
4103<crun> mount("a", "b", NULL, MS_BIND, NULL) = ?
4103<crun> +++ killed by SIGKILL +++
not a strace line
4100<crun> move_mount(5, "", -100, "/x", MOVE_MOUNT_F_EMPTY_PATH <unfinished ...>
4104<crun> mount("c", "d", NULL, MS_BIND, NULL) = 0
4100<crun> <... move_mount resumed>) = 0
"""


def test_parse_strace_counts_each_call_once_and_its_failures() -> None:
    mc = mounttrace.parse_strace(STRACE, 0)
    assert mc.by_syscall() == {"open_tree": 1, "mount_setattr": 1, "move_mount": 1, "mount": 4,
                               "umount2": 1}
    assert mc.errors == {"umount2": {"crun": 1}, "mount": {"crun": 1}}
    assert mc.by_comm() == {"3:[2:0]": 1, "crun": 7}
    assert (mc.total(), mc.error_total(), mc.exit_code) == (8, 2, 0)
    # fsopen only when asked for
    with_fs = mounttrace.parse_strace(STRACE, 3, [*mounttrace.SYSCALLS, "fsopen"])
    assert with_fs.by_syscall()["fsopen"] == 1 and with_fs.exit_code == 3
    assert mounttrace.parse_strace("", 0).by_syscall() == dict.fromkeys(mounttrace.SYSCALLS, 0)


def test_bpftrace_script_knows_the_new_mount_api_calls() -> None:
    prog = mounttrace.script([], ["mount", "fsopen", "fsconfig", "fsmount"])
    assert "tracepoint:syscalls:sys_enter_fsmount" in prog
    assert "sys_enter_umount" not in prog
    with pytest.raises(ValueError, match="no tracepoint"):
        mounttrace.script([], ["pivot_root"])
    doc = ('{"type": "map", "data": {"@calls": {"tracepoint:syscalls:sys_enter_fsopen,crun": 2}, '
           '"@errors": {}}}')
    assert mounttrace.parse(doc, 0, ["mount", "fsopen"]).by_syscall() == {"mount": 0, "fsopen": 2}


def config(**kw: Any) -> MountsConfig:
    base: dict[str, Any] = {"name": "mounts", "command": ["{runtime}", "run", "{id}-m{i}"]}
    return MountsConfig(**{**base, **kw})


def test_config_and_registry() -> None:
    sc = TypeAdapter(AnyScenario).validate_python(
        {"kind": "mounts", "name": "m", "command": ["x"]})
    assert isinstance(sc, MountsConfig)
    assert (sc.tracer, sc.runs, sc.rounds, sc.warmup, sc.after) == ("bpftrace", 5, 5, 1, [])
    assert sc.syscalls == ["mount", "umount2", "open_tree", "move_mount", "mount_setattr"]
    assert scenarios.get("mounts") is KIND
    assert config(syscalls=["mount", "fsmount"]).syscalls == ["mount", "fsmount"]
    assert config().plan_detail() == (", 5 traced starts per build (bpftrace), mount, umount2, "
                                      "open_tree, move_mount, mount_setattr")
    for bad in ({"syscalls": ["pivot_root"]}, {"syscalls": ["mount", "mount"]}, {"syscalls": []},
                {"tracer": "perf"}, {"command": []}, {"runs": 7}, {"after": [[]]}):
        with pytest.raises(ValidationError):
            config(**bad)


SYS = ["mount", "umount2", "open_tree", "move_mount", "mount_setattr"]


def start(variant: str, i: int, mount: int, *, failed: int = 0, code: int = 0,
          **more: int) -> MountStart:
    calls = {s: 0 for s in SYS} | {"mount": mount, "umount2": 2} | more
    return MountStart(variant=variant, round=i // 2 + 1, index=i, exit_code=code,
                              calls=calls, errors={"mount": failed})


def mounts_result(cand_mounts: tuple[int, ...] = (29, 29), cand_code: int = 0
                  ) -> MountsResult:
    starts = [start("baseline", 0, 65, failed=6, open_tree=1, mount_setattr=1),
              start("baseline", 1, 65, failed=6, open_tree=1, mount_setattr=1)]
    starts += [start("crun-mounts", i, n, failed=1, code=cand_code if i == 1 else 0,
                     open_tree=5, move_mount=4, mount_setattr=20)
               for i, n in enumerate(cand_mounts)]
    return MountsResult(
        name="mounts", command="crun run", runs=2, rounds=1, warmup=1,
        order=[["crun-mounts", "baseline"]], tracer="bpftrace", syscalls=SYS,
        variants=["baseline", "crun-mounts"], starts=starts)


def rows(blocks: list[str]) -> dict[str, list[str]]:
    table = next(b for b in blocks if b.startswith("| build"))
    return {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
            for line in table.splitlines()[2:]}


def test_the_table_build_by_syscall_and_the_change() -> None:
    got = rows(scenario_md(mounts_result()))
    assert got == {
        "baseline": ["65", "2", "1", "0", "1", "69", "6", "2", "yes"],
        "crun-mounts": ["29", "2", "5", "4", "20", "60", "1", "2", "yes"],
        "crun-mounts − baseline": ["-36", "0", "+4", "+4", "+19", "-9", "-5", "", ""]}


def test_starts_that_differ_show_a_range_and_the_change_of_the_medians() -> None:
    res = mounts_result(cand_mounts=(29, 31), cand_code=1)
    got = rows(scenario_md(res))
    assert got["crun-mounts"] == ["29–31", "2", "5", "4", "20", "60–62", "1", "2 (1 exited non-zero)",
                                  "no"]
    assert got["crun-mounts − baseline"][0] == "~-35" and got["crun-mounts − baseline"][1] == "0"
    assert mounts.differing(res.starts, SYS, res.variants) == {"baseline": [],
                                                               "crun-mounts": ["mount"]}
    assert mounts.exit_warnings(res) == ["mounts crun-mounts: traced start 1 exited 1"]


def test_gate_fails_a_candidate_start_that_failed_never_the_baseline() -> None:
    assert KIND.gate(mounts_result()) == []
    assert KIND.gate(mounts_result(cand_code=2)) == [
        "mounts crun-mounts: 1 traced start exited non-zero"]
    res = mounts_result()
    res.starts[0].exit_code = 1  # the baseline's
    assert KIND.gate(res) == []
    run = results.Results(tool="t", comparison="c", target="crun", url="u", ref="r",
                          commit="c" * 40, seed=1, settings=results.Settings(alpha=0.05,
                                                                             min_effect=0.02),
                          started_at="now", machine={"cpu_model": "cpu", "cpu_count": 2,
                                                     "kernel": "6.18", "load_avg": [1, 1, 1]},
                          builds={}, scenarios=[mounts_result(cand_code=2)])
    assert failures(run) == ["mounts crun-mounts: 1 traced start exited non-zero"]


def test_result_round_trips_and_renders_in_both_reports() -> None:
    res = mounts_result()
    back = TypeAdapter(results.AnyScenarioResult).validate_python(res.model_dump(mode="json"))
    assert isinstance(back, MountsResult) and back == res
    run = results.Results(tool="t", comparison="c", target="crun", url="u", ref="r",
                          commit="c" * 40, seed=1, settings=results.Settings(alpha=0.05,
                                                                             min_effect=0.02),
                          started_at="now", machine={"cpu_model": "cpu", "cpu_count": 2,
                                                     "kernel": "6.18", "load_avg": [1, 1, 1]},
                          builds={}, scenarios=[res])
    assert results.parse(run.dump(), "test", untrusted=True) == run
    text = document.markdown(run)
    assert "## Scenario `mounts` (mounts)" in text and "counted with bpftrace (2 traced" in text
    page = document.html(run)
    assert 'class="mounts"' in page and "<td>crun-mounts − baseline</td><td>-36</td>" in page
    assert KIND.blocks(res, View.SUMMARY) == [mounts.rb.table(
        ["mounts", "build", "mount syscalls per start", "failed"],
        [["mounts", "baseline", "69", "6"], ["mounts", "crun-mounts", "60", "1"]])]
    (across,) = KIND.blocks(res, View.MERGE)
    assert isinstance(across, Across) and across.cells == ((("mounts", "baseline"), "69 (6)"),
                                                    (("mounts", "crun-mounts"), "60 (1)"))


# --- a run under strace ----------------------------------------------------------------------

# mount(2) and umount2(2) on paths that do not exist: they fail (ENOENT as root, EPERM
# otherwise) and change nothing; the candidate makes one umount2 more
PROGRAM = """\
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
extra = sys.argv[1] != "baseline"
for _ in range(3):
    libc.mount(b"none", b"/nonexistent-patchbench-test", b"tmpfs", 0, None)
for _ in range(1 + extra):
    libc.umount2(b"/nonexistent-patchbench-test", 0)
"""


def strace_works() -> bool:
    if shutil.which("strace") is None:
        return False
    return subprocess.run(["strace", "-f", "-o", "/dev/null", "true"], check=False,
                          capture_output=True).returncode == 0


@pytest.mark.skipif(not strace_works(), reason="strace is not installed or cannot trace here")
def test_run_counts_every_start_of_every_build_under_strace(tmp_path: Path) -> None:
    prog = tmp_path / "mounter.py"
    prog.write_text(PROGRAM)
    sc = config(tracer="strace", command=[sys.executable, str(prog), "{variant}", "{i}"],
                after=[["sh", "-c", "echo {i} >> {work}/after"]], runs=2, rounds=2, warmup=1)
    built = [build.Built(build.Variant(v, ()), tmp_path / v, {"artifacts": {}}, True)
             for v in ("baseline", "fix")]
    ctx = scenarios.ScenarioContext(
        scenario=sc, built=built, runtime=None, workdir=tmp_path / "run", seed=3,
        layout=Layout(tmp_path / "b", tmp_path / "r"), project_root=tmp_path, alpha=0.05,
        min_effect=0.02)
    (tmp_path / "run").mkdir()
    plan = KIND.plan(ctx)
    assert any("[fix] traced:   strace -f" in line and "fix '{i}'" in line for line in plan)
    res, warnings = KIND.run(ctx)
    assert warnings == []
    assert [s.variant for s in res.starts].count("fix") == 2 and len(res.starts) == 4
    assert len(res.order) == 2 and all(sorted(o) == ["baseline", "fix"] for o in res.order)
    assert [s.index for s in res.starts if s.variant == "fix"] == [0, 1]
    for s in res.starts:
        umounts = 1 if s.variant == "baseline" else 2
        assert s.calls == {"mount": 3, "umount2": umounts, "open_tree": 0, "move_mount": 0,
                           "mount_setattr": 0}
        assert s.errors == {"mount": 3, "umount2": umounts, "open_tree": 0, "move_mount": 0,
                            "mount_setattr": 0}
        assert s.exit_code == 0
    # after: every start, the warmup's too
    assert sorted((tmp_path / "run" / "after").read_text().split()) == sorted(
        ["w0", "w0", "0", "1", "0", "1"])
    got = rows(scenario_md(res))
    assert got["fix − baseline"] == ["0", "+1", "0", "0", "0", "+1", "+1", "", ""]
    # the counts are a view of each start's whole profile, kept beside them
    assert res.profile is not None and len(res.profile.runs) == 4
    for s, p in zip(res.starts, res.profile.runs, strict=True):
        assert (p.variant, p.index) == (s.variant, s.index)
        assert {n: p.calls.get(n, 0) for n in s.calls} == s.calls
        assert p.calls["execve"] >= 1
