"""The tool's own cost on the bundled demo (run by hand; figures go to benchmarks/results/).

    python benchmarks/tool_cost.py [--repeat 3] [--startup 10] [--project DIR] [--record FILE --label TEXT]

Measures, in a fresh temporary builds/ and reports/ directory per repetition:
- cold: `invoke compare demo` with an empty builds/ (fetch, two builds, measure, report);
- warm: the same again (everything cached), and of it:
  - the time inside the measured runs: the sum of every recorded run's time (hyperfine's, per
    run; hung runs included) -- hyperfine's start-up, its JSON export, the warmups, setup and
    teardown and the process checks are NOT in it;
  - overhead = (wall - time inside measured runs) / wall: everything else, warmups included;
  - overhead net of warmups: the same less the configured warmups once per cell, each warmup run
    estimated at its cell's median run time (hyperfine records no warmup times);
  - the tool's CPU time: the whole process tree's user+system time (wait4) less the user+system
    time hyperfine recorded for the measured runs (per run, else its per-call means times the
    runs), and its share of the tree's CPU time;
- fixed and per-round parts of that overhead (net of warmups): the warm demo again with 2 rounds
  of 4 runs per cell instead of its 10 rounds of 4, and the line through the two points:
  per round = (overhead(10) - overhead(2)) / 8, fixed = overhead(2) - 2 x per round (start-up,
  checks, statistics and reports);
- no-op build: `invoke build --patch per-sandbox-lock` with both builds cached;
- no-op dry run: `invoke compare demo --dry-run` with both builds cached;
- start-up: `python3 -c pass`, `python3 -m invoke --list` and `python3 -m invoke list` (the
  matrix validated), interleaved (one of each per repetition, the order rotating), each given as
  the median of its paired difference above the bare python of the same repetition, in wall and
  CPU time.
The aims are loose and live here, not in a test: on a quiet machine, `invoke --list` under 0.5 s
and a no-op build under 1 s above a bare python. Records the load averages (1, 5, 15 min) at the
start and the end: figures from a loaded machine say so. --project measures another checkout of
patchbench (an older commit, for a before/after): its own code is imported (PYTHONPATH).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Timed:
    wall: float
    cpu: float  # user + system of the process and every descendant it waited for


ENV = dict(os.environ)


def timed(argv: Sequence[str], *, cwd: Path, project: Path | None = None) -> Timed:
    """``argv``'s wall and CPU time; with ``project``, that checkout's patchbench is imported."""
    env = ENV if project is None else {**ENV, "PYTHONPATH": str(project)}
    t0 = time.monotonic()
    proc = subprocess.Popen(list(argv), cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}")
    return Timed(wall, usage.ru_utime + usage.ru_stime)


class Tool:
    def __init__(self, project: Path, builds: Path, reports: Path) -> None:
        self.project, self.builds, self.reports = project, builds, reports

    def argv(self, *args: str, dirs: bool = True) -> list[str]:
        out = [sys.executable, "-m", "invoke", "--search-root", str(self.project), *args]
        return [*out, "--builds", str(self.builds), "--reports", str(self.reports)] if dirs else out

    def run(self, *args: str, dirs: bool = True) -> Timed:
        return timed(self.argv(*args, dirs=dirs), cwd=self.builds.parent, project=self.project)


def newest_results(reports: Path) -> dict[str, Any]:
    runs = sorted(reports.glob("demo/*/results.json"))
    data: dict[str, Any] = json.loads(runs[-1].read_text())
    return data


@dataclass(frozen=True)
class Inside:
    seconds: float  # inside the measured runs
    warmup_estimate: float  # the configured warmups once per cell, at the cell's median
    cpu: float  # user + system hyperfine recorded for the measured runs


def inside_measured_runs(res: dict[str, Any]) -> Inside:
    seconds = warm = cpu = 0.0
    for sc in res["scenarios"]:
        for c in sc.get("cells", []):
            s = c["samples"]
            times = [t for t in s.get("times", []) if t is not None]
            seconds += sum(times) + sum(t for t in s.get("hung_times", []) if t is not None)
            metrics = s.get("metrics") or {}
            if metrics.get("cpu"):  # results version 6 (hyperfine 2): each run's CPU time
                cpu += sum(metrics["cpu"])
            elif s.get("user") or s.get("system"):
                cpu += sum(s.get("user", [])) + sum(s.get("system", []))
            else:  # per hyperfine call: its mean user and system time per timed run
                cpu += sum((h.get("user", 0) + h.get("system", 0)) * len(h.get("times", []))
                           for h in s.get("hyperfine", []))
            if times:
                warm += sc.get("warmup", 0) * statistics.median(times)
    return Inside(seconds, warm, cpu)


def fmt_s(xs: Sequence[float]) -> str:
    return f"{statistics.median(xs):.3f} s" + (f" ({min(xs):.3f}–{max(xs):.3f})" if len(xs) > 1 else "")


def fmt_p(xs: Sequence[float]) -> str:
    return f"{statistics.median(xs):.1%}" + (f" ({min(xs):.1%}–{max(xs):.1%})" if len(xs) > 1 else "")


def git_head(project: Path) -> str:
    try:
        return subprocess.run(["git", "-C", str(project), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="cold/warm/no-op repetitions")
    ap.add_argument("--startup", type=int, default=10, help="repetitions of the start-up trio")
    ap.add_argument("--project", type=Path, default=ROOT, help="the patchbench checkout to measure")
    ap.add_argument("--record", type=Path, help="append the figures as a markdown section here")
    ap.add_argument("--label", default="", help="what this run measures (before/after ...)")
    args = ap.parse_args()
    project = args.project.resolve()
    load_start = os.getloadavg()
    started = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")

    rows: dict[str, list[float]] = {k: [] for k in (
        "cold", "warm", "warm_cpu", "inside", "overhead", "overhead_net", "tool_cpu",
        "tool_cpu_share", "noop", "noop_cpu", "dry", "dry_cpu", "fixed", "per_round")}
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            tool = Tool(project, Path(tmp) / "builds", Path(tmp) / "reports")
            rows["cold"].append(tool.run("compare", "demo").wall)
            w = tool.run("compare", "demo")
            ins = inside_measured_runs(newest_results(tool.reports))
            rows["warm"].append(w.wall)
            rows["warm_cpu"].append(w.cpu)
            rows["inside"].append(ins.seconds)
            rows["overhead"].append((w.wall - ins.seconds) / w.wall)
            rows["overhead_net"].append((w.wall - ins.seconds - ins.warmup_estimate) / w.wall)
            rows["tool_cpu"].append(w.cpu - ins.cpu)
            rows["tool_cpu_share"].append((w.cpu - ins.cpu) / w.cpu)
            short = tool.run("compare", "demo", "--rounds", "2", "--runs", "8")
            ins2 = inside_measured_runs(newest_results(tool.reports))
            o10 = w.wall - ins.seconds - ins.warmup_estimate
            o2 = short.wall - ins2.seconds - ins2.warmup_estimate
            rows["per_round"].append((o10 - o2) / 8)
            rows["fixed"].append(o2 - 2 * (o10 - o2) / 8)
            n = tool.run("build", "--patch", "per-sandbox-lock")
            rows["noop"].append(n.wall)
            rows["noop_cpu"].append(n.cpu)
            d = tool.run("compare", "demo", "--dry-run")
            rows["dry"].append(d.wall)
            rows["dry_cpu"].append(d.cpu)

    start: dict[str, list[Timed]] = {"bare": [], "--list": [], "list": []}
    with tempfile.TemporaryDirectory() as tmp:
        tool = Tool(project, Path(tmp) / "builds", Path(tmp) / "reports")
        for i in range(args.startup):
            runs = {"bare": [sys.executable, "-c", "pass"], "--list": tool.argv("--list", dirs=False),
                    "list": tool.argv("list")}
            names = list(runs)
            for name in names[i % 3:] + names[:i % 3]:  # the order rotates
                start[name].append(timed(runs[name], cwd=Path(tmp), project=project))
    load_end = os.getloadavg()
    bare = statistics.median(t.wall for t in start["bare"])

    def above(name: str, what: str) -> list[float]:
        return [getattr(a, what) - getattr(b, what) for a, b in zip(start[name], start["bare"],
                                                                      strict=True)]

    lines = [
        f"### {args.label or 'tool_cost'}: patchbench {git_head(project)}, {started}",
        "",
        f"`python3 benchmarks/tool_cost.py --repeat {args.repeat} --startup {args.startup}` on "
        f"{os.cpu_count()} cores; load average (1/5/15 min) "
        f"{'/'.join(f'{x:.2f}' for x in load_start)} at the start, "
        f"{'/'.join(f'{x:.2f}' for x in load_end)} at the end. Medians (min–max).",
        "",
        "| what | figure |",
        "|---|---|",
        f"| cold `invoke compare demo` | {fmt_s(rows['cold'])} |",
        f"| warm `invoke compare demo` (wall) | {fmt_s(rows['warm'])} |",
        f"| of it, inside the measured runs | {fmt_s(rows['inside'])} |",
        f"| overhead: wall minus the measured runs (warmups are overhead) | "
        f"{fmt_p(rows['overhead'])} |",
        f"| overhead net of the configured warmups once per cell | {fmt_p(rows['overhead_net'])} |",
        f"| of that overhead, the fixed part (start-up, checks, statistics, reports) | "
        f"{fmt_s(rows['fixed'])} |",
        f"| ... and the part per round (10 rounds) | {fmt_s(rows['per_round'])} |",
        f"| CPU time of the warm demo's process tree | {fmt_s(rows['warm_cpu'])} |",
        f"| of it, the tool's (tree minus the measured runs' user+system) | "
        f"{fmt_s(rows['tool_cpu'])}, {fmt_p(rows['tool_cpu_share'])} |",
        f"| no-op build (`invoke build --patch per-sandbox-lock`, cached) | "
        f"{fmt_s(rows['noop'])} wall, {fmt_s(rows['noop_cpu'])} CPU |",
        f"| the same above a bare python (aim < 1 s) | +{statistics.median(rows['noop']) - bare:.3f} s "
        "wall |",
        f"| no-op `invoke compare demo --dry-run` (cached) | {fmt_s(rows['dry'])} wall, "
        f"{fmt_s(rows['dry_cpu'])} CPU |",
        f"| `python3 -c pass` | {fmt_s([t.wall for t in start['bare']])} wall, "
        f"{fmt_s([t.cpu for t in start['bare']])} CPU |",
    ]
    for name, label in (("--list", "`python3 -m invoke --list` above a bare python (aim < 0.5 s)"),
                        ("list", "`python3 -m invoke list` above a bare python")):
        lines.append(f"| {label} | "
                     f"+{statistics.median(above(name, 'wall')):.3f} s wall, "
                     f"+{statistics.median(above(name, 'cpu')):.3f} s CPU |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.record:
        with args.record.open("a") as f:
            f.write("\n" + text)


if __name__ == "__main__":
    main()
