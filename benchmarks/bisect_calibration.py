"""Calibration of a bisect's error control, with the tool's own code.

    python3 benchmarks/bisect_calibration.py [--replicates 4000] [--time-replicates 1000]
        [--jobs 2] [--seed N] [--out FILE] [--quick]

Simulates whole bisects of a 64-commit first-parent chain as patchbench runs them: the search
(bisect.search), the planned looks and levels (bisect.levels), the ends' test and each step's
looks and classification (bisect.judge), and the comparisons of the kinds' step rules
(steps.judged_pair on paired.paired_verdict for time, steps.ByCount on Fisher's exact test for
hangs, with its power), on simulated measurements with a known first bad commit, or none. Time:
log-normal runs, ROUNDS rounds of 20 (or 80) runs per commit at 1x (a look at k times the runs
has k times the rounds). Hangs: the counts drawn as binomials (the sum of independent runs, exactly). Tallies
how often the answer is the right commit, a range holding it, a range without it, a wrong
commit, "the ends do not differ", or refused (too few runs for the power), with 95 %
Clopper-Pearson intervals, beside the rule of schema-1 bisect.json files (every look at alpha,
a step classified by "differs") on the same seeds. Checks: wrong answers (a wrong commit or a
range without the right one) at most 5 % with a change, "the ends differ" at most 5 % without.
docs/bisect.md ("Error control") and benchmarks/results/bisect_calibration.md."""

from __future__ import annotations

import argparse
import math
import multiprocessing
import os
import platform
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from patchbench.analysis import paired  # noqa: E402
from patchbench.bisect import judge, levels, search  # noqa: E402
from patchbench.scenarios import steps  # noqa: E402

CHAIN = 64  # commits on the chain, both ends included: 6 steps without skips
ALPHA = 0.05
MIN_EFFECT = 0.02
BUDGET = 4
ROUNDS = 10  # time: the scenario's rounds at 1x
HANG_RUNS = 3000  # hangs: runs of each commit at 1x
TARGET = 0.05
OUTCOMES = ("right", "range-with", "range-without", "wrong", "no-difference", "underpowered")
RULES = ("spent", "schema-1")


@dataclass(frozen=True)
class Cell:
    name: str
    kind: str  # "time" or "hangs"
    what: str  # the model in words
    before: float  # time: the median factor before the change; hangs: the rate
    after: float | None  # None: nothing changes along the chain
    cv: float = 0.0
    per_round: int = 20  # time: runs of each commit in a round's block


CELLS = (
    Cell("time-step-cv10", "time", "+5 % time step, CV 10 %", 1.0, 1.05, 0.10),
    Cell("time-step-cv20", "time", "+5 % time step, CV 20 %", 1.0, 1.05, 0.20),
    Cell("time-step-cv20-x4", "time", "+5 % time step, CV 20 %, 80 runs a round", 1.0, 1.05,
         0.20, 80),
    Cell("time-none-cv10", "time", "no change, CV 10 %", 1.0, None, 0.10),
    Cell("hangs-none-2", "hangs", "2/3000 hangs at every commit", 2 / 3000, None),
    Cell("hangs-none-20", "hangs", "20/3000 hangs at every commit", 20 / 3000, None),
    Cell("hangs-none-150", "hangs", "150/3000 hangs at every commit", 150 / 3000, None),
    Cell("hangs-step-0-4", "hangs", "hangs 0 -> 4/3000", 0.0, 4 / 3000),
)

COUNTS = steps.ByCount(lambda result, variant: result[variant])  # type: ignore[index]
TIMES = steps.ByTime()


