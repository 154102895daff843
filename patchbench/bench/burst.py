"""Burst scans: launch k copies of a command at one moment and time until the last one exits.

The launcher (launcher/burst.go, built once with the host's Go into builds/tools/) creates the k
children, then releases them together; it appends each instance's own latency to a file. hyperfine
times the launcher, one call per (build, k) cell and round, with the cells shuffled per round from a
recorded seed. The launcher's own overhead (k copies of ``true``) is measured and reported.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from patchbench import bench, command, source, stats
from patchbench.bench import Cell, Invocation, Samples
from patchbench.errors import BenchmarkError

if TYPE_CHECKING:
    from patchbench.pipeline import ScenarioContext

LAUNCHER_SRC = Path(__file__).resolve().parent.parent / "launcher"
OVERHEAD_VARIANT = "launcher-overhead"


def launcher(builds: Path) -> Path:
    """Build (once, cached by content) the burst launcher; return its path."""
    h = hashlib.sha256()
    for path in sorted([*LAUNCHER_SRC.glob("*.go"), LAUNCHER_SRC / "go.mod"]):
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    h.update(command.run(["go", "version"], timeout=120).stdout.encode())
    dest = builds / "tools" / f"burst-{h.hexdigest()[:16]}"
    if dest.is_file():
        return dest
    with source.locked(builds, "tool-burst"):
        if dest.is_file():
            return dest
        dest.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=dest.parent) as tmp:
            shutil.copytree(LAUNCHER_SRC, Path(tmp) / "src")
            env = {**os.environ, "CGO_ENABLED": "0", "GOFLAGS": "-trimpath", "GOTOOLCHAIN": "local"}
            command.run(["go", "build", "-o", str(Path(tmp) / "burst"), "."],
                        cwd=Path(tmp) / "src", env=env, timeout=300, error=BenchmarkError,
                        what="build the burst launcher")
            os.replace(Path(tmp) / "burst", dest)
    return dest


def run(ctx: ScenarioContext, extra_files: dict[str, Path]) -> dict[str, Any]:
    from patchbench.pipeline import cell_result, compare_cells, noisy_warnings, scenario_header

    sc = ctx.scenario
    exe = launcher(ctx.builds)
    lat_dir = ctx.workdir / f"{sc.name}-latencies"
    lat_dir.mkdir(parents=True, exist_ok=True)

    def lat_file(cell: Cell) -> Path:
        return lat_dir / f"{cell.variant}-k{cell.param('k')}.jsonl"

    def expand(cell: Cell) -> Invocation:
        if cell.variant == OVERHEAD_VARIANT:
            return Invocation(command=[str(exe), "-k", cell.param("k") or "1", "--", "true"])
        inv = ctx.expand(cell)
        return Invocation(
            command=[str(exe), "-k", cell.param("k") or "1", "-o", str(lat_file(cell)), "--",
                     *inv.command],
            setup=inv.setup, teardown=inv.teardown, prepare=inv.prepare, cleanup=inv.cleanup,
        )

    variants = [b.variant.name for b in ctx.built]
    cells = [Cell(v, (("k", str(k)),)) for v in variants for k in sc.k]
    samples, order = bench.measure(sc, cells, expand, seed=ctx.seed, workdir=ctx.workdir,
                                   on_round=bench.progress)
    # The launcher's own cost, measured the same way (k copies of `true`).
    over_cells = [Cell(OVERHEAD_VARIANT, (("k", str(k)),)) for k in sc.k]
    over_sc = sc.model_copy(update={"name": f"{sc.name}-overhead", "setup": [], "teardown": [],
                                    "prepare": None, "cleanup": None})
    over, _ = bench.measure(over_sc, over_cells, expand, seed=ctx.seed, workdir=ctx.workdir)

    out = scenario_header(sc)
    out["k"] = sc.k
    out["order"] = order
    out["cells"] = [cell_result(c, samples[c], ctx.seed) for c in cells]
    for c, res in zip(cells, out["cells"], strict=True):
        res["instances"] = _instances(lat_file(c))
    out["comparisons"] = [
        compare_cells(Cell(variants[0], c.params), c, samples, ctx.comparison, ctx.seed)
        for c in cells if c.variant != variants[0]
    ]
    medians = {(c.variant, int(c.param("k") or 1)): stats.summarize(samples[c].times).median
               for c in cells}
    out["slope_s_per_instance"] = {
        v: stats.slope(sc.k, [medians[(v, k)] for k in sc.k]) for v in variants
    }
    out["launcher_overhead"] = {
        str(k): stats.summarize(over[Cell(OVERHEAD_VARIANT, (("k", str(k)),))].times).median
        for k in sc.k
    }
    base_k1 = medians.get((variants[0], min(sc.k)))
    out["warnings"] = noisy_warnings(sc.name, out["cells"])
    worst = max(out["launcher_overhead"].values())
    if base_k1 and worst > 0.25 * base_k1:
        out["warnings"].append(
            f"{sc.name}: launcher overhead (up to {worst * 1e3:.1f} ms) is large against the "
            f"k={min(sc.k)} time ({base_k1 * 1e3:.1f} ms)"
        )
    chart = ctx.workdir / f"{sc.name}.png"
    draw_chart(chart, sc.k, variants, medians, sc.name)
    extra_files[chart.name] = chart
    out["chart"] = chart.name
    out["markdown"] = [seed_table(out, variants), f"![time against k]({chart.name})"]
    if sc.phases:
        out["phases"] = measure_phases(ctx, exe, variants)
        out["markdown"].append(phase_table(out["phases"], [p.name for p in sc.phases]))
    return out


def measure_phases(ctx: ScenarioContext, exe: Path, variants: list[str]
                   ) -> dict[str, dict[str, dict[str, Any]]]:
    """Launch k instances whose start is split into the scenario's phases (run one after the
    other per instance), ``phase_runs`` times per (build, k) in a seeded shuffled order; return,
    per build and k, each phase's median over every instance and run, and the raw durations."""
    sc = ctx.scenario
    cells = [Cell(v, (("k", str(k)),)) for v in variants for k in sc.phase_k]
    order = bench.schedule(cells, sc.phase_runs, ctx.seed + 1)
    log = ctx.workdir / f"{sc.name}.phases.log"
    raw: dict[Cell, list[list[float]]] = {c: [] for c in cells}
    for r, round_cells in enumerate(order, 1):
        for cell in round_cells:
            b = next(x for x in ctx.built if x.variant.name == cell.variant)
            values = {**ctx.values(b, cell), "round": str(r)}
            argv: list[str] = []
            for phase in sc.phases:
                argv += ["--then", *bench.fill_argv(phase.command, values, sc.name)]
            out_file = ctx.workdir / f"{sc.name}.phases.{cell.variant}.k{cell.param('k')}.r{r}.json"
            k = cell.param("k") or "1"
            command.run([exe, "-k", k, "-o", out_file, "--", *argv[1:]], log=log,
                        timeout=sc.timeout * len(sc.phases) + 30, error=BenchmarkError,
                        what=f"{sc.name} phases {cell.label} run {r}")
            rec = json.loads(out_file.read_text().splitlines()[-1])
            raw[cell] += rec["phases"]
            print(f"patchbench:   phases {cell.label:<24} run {r}: done", flush=True)
    result: dict[str, dict[str, dict[str, Any]]] = {}
    for cell, rows in raw.items():
        per_phase = {p.name: [row[n] for row in rows if len(row) > n]
                     for n, p in enumerate(sc.phases)}
        result.setdefault(cell.variant, {})[cell.param("k") or "1"] = {
            "median": {name: stats.summarize(v).median for name, v in per_phase.items() if v},
            "total_median": stats.summarize([sum(row) for row in rows]).median,
            "durations": rows,
        }
    return result


