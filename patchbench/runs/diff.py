"""``invoke diff RUN_A RUN_B``: compare two saved runs of the same comparison cell by cell, made
at different times or on different machines (like pyperf's ``compare_to``), with the same
statistics as a comparison inside one run. The statistics are one call, :func:`compare_samples`,
so that the method can be swapped (for example for a round-paired one) in one place.
Details: docs/internals.md."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from patchbench.analysis import metrics as mx
from patchbench.analysis import paired, stats
from patchbench.errors import ReportError
from patchbench.report.blocks import Block, bullets, table, text
from patchbench.report.markdown import document
from patchbench.report.numbers import fmt_p, fmt_time
from patchbench.results import Cell, Results, RunInput, TimedResult, as_results
from patchbench.scenarios import profile, scans
from patchbench.scenarios.profile import Profile
from patchbench.scenarios.scans import ScanResult


def compare_samples(a: Sequence[float], b: Sequence[float], *, rounds_a: Sequence[int] | None,
                    rounds_b: Sequence[int] | None, alpha: float, min_effect: float,
                    seed: int) -> stats.Comparison:
    """The one statistics call of a cross-run comparison: ``speedup`` = median(a) / median(b),
    its CI, a p-value and a verdict. Today: the pooled bootstrap and Mann-Whitney U of
    :func:`patchbench.analysis.stats.compare` (the rounds are accepted for a round-paired method)."""
    return stats.compare(a, b, alpha=alpha, min_effect=min_effect, seed=seed)


@dataclass(frozen=True)
class CellDiff:
    scenario: str
    cell: str
    variant: str
    median_a: float
    median_b: float
    n_a: int
    n_b: int
    comparison: stats.Comparison
    build: str  # "same build" | "different build: ..." | "unknown"

    @property
    def verdict(self) -> str:
        v = self.comparison.verdict
        return {"faster": "B faster", "slower": "B slower"}.get(v, v)


@dataclass(frozen=True)
class SpeedupDiff:
    """One candidate's round-paired speedup in each run and their ratio (B / A)."""

    scenario: str
    candidate: str
    speedup_a: float
    speedup_b: float
    ratio: paired.SpeedupRatio
    builds: str  # "same builds" (baseline and candidate) | "different builds: ..." | "unknown"


@dataclass(frozen=True)
class MetricDiff:
    """One candidate's round-paired ratio of a metric besides wall time in each run, and their
    ratio B / A (results version 6: both runs recorded the metric)."""

    scenario: str
    candidate: str
    metric: str
    speedup_a: float
    speedup_b: float
    ratio: paired.SpeedupRatio


@dataclass(frozen=True)
class RunDiff:
    comparison: str
    run_a: str
    run_b: str
    cells: list[CellDiff]
    only_a: list[str]
    only_b: list[str]
    notes: list[str]
    speedups: list[SpeedupDiff] = field(default_factory=list)
    why: list[str] = field(default_factory=list)  # syscall profiles and scans in both runs
    metrics: list[MetricDiff] = field(default_factory=list)


def speedup_diffs(a: Results, b: Results, alpha: float, min_effect: float) -> list[SpeedupDiff]:
    """Every candidate comparison in both runs with rounds of both variants in each: the
    round-paired speedups of the live rule, from the raw samples, and their ratio."""
    cells_a, cells_b = _cell_map(a), _cell_map(b)
    out = []
    for sc in _timed(a):
        for comp in sc.comparisons:
            key_b, key_c = (sc.name, comp.baseline), (sc.name, comp.candidate)
            if not all(k in cells for k in (key_b, key_c) for cells in (cells_a, cells_b)):
                continue
            judged = []
            for cells in (cells_a, cells_b):
                sb, sc_ = cells[key_b].samples, cells[key_c].samples
                if not set(sb.rounds) & set(sc_.rounds):
                    break
                judged.append(paired.paired_verdict(
                    sb.times, sb.rounds, sc_.times, sc_.rounds, alpha=alpha,
                    min_effect=min_effect))
            if len(judged) < 2:
                continue
            ids = {build_identity(a, b, cells_a[k].variant) for k in (key_b, key_c)}
            builds = ("same builds" if ids == {"same build"} else "unknown" if "unknown" in ids
                      else "different builds")
            out.append(SpeedupDiff(
                scenario=sc.name, candidate=comp.candidate, speedup_a=judged[0].speedup,
                speedup_b=judged[1].speedup,
                ratio=paired.speedup_ratio(judged[0].round_ratios, judged[1].round_ratios,
                                           alpha=alpha), builds=builds))
    return out


