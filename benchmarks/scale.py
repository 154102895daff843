"""How the report tools' cost grows: `report`, `diff`, `merge` and `export` against synthetic runs
of growing size, time and memory, with the growth exponent of each (run by hand; the method and
the figures: benchmarks/results/scale.md).

    python benchmarks/scale.py [--sizes 1000,3000,10000,30000,100000] [--diff-sizes 1000,3000,10000]
                               [--machines 2,4,8,16,32,64] [--merge-samples 10000] [--record FILE]
"""

from __future__ import annotations

import argparse
import copy
import datetime
import json
import math
import os
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from patchbench import results  # noqa: E402
from patchbench.runs import document, merge  # noqa: E402
from patchbench.runs.diff import diff_runs, render_diff  # noqa: E402
from patchbench.runs.export import write_export  # noqa: E402

TEMPLATE = ROOT / "reports" / "demo" / "20261129T225457Z" / "results.json"
ROUNDS = 10


def synthetic(template: dict[str, Any], n: int, seed: int) -> dict[str, Any]:
    """The template run with ``n`` runs per cell in ROUNDS rounds."""
    data = copy.deepcopy(template)
    rng = np.random.default_rng(seed)
    per_round = n // ROUNDS
    for sc in data["scenarios"]:
        sc["runs"], sc["rounds"] = per_round * ROUNDS, ROUNDS
        sc["order"] = [[c["label"] for c in sc["cells"]] for _ in range(ROUNDS)]
        for c in sc["cells"]:
            median = c["summary"]["median"]
            times = (median * rng.lognormal(0.0, 0.02, per_round * ROUNDS)).tolist()
            rounds = [r + 1 for r in range(ROUNDS) for _ in range(per_round)]
            s = c["samples"]
            s.update(times=times, user=[], system=[], exit_codes=[0] * len(times), rounds=rounds,
                     seconds=sum(times))
            s["hyperfine"] = [{
                "command": f"{sc['name']} {c['label']} round {r + 1}/{ROUNDS}",
                "mean": statistics.fmean(chunk), "stddev": statistics.pstdev(chunk),
                "median": statistics.median(chunk), "user": 0.0, "system": 0.0,
                "min": min(chunk), "max": max(chunk), "times": chunk, "exit_codes": [0] * len(chunk),
            } for r in range(ROUNDS) for chunk in [times[r * per_round:(r + 1) * per_round]]]
    return data


def saved(run: Path) -> results.Results:
    """A saved run as the command line's diff, merge and export read it (cli.runs.load)."""
    return results.load(run / "results.json")


def write_run(base: Path, name: str, data: dict[str, Any]) -> Path:
    d = base / name
    d.mkdir(parents=True)
    (d / "results.json").write_text(json.dumps(data))
    return d


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, float]:
    """(fastest seconds, peak MiB traced)."""
    walls = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        walls.append(time.perf_counter() - t0)
    tracemalloc.start()
    try:
        fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return min(walls), peak / 2**20


def slope(xs: Sequence[float], ys: Sequence[float]) -> float:
    pts = [(math.log(x), math.log(y)) for x, y in zip(xs, ys, strict=True) if y > 0]
    if len(pts) < 2:
        return float("nan")
    mx = statistics.fmean(p[0] for p in pts)
    my = statistics.fmean(p[1] for p in pts)
    num = sum((p[0] - mx) * (p[1] - my) for p in pts)
    den = sum((p[0] - mx) ** 2 for p in pts)
    return num / den


