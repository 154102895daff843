"""The planted effect, measured for real: does `compare demo-planted` find the known 5 ms delay?

    python3 benchmarks/planted_effect.py [--repeat 3] [--rounds 10] [--runs 4]

Runs the comparison ``demo-planted`` (the demo against the demo plus a 5 ms start-up delay, series
``demo-plus-5ms``) ``--repeat`` times through the real pipeline, in a temporary builds/ and
reports/ directory, with ``--rounds`` rounds of ``--runs`` runs per variant; after each, measures
the planted delay directly (30 calls of the candidate's ``slowstart -delay-only``) and checks with
``patchbench.analysis.planted`` that the verdict is "slower" and that its CI covers the speedup that delay
implies. Prints a markdown table. Needs go, git and hyperfine; timings are noisy on a shared
machine, so the load at the start of each run is printed too.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from patchbench import pipeline  # noqa: E402
from patchbench.analysis import planted  # noqa: E402
from patchbench.scenarios.stress import StressResult  # noqa: E402
from patchbench.util.workspace import Switches, Workspace  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--runs", type=int, default=4, help="runs per variant per round")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="patchbench-planted-") as tmp:
        ws = Workspace(root=ROOT, matrix=ROOT / "matrix.yaml", builds=Path(tmp) / "builds",
                       reports=Path(tmp) / "reports")
        project = pipeline.load(ws)
        for i in range(args.repeat):
            load = os.getloadavg()[0]
            res, _, _ = pipeline.compare(project, ws, "demo-planted", Switches(
                seed=args.seed + i, runs=args.rounds * args.runs, rounds=args.rounds))
            assert res is not None
            sc = res.scenarios[0]
            assert not isinstance(sc, StressResult)
            (comp,) = sc.comparisons
            base = next(c for c in sc.cells if c.label == comp.baseline).samples
            medians = [statistics.median(t for t, r in zip(base.times, base.rounds, strict=True)
                                         if r == rnd) for rnd in comp.round_ids]
            _, cand = pipeline.build_for_patch(project, ws, "demo-plus-5ms")
            delays = planted.measure_delay(cand.bin / "slowstart", runs=30)
            chk = planted.check(comp, medians, delays)
            rows.append(
                f"| {i + 1} | {load:.1f} | {chk.delay * 1e3:.2f} ms | {chk.expected_speedup:.4f} "
                f"[{chk.band[0]:.4f}, {chk.band[1]:.4f}] "
                f"| {comp.speedup:.4f} [{comp.ci_low:.4f}, {comp.ci_high:.4f}] | {comp.verdict} "
                f"| {'yes' if chk.covered else 'NO'} | {'ok' if chk.ok else 'MISSED'} |")
    print(f"`python3 benchmarks/planted_effect.py --repeat {args.repeat} --rounds {args.rounds} "
          f"--runs {args.runs} --seed {args.seed}`\n")
    print("| run | load | delay measured | implied speedup [band] | paired speedup [CI] | verdict "
          "| CI reaches band | |")
    print("|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    return 0 if all(r.endswith("| ok |") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