class Sim:
    """One replicate's chain: the truth at each commit, and measurements of some of them."""

    def __init__(self, cell: Cell, rng: np.random.Generator, first_bad: int | None) -> None:
        self.cell, self.rng, self.first_bad = cell, rng, first_bad
        self.runs_used = 0
        self.last_ends: Any = None

    def truth(self, i: int) -> float:
        bad = self.first_bad is not None and i >= self.first_bad and self.cell.after is not None
        return self.cell.after if bad and self.cell.after is not None else self.cell.before

    # time ----------------------------------------------------------------------------------

    def _times(self, commits: Sequence[int], factor: int) -> list[np.ndarray]:
        runs = ROUNDS * factor * self.cell.per_round
        sigma = math.sqrt(math.log1p(self.cell.cv**2))
        self.runs_used += runs * len(commits)
        return [self.truth(i) * np.exp(self.rng.normal(0.0, sigma, runs)) for i in commits]

    def _time_pair(self, ref: np.ndarray, other: np.ndarray, level: float) -> steps.Pair:
        n = self.cell.per_round
        ids = np.repeat(np.arange(ref.size // n), n).tolist()
        rec = paired.paired_verdict(ref.tolist(), ids, other.tolist(), ids, alpha=level,
                                    min_effect=MIN_EFFECT)
        return steps.judged_pair([(None, rec.as_dict())])

    # both ----------------------------------------------------------------------------------

    def ends(self, factor: int, level: float) -> steps.Pair:
        if self.cell.kind == "time":
            good, bad = self._times([0, CHAIN - 1], factor)
            return self._time_pair(good, bad, level)
        self.last_ends = self._counts({"good": 0, "bad": CHAIN - 1}, factor)
        return COUNTS.pair(self.last_ends, "good", "bad", alpha=level, min_effect=MIN_EFFECT,
                           seed=0)

    def step(self, i: int, factor: int, level: float) -> tuple[steps.Pair, steps.Pair]:
        if self.cell.kind == "time":
            c, good, bad = self._times([i, 0, CHAIN - 1], factor)
            return self._time_pair(good, c, level), self._time_pair(bad, c, level)
        m = self._counts({"c": i, "good": 0, "bad": CHAIN - 1}, factor)
        return (COUNTS.pair(m, "good", "c", alpha=level, min_effect=MIN_EFFECT, seed=0),
                COUNTS.pair(m, "bad", "c", alpha=level, min_effect=MIN_EFFECT, seed=0))

    def _counts(self, commits: dict[str, int], factor: int) -> dict[str, tuple[int, int]]:
        runs = HANG_RUNS * factor
        self.runs_used += runs * len(commits)
        return {name: (int(self.rng.binomial(runs, self.truth(i))), runs)
                for name, i in commits.items()}

    def power(self, runs: int, level: float) -> float | None:
        rule: Any = TIMES if self.cell.kind == "time" else COUNTS
        return rule.power(self.last_ends, "good", "bad", runs, level)  # type: ignore[no-any-return]

    @property
    def runs(self) -> int:
        return ROUNDS * self.cell.per_round if self.cell.kind == "time" else HANG_RUNS

    @property
    def rule(self) -> steps.StepRule:
        return TIMES if self.cell.kind == "time" else COUNTS


@dataclass
class Answer:
    outcome: str
    steps: int = 0
    raised: bool = False  # the steps' first look was raised for the power


def spent_rule(sim: Sim) -> Answer:
    """A bisect as patchbench runs it now (bisect/run.py's control flow, with its functions)."""
    ends_looks = levels.looks(1, BUDGET)
    ends_level = levels.per_comparison(ALPHA, ends_looks, 1)
    pair, _ = judge.ends(lambda f: sim.ends(f, ends_level), ends_looks)
    if not (pair.differs is True and pair.shift in ("more", "less")):
        return Answer("no-difference")
    direction: judge.Direction = "more" if pair.shift == "more" else "less"
    shares = levels.StepShares(ALPHA)
    share = shares.plan(search.expected_steps(CHAIN))
    comparisons = 2 if sim.rule.shows_same else 1
    first, _ = levels.first_look(sim.power, sim.runs, BUDGET, share, comparisons)
    if first is None:
        return Answer("underpowered")
    step_looks = levels.looks(first, BUDGET)

    def probe(i: int) -> search.Class:
        level = levels.per_comparison(shares.take(), step_looks, comparisons)
        return judge.step(lambda f: sim.step(i, f, level), step_looks, direction,
                          sim.rule.ways).cls

    out = search.search(CHAIN, probe)
    return Answer(_where(sim, out), len(out.probed), first > 1)


def schema1_rule(sim: Sim) -> Answer:
    """The rule of schema-1 bisect.json files, for contrast: the ends and every look of a step
    at alpha; like good when not differing from good and differing from bad, like bad the
    other way round."""
    looks = levels.looks(1, BUDGET)
    for f in looks:
        pair = sim.ends(f, ALPHA)
        if pair.differs is True:
            break
    if pair.differs is not True:
        return Answer("no-difference")

    def probe(i: int) -> search.Class:
        cls: search.Class = "undecided"
        for f in looks:
            vg, vb = sim.step(i, f, ALPHA)
            if vg.differs is False and vb.differs is True:
                cls = "good"
            elif vb.differs is False and vg.differs is True:
                cls = "bad"
            if cls != "undecided":
                break
        return cls

    out = search.search(CHAIN, probe)
    return Answer(_where(sim, out), len(out.probed))


def _where(sim: Sim, out: search.Outcome) -> str:
    if sim.first_bad is None:
        return "wrong" if out.found else "range-without"
    if out.found:
        return "right" if out.first_bad == sim.first_bad else "wrong"
    return "range-with" if out.lo < sim.first_bad <= out.hi else "range-without"


RULE_FUNCS: dict[str, Callable[[Sim], Answer]] = {"spent": spent_rule, "schema-1": schema1_rule}


@dataclass
class Tally:
    n: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    steps: int = 0
    runs: int = 0
    raised: int = 0

    def add(self, other: Tally) -> None:
        self.n += other.n
        self.outcomes.update(other.outcomes)
        self.steps += other.steps
        self.runs += other.runs
        self.raised += other.raised


def _work(job: tuple[int, str, int, int, int]) -> tuple[int, str, Tally]:
    cell_index, rule, first, count, seed = job
    cell = CELLS[cell_index]
    t = Tally()
    for r in range(first, first + count):
        rng = np.random.default_rng([seed, cell_index, r])
        first_bad = int(rng.integers(1, CHAIN)) if cell.after is not None else None
        sim = Sim(cell, np.random.default_rng([seed, cell_index, r, RULES.index(rule)]),
                  first_bad)
        a = RULE_FUNCS[rule](sim)
        t.n += 1
        t.outcomes[a.outcome] += 1
        t.steps += a.steps
        t.runs += sim.runs_used
        t.raised += a.raised
    return cell_index, rule, t


# --- binomial intervals ---------------------------------------------------------------------


def binom_cdf(k: int, n: int, p: float) -> float:
    if p <= 0.0:
        return 1.0
    if p >= 1.0:
        return 1.0 if k >= n else 0.0
    lp, lq = math.log(p), math.log1p(-p)
    return min(1.0, math.fsum(math.exp(math.lgamma(n + 1) - math.lgamma(i + 1)
                                       - math.lgamma(n - i + 1) + i * lp + (n - i) * lq)
                              for i in range(k + 1)))


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """The exact two-sided interval of a binomial proportion (k of n)."""
    tail = (1 - level) / 2

    def solve(f: Callable[[float], float]) -> float:  # f increasing in p, root in [0, 1]
        lo, hi = 0.0, 1.0
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if f(mid) < 0 else (lo, mid)
        return (lo + hi) / 2

    low = 0.0 if k == 0 else solve(lambda p: (1 - binom_cdf(k - 1, n, p)) - tail)
    high = 1.0 if k == n else solve(lambda p: tail - binom_cdf(k, n, p))
    return low, high


def pct(k: int, n: int) -> str:
    return f"{100 * k / n:.1f}" if n else "-"


def with_ci(k: int, n: int) -> str:
    lo, hi = clopper_pearson(k, n)
    return f"{100 * k / n:.2f} [{100 * lo:.2f}, {100 * hi:.2f}]"


def report(tallies: dict[tuple[int, str], Tally], args: argparse.Namespace, seconds: float,
           loads: tuple[tuple[float, ...], tuple[float, ...]]) -> tuple[str, bool]:
    lines = ["# Bisect calibration", "",
             f"`python3 benchmarks/bisect_calibration.py {' '.join(args.argv)}`".replace(
                 " `", "`"), "",
             f"{time.strftime('%Y-%m-%d', time.gmtime())}, {platform.python_version()}, "
             f"{os.cpu_count()} cores, {seconds:.0f} s with {args.jobs} jobs, load average "
             f"{loads[0][0]:.1f} at the start and {loads[1][0]:.1f} at the end.", "",
             f"A chain of {CHAIN} commits (both ends included; {search.expected_steps(CHAIN)} "
             f"steps without skips), alpha {ALPHA}, min_effect {MIN_EFFECT}, budget {BUDGET} "
             f"(looks at 1x, 2x, 4x the runs). Time: log-normal runs, {ROUNDS} rounds of "
             "20 runs per commit at 1x unless said (a look at k x has k x the rounds). Hangs: "
             f"{HANG_RUNS} runs per commit at 1x. The first bad commit is drawn uniformly from "
             f"1..{CHAIN - 1} for each replicate. `spent`: the rule of bisect.json schema 2 "
             "(alpha spent over the ends' looks and the planned steps' looks, positive "
             "evidence in the ends' direction, the first look raised for the power); "
             "`schema-1`: the earlier rule (every look at alpha, classified by \"differs\"), "
             "on the same seeds.", "",
             "In %; `wrong answers`: a wrong commit or a range without the right one; with no "
             "change, \"the ends differ\" (any answer, or a refusal for too few runs), with its "
             "95 % Clopper-Pearson interval; `meets`: its upper bound is at most 5 %.", "",
             "| model | rule | replicates | right commit | range with it | range without it | "
             "wrong commit | ends do not differ | refused (power) | wrong answers [95 % CI] | "
             "meets | steps (mean) | runs per bisect (mean) | first look raised |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    ok = True
    for ci, cell in enumerate(CELLS):
        for rule in RULES:
            t = tallies.get((ci, rule))
            if t is None or not t.n:
                continue
            o = t.outcomes
            # with no change every answer is wrong, and a refusal too says the ends differ
            wrong = (o["wrong"] + o["range-without"] if cell.after is not None
                     else t.n - o["no-difference"])
            meets = clopper_pearson(wrong, t.n)[1] <= TARGET
            if rule == "spent":
                ok = ok and meets
            step_cell = cell.after is not None
            lines.append(
                f"| {cell.what} | {rule} | {t.n} | {pct(o['right'], t.n) if step_cell else '-'}"
                f" | {pct(o['range-with'], t.n) if step_cell else '-'}"
                f" | {pct(o['range-without'], t.n)} | {pct(o['wrong'], t.n)}"
                f" | {pct(o['no-difference'], t.n)} | {pct(o['underpowered'], t.n)}"
                f" | {with_ci(wrong, t.n)} | {'yes' if meets else '**no**'}"
                f" | {t.steps / t.n:.1f} | {t.runs / t.n:,.0f}"
                f" | {pct(t.raised, t.n) if rule == 'spent' and cell.kind == 'hangs' else '-'} |")
    lines += ["", f"**Result: the rule of schema 2 {'meets' if ok else 'does NOT meet'} every "
              "target.**", ""]
    return "\n".join(lines), ok


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--replicates", type=int, default=4000, help="per hang cell and rule")
    p.add_argument("--time-replicates", type=int, default=1000, help="per time cell and rule")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--seed", type=int, default=20261203)
    p.add_argument("--cells", nargs="*", default=[c.name for c in CELLS])
    p.add_argument("--rules", nargs="*", default=list(RULES), choices=RULES)
    p.add_argument("--out", type=Path)
    p.add_argument("--quick", action="store_true", help="a smoke run: 10 replicates a cell")
    args = p.parse_args(argv)
    args.argv = list(argv if argv is not None else sys.argv[1:])
    if args.quick:
        args.replicates = args.time_replicates = 10
    unknown = set(args.cells) - {c.name for c in CELLS}
    if unknown:
        p.error(f"unknown cells: {', '.join(sorted(unknown))}")
    jobs: list[tuple[int, str, int, int, int]] = []
    for ci, cell in enumerate(CELLS):
        if cell.name not in args.cells:
            continue
        n = args.time_replicates if cell.kind == "time" else args.replicates
        block = 20 if cell.kind == "time" else 250
        for rule in args.rules:
            jobs += [(ci, rule, start, min(block, n - start), args.seed)
                     for start in range(0, n, block)]
    jobs.sort(key=lambda j: CELLS[j[0]].kind != "time")  # the long ones first
    tallies: dict[tuple[int, str], Tally] = {}
    load0, started = os.getloadavg(), time.monotonic()
    with multiprocessing.Pool(args.jobs) as pool:
        for ci, rule, t in pool.imap_unordered(_work, jobs):
            tallies.setdefault((ci, rule), Tally()).add(t)
    text, ok = report(tallies, args, time.monotonic() - started, (load0, os.getloadavg()))
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