def exponents(sizes: Sequence[int], costs: Sequence[float]) -> tuple[float, float]:
    """(the exponent between the two largest sizes, where a fixed cost weighs least; the
    least-squares slope over every size)."""
    top = (math.log(costs[-1] / costs[-2]) / math.log(sizes[-1] / sizes[-2])
           if costs[-1] > 0 and costs[-2] > 0 else float("nan"))
    return top, slope(sizes, costs)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--sizes", default="1000,3000,10000,30000,100000")
    ap.add_argument("--diff-sizes", default="1000,3000,10000",
                    help="diff's sizes (its bootstrap takes seconds per 1000 samples)")
    ap.add_argument("--machines", default="2,4,8,16,32,64")
    ap.add_argument("--merge-samples", type=int, default=10000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--record", type=Path)
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    diff_sizes = [int(x) for x in args.diff_sizes.split(",")]
    machines = [int(x) for x in args.machines.split(",")]
    template = json.loads(TEMPLATE.read_text())
    load_start = os.getloadavg()
    started = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    table: dict[str, list[tuple[float, float]]] = {"report": [], "export": [], "diff": []}
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        for n in sorted(set(sizes) | set(diff_sizes)):
            a = write_run(base, f"a{n}", synthetic(template, n, seed=n))
            b = write_run(base, f"b{n}", synthetic(template, n, seed=n + 1))
            out = base / f"export{n}"

            def do_report(a: Path = a) -> None:
                document.markdown(results.load(a / "results.json"))

            def do_export(a: Path = a, out: Path = out) -> None:
                res = saved(a)
                for fmt in ("csv", "benchstat", "hyperfine"):
                    write_export(res, fmt, out / fmt)

            def do_diff(a: Path = a, b: Path = b) -> None:
                render_diff(diff_runs(saved(a), saved(b), name_a="a", name_b="b"))

            if n in sizes:
                table["report"].append(timed(do_report, args.repeat))
                table["export"].append(timed(do_export, args.repeat))
            if n in diff_sizes:
                table["diff"].append(timed(do_diff, args.repeat))
            print(f"n={n}: " + ", ".join(f"{k} {v[-1][0]:.3f} s {v[-1][1]:.1f} MiB"
                                         for k, v in table.items() if v), file=sys.stderr)
        merged: list[tuple[float, float]] = []
        one = synthetic(template, args.merge_samples, seed=7)
        for m in machines:
            runs = []
            for i in range(m):
                data = copy.deepcopy(one)
                data["machine"]["cpu_model"] = f"machine {i}"
                runs.append(write_run(base, f"m{m}-{i}", data))

            def do_merge(runs: list[Path] = runs) -> None:
                mm = merge.merge_runs([(p.name, saved(p)) for p in runs],
                                      gate=lambda r: [])
                merge.render_markdown(mm)
                json.dumps(merge.to_json(mm))

            merged.append(timed(do_merge, args.repeat))
            print(f"machines={m}: merge {merged[-1][0]:.3f} s {merged[-1][1]:.1f} MiB",
                  file=sys.stderr)
    load_end = os.getloadavg()

    lines = [f"### scale: {started}", "",
             f"`python3 benchmarks/scale.py --sizes {args.sizes} --diff-sizes {args.diff_sizes} "
             f"--machines {args.machines} "
             f"--merge-samples {args.merge_samples} --repeat {args.repeat}` on {os.cpu_count()} "
             f"cores; load average (1/5/15 min) {'/'.join(f'{x:.2f}' for x in load_start)} at the "
             f"start, {'/'.join(f'{x:.2f}' for x in load_end)} at the end. Samples per cell (2 "
             "cells per run); time: the fastest of the repeats, wall seconds; memory: peak MiB traced.", "",
             "| step | sizes (samples per cell): fastest time, peak memory | exponent, time (all) "
             "| exponent, memory (all) |", "|---|---|---|---|"]
    for step, rows in table.items():
        ns = diff_sizes if step == "diff" else sizes
        t_top, t_all = exponents(ns, [r[0] for r in rows])
        m_top, m_all = exponents(ns, [r[1] for r in rows])
        lines.append(f"| {step} | " + "; ".join(f"{n:g}: {t:.3f} s, {m:.1f} MiB"
                                                 for n, (t, m) in zip(ns, rows, strict=True))
                     + f" | {t_top:.2f} ({t_all:.2f}) | {m_top:.2f} ({m_all:.2f}) |")
    t_top, t_all = exponents(machines, [r[0] for r in merged])
    m_top, m_all = exponents(machines, [r[1] for r in merged])
    lines += ["", f"Merges of M machines, {args.merge_samples:g} samples per cell each:", "",
              "| M | " + " | ".join(str(m) for m in machines) + " | exponent, time (all) | "
              "exponent, memory (all) |",
              "|---|" + "---|" * (len(machines) + 2),
              "| merge | " + " | ".join(f"{t:.3f} s, {mem:.1f} MiB" for t, mem in merged)
              + f" | {t_top:.2f} ({t_all:.2f}) | {m_top:.2f} ({m_all:.2f}) |"]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.record:
        with args.record.open("a") as f:
            f.write("\n" + text)


if __name__ == "__main__":
    main()
