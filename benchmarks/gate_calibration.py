"""Calibration of the A/B gate (patchbench.analysis.gating) with the tool's own code.

    python3 benchmarks/gate_calibration.py [--replicates 2000] [--jobs 2] [--out FILE]

Each replicate simulates one gated comparison as ``compare --gate`` runs it: the configured
rounds first, then more rounds at the looks planned up to the gate's budget (whole AB/BA
blocks, alpha spent equally over the looks), each look judged by the verdict rule
(``paired.paired_verdict`` with the order's signs) and called by the gate's rule (pass: the
candidate is shown slower by less than the margin; fail: shown slower by more); it stops at the
first look where the call is made, and an undecided comparison at the budget fails (closed). The
noise models are those of benchmarks/stats_calibration.py. The candidate is unchanged (1.00),
slower by exactly the margin, or by twice it.

Targets: an unchanged candidate passes in at least 90 % of replicates, one slower by the margin
(or twice it) fails in at least 90 %; each rate is given with its 95 % Clopper-Pearson interval,
and the median rounds the gate took.
"""

from __future__ import annotations

import argparse
import importlib.util
import multiprocessing
import os
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from patchbench.analysis import gating, paired, stalls, stats  # noqa: E402
from patchbench.measure import bench  # noqa: E402

_spec = importlib.util.spec_from_file_location("stats_calibration",
                                               ROOT / "benchmarks" / "stats_calibration.py")
assert _spec and _spec.loader
calib = importlib.util.module_from_spec(_spec)
sys.modules["stats_calibration"] = calib
_spec.loader.exec_module(calib)

ALPHA = 0.05
MIN_EFFECT = 0.02
MARGIN = 0.02
FIRST = 10  # the demo's rounds
MODELS = ("lognormal", "ar1-runs", "ar1-runs-0.8", "random-walk", "shape", "t3", "stalls")
SLOWDOWNS = (0.0, MARGIN, 2 * MARGIN)
CONTRAST = ("stalls",)  # models also run by the gate of results version 7, for contrast


def run_gate(sim: calib.Sim, cap: int) -> tuple[gating.Call, int, int]:
    """The gate's call where it stops on this replicate, the rounds it took, and the rounds its
    plan said the margin needs (from the first look's noise). Each look takes the live rule's
    steps: the runs that stalled counted apart (the gate fails a candidate that stalls more
    often, by Fisher's test at the look's level), the rest judged and called against the
    margin."""
    p = gating.plan(None, MARGIN, ALPHA, FIRST, cap, len(bench.williams(2)))
    needed = 0
    for done in p.looks:
        bt, br, ct, cr, signs = calib._cut(sim, done)
        st, kb, kc = stalls.count(bt, ct)
        if gating.stalls_more(st, p.level):
            return gating.Call.FAIL, done, needed
        v = paired.paired_verdict(stalls.pick(bt, kb), stalls.pick(br, kb), stalls.pick(ct, kc),
                                  stalls.pick(cr, kc), alpha=p.level, min_effect=MIN_EFFECT,
                                  signs=signs)
        if done == p.looks[0]:  # as the gate's first look says it (scenarios/budget.py)
            d = np.log(np.asarray(v.round_ratios))
            sd = paired.widened(d, list(v.round_ids), signs)[0] if d.std() > 0 else 0.0
            needed = gating.rounds_needed(sd, MARGIN, p.level) if sd else 0
        c = gating.call(v.speedup, v.equivalence_low, v.equivalence_high, MARGIN).call
        if c is not gating.Call.UNDECIDED:
            return c, done, needed
    return gating.Call.UNDECIDED, p.looks[-1], needed


def run_gate_v7(sim: calib.Sim, cap: int) -> gating.Call:
    """The gate of results version 7 on the same replicate, for contrast: every run judged
    (no stalls apart), the widened standard error without its degrees of freedom cut."""
    p = gating.plan(None, MARGIN, ALPHA, FIRST, cap, len(bench.williams(2)))
    with calib.earlier("v7"):
        for done in p.looks:
            bt, br, ct, cr, signs = calib._cut(sim, done)
            v = paired.paired_verdict(bt, br, ct, cr, alpha=p.level, min_effect=MIN_EFFECT,
                                      signs=signs)
            c = gating.call(v.speedup, v.equivalence_low, v.equivalence_high, MARGIN).call
            if c is not gating.Call.UNDECIDED:
                return c
    return gating.Call.UNDECIDED


def cell(job: tuple[str, float, int, int, int]) -> tuple[tuple[str, float], dict[str, Any]]:
    model, slowdown, replicates, seed, cap_factor = job
    fn = calib.MODELS[model][0]
    cap = cap_factor * FIRST
    rng = np.random.default_rng([seed, MODELS.index(model), SLOWDOWNS.index(slowdown)])
    calls = {c: 0 for c in gating.Call}
    v7 = 0
    rounds: list[int] = []
    needed: list[int] = []
    for _ in range(replicates):
        sim = fn(rng, cap, 1.0 + slowdown)
        c, at, need = run_gate(sim, cap)
        if model in CONTRAST:
            v7 += run_gate_v7(sim, cap) is gating.Call.PASS
        calls[c] += 1
        rounds.append(at)
        needed.append(need)
    return (model, slowdown), {"calls": {str(k): v for k, v in calls.items()}, "n": replicates,
                               "rounds": float(np.median(rounds)),
                               "needed": float(np.median(needed)), "v7 pass": v7}


