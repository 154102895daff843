"""Calibration of the verdict across hosts (patchbench.analysis.hosts) with the tool's own code.

    python3 benchmarks/hosts_calibration.py [--replicates 4000] [--out FILE]

Each replicate is one class of H hosts (3, 5 or 10). Every host measured the comparison in R
rounds (10 to 40, drawn per host) whose per-round log ratios have a noise of its own (sd 1 to
4 %, drawn per host) around the host's true log ratio: the class's change plus an offset of the
host's own, drawn N(0, tau^2) (tau 0, 1 % or 3 %). The offsets of an A/A average to no change
over hosts, so a class verdict of faster or slower is a false call; where one host alone is 10 %
slower the class is host-dependent. Each replicate is judged by ``hosts.across`` and, for
contrast, by the pooled rule (every round of every host as one sample of a t test, the offsets
left out).

Target: over hosts with their own offsets, an A/A is called faster or slower in at most 5 % of
replicates (95 % Clopper-Pearson intervals; a one-sided binomial test against 5 %).
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.gate_calibration import pct  # noqa: E402
from patchbench.analysis import hosts, paired, stats  # noqa: E402

ALPHA = 0.05
MIN_EFFECT = 0.02
HOSTS = (3, 5, 10)
TAUS = (0.0, 0.01, 0.03, 0.05)
CASES = ("A/A", "5 % slower everywhere", "one host 10 % slower")


def simulate(rng: np.random.Generator, h: int, tau: float, case: str) -> dict[str, list[float]]:
    change = {"A/A": 0.0, "5 % slower everywhere": -math.log(1.05)}.get(case, 0.0)
    out = {}
    for i in range(h):
        rounds = int(rng.integers(10, 41))
        noise = float(rng.uniform(0.01, 0.04))
        true = change + rng.normal(0, tau) if tau else change
        if case == "one host 10 % slower" and i == 0:
            true -= math.log(1.10)
        out[f"host{i}"] = np.exp(true + rng.normal(0, noise, rounds)).tolist()
    return out


def pooled(ratios: dict[str, list[float]]) -> str:
    """Every round of every host as one sample (the offsets left out)."""
    d = np.log(np.concatenate([np.asarray(v) for v in ratios.values()]))
    se = float(d.std(ddof=1)) / math.sqrt(d.size)
    return str(paired.decide(float(d.mean()), se, d.size - 1, alpha=ALPHA,
                             min_effect=MIN_EFFECT)[0])


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replicates", type=int, default=4000)
    ap.add_argument("--seed", type=int, default=20261205)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    t0, load0 = time.monotonic(), os.getloadavg()
    rows, ok = [], True
    changed = ("faster", "slower")
    for case in CASES:
        for h in HOSTS:
            for tau in TAUS:
                rng = np.random.default_rng([args.seed, CASES.index(case), h,
                                             TAUS.index(tau)])
                n = args.replicates
                called = dep = naive = 0
                for _ in range(n):
                    sim = simulate(rng, h, tau, case)
                    v = hosts.across(sim, alpha=ALPHA, min_effect=MIN_EFFECT)
                    called += v.verdict in changed
                    dep += v.verdict == hosts.HOST_DEPENDENT
                    naive += pooled(sim) in changed
                note = ""
                if case == "A/A":
                    p = stats.betainc(called, n - called + 1, 0.05) if called else 1.0
                    ok = ok and called / n <= 0.05
                    note = f" (binomial p {p:.2g})"
                rows.append(f"| {case} | {h} | {100 * tau:.0f} % | {pct(called, n)}{note} | "
                            f"{pct(dep, n)} | {pct(naive, n)} |")
    shown = [a for a in (argv if argv is not None else sys.argv[1:]) if not a.startswith("/")]
    text = "\n".join([
        "# Calibration of the verdict across hosts (benchmarks/hosts_calibration.py)\n",
        f"Command: `{' '.join(['python3 benchmarks/hosts_calibration.py', *shown])}`  ",
        f"Python {platform.python_version()}, numpy {np.__version__}; "
        f"{time.monotonic() - t0:.0f} s on a shared 2-core VM; load "
        f"{' '.join(f'{x:.2f}' for x in load0)} at the start, "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())} at the end.  ",
        f"Replicates per cell: {args.replicates}; alpha {ALPHA}, min_effect {MIN_EFFECT}; the "
        "model is in the script's docstring.\n",
        "Columns (% with 95 % Clopper-Pearson intervals): **faster/slower** = the class "
        "verdict calls a change; **host-dependent** = it says the hosts disagree beyond their "
        "noise; **pooled rounds: faster/slower** = every round of every host taken as one "
        "sample, for contrast. **tau** = the sd of the hosts' own offsets.\n",
        "| case | hosts | tau | faster/slower | host-dependent | pooled rounds: faster/slower |",
        "|---|---|---|---|---|---|",
        *rows, "",
        "**Target met**: an A/A over hosts is called faster or slower in at most 5 %." if ok
        else "**Target MISSED** (see the A/A rows).",
    ]) + "\n"
    print(text, end="")
    if args.out:
        args.out.write_text(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
