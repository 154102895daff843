"""The tool's own cost on the bundled demo (run by hand; figures are recorded in the README).

    python benchmarks/tool_cost.py [--repeat 3]

Measures, in a fresh temporary builds/ and reports/ directory:
- cold: `invoke compare demo` with an empty builds/ (fetch, two builds, measure, report);
- warm: the same again (everything cached);
- no-op rebuild: `invoke build --patch per-sandbox-lock` when both builds are cached (aim < 1 s);
- orchestration overhead: warm wall time minus the time spent in hyperfine (and the builds),
  as a share of the wall time (aim < 5%);
- start-up: `invoke --list` and `invoke list` (aim < 0.3 s each; best and median of --startup
  runs, since a shared machine's load only ever adds time).
Prints the 1-minute load average at the start and end: figures from a loaded machine say so.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def invoke(*args: str, builds: Path, reports: Path) -> float:
    argv = [sys.executable, "-m", "invoke", "--search-root", str(ROOT), *args,
            "--builds", str(builds), "--reports", str(reports)]
    t0 = time.monotonic()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.monotonic() - t0


def startup(*args: str, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.monotonic()
        subprocess.run([sys.executable, "-m", "invoke", "--search-root", str(ROOT), *args],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        out.append(time.monotonic() - t0)
    return out


def newest_results(reports: Path) -> dict:  # type: ignore[type-arg]
    runs = sorted(reports.glob("demo/*/results.json"))
    return json.loads(runs[-1].read_text())  # type: ignore[no-any-return]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--startup", type=int, default=10, help="runs of each start-up measurement")
    args = ap.parse_args()
    load_before = os.getloadavg()[0]
    inv_list = startup("--list", n=args.startup)
    pb_list = startup("list", n=args.startup)
    cold, warm, noop, overhead = [], [], [], []
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            builds, reports = Path(tmp) / "builds", Path(tmp) / "reports"
            cold.append(invoke("compare", "demo", builds=builds, reports=reports))
            w = invoke("compare", "demo", builds=builds, reports=reports)
            warm.append(w)
            res = newest_results(reports)
            measured = sum(c["samples"]["seconds"] for sc in res["scenarios"] for c in sc["cells"])
            overhead.append((w - measured) / w)
            noop.append(invoke("build", "--patch", "per-sandbox-lock", builds=builds,
                               reports=reports))
    med = statistics.median
    print(f"runs: {args.repeat} each (median shown)")
    print(f"cold `invoke compare demo`:   {med(cold):6.2f} s")
    print(f"warm `invoke compare demo`:   {med(warm):6.2f} s")
    print(f"no-op rebuild (cached):       {med(noop):6.2f} s   (aim: < 1 s)")
    print(f"orchestration overhead, warm: {med(overhead):6.1%}   (aim: < 5% of the wall time)")
    print(f"`invoke --list`:              {min(inv_list):6.2f} s best, {med(inv_list):.2f} s median"
          "   (aim: < 0.3 s)")
    print(f"`invoke list`:                {min(pb_list):6.2f} s best, {med(pb_list):.2f} s median"
          "   (aim: < 0.3 s)")
    print(f"load average (1 min): {load_before:.2f} at the start, {os.getloadavg()[0]:.2f} at "
          f"the end, on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