def _beta_ppf(q: float, a: float, b: float) -> float:
    lo, hi = 0.0, 1.0
    for _ in range(60):  # bisection on the regularised incomplete beta function
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if stats.betainc(a, b, mid) < q else (lo, mid)
    return (lo + hi) / 2


def clopper(k: int, n: int) -> tuple[float, float]:
    """The 95 % Clopper-Pearson interval of a rate k / n."""
    lo = 0.0 if k == 0 else _beta_ppf(0.025, k, n - k + 1)
    hi = 1.0 if k == n else _beta_ppf(0.975, k + 1, n - k)
    return lo, hi


def pct(k: int, n: int) -> str:
    lo, hi = clopper(k, n)
    return f"{100 * k / n:.1f} [{100 * lo:.1f}, {100 * hi:.1f}]"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replicates", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=20261203)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    ap.add_argument("--cap-factor", type=int, default=gating.CAP_FACTOR,
                    help=f"the gate's cap, times the configured rounds ({gating.CAP_FACTOR})")
    args = ap.parse_args(argv)
    t0, load0 = time.monotonic(), os.getloadavg()
    models = [m for m in MODELS if m in args.models]
    jobs = [(m, s, args.replicates, args.seed, args.cap_factor) for m in models for s in SLOWDOWNS]
    with multiprocessing.Pool(args.jobs) as pool:
        got = dict(pool.imap_unordered(cell, jobs))
    rows, ok = [], True
    for m in models:
        aa, edge, twice = (got[(m, s)] for s in SLOWDOWNS)
        passed = aa["calls"]["pass"]
        failed_edge = edge["n"] - edge["calls"]["pass"]
        failed_twice = twice["n"] - twice["calls"]["pass"]
        ok = (ok and passed / aa["n"] >= 0.90 and failed_edge / edge["n"] >= 0.90
              and failed_twice / twice["n"] >= 0.90)
        v7 = (f"{pct(aa['v7 pass'], aa['n'])} / {pct(twice['n'] - twice['v7 pass'], twice['n'])}"
              if m in CONTRAST else "-")
        rows.append(f"| {m} | {aa['needed']:.0f} | {pct(passed, aa['n'])} | {aa['rounds']:.0f} | "
                    f"{pct(failed_edge, edge['n'])} | {edge['rounds']:.0f} | "
                    f"{pct(failed_twice, twice['n'])} | {twice['rounds']:.0f} | {v7} |")
    shown = [a for a in (argv if argv is not None else sys.argv[1:]) if not a.startswith("/")]
    text = "\n".join([
        "# Calibration of the A/B gate (benchmarks/gate_calibration.py)\n",
        f"Command: `{' '.join(['python3 benchmarks/gate_calibration.py', *shown])}`  ",
        f"Python {platform.python_version()}, numpy {np.__version__}; "
        f"{time.monotonic() - t0:.0f} s on a shared 2-core VM; load "
        f"{' '.join(f'{x:.2f}' for x in load0)} at the start, "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())} at the end.  ",
        f"Replicates per cell: {args.replicates}; {calib.RUNS} runs per block; alpha {ALPHA}; "
        f"the gate's margin {MARGIN:.0%}; the configured rounds {FIRST}; after them the gate "
        f"looks again at about 1.5× the rounds each time up to {args.cap_factor}× them (alpha spent "
        "equally over the looks planned before the first round) and stops at the first look that "
        "decides; an undecided comparison at the last look fails. **needed** = the median of "
        f"what the first look says an unchanged candidate needs to pass with {gating.POWER:.0%} "
        "power.\n",
        "Columns: **passes unchanged** = the gate passes a candidate identical to the baseline "
        "(target >= 90 %); **fails @margin** = it fails one slower by exactly the margin "
        "(target >= 90 %); **fails @2×margin** = slower by twice it; each % with its 95 % "
        "Clopper-Pearson interval, and the median rounds the gate took; **version 7** = the "
        "gate of results version 7 on the same replicates (every run judged, no stalls apart): "
        "passes unchanged / fails @2×margin. The `stalls` model: `lognormal` with 1 % of the "
        "runs of either variant at 10×; the live gate counts runs past 5× the median apart and "
        "fails a candidate that stalls more often (Fisher, at the look's level).\n",
        "| model | needed | passes unchanged | rounds | fails @margin | rounds | "
        "fails @2×margin | rounds | version 7 |",
        "|---|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        "**Targets met.**" if ok else "**Targets MISSED** (see the rows above).",
    ]) + "\n"
    print(text, end="")
    if args.out:
        args.out.write_text(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
