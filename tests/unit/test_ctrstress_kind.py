"""The ``ctrstress`` scenario kind without containerd: its config, the per-round draws and the
interleaved schedule (with a fake runtime and round), the leftover census on a fake daemon (a
mountinfo with idmapped mounts, ``ctr`` listings, a snapshotter directory, a process that looks
like a shim), totals and the gate rule, the typed result and the report section."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from patchbench import build, results, scenarios
from patchbench.config.scenarios import AnyScenario
from patchbench.errors import BenchmarkError, ConfigError
from patchbench.gate import failures
from patchbench.runs import document
from patchbench.runtimes import containerd as cd
from patchbench.runtimes.containerd import ContainerdRuntime
from patchbench.scenarios import ctrstress
from patchbench.scenarios.ctrstress import KIND, CtrStressConfig
from patchbench.util.layout import Layout
from tests.support import scenario_md

VARIANTS = ("baseline", "idmap-once-per-overlay")


def config(**kw: Any) -> CtrStressConfig:
    base: dict[str, Any] = {"name": "kill-restart", "layers": [16, 64], "k": 8,
                            "actions": ["kill", "delete", "restart"], "runs": 12, "rounds": 12}
    return CtrStressConfig(**{**base, **kw})


def test_config_and_registry() -> None:
    sc = TypeAdapter(AnyScenario).validate_python(
        {"kind": "ctrstress", "name": "s", "layers": [16], "actions": ["restart"], "runs": 2,
         "rounds": 2})
    assert isinstance(sc, CtrStressConfig)
    assert (sc.k, sc.args, sc.delay, sc.settle) == (8, ["true"], (0.0, 1.0), 5.0)
    assert scenarios.get("ctrstress") is KIND
    assert config().plan_detail() == ", L = [16, 64], k = 8, actions ['kill', 'delete', 'restart']"
    assert "--uidmap 0:100000:65536" in config().shown_command()
    assert "8 at once, then kill/delete/restart mid-start" in config().shown_command()
    for bad in ({"layers": []}, {"k": 0}, {"actions": []}, {"actions": ["stop"]},
                {"actions": ["kill", "kill"]}, {"layers": [16, 16]}, {"delay": [2.0, 1.0]},
                {"delay": [-1.0, 1.0]}, {"settle": -1}, {"runs": 5}, {"extra": 1}):
        with pytest.raises(ValidationError):
            config(**bad)


def test_draws_are_seeded_balanced_and_in_range() -> None:
    sc = config(delay=(0.2, 2.0))
    one, again, other = (ctrstress.draws(sc, s) for s in (7, 7, 8))
    assert one == again and one != other
    assert [d.round for d in one] == list(range(1, 13))
    # 12 rounds = 2 shuffled blocks of the 6 (L, action) pairs: each pair exactly twice
    assert set(Counter((d.layers, d.action) for d in one).values()) == {2}
    assert all(0.2 <= d.delay <= 2.0 for d in one)
    assert len({d.delay for d in one}) == 12
    # a partial block: counts differ by at most one
    seven = Counter((d.layers, d.action) for d in ctrstress.draws(config(runs=7, rounds=7), 3))
    assert sum(seven.values()) == 7 and max(seven.values()) - min(seven.values(), default=0) <= 1
    fixed = ctrstress.draws(config(delay=(0.5, 0.5), runs=3, rounds=3), 1)
    assert {d.delay for d in fixed} == {0.5}


# --- fakes ---------------------------------------------------------------------------------


@dataclass
class FakeImage:
    layers: int

    @property
    def name(self) -> str:
        return f"patchbench.invalid/layers:{self.layers}"

    @property
    def manifest_digest(self) -> str:
        return f"sha256:{self.layers:064d}"


@dataclass
class FakeDaemon:
    """What census, clean and the kind use of a ContainerdDaemon, on fixtures."""

    base: Path
    mountinfo: Path
    proc: Path
    listings: dict[str, str] = field(default_factory=dict)
    imported: list[str] = field(default_factory=list)
    cleaned: int = 0
    fail: bool = False

    def __post_init__(self) -> None:
        self.paths = SimpleNamespace(base=self.base, root=self.base / "root")
        self.socket = self.base / "containerd.sock"
        self.namespace = "pb-test"

    def ctr(self, *args: str, **_: Any) -> SimpleNamespace:
        if self.fail:
            raise BenchmarkError("ctr tasks: timed out after 60 s and was killed")
        key = " ".join(a for a in args if a not in ("--snapshotter", "overlayfs"))
        return SimpleNamespace(stdout=self.listings.get(key, ""), returncode=0)

    snapshotter = "overlayfs"

    def shims(self) -> list[int]:
        return cd.shim_pids(self.socket, self.proc)

    def unmount_leftovers(self) -> tuple[int, list[str]]:
        return cd.unmount(cd.mounts_under(self.base, self.mountinfo))

    def cleanup_state(self) -> list[str]:
        self.cleaned += 1
        return ["task t1", "container c1"]

    def images(self) -> dict[str, str]:
        return {}

    def import_image(self, image: FakeImage) -> None:
        self.imported.append(image.name)


class FakeRuntime:
    name = "containerd"

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.daemons: dict[str, FakeDaemon] = {}

    def image(self, n: int) -> FakeImage:
        return FakeImage(n)

    def daemon(self, variant: str, bin_dir: Path) -> FakeDaemon:
        base = self.tmp / variant
        base.mkdir(parents=True, exist_ok=True)
        return self.daemons.setdefault(variant, FakeDaemon(base, base / "mi", base / "proc"))

    def runc_info(self) -> dict[str, str]:
        return {"version": "runc version 1.1.5", "sha256": "ab" * 32}


def fake_built(tmp_path: Path) -> list[build.Built]:
    arts = {"artifacts": {n: {} for n in ("containerd", "ctr", "containerd-shim-runc-v2")}}
    return [build.Built(build.Variant(v, ()), tmp_path / v, arts, True) for v in VARIANTS]


def context(tmp_path: Path, runtime: Any, sc: CtrStressConfig | None = None
            ) -> scenarios.ScenarioContext:
    return scenarios.ScenarioContext(
        scenario=sc or config(), built=fake_built(tmp_path), runtime=runtime,
        workdir=tmp_path / "run", seed=5, layout=Layout(tmp_path / "b", tmp_path / "r"),
        project_root=tmp_path, alpha=0.05, min_effect=0.02)


def census(**kw: int) -> ctrstress.CtrStressCensus:
    base = dict.fromkeys(("mounts", "idmapped_mounts", "snapshots", "snapshot_dirs", "shims",
                          "tasks", "containers"), 0)
    return ctrstress.CtrStressCensus(**{**base, **kw})


def round_(variant: str, n: int, *, left: ctrstress.CtrStressCensus | None = None,
           fresh_ok: bool = True, hangs: int = 0, action: str = "kill",
           fresh_left: ctrstress.CtrStressCensus | None = None) -> ctrstress.CtrStressRound:
    return ctrstress.CtrStressRound(
        round=n, variant=variant, layers=64, k=8, action=action, delay_s=0.5,
        exit_codes=[0] * 7 + [None if hangs else 137], kill_errors=1, hangs=hangs,
        action_outcomes={"restart": 1} if action == "restart" else {"hit": 1, "missed": 7},
        settle_s=0.1, left=left or census(), fresh_ok=fresh_ok, fresh_left=fresh_left or census())


# --- plan and run --------------------------------------------------------------------------


def test_plan_names_each_variants_commands(tmp_path: Path) -> None:
    rt = ContainerdRuntime()
    rt.prepare(tmp_path / "run", None, None, dry_run=True)
    text = "\n".join(KIND.plan(context(tmp_path, rt)))
    for v in VARIANTS:
        assert f"[{v}] launch:   8 x " in text
        assert f"--namespace pb-{rt.token}-{v} tasks kill -s KILL ID" in text
        assert f"--namespace pb-{rt.token}-{v} containers delete ID" in text
        assert f"[{v}] restart:  stop {tmp_path / v / 'bin' / 'containerd'} --config " in text
    assert "patchbench.invalid/layers:64" in text and "--remap-labels" in text


def test_needs_the_containerd_runtime(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="runtime: containerd"):
        KIND.plan(context(tmp_path, None))
    with pytest.raises(ConfigError, match="runtime: containerd"):
        KIND.run(context(tmp_path, None))


def test_run_applies_each_rounds_draw_to_every_variant_interleaved(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, ctrstress.Draw, int]] = []

    def fake_round(ctx: Any, variant: str, d: Any, image: FakeImage, draw: ctrstress.Draw,
                   log: Path) -> ctrstress.CtrStressRound:
        calls.append((variant, draw, image.layers))
        bad = variant != "baseline" and draw.layers == 64
        return round_(variant, draw.round, action=draw.action,
                      left=census(mounts=2, idmapped_mounts=2) if bad else None)

    monkeypatch.setattr(ctrstress, "run_round", fake_round)
    rt = FakeRuntime(tmp_path / "d")
    res, warnings = KIND.run(context(tmp_path, rt))
    assert len(calls) == 24
    for n in range(1, 13):  # each round: both variants, with the same draw
        mine = [c for c in calls if c[1].round == n]
        assert sorted(c[0] for c in mine) == sorted(VARIANTS)
        assert mine[0][1] == mine[1][1] and mine[0][2] == mine[0][1].layers
    assert len({tuple(c[0] for c in calls[i:i + 2]) for i in range(0, 24, 2)}) == 2  # shuffled
    assert res.order == [[c[0] for c in calls[i:i + 2]] for i in range(0, 24, 2)]
    assert rt.daemons["baseline"].imported == ["patchbench.invalid/layers:16",
                                               "patchbench.invalid/layers:64"]
    pv = res.per_variant
    assert pv["baseline"].rounds == 12 and pv["baseline"].mounts == 0
    assert pv["baseline"].actions == {"kill": 4, "delete": 4, "restart": 4}
    assert pv["idmap-once-per-overlay"].mounts == 12 and pv["idmap-once-per-overlay"].idmapped_mounts == 12
    assert pv["idmap-once-per-overlay"].rounds_with_leftovers == 6
    assert res.images == {"16": FakeImage(16).manifest_digest, "64": FakeImage(64).manifest_digest}
    assert warnings == ["kill-restart idmap-once-per-overlay: 12 mounts (leftovers removed "
                        "after each round)"]
    assert KIND.gate(res) == ["kill-restart idmap-once-per-overlay: 12 leftover idmapped mounts "
                              "(the baseline baseline: none)"]


# --- counting ------------------------------------------------------------------------------


MOUNTINFO = """\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
{n1} 22 8:1 /x {base}/t/ovl-idmapped1 rw,relatime,idmapped shared:2 - ext4 /dev/sda1 rw
{n2} 22 0:50 / {base}/state/rootfs rw,relatime shared:3 - overlay overlay rw,lowerdir=/a
{n3} 22 8:1 /y {base}/t/with\\040space rw,nosuid,idmapped - ext4 /dev/sda1 rw
99 22 8:1 /z {base}-other/t/x rw,idmapped - ext4 /dev/sda1 rw
"""


def write_mountinfo(path: Path, base: Path) -> None:
    path.write_text(MOUNTINFO.format(base=base, n1=30, n2=31, n3=32))


def test_run_mounts_finds_the_runs_mounts_and_which_are_idmapped(tmp_path: Path) -> None:
    base = tmp_path / "d"
    text = MOUNTINFO.format(base=base, n1=30, n2=31, n3=32)
    assert ctrstress.run_mounts(base, text) == [
        (f"{base}/t/with space", True), (f"{base}/state/rootfs", False),
        (f"{base}/t/ovl-idmapped1", True)]
    assert ctrstress.run_mounts(tmp_path / "elsewhere", text) == []


def test_listings() -> None:
    snaps = ("KEY PARENT KIND\nsha256:aa  Committed\npb-r1-0 sha256:aa Active\n"
             "pb-r1-1 sha256:aa Active\n")
    assert ctrstress.listed_snapshots(snaps) == (["pb-r1-0", "pb-r1-1"], 3)
    assert ctrstress.listed_snapshots("KEY PARENT KIND\n") == ([], 0)
    tasks = "TASK PID STATUS\npb-r1-0 123 STOPPED\n\npb-r1-1 0 CREATED\n"
    assert ctrstress.listed_tasks(tasks) == ["pb-r1-0", "pb-r1-1"]


def looks_like_a_shim(address: Path) -> subprocess.Popen[bytes]:
    """A real process whose command line carries ``-address <address>``, as a shim's does."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "-address",
                             str(address)])
    deadline = time.monotonic() + 10  # right after exec, /proc/PID/cmdline can still be empty
    while str(address).encode() not in Path(f"/proc/{proc.pid}/cmdline").read_bytes():
        assert time.monotonic() < deadline
        time.sleep(0.01)
    return proc


