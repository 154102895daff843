"""The tool's own cost on the bundled demo (run by hand; figures are recorded in the README).

    python benchmarks/tool_cost.py [--repeat 3]

Measures, in a fresh temporary builds/ and reports/ directory:
- cold: `invoke compare demo` with an empty builds/ (fetch, two builds, measure, report);
- warm: the same again (everything cached);
- no-op rebuild: `invoke build --patch per-sandbox-lock` when both builds are cached (aim < 1 s);
- orchestration overhead: warm wall time minus the time spent in hyperfine (and the builds),
  as a share of the wall time (aim < 5%).
"""

from __future__ import annotations

import argparse
import json
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


def newest_results(reports: Path) -> dict:  # type: ignore[type-arg]
    runs = sorted(reports.glob("demo/*/results.json"))
    return json.loads(runs[-1].read_text())  # type: ignore[no-any-return]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
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


if __name__ == "__main__":
    main()
