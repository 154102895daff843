"""The CPU a `compare` spends before its first measured run, per checkout (run by hand; figures go
to docs/cost.md).

    python benchmarks/before_measuring.py [--repeat 20] CHECKOUT [CHECKOUT ...]

For each checkout of patchbench, in fresh interpreters, interleaved (the order alternating each
repetition), times two phases of a warm `compare demo` without running anything:
- to the warmups: the interpreter's start to the matrix loaded (`pipeline.load`, its whole
  validation kept by an earlier load in the same builds/: util/validated.py) and the demo's
  scenario kinds imported;
- pending work: what the run does in its warmups' window (`runs.store.after_measuring` and
  `cli.commands._after_compare`: numpy and its first calls, the results' models, the report
  modules).
Prints the median and the fastest of each (on a shared machine others only add time), and the
load averages. An older checkout whose `pipeline.load` has no ``only`` is loaded whole.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

PROBE = r'''
import sys, time
t0 = time.perf_counter()
sys.path.insert(0, sys.argv[1])
from patchbench.cli import commands
from patchbench import pipeline, scenarios
ws = commands.workspace(project=sys.argv[1], builds=sys.argv[2])
try:
    project = pipeline.load(ws, only="demo")
except TypeError:  # a checkout from before load's ``only``
    project = pipeline.load(ws)
for sc in project.comparison("demo").scenarios:
    scenarios.get(sc.kind)
t1 = time.perf_counter()
from patchbench.runs import store
store.after_measuring()
commands._after_compare()
print(f"{t1 - t0:.6f} {time.perf_counter() - t1:.6f}")
'''


def probe(checkout: Path, builds: Path) -> tuple[float, float]:
    out = subprocess.run([sys.executable, "-c", PROBE, str(checkout), str(builds)], check=True,
                         capture_output=True, text=True, cwd=checkout).stdout.split()
    return float(out[0]), float(out[1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("checkouts", nargs="+", type=Path)
    args = ap.parse_args()
    checkouts = [c.resolve() for c in args.checkouts]
    load0 = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        builds = {c: Path(tmp) / str(n) for n, c in enumerate(checkouts)}
        for c in checkouts:
            builds[c].mkdir()
            probe(c, builds[c])  # validated whole once, and kept
        seen: dict[Path, list[tuple[float, float]]] = {c: [] for c in checkouts}
        for i in range(args.repeat):
            for c in checkouts if i % 2 == 0 else checkouts[::-1]:
                seen[c].append(probe(c, builds[c]))
    print(f"{args.repeat} interleaved repetitions; load average {load0[0]:.2f}/{load0[1]:.2f}/"
          f"{load0[2]:.2f} -> " + "/".join(f"{x:.2f}" for x in os.getloadavg()))
    print("\n| checkout | to the warmups, median / fastest | pending work, median / fastest |")
    print("|---|---|---|")
    for c in checkouts:
        to, pending = ([x[k] * 1000 for x in seen[c]] for k in (0, 1))
        print(f"| {c.name} | {statistics.median(to):.0f} / {min(to):.0f} ms | "
              f"{statistics.median(pending):.0f} / {min(pending):.0f} ms |")


if __name__ == "__main__":
    main()