def phase_table(phases: dict[str, dict[str, dict[str, Any]]], names: list[str]) -> str:
    from tabulate import tabulate

    from patchbench.report import fmt_time

    rows = []
    for variant, per_k in phases.items():
        for k, res in per_k.items():
            rows.append([variant, k, *[fmt_time(res["median"].get(n)) for n in names],
                         fmt_time(res["total_median"])])
    return ("Median phase times (every instance of every run):\n\n"
            + tabulate(rows, headers=["build", "k", *names, "total"], tablefmt="github",
                       disable_numparse=True))


def _instances(path: Path) -> dict[str, Any]:
    """Per-instance latencies the launcher recorded for one cell (all runs, warmups included)."""
    lat: list[float] = []
    codes: list[int] = []
    if path.is_file():
        for line in path.read_text().splitlines():
            rec = json.loads(line)
            lat += rec["latencies"]
            codes += rec["exit_codes"]
    out: dict[str, Any] = {"latencies": lat, "exit_codes": codes}
    if lat:
        out["median"] = stats.summarize(lat).median
    return out


def seed_table(out: dict[str, Any], variants: list[str]) -> str:
    """The seed report's shape: k | baseline | candidate | speedup, plus launcher overhead."""
    from tabulate import tabulate

    from patchbench.report import fmt_ratio, fmt_time

    cells = {c["label"]: c for c in out["cells"]}
    comps = {c["candidate"]: c for c in out["comparisons"]}
    rows = []
    for k in out["k"]:
        row: list[str] = [str(k)]
        for v in variants:
            row.append(fmt_time(cells[f"{v} k={k}"]["summary"]["median"]))
        for v in variants[1:]:
            row.append(fmt_ratio(comps[f"{v} k={k}"]))
        row.append(fmt_time(out["launcher_overhead"][str(k)]))
        rows.append(row)
    headers = ["k at once", *variants, *[f"speedup {v} [95% CI]" for v in variants[1:]],
               "launcher overhead"]
    slope = ", ".join(f"{v} {s * 1e3:.2f} ms" for v, s in out["slope_s_per_instance"].items())
    return (tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True)
            + f"\n\nSlope (seconds per extra instance, least squares over median times): {slope}.")


def draw_chart(path: Path, ks: list[int], variants: list[str],
               medians: dict[tuple[str, int], float], title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=110)
    for v in variants:
        ax.plot(ks, [medians[(v, k)] for k in ks], marker="o", label=v)
    single = medians[(variants[0], min(ks))] / min(ks)
    ax.plot(ks, [single * k for k in ks], linestyle="--", color="grey",
            label=f"k × single ({single * 1e3:.1f} ms)")
    ax.set_xlabel("instances launched at once (k)")
    ax.set_ylabel("seconds until the last one exits (median)")
    ax.set_title(title)
    ax.set_xscale("log", base=2)
    ax.set_xticks(ks, [str(k) for k in ks])
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


__all__ = ["Samples", "draw_chart", "launcher", "run", "seed_table"]