def metric_diffs(a: Results, b: Results, alpha: float, min_effect: float) -> list[MetricDiff]:
    """Every metric besides wall time that a candidate's cells hold in both runs: its
    round-paired ratio in each (patchbench.analysis.metrics, from the raw samples) and their
    ratio B / A, as for wall time."""
    cells_a, cells_b = _cell_map(a), _cell_map(b)
    out = []
    for sc in _timed(a):
        for comp in sc.comparisons:
            keys = [(sc.name, comp.baseline), (sc.name, comp.candidate)]
            if not all(k in cells for k in keys for cells in (cells_a, cells_b)):
                continue
            pairs = [(cells[keys[0]].samples, cells[keys[1]].samples)
                     for cells in (cells_a, cells_b)]
            for name in mx.METRICS:
                if not all(name in s.metrics and len(s.metrics[name]) == len(s.times)
                           for pair in pairs for s in pair):
                    continue
                judged = [mx.judge(name, sb.metrics[name], sb.rounds, sk.metrics[name],
                                   sk.rounds, alpha=alpha, min_effect=min_effect)
                          for sb, sk in pairs if set(sb.rounds) & set(sk.rounds)]
                if len(judged) < 2 or not all(j["round_ratios"] for j in judged):
                    continue
                out.append(MetricDiff(
                    scenario=sc.name, candidate=comp.candidate, metric=name,
                    speedup_a=judged[0]["speedup"], speedup_b=judged[1]["speedup"],
                    ratio=paired.speedup_ratio(judged[0]["round_ratios"],
                                               judged[1]["round_ratios"], alpha=alpha)))
    return out


def _timed(results: Results) -> list[TimedResult]:
    """The scenarios with cells and comparisons (the other kinds have no timing to compare)."""
    return [sc for sc in results.scenarios if isinstance(sc, TimedResult)]


def _cell_map(results: Results) -> dict[tuple[str, str], Cell]:
    return {(sc.name, c.label): c for sc in _timed(results) for c in sc.cells}


def build_identity(a: Results, b: Results, variant: str) -> str:
    """Whether ``variant`` ran the same binaries in both runs (artifact sha256s)."""
    # a build manifest is the free-form manifest-<variant>.json (results.problems checked its
    # artifacts' sha256 when the run was read)
    ma, mb = a.builds.get(variant), b.builds.get(variant)
    if not ma or not mb:
        return "unknown"
    sha_a = {k: v["sha256"] for k, v in ma.get("artifacts", {}).items()}
    sha_b = {k: v["sha256"] for k, v in mb.get("artifacts", {}).items()}
    if sha_a == sha_b:
        return "same build"
    differ = sorted(k for k in sha_a.keys() | sha_b.keys() if sha_a.get(k) != sha_b.get(k))
    return "different build: " + ", ".join(differ)


def require_same_comparison(runs: Sequence[Results], names: Sequence[str]) -> str:
    comps = {r.comparison for r in runs}
    if len(comps) != 1:
        listing = "; ".join(f"{n} is {r.comparison!r}" for n, r in zip(names, runs, strict=True))
        raise ReportError(f"these runs are of different comparisons ({listing})",
                          hint="diff and merge compare runs of one comparison only")
    return str(comps.pop())


def diff_runs(run_a: RunInput, run_b: RunInput, *, name_a: str = "A", name_b: str = "B"
              ) -> RunDiff:
    a, b = as_results(run_a, name_a), as_results(run_b, name_b)
    comparison = require_same_comparison([a, b], [name_a, name_b])
    alpha = a.settings.alpha
    min_effect = a.settings.min_effect
    cells_a, cells_b = _cell_map(a), _cell_map(b)
    out = []
    order = [sc.name for sc in a.scenarios]
    notes = []
    for i, key in enumerate(k for k in cells_a if k in cells_b):
        ca, cb = cells_a[key], cells_b[key]
        ta, tb = ca.samples.times, cb.samples.times
        if not ta or not tb:  # every run of the cell hung (or none was measured): no timing
            notes.append(f"{' '.join(key)}: no timed runs in {'A' if not ta else 'B'}; "
                         "not compared")
            continue
        comp = compare_samples(ta, tb, rounds_a=ca.samples.rounds, rounds_b=cb.samples.rounds,
                               alpha=alpha, min_effect=min_effect, seed=a.seed + i)
        out.append(CellDiff(scenario=key[0], cell=key[1], variant=ca.variant,
                            median_a=stats.summarize(ta).median,
                            median_b=stats.summarize(tb).median, n_a=len(ta), n_b=len(tb),
                            comparison=comp, build=build_identity(a, b, ca.variant)))
    out.sort(key=lambda d: order.index(d.scenario) if d.scenario in order else len(order))
    # the machine info is free-form (patchbench.measure.machine, as the run recorded it)
    if a.machine.get("cpu_model") != b.machine.get("cpu_model"):
        notes.append(f"different CPUs: A {a.machine.get('cpu_model')}, "
                     f"B {b.machine.get('cpu_model')}")
    if a.settings != b.settings:
        notes.append(f"different settings: A {a.settings.model_dump()}, "
                     f"B {b.settings.model_dump()}; A's are used")
    return RunDiff(
        comparison=comparison, run_a=name_a, run_b=name_b, cells=out,
        only_a=[" ".join(k) for k in cells_a if k not in cells_b],
        only_b=[" ".join(k) for k in cells_b if k not in cells_a], notes=notes,
        speedups=speedup_diffs(a, b, alpha, min_effect),
        why=why_lines(a, b),
        metrics=metric_diffs(a, b, alpha, min_effect),
    )