def fake_daemon(tmp_path: Path) -> FakeDaemon:
    base = tmp_path / "d"
    (base / "root" / ctrstress.SNAPSHOT_DIR).mkdir(parents=True)
    for i in range(1, 6):  # 5 directories, 3 snapshots listed: 2 unlisted
        (base / "root" / ctrstress.SNAPSHOT_DIR / str(i)).mkdir()
    d = FakeDaemon(base, tmp_path / "mountinfo", Path("/proc"), listings={
        "tasks ls": "TASK PID STATUS\npb-r1-3 0 CREATED\n",
        "containers ls -q": "pb-r1-3\npb-r1-4\n",
        "snapshots ls": "KEY PARENT KIND\nsha256:aa  Committed\npb-r1-3 sha256:aa Active\n"
                        "pb-r1-4 sha256:aa Active\n"})
    write_mountinfo(d.mountinfo, base)
    return d


def test_census_counts_and_classifies_every_kind(tmp_path: Path) -> None:
    d = fake_daemon(tmp_path)
    shim = looks_like_a_shim(d.socket)
    try:
        c = ctrstress.census(d)  # type: ignore[arg-type]
    finally:
        shim.kill()
        shim.wait()
    assert c.counts() == {"mounts": 3, "idmapped_mounts": 2, "snapshots": 2, "snapshot_dirs": 2,
                          "shims": 1, "tasks": 1, "containers": 2}
    assert c.shims == [shim.pid] and c.tasks == ["pb-r1-3"] and c.snapshots == ["pb-r1-3", "pb-r1-4"]
    assert c.kinds() == list(ctrstress.LEFTOVER_KINDS)
    assert c.record().model_dump() == {**c.counts(), "errors": []}
    # unlisted snapshot directories count beyond those there when the round began
    assert ctrstress.census(d, dirs_before=2).snapshot_dirs == 0  # type: ignore[arg-type]
    detail = ctrstress._detail(c)
    assert f"idmapped mount {d.base}/t/ovl-idmapped1" in detail
    assert f"mount {d.base}/state/rootfs" in detail and "2 unlisted snapshot dir(s)" in detail
    assert ctrstress._detail(c, limit=2)[-1] == f"... {len(detail) - 2} more"


