"""Real A/A calibration: N runs of `invoke compare demo --aa` at the demo's defaults
(the settings CI uses), counting how many give a verdict. Every verdict here is a false alarm:
both sides run the same binary. Run by hand; the result is recorded in
benchmarks/results/aa_calibration.md.

    python benchmarks/aa_calibration.py [--runs 30] [--builds DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--builds", type=Path, default=None, help="a builds/ to reuse (default: new)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        builds = args.builds or Path(tmp) / "builds"
        reports = Path(tmp) / "reports"
        for i in range(1, args.runs + 1):
            subprocess.run([sys.executable, "-m", "invoke", "--search-root", str(ROOT), "compare",
                            "demo", "--aa", "--builds", str(builds), "--reports", str(reports)],
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            print(f"run {i}/{args.runs} done (load {os.getloadavg()[0]:.2f})", file=sys.stderr)
        rows = []
        for path in sorted(reports.glob("demo/*/results.json")):
            data = json.loads(path.read_text())
            c = data["scenarios"][0]["comparisons"][0]
            rows.append((c["verdict"], c["speedup"], c["ci_low"], c["ci_high"], c["p_value"],
                         data["machine"]["load_avg"][0]))
    verdicts = Counter(r[0] for r in rows)
    print("| runs | verdicts | speedup range | load average (1 min) range |")
    print("|---|---|---|---|")
    print(f"| {len(rows)} | " + ", ".join(f"{v}: {n}" for v, n in verdicts.items())
          + f" | {min(r[1] for r in rows):.3f}–{max(r[1] for r in rows):.3f} | "
          f"{min(r[5] for r in rows):.1f}–{max(r[5] for r in rows):.1f} |")


if __name__ == "__main__":
    main()