def why_lines(a: Results, b: Results, top: int = 3) -> list[str]:
    """Per traced cell in both runs, its syscalls per start in A and B and the biggest changes
    (patchbench.scenarios.profile); per scanned variant in both, its exponent in A and B."""
    out = []
    by_b = {sc.name: sc for sc in b.scenarios}
    for sa in a.scenarios:
        sb = by_b.get(sa.name)
        if sb is None:
            continue
        pa, pb = getattr(sa, "profile", None), getattr(sb, "profile", None)
        if isinstance(pa, Profile) and isinstance(pb, Profile):
            ca, cb = profile.by_cell(pa), profile.by_cell(pb)
            for cell in (c for c in ca if c in cb):
                rows = profile.diff_rows(ca[cell], cb[cell])
                changed = [f"{r[0]} {r[3]}" for r in rows[1:1 + top] if r[3] != "0"]
                out.append(f"{sa.name} {cell}: {rows[0][1]} → {rows[0][2]} syscalls per start"
                           + (f" (B − A: {', '.join(changed)})" if changed else ""))
        fa, fb = getattr(sa, "scan", None), getattr(sb, "scan", None)
        if isinstance(fa, ScanResult) and isinstance(fb, ScanResult):
            fits_b = {(f.variant, f.condition): f for f in fb.fits}
            for f in fa.fits:
                g = fits_b.get((f.variant, f.condition))
                if g is not None:
                    out.append(f"{sa.name} {f.variant}: exponent of {fa.name} "
                               f"{scans.fmt_exponent(f)} in A, "
                               f"{scans.fmt_exponent(g)} in B")
    return out


def _ratio_text(r: paired.SpeedupRatio) -> str:
    text = f"{r.ratio:.3f}"
    if r.ci_low is not None and r.ci_high is not None:
        text += f" [{r.ci_low:.3f}, {r.ci_high:.3f}]"
    return text


def blocks(d: RunDiff) -> list[Block]:
    """The diff as blocks: the cells, the candidates' speedups, why, the other metrics."""
    rows = []
    for c in d.cells:
        cmp = c.comparison
        ratio = f"{cmp.speedup:.2f}×"
        if cmp.ci_low is not None:
            ratio += f" [{cmp.ci_low:.2f}, {cmp.ci_high:.2f}]"
        rows.append([c.scenario, c.cell, f"{fmt_time(c.median_a)} (n={c.n_a})",
                     f"{fmt_time(c.median_b)} (n={c.n_b})", ratio, fmt_p(cmp.p_value),
                     c.verdict, c.build])
    out: list[Block] = [
        text(f"diff of two runs of {d.comparison}: A = {d.run_a}, B = {d.run_b}\n"
             "ratio = median(A) / median(B): above 1 means B is faster; 95% bootstrap CI, "
             "Mann–Whitney U p"),
        table(["scenario", "cell", "A median", "B median", "A/B [95% CI]", "p", "verdict",
               "build"], rows)]
    machine = [f"{c.scenario} {c.cell}" for c in d.cells
               if c.build == "same build" and c.verdict in ("B faster", "B slower")]
    if machine:
        out.append(text("the same build in both runs, so the difference is the machine's (load, "
                        "drift, another host), not the code's: " + ", ".join(machine)))
    if d.speedups:
        srows = [[s.scenario, s.candidate, f"{s.speedup_a:.3f}× ({s.ratio.rounds_a} rounds)",
                  f"{s.speedup_b:.3f}× ({s.ratio.rounds_b} rounds)", _ratio_text(s.ratio),
                  fmt_p(s.ratio.p_value), s.builds] for s in d.speedups]
        out += [text("candidates: the round-paired speedup (ratio of geometric means per round) "
                     "in each run and their ratio B/A (above 1: the candidate gained against its "
                     "baseline in B), 95% Welch t CI; drift shared by a run's variants cancels"),
                table(["scenario", "candidate", "speedup in A", "speedup in B", "B/A [95% CI]",
                       "p", "builds"], srows)]
    if d.why:
        out += [text("why (traced runs and scans in both runs):"), bullets([[w] for w in d.why])]
    if d.metrics:
        mrows = [[m.scenario, m.candidate, m.metric, f"{m.speedup_a:.3f}×", f"{m.speedup_b:.3f}×",
                  _ratio_text(m.ratio), fmt_p(m.ratio.p_value)] for m in d.metrics]
        out += [text("other metrics: each one's round-paired ratio (baseline / candidate) in each "
                     "run and their ratio B/A, as for wall time"),
                table(["scenario", "candidate", "metric", "ratio in A", "ratio in B",
                       "B/A [95% CI]", "p"], mrows)]
    out += [text("only in A: " + ", ".join(d.only_a))] if d.only_a else []
    out += [text("only in B: " + ", ".join(d.only_b))] if d.only_b else []
    return out + [text(f"note: {n}") for n in d.notes]


def render_diff(d: RunDiff) -> str:
    """The diff as text for a terminal (markdown)."""
    return document(blocks(d))