def test_census_of_an_empty_run_and_a_daemon_that_does_not_answer(tmp_path: Path) -> None:
    d = FakeDaemon(tmp_path, tmp_path / "mi", Path("/proc"))
    d.mountinfo.write_text("22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n")
    empty = ctrstress.census(d)  # type: ignore[arg-type]
    assert empty.kinds() == [] and empty.errors == []
    d.fail = True
    broken = ctrstress.census(d)  # type: ignore[arg-type]
    assert broken.errors == ["ctr tasks: timed out after 60 s and was killed"]


def test_clean_records_what_it_removed_and_what_failed(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    d = fake_daemon(tmp_path)
    killed: list[int] = []
    shim = looks_like_a_shim(d.socket)
    try:
        with monkeypatch.context() as mp:
            mp.setattr(os, "kill", lambda pid, sig: killed.append(pid))
            removed = ctrstress.clean(d)  # type: ignore[arg-type]
    finally:
        shim.kill()
        shim.wait()
    assert d.cleaned == 1 and killed == [shim.pid]
    assert removed[:2] == ["task t1", "container c1"]
    # the fixture's mount points are not mounted: every unmount fails, and each failure is listed
    assert sum(r.startswith("unmount failed: ") for r in removed) == 3
    assert removed[-1] == f"shim pid {shim.pid}"


def test_action_argv() -> None:
    d = SimpleNamespace(ctr_argv=lambda *args: ["/x/ctr", *args])
    assert ctrstress.action_argv(d, "kill", "c1") == ["/x/ctr", "tasks", "kill", "-s", "KILL",  # type: ignore[arg-type]
                                                      "c1"]
    sh = ctrstress.action_argv(d, "delete", "c1")  # type: ignore[arg-type]
    assert sh[:2] == ["sh", "-c"]
    assert sh[2] == ("/x/ctr containers delete c1 || { /x/ctr tasks delete --force c1 && "
                     "{ /x/ctr containers delete c1; true; }; }")


# --- totals, gate, results, report ---------------------------------------------------------


def test_totals_sum_leftovers_after_rounds_and_fresh_starts() -> None:
    rounds = [round_("v", 1, left=census(mounts=3, idmapped_mounts=3)),
              round_("v", 2, fresh_ok=False, hangs=2,
                     fresh_left=census(shims=1, snapshot_dirs=2)),
              round_("v", 3)]
    t = ctrstress.totals(rounds)
    assert ctrstress.outcomes(rounds) == {"hit": 3, "missed": 21}
    assert t == {"rounds": 3, "hangs": 2, "kill_errors": 3, "fresh_failures": 1, "mounts": 3,
                 "idmapped_mounts": 3, "snapshots": 0, "snapshot_dirs": 2, "shims": 1,
                 "tasks": 0, "containers": 0, "rounds_with_leftovers": 1}
    assert ctrstress.CtrStressVariant(**t, actions={"kill": 3}).shims == 1


def test_gate_rule() -> None:
    clean = {"rounds": 6}
    assert ctrstress.gate_failures("s", {}) == []
    assert ctrstress.gate_failures("s", {"baseline": clean, "fix": clean}) == []
    # the candidate leaves what the baseline never does: fails, kind by kind
    reasons = ctrstress.gate_failures("s", {"baseline": {"containers": 4, "hangs": 1},
                                            "fix": {"mounts": 5, "idmapped_mounts": 5,
                                                    "containers": 2, "hangs": 1,
                                                    "fresh_failures": 1}})
    assert reasons == ["s fix: 5 leftover idmapped mounts, 1 failed fresh starts (the baseline "
                       "baseline: none)"]
    # idmapped mounts and other mounts are separate kinds: a baseline's rootfs mount left by a
    # restart does not excuse a candidate's idmapped mounts, and the other way round
    assert ctrstress.gate_failures("s", {"baseline": {"mounts": 1},
                                         "fix": {"mounts": 37, "idmapped_mounts": 36}}) == [
        "s fix: 36 leftover idmapped mounts (the baseline baseline: none)"]
    assert ctrstress.gate_failures("s", {"baseline": {"mounts": 2, "idmapped_mounts": 2},
                                         "fix": {"mounts": 1}}) == [
        "s fix: 1 leftover other mounts (the baseline baseline: none)"]
    # the baseline's own leftovers fail nothing
    assert ctrstress.gate_failures("s", {"baseline": {"shims": 3, "fresh_failures": 2},
                                         "fix": clean}) == []
    assert ctrstress.gate_failures("s", {"b": clean, "x": {"snapshot_dirs": 1},
                                         "y": {"hangs": 2}}) == [
        "s x: 1 leftover snapshot dirs (the baseline b: none)",
        "s y: 2 hangs (the baseline b: none)"]


def ctrstress_result(fix_left: int = 0, fix_fresh_fail: bool = False) -> ctrstress.CtrStressResult:
    rounds = []
    for n, action in ((1, "kill"), (2, "restart")):
        rounds.append(round_("baseline", n, action=action))
        rounds.append(round_("fix", n, action=action, fresh_ok=not (fix_fresh_fail and n == 2),
                             left=census(mounts=fix_left, idmapped_mounts=fix_left)))
    per = {v: ctrstress.CtrStressVariant(
        **ctrstress.totals([r for r in rounds if r.variant == v]),
        actions=dict(Counter(r.action for r in rounds if r.variant == v)),
        action_outcomes=ctrstress.outcomes([r for r in rounds if r.variant == v]))
        for v in ("baseline", "fix")}
    return ctrstress.CtrStressResult(
        name="kill-restart", command="ctr run ...", runs=2, rounds=2, warmup=0,
        order=[["baseline", "fix"], ["fix", "baseline"]], layers=[64], instances=8,
        actions=["kill", "restart"], delay=[0.2, 2.0], settle=5.0, images={"64": "sha256:cc"},
        rounds_detail=rounds, per_variant=per,
        runc={"version": "runc version 1.1.5\ncommit: x", "sha256": "ab" * 32})


def test_result_round_trips_through_the_union() -> None:
    res = ctrstress_result(fix_left=2)
    back = TypeAdapter(results.AnyScenarioResult).validate_python(res.model_dump(mode="json"))
    assert isinstance(back, ctrstress.CtrStressResult) and back == res


def test_kind_gate_and_the_run_gate() -> None:
    assert KIND.gate(ctrstress_result()) == []
    assert KIND.gate(ctrstress_result(fix_left=2, fix_fresh_fail=True)) == [
        "kill-restart fix: 4 leftover idmapped mounts, 1 failed fresh starts (the baseline "
        "baseline: none)"]
    run = results.Results(tool="t", comparison="c", target="containerd", url="u", ref="r",
                          commit="c" * 40, seed=1, settings=results.Settings(alpha=0.05,
                                                                             min_effect=0.02),
                          started_at="now", machine={}, builds={},
                          scenarios=[ctrstress_result(fix_left=1)])
    assert failures(run) == ["kill-restart fix: 2 leftover idmapped mounts (the baseline "
                             "baseline: none)"]


def test_report_section() -> None:
    blocks = scenario_md(ctrstress_result(fix_left=3, fix_fresh_fail=True))
    text = "\n\n".join(blocks)
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
            for line in blocks[1].splitlines() if line.startswith("| baseline ")
            or line.startswith("| fix ")}
    assert rows["baseline"] == ["2", "kill 1, restart 1", "hit 1, missed 7", "0", "2", "0 (0)",
                                "0 / 0", "0", "0 / 0", "0", "0"]
    assert rows["fix"] == ["2", "kill 1, restart 1", "hit 1, missed 7", "0", "2", "6 (6)",
                           "0 / 0", "0", "0 / 0", "2", "1"]
    assert "8 containers per round (L = 64)" in text and "[0.2, 2] s" in text
    by_cell = [line for line in blocks[3].splitlines() if line.startswith("| 64 ")]
    assert [[c.strip() for c in line.split("|")[1:-1]] for line in by_cell] == [
        ["64", "kill", "0 (0) / 0 / 0 / 0 / 0", "3 (3) / 0 / 0 / 0 / 0"],
        ["64", "restart", "0 (0) / 0 / 0 / 0 / 0", "3 (3) / 0 / 0 / 0 / 0"]]
    assert "fix: hit 1, missed 7; exits 0×7, 137×1; left 3 (3) / 0 / 0 / 0 / 0; fresh ok" in text
    assert "fix: exits 0×7, 137×1; left 3 (3) / 0 / 0 / 0 / 0; fresh FAILED" in text
    assert "| 2       | 64  | restart  | 0.50 s  |" in text
    assert "L=64 `sha256:cc`" in text and "runc version 1.1.5 (sha256 abababababab)" in text


