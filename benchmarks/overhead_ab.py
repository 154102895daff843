"""The warm demo's overhead, checkouts interleaved run by run (run by hand; figures go to
docs/cost.md and benchmarks/results/tool_cost.md).

    python benchmarks/overhead_ab.py [--repeat 10] CHECKOUT [CHECKOUT ...]

tool_cost.py measures one checkout at a time, three warm runs each: on the shared machine its
phase moves the overhead by a point or two between two such runs, more than a change of 50 ms
moves it. Here every checkout gets its own builds/ (a cold run, then a warm one), and then
``--repeat`` warm `invoke compare demo` runs each, each checkout's own code imported, the
checkouts alternating run by run (the order reversed every repetition). For
each it prints the median and quartiles of the overhead net of the configured warmups (tool_cost.py's
definition: wall minus the measured runs and the warmups once per cell, at each cell's median),
of the wall time and of the tool's CPU time, and the median of the paired differences to the
first checkout, with the load averages.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tool_cost import Tool, git_head, inside_measured_runs, newest_results


def quartiles(xs: list[float]) -> tuple[float, float, float]:
    q = statistics.quantiles(xs, n=4) if len(xs) > 1 else [xs[0]] * 3
    return q[0], statistics.median(xs), q[2]


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("checkouts", nargs="+", type=Path)
    args = ap.parse_args()
    checkouts = [c.resolve() for c in args.checkouts]
    load0 = os.getloadavg()
    seen: dict[Path, dict[str, list[float]]] = {c: {"net": [], "wall": [], "cpu": []}
                                                for c in checkouts}
    with tempfile.TemporaryDirectory() as tmp:
        tools = {c: Tool(c, Path(tmp) / str(n) / "builds", Path(tmp) / str(n) / "reports")
                 for n, c in enumerate(checkouts)}
        for tool in tools.values():
            tool.builds.parent.mkdir(parents=True)
            tool.run("compare", "demo")  # cold: fetch, build
            tool.run("compare", "demo")  # warm: the page cache and the launcher built
        for i in range(args.repeat):
            for c in checkouts if i % 2 == 0 else checkouts[::-1]:
                w = tools[c].run("compare", "demo")
                ins = inside_measured_runs(newest_results(tools[c].reports))
                seen[c]["net"].append((w.wall - ins.seconds - ins.warmup_estimate) / w.wall)
                seen[c]["wall"].append(w.wall)
                seen[c]["cpu"].append(w.cpu - ins.cpu)
    load1 = os.getloadavg()
    print(f"`python3 benchmarks/overhead_ab.py --repeat {args.repeat}`, {len(checkouts)} "
          f"checkouts interleaved; load average {'/'.join(f'{x:.2f}' for x in load0)} -> "
          f"{'/'.join(f'{x:.2f}' for x in load1)}\n")
    print("| checkout | overhead net of warmups, median (quartiles) | paired Δ to the first | "
          "wall, median | tool's CPU, median |")
    print("|---|---|---|---|---|")
    first = seen[checkouts[0]]["net"]
    for c in checkouts:
        net = seen[c]["net"]
        lo, mid, hi = quartiles(net)
        delta = statistics.median(a - b for a, b in zip(net, first, strict=True))
        print(f"| {c.name} ({git_head(c)}) | {mid:.1%} ({lo:.1%}-{hi:.1%}) | {delta:+.1%} | "
              f"{statistics.median(seen[c]['wall']):.3f} s | "
              f"{statistics.median(seen[c]['cpu']):.3f} s |")


if __name__ == "__main__":
    main()
