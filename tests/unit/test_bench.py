"""The interleaved schedule and measure() without starting hyperfine (a fake stands in)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from patchbench.errors import BenchmarkError, ConfigError
from patchbench.measure import bench
from patchbench.measure.bench import Cell, Invocation

CELLS = [Cell("baseline"), Cell("a"), Cell("b"), Cell("c", (("k", "4"),))]


@pytest.mark.parametrize("seed", [0, 1, 12345])
def test_schedule_is_deterministic_for_a_seed(seed: int) -> None:
    assert bench.schedule(CELLS, 6, seed) == bench.schedule(CELLS, 6, seed)


def test_schedule_depends_on_the_seed() -> None:
    orders = {tuple(tuple(c.label for c in r) for r in bench.schedule(CELLS, 6, s))
              for s in range(10)}
    assert len(orders) == 10


@pytest.mark.parametrize("seed", range(20))
def test_every_round_runs_every_cell_exactly_once(seed: int) -> None:
    rounds = bench.schedule(CELLS, 5, seed)
    assert len(rounds) == 5
    for r in rounds:
        assert Counter(r) == Counter(CELLS)


def test_schedule_interleaves() -> None:
    """Over many rounds, the baseline is not always first (never all-A-then-all-B)."""
    firsts = {r[0] for r in bench.schedule(CELLS[:2], 20, seed=3)}
    assert firsts == set(CELLS[:2])


def test_cell_labels() -> None:
    assert Cell("baseline").label == "baseline"
    assert Cell("fix", (("k", "8"),)).label == "fix k=8"
    assert Cell("fix", (("k", "8"),)).param("k") == "8"
    assert Cell("fix").param("k") is None


def test_fill_placeholders() -> None:
    assert bench.fill_argv(["{bin}/x", "-n", "{k}"], {"bin": "/b", "k": "3"}, "s") == \
        ["/b/x", "-n", "3"]


def test_fill_unknown_placeholder() -> None:
    with pytest.raises(ConfigError) as info:
        bench.fill("{runc} run", {"bin": "/b", "work": "/w"}, "scenario s")
    assert "unknown placeholder {runc}" in info.value.message
    assert info.value.hint == "available: {bin}, {work}"


class FakeHyperfine:
    """Stands in for bench.hyperfine and bench.hyperfine_many: records every command's run
    (``call``: which hyperfine call ran it), returns chosen times and exit codes."""

    def __init__(self, fail_at: tuple[str, int] | None = None, code: int = 1):
        self.calls: list[dict[str, Any]] = []
        self.n_calls = 0
        self.fail_at = fail_at
        self.code = code

    def install(self, monkeypatch: pytest.MonkeyPatch) -> FakeHyperfine:
        monkeypatch.setattr(bench, "hyperfine", self)
        monkeypatch.setattr(bench, "hyperfine_many", self.many)
        return self

    def __call__(self, inv: Invocation, *, runs: int, warmup: int, per_run_timeout: float,
                 export: Path, log: Path, name: str) -> dict[str, Any]:
        return self.many([inv], runs=runs, warmup=warmup, per_run_timeout=per_run_timeout,
                         export=export, log=log, names=[name], name=name)[0]

    def many(self, invs: list[Invocation], *, runs: int, warmup: int, per_run_timeout: float,
             export: Path, log: Path, names: list[str], name: str) -> list[dict[str, Any]]:
        self.n_calls += 1
        out = []
        for inv, cmd_name in zip(invs, names, strict=True):
            self.calls.append({"cmd": inv.command, "runs": runs, "warmup": warmup,
                               "name": cmd_name, "timeout": per_run_timeout, "export": export,
                               "call": self.n_calls, "call_name": name})
            rnd = int(cmd_name.rsplit("round ", 1)[1].split("/")[0])
            variant = inv.command[0]
            codes = [0] * runs
            if self.fail_at == (variant, rnd):
                codes[-1] = self.code
            base = 0.2 if variant == "baseline" else 0.1
            out.append({"times": [base + 0.001 * i for i in range(runs)], "exit_codes": codes,
                        "median": base, "command": cmd_name})
        return out


SCENARIO: dict[str, Any] = {"runs": 6, "rounds": 3, "warmup": 2, "timeout": 7}


def expand(cell: Cell) -> Invocation:
    return Invocation(command=[cell.variant])


def expand_apart(cell: Cell) -> Invocation:
    """Cells that cannot share a hyperfine call (a teardown list): one call per cell."""
    return Invocation(command=[cell.variant], teardown=[["true"]])


def test_measure_interleaves_and_keeps_every_sample(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeHyperfine().install(monkeypatch)
    cells = [Cell("baseline"), Cell("fix")]
    samples, order = bench.measure("s", cells, expand_apart, seed=11, workdir=tmp_path / "w",
                                   **SCENARIO)
    assert order == [[c.label for c in r] for r in bench.schedule(cells, 3, 11)]
    assert [c["cmd"][0] for c in fake.calls] == [label for r in order for label in r]
    for cell in cells:
        s = samples[cell]
        assert len(s.times) == 6
        assert s.rounds == [1, 1, 2, 2, 3, 3]
        assert s.exit_codes == [0] * 6
        assert len(s.hyperfine) == 3
    # each call runs runs/rounds; the warmup once per cell, before its first round, then none
    assert {c["runs"] for c in fake.calls} == {2}
    first = {}
    for c in fake.calls:
        first.setdefault(c["cmd"][0], c)
    assert all(first[v]["warmup"] == 2 for v in ("baseline", "fix"))
    assert [c["warmup"] for c in fake.calls if c is not first[c["cmd"][0]]] == [0] * 4
    assert {c["timeout"] for c in fake.calls} == {7}
    assert len({c["export"] for c in fake.calls}) == 6


def test_a_failing_run_names_round_and_exit_code(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    FakeHyperfine(fail_at=("fix", 2), code=3).install(monkeypatch)
    with pytest.raises(BenchmarkError) as info:
        bench.measure("s", [Cell("baseline"), Cell("fix")], expand, seed=1,
                      workdir=tmp_path, **SCENARIO)
    assert info.value.message == "s fix round 2/3: 1 of 2 runs failed (exit codes [3])"
    assert info.value.exit_code == 15


def test_a_run_without_exit_code_counts_as_failed(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    def killed(inv: Invocation, **kw: Any) -> dict[str, Any]:
        return {"times": [0.1, 0.1], "exit_codes": [0, None]}

    monkeypatch.setattr(bench, "hyperfine", killed)
    with pytest.raises(BenchmarkError, match=r"round 1/3: 1 of 2 runs failed \(exit codes \[-1\]\)"):
        bench.measure("s", [Cell("baseline")], expand, seed=1, workdir=tmp_path, **SCENARIO)


@pytest.mark.parametrize("seed", range(5))
def test_two_cells_alternate_ab_ba_and_run_first_equally_often(seed: int) -> None:
    """A balanced order, not a random shuffle (which puts one cell first in, say, 7 of
    10 rounds and adds the position effect to the variance)."""
    order = bench.schedule(CELLS[:2], 10, seed)
    assert Counter(r[0] for r in order) == Counter({CELLS[0]: 5, CELLS[1]: 5})
    for block in range(0, 10, 2):  # every pair of rounds is AB then BA, or BA then AB
        assert order[block] == order[block + 1][::-1]
    odd = bench.schedule(CELLS[:2], 5, seed)
    assert sorted(Counter(r[0] for r in odd).values()) == [2, 3]


@pytest.mark.parametrize("n", [2, 3, 4, 5])
def test_the_williams_design_balances_positions_and_neighbours(n: int) -> None:
    rows = bench.williams(n)
    assert len(rows) == (n if n % 2 == 0 else 2 * n)
    for position in range(n):
        assert Counter(r[position] for r in rows) == Counter({x: len(rows) // n
                                                              for x in range(n)})
    follows = Counter((r[i], r[i + 1]) for r in rows for i in range(n - 1))
    assert set(follows.values()) == {len(rows) // n} and len(follows) == n * (n - 1)


@pytest.mark.parametrize("seed", range(5))
def test_four_cells_take_every_position_once_in_four_rounds(seed: int) -> None:
    order = bench.schedule(CELLS, 8, seed)
    for position in range(4):
        assert Counter(r[position] for r in order) == Counter({c: 2 for c in CELLS})


def test_one_progress_line_per_round_with_its_total_and_the_cells_in_order(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    FakeHyperfine().install(monkeypatch)
    cells = [Cell("baseline"), Cell("fix")]
    _, order = bench.measure("s", cells, expand, seed=11, workdir=tmp_path / "w", **SCENARIO)
    assert any(r[0] == "fix" for r in order)  # some round ran fix first
    lines = [line for line in capsys.readouterr().err.splitlines() if "round " in line]
    assert len(lines) == 3
    for r, line in enumerate(lines, 1):
        assert f"round {r}/3 · " in line and " elapsed" in line and "ETA" in line
        # each round's median of its timed runs (0.200 and 0.201 s; 0.100 and 0.101 s)
        assert line.index("baseline 200.50 ms") < line.index("fix 100.50 ms")


# --- one hyperfine call per round ---------------------------------------------------------------

@pytest.mark.parametrize("batch", [False, True])
def test_a_round_of_shareable_cells_is_one_call_in_the_rounds_order(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch: bool) -> None:
    """One call per round (``batch`` off: BATCH_SECONDS 0), or, after round 1, the rounds
    that fit in BATCH_SECONDS as one call: the same commands in the same order either way."""
    if not batch:
        monkeypatch.setattr(bench, "BATCH_SECONDS", 0.0)
    fake = FakeHyperfine().install(monkeypatch)
    cells = [Cell("baseline"), Cell("fix")]
    samples, order = bench.measure("s", cells, expand, seed=11, workdir=tmp_path, **SCENARIO)
    # one per round (not one per cell per round), or round 1 and rounds 2-3
    assert fake.n_calls == (2 if batch else 3)
    measured = fake.calls
    assert [(c["cmd"][0], c["name"]) for c in measured] == \
        [(label, f"s {label} round {r}/3") for r, labels in enumerate(order, 1)
         for label in labels]  # every round's (balanced) order, round after round
    # warmups once per cell: in round 1's call, none later
    assert [c["warmup"] for c in measured] == [2, 2] + [0] * 4
    for r in (1, 2, 3):
        in_round = [c for c in measured if c["name"].endswith(f" round {r}/3")]
        call = 1 if r == 1 else 2 if batch else r
        assert {(c["call"], c["export"]) for c in in_round} == {
            (call, tmp_path / ("s.r2-3.json" if batch and r > 1 else f"s.r{r}.json"))}
    # every cell gets its own command's results, one hyperfine dict per round
    assert samples[Cell("baseline")].times == pytest.approx([0.2, 0.201] * 3)
    assert samples[Cell("fix")].times == pytest.approx([0.1, 0.101] * 3)
    assert [h["command"] for h in samples[Cell("fix")].hyperfine] == \
        [f"s fix round {r}/3" for r in (1, 2, 3)]
    assert samples[Cell("fix")].rounds == [1, 1, 2, 2, 3, 3]


def test_the_batches_follow_the_last_calls_time_per_round(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Round 1 alone; then as many rounds as take BATCH_SECONDS at the last call's time per
    round (here 4 s a round: 10 s takes two)."""
    fake = FakeHyperfine().install(monkeypatch)
    now = [0.0]
    many = fake.many

    def timed(invs: list[Invocation], **kw: Any) -> list[dict[str, Any]]:
        now[0] += 2.0 * len(invs)  # 2 s a command: 4 s a round of two cells
        return many(invs, **kw)

    monkeypatch.setattr(bench, "hyperfine_many", timed)
    monkeypatch.setattr(bench.time, "monotonic", lambda: now[0])
    bench.measure("s", [Cell("baseline"), Cell("fix")], expand, seed=11, workdir=tmp_path,
                  **{**SCENARIO, "runs": 14, "rounds": 7})
    rounds_per_call = Counter(c["call"] for c in fake.calls)
    assert [n // 2 for n in rounds_per_call.values()] == [1, 2, 2, 2]


def test_a_failed_run_in_a_batch_names_its_round(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeHyperfine(fail_at=("fix", 3), code=3).install(monkeypatch)
    with pytest.raises(BenchmarkError) as info:
        bench.measure("s", [Cell("baseline"), Cell("fix")], expand, seed=11, workdir=tmp_path,
                      **SCENARIO)
    assert info.value.message == "s fix round 3/3: 1 of 2 runs failed (exit codes [3])"
    assert fake.n_calls == 2  # round 1, rounds 2-3


def test_cells_that_cannot_share_a_call_are_never_batched(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeHyperfine().install(monkeypatch)
    bench.measure("s", [Cell("baseline"), Cell("fix")], expand_apart, seed=11, workdir=tmp_path,
                  **SCENARIO)
    assert fake.n_calls == 6 and {c["runs"] for c in fake.calls} == {2}  # one per cell per round


def test_a_shared_calls_wall_time_is_split_in_proportion(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeHyperfine().install(monkeypatch)
    now = [0.0]
    many = fake.many

    def three_seconds(*a: Any, **k: Any) -> list[dict[str, Any]]:  # every call takes 3 s
        now[0] += 3.0
        return many(*a, **k)

    monkeypatch.setattr(bench, "hyperfine_many", three_seconds)
    monkeypatch.setattr(bench.time, "monotonic", lambda: now[0])
    cells = [Cell("baseline"), Cell("fix")]
    samples, _ = bench.measure("s", cells, expand, seed=11, workdir=tmp_path,
                               **{**SCENARIO, "rounds": 1, "runs": 2})
    base, fix = samples[Cell("baseline")].seconds, samples[Cell("fix")].seconds
    assert base + fix == pytest.approx(3.0)  # round 1's call, its warmups included
    assert base / fix == pytest.approx((0.2 + 0.201) / (0.1 + 0.101))


@pytest.mark.parametrize("other", [
    Invocation(["fix"], setup=[["true"]]),
    Invocation(["fix"], teardown=[["true"]]),
    Invocation(["fix"], env={"A": "1"}),
    Invocation(["fix"], wrap=["nice"]),
    Invocation(["fix"], prepare="sync"),
    Invocation(["fix"], cleanup="sync"),
])
def test_cells_that_cannot_share_a_call_get_one_each(other: Invocation) -> None:
    assert bench.shareable([Invocation(["baseline"]), Invocation(["fix"])])
    assert not bench.shareable([Invocation(["baseline"]), other])
    assert not bench.shareable([Invocation(["baseline"])])  # one cell: nothing to share
    assert bench.shareable([Invocation(["a"], prepare="x"), Invocation(["b"], prepare="y")])


def test_an_escape_after_a_shared_call_is_gated_and_ends_the_sharing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeHyperfine().install(monkeypatch)
    checks: list[tuple[str, str | None]] = []

    def check(step: str, variant: str | None = None) -> object | None:
        checks.append((step, variant))
        return object() if len(checks) == 1 else None  # the first call left a process

    monkeypatch.setattr(bench.procguard, "check_active", check)
    cells = [Cell("baseline"), Cell("fix")]
    _, order = bench.measure("s", cells, expand, seed=11, workdir=tmp_path, **SCENARIO)
    # round 1's shared call: its escape cannot be told apart by cell, so no variant (gated)
    assert checks[0] == (f"s round 1/3 (cells {', '.join(order[0])} in one hyperfine call)",
                         None)
    # every later round: one call per cell again, each checked as its own variant's
    assert fake.n_calls == 1 + 4
    assert checks[1:] == [(f"s {label} round {r}/3", label)
                          for r, labels in enumerate(order, 1) if r > 1 for label in labels]
    # the later rounds warm nothing again: round 1 warmed every cell
    assert {c["warmup"] for c in fake.calls[2:]} == {0}


def test_hyperfine_many_gives_one_command_each_and_reads_each_result(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    def run(argv: list[str], **kw: Any) -> None:
        seen["argv"], seen["timeout"] = argv, kw["timeout"]
        export = Path(argv[argv.index("--export-json") + 1])
        export.write_text(json.dumps({"results": [{"command": "a", "times": [1.0]},
                                                  {"command": "b", "times": [2.0]}]}))

    monkeypatch.setattr(bench.cmd, "run", run)
    got = bench.hyperfine_many(
        [Invocation(["x", "--y"], prepare="p1"), Invocation(["z"], prepare="p2", deadline=2.0)],
        runs=3, warmup=1, per_run_timeout=5.0, export=tmp_path / "e.json", log=tmp_path / "l",
        names=["a", "b"], name="call")
    assert [g["times"] for g in got] == [[1.0], [2.0]]
    argv = seen["argv"]
    # hyperfine under the reaper (measure/reaper.py), which takes the command after its own --
    assert argv[:len(bench.reaper.argv())] == bench.reaper.argv()
    argv = argv[len(bench.reaper.argv()):]
    assert argv[0] == "hyperfine"
    assert argv[argv.index("--") + 1:] == ["x --y", "z"]  # after --: never read as options
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "--command-name"] == ["a", "b"]
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "--prepare"] == ["p1", "p2"]
    assert argv[argv.index("--warmup") + 1] == "1" and argv[argv.index("--runs") + 1] == "3"
    # the backstop: the commands run in turn, each (runs + warmup) x its own per-run limit
    assert seen["timeout"] == pytest.approx(4 * 5.0 + 4 * (2.0 + bench.hangs.KILL_SLACK)
                                            + bench.TIMEOUT_SLACK)


def test_an_escape_in_a_batch_ends_the_batches(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A process that escaped a batched call is found after it, recorded against no variant
    (gated), and every later round runs one call per cell, each checked as its variant's."""
    monkeypatch.setattr(bench, "BATCH_SECONDS", 1e9)  # everything after round 1 in one call
    fake = FakeHyperfine().install(monkeypatch)
    checks: list[tuple[str, str | None]] = []

    def check(step: str, variant: str | None = None) -> object | None:
        checks.append((step, variant))
        return object() if step.startswith("s rounds 2-3/3") else None

    monkeypatch.setattr(bench.procguard, "check_active", check)
    first: dict[str, int] = {}

    def more(samples: dict[Cell, bench.Samples], done: int,
             order: list[list[str]]) -> bench.Plan:
        first.setdefault("asked at", done)
        return bench.Plan(2 if done == 3 else 0)  # two rounds more, after the batch

    _, order = bench.measure("s", [Cell("baseline"), Cell("fix")], expand, seed=11,
                             workdir=tmp_path, more=more, **SCENARIO)
    assert first == {"asked at": 3} and len(order) == 5
    labels = ", ".join(order[1])
    assert (f"s rounds 2-3/3 (cells {labels} in one hyperfine call)", None) in checks
    # rounds 4 and 5 (added by `more`): one call per cell, each checked as its variant's
    assert checks[-4:] == [(f"s {label} round {r}/5", label)
                           for r in (4, 5) for label in order[r - 1]]
    assert fake.n_calls == 1 + 1 + 4


def test_a_per_round_callback_or_one_round_runs_no_batch(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bench, "BATCH_SECONDS", 1e9)
    fake = FakeHyperfine().install(monkeypatch)
    seen: list[int] = []
    bench.measure("s", [Cell("baseline"), Cell("fix")], expand, seed=11, workdir=tmp_path,
                  on_round=lambda r, cell, result: seen.append(r), **SCENARIO)
    assert fake.n_calls == 3 and seen == [1, 1, 2, 2, 3, 3]
    fake = FakeHyperfine().install(monkeypatch)
    bench.measure("s", [Cell("baseline"), Cell("fix")], expand, seed=11, workdir=tmp_path / "1",
                  **{**SCENARIO, "rounds": 1, "runs": 2})
    assert fake.n_calls == 1  # round 1


def test_a_batch_holds_at_most_max_batch_rounds(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bench, "BATCH_SECONDS", 1e9)
    monkeypatch.setattr(bench, "MAX_BATCH_ROUNDS", 3)
    fake = FakeHyperfine().install(monkeypatch)
    bench.measure("s", [Cell("baseline"), Cell("fix")], expand, seed=11, workdir=tmp_path,
                  **{**SCENARIO, "rounds": 8, "runs": 16})
    per_call = Counter(c["call"] for c in fake.calls)
    assert [n // 2 for n in per_call.values()] == [1, 3, 3, 1]


def test_every_block_begins_with_its_own_warmups_recorded_apart(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """block_warmup W: every hyperfine command (a block: a cell in a round) runs W + runs/rounds
    runs, batched or not; the first W of each go to the warm-up samples with their round, the
    rest are timed; hyperfine's own --warmup stays once per cell, before its first round."""
    monkeypatch.setattr(bench, "BATCH_SECONDS", 1e9)
    fake = FakeHyperfine().install(monkeypatch)
    cells = [Cell("baseline"), Cell("fix")]
    samples, _ = bench.measure("s", cells, expand, seed=11, workdir=tmp_path, block_warmup=2,
                               **{**SCENARIO, "rounds": 4, "runs": 8})
    assert {c["runs"] for c in fake.calls} == {2 + 2}
    assert fake.n_calls == 2  # round 1, then rounds 2-4 in one call
    assert [c["warmup"] for c in fake.calls if c["call"] == 1] == [2, 2]
    assert {c["warmup"] for c in fake.calls if c["call"] == 2} == {0}
    for cell, base in ((cells[0], 0.2), (cells[1], 0.1)):
        s = samples[cell]
        # the fake's runs of a block take base, base + 1 ms, ...: the first two are warm-ups
        assert s.times == pytest.approx([base + 0.002, base + 0.003] * 4)
        assert s.warmup_times == pytest.approx([base, base + 0.001] * 4)
        assert s.rounds == s.warmup_rounds == [1, 1, 2, 2, 3, 3, 4, 4]
        assert s.runs == 16
        assert set(s.as_dict()) >= {"warmup_times", "warmup_metrics", "warmup_rounds"}


def test_a_hung_warmup_is_a_hang_and_a_failed_one_fails(tmp_path: Path) -> None:
    s = bench.Samples()
    failed = s.add({"times": [0.5, 0.1, 0.1], "exit_codes": [124, 0, 0]}, 1, warm=1)
    assert failed == [] and s.hung_times == [0.5] and s.hung_rounds == [1]
    assert s.times == [0.1, 0.1] and s.warmup_times == []
    failed = s.add({"times": [0.1, 0.1, 0.1], "exit_codes": [2, 0, 0]}, 2, warm=1)
    assert failed == [2]


def test_decided_cells_stop_and_the_rest_go_on_in_a_balanced_order(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``more`` may drop cells (their comparisons are decided): the rounds it adds run only the
    cells that go on, in a balanced order of their own, and the order returned is the one run;
    ``more`` sees the order run so far."""
    fake = FakeHyperfine().install(monkeypatch)
    cells = [Cell("baseline"), Cell("fix"), Cell("other")]
    seen: list[list[list[str]]] = []

    def more(samples: dict[Cell, bench.Samples], done: int,
             order: list[list[str]]) -> bench.Plan:
        seen.append(order)
        if done == 6:
            return bench.Plan(4, (cells[0], cells[2]))  # fix is decided
        return bench.Plan(0)

    samples, order = bench.measure("s", cells, expand, seed=3, workdir=tmp_path, more=more,
                                   **{**SCENARIO, "rounds": 6, "runs": 6})
    assert len(order) == 10 and seen[0] == order[:6] and seen[1] == order
    assert all(sorted(r) == ["baseline", "fix", "other"] for r in order[:6])
    assert all(sorted(r) == ["baseline", "other"] for r in order[6:])
    assert Counter(r[0] for r in order[6:]) == Counter({"baseline": 2, "other": 2})
    assert samples[cells[1]].rounds == [1, 2, 3, 4, 5, 6]
    assert samples[cells[2]].rounds == list(range(1, 11))
    ran = [c["cmd"][0] for c in fake.calls]
    assert ran == [label for r in order for label in r]