def test_whole_report_and_html_render() -> None:

    run = results.Results(tool="t", comparison="c", target="containerd", url="u", ref="r",
                          commit="c" * 40, seed=1, settings=results.Settings(alpha=0.05,
                                                                             min_effect=0.02),
                          started_at="now", machine={"cpu_model": "cpu", "cpu_count": 2,
                                                     "kernel": "6.18", "load_avg": [1, 1, 1]},
                          builds={}, scenarios=[ctrstress_result(fix_left=1)])
    text = document.markdown(run)
    assert "## Scenario `kill-restart` (ctrstress)" in text and "## Summary" not in text
    page = document.html(run)
    assert "ctrstress data" not in page and "<th>mounts left (idmapped)</th>" in page
    assert "<td>fix</td><td>2</td>" in page and "<td>2 (2)</td>" in page


def test_a_hung_client_s_evidence_reaches_the_report_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess

    from patchbench.measure import hangs

    sleeper = subprocess.Popen(["sleep", "30.5913"], start_new_session=True)

    def fake_round(ctx: Any, variant: str, d: Any, image: FakeImage, draw: ctrstress.Draw,
                   log: Path) -> ctrstress.CtrStressRound:
        one = round_(variant, draw.round, action=draw.action,
                     hangs=int(variant != "baseline" and draw.round == 3))
        if one.hangs:  # what run_round saves for a `ctr run` client still running at timeout
            path = hangs.capture(sleeper.pid, ["ctr", "run"], 7, 60.0, 61.0,
                                 ctx.workdir / "kill-restart-evidence" / variant)
            one.evidence = [path.name]
        return one

    monkeypatch.setattr(ctrstress, "run_round", fake_round)
    ctx = context(tmp_path, FakeRuntime(tmp_path / "d"))
    try:
        res, _ = KIND.run(ctx)
    finally:
        sleeper.kill()
        sleeper.wait()
    (hung,) = [r for r in res.rounds_detail if r.evidence]
    assert (hung.variant, hung.round) == ("idmap-once-per-overlay", 3)
    (name,) = hung.evidence
    assert name.startswith("kill-restart-idmap-once-per-overlay-r3-hang-") and name in ctx.extra_files
    ev = hangs.load_evidence_file(ctx.extra_files[name])
    assert ev.processes[0].comm == "sleep" and ev.instance == 7
    assert res.evidence_summary in ctx.extra_files
    text = "\n\n".join(scenario_md(res)[-2:])
    assert text.startswith("Hung instances, with the evidence saved before the kill:")
    assert f"- idmap-once-per-overlay round 3: [{name}]({name})" in text
