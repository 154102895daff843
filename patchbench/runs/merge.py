"""``invoke merge``: runs of one comparison made on several machines, put side by side.
Per class of machines (by fingerprint, or ``--class``) one verdict across its hosts
(patchbench.analysis.hosts). Details: docs/internals.md."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from patchbench.analysis import hosts
from patchbench.analysis.metrics import METRICS
from patchbench.analysis.rejudge import rejudge
from patchbench.errors import ReportError
from patchbench.measure import machine as machine_info
from patchbench.report import blocks as rb
from patchbench.report import charts as report_charts
from patchbench.report import html as html_format
from patchbench.report import markdown as md_format
from patchbench.report.blocks import Block, View, bullets, heading, table, text
from patchbench.report.numbers import (
    fmt_delta,
    fmt_metric_answer,
    fmt_metric_ratio,
    fmt_time,
)
from patchbench.results import Results, RunInput, TimedResult, Verdict, as_results
from patchbench.runs.diff import require_same_comparison
from patchbench.scenarios import KINDS

# The manifest fields that decide what is built; equal inputs must give equal artifacts.
BUILD_INPUTS = ("target", "commit", "built_commit", "series", "overlays", "fingerprint", "recipe")
# Fields that differ from run to run without meaning anything about the build.
VOLATILE = {"built_at", "duration_s", "log", "url", "fetched_from", "cache_key"}
METRICS_NOTE = ("Each metric besides wall time on each machine: ratio baseline / candidate [95% "
                "CI], the effect per run [95% CI], and the answer of the same round-paired rule.")


@dataclass(frozen=True)
class MachineRun:
    label: str
    results: Results
    gate: list[str]


@dataclass(frozen=True)
class BuildDifference:
    variant: str
    first: str  # label of the run compared against
    other: str
    same_inputs: bool
    fields: list[str]  # "path: A ≠ B"

    def describe(self) -> str:
        what = ("same inputs, different artifacts (the build is not reproducible)"
                if self.same_inputs else "different build inputs")
        return f"{self.variant}: {self.first} vs {self.other}: {what}: " + "; ".join(self.fields)


@dataclass(frozen=True)
class MergedRow:
    scenario: str
    params: str
    candidate: str
    per_machine: dict[str, Verdict | None]  # label -> the run's comparison
    medians: dict[str, tuple[float, float] | None]  # label -> (baseline, candidate) medians

    @property
    def name(self) -> str:
        return f"{self.scenario}{' ' + self.params if self.params else ''} {self.candidate}"

    @property
    def agreement(self) -> str:
        present = {m: c.verdict for m, c in self.per_machine.items() if c is not None}
        missing = [m for m, c in self.per_machine.items() if c is None]
        if len(set(present.values())) == 1 and not missing:
            return f"yes: {next(iter(present.values()))}"
        parts = [f"{v} on {m}" for m, v in present.items()]
        parts += [f"not measured on {m}" for m in missing]
        return "NO: " + ", ".join(parts)

    @property
    def agrees(self) -> bool:
        return self.agreement.startswith("yes")


@dataclass(frozen=True)
class MachineClass:
    """A class of machines: its name, how it was formed (``fingerprint`` or ``label``: named by
    the user), what its machines are, and the labels of its hosts."""

    name: str
    by: str
    what: str
    hosts: tuple[str, ...]


@dataclass(frozen=True)
class ClassRow:
    """One comparison on one class: the verdict across its hosts."""

    row: MergedRow
    machine_class: MachineClass
    verdict: hosts.ClassVerdict


@dataclass
class Merged:
    comparison: str
    runs: list[MachineRun]
    rows: list[MergedRow]
    build_differences: list[BuildDifference] = field(default_factory=list)
    identical_builds: dict[str, bool] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)  # machines whose run ended in an error
    classes: list[MachineClass] = field(default_factory=list)
    class_rows: list[ClassRow] = field(default_factory=list)

    @property
    def labels(self) -> list[str]:
        return [r.label for r in self.runs]

    @property
    def gate_failed(self) -> bool:
        return any(r.gate for r in self.runs)


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False) if not isinstance(value, str) \
        else value
    text = " ".join(text.split())  # one line, even for a multi-line --version output
    return text if len(text) <= 40 else text[:37] + "…"


def diff_fields(a: Any, b: Any, prefix: str = "") -> list[str]:
    """Every leaf path where ``a`` and ``b`` differ, as ``path: A ≠ B``."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(a.keys() | b.keys(), key=str):
            out += diff_fields(a.get(k), b.get(k), f"{prefix}.{k}" if prefix else str(k))
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        out = []
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            out += diff_fields(x, y, f"{prefix}[{i}]")
        return out
    if a == b:
        return []
    if isinstance(a, str) and isinstance(b, str):
        common = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y),
                      min(len(a), len(b)))
        if common > 24:  # show where they start to differ
            a, b = "…" + a[common - 8:], "…" + b[common - 8:]
    return [f"{prefix}: {_short(a)} ≠ {_short(b)}"]


def _artifacts(man: dict[str, Any]) -> dict[str, str]:
    # a build manifest is the free-form manifest-<variant>.json as the run recorded it (its
    # artifacts' sha256 checked by results.problems when the run was read)
    return {k: v["sha256"] for k, v in man.get("artifacts", {}).items()}


def check_builds(runs: Sequence[MachineRun]) -> tuple[list[BuildDifference], dict[str, bool]]:
    """Compare every variant's build manifest on every machine with the first machine's."""
    diffs: list[BuildDifference] = []
    identical: dict[str, bool] = {}
    variants = list(dict.fromkeys(v for r in runs for v in r.results.builds))
    for v in variants:
        have = [(r.label, r.results.builds[v]) for r in runs if v in r.results.builds]
        first_label, first = have[0]
        identical[v] = all(_artifacts(m) == _artifacts(first) for _, m in have)
        for label, man in have[1:]:
            same_inputs = all(man.get(k) == first.get(k) for k in BUILD_INPUTS)
            if same_inputs and _artifacts(man) == _artifacts(first):
                continue
            a = {k: x for k, x in first.items() if k not in VOLATILE}
            b = {k: x for k, x in man.items() if k not in VOLATILE}
            diffs.append(BuildDifference(v, first_label, label, same_inputs, diff_fields(a, b)))
    return diffs, identical


def _rows(runs: Sequence[MachineRun]) -> list[MergedRow]:
    keys: list[tuple[str, str, str]] = []
    found: dict[tuple[str, str, str], dict[str, tuple[Verdict, tuple[float, float]]]] = {}
    for r in runs:
        for sc in r.results.scenarios:
            if not isinstance(sc, TimedResult):  # the kinds with comparisons
                continue
            cells = {c.label: c for c in sc.cells}
            for comp in sc.comparisons:
                key = (sc.name, comp.params, comp.candidate_variant)
                if key not in found:
                    keys.append(key)
                    found[key] = {}
                med = (cells[comp.baseline].summary.median, cells[comp.candidate].summary.median)
                found[key][r.label] = (comp, med)
    return [MergedRow(scenario=k[0], params=k[1], candidate=k[2],
                      per_machine={r.label: found[k][r.label][0] if r.label in found[k] else None
                                   for r in runs},
                      medians={r.label: found[k][r.label][1] if r.label in found[k] else None
                               for r in runs})
            for k in keys]


def machine_classes(runs: Sequence[MachineRun], named: Mapping[str, Sequence[str]] | None = None
                    ) -> list[MachineClass]:
    """The runs' machines in classes: ``named`` (class -> the labels of its hosts, every run in
    exactly one), else by the fingerprint of each run's recorded machine info."""
    labels = [r.label for r in runs]
    if named:
        seen = [label for members in named.values() for label in members]
        unknown = sorted(set(seen) - set(labels))
        twice = sorted({label for label in seen if seen.count(label) > 1})
        left = [label for label in labels if label not in seen]
        if unknown or twice or left:
            raise ReportError(
                "--class must put every run in exactly one class: "
                + "; ".join(filter(None, [
                    f"no run labelled {', '.join(unknown)}" if unknown else "",
                    f"in two classes: {', '.join(twice)}" if twice else "",
                    f"in no class: {', '.join(left)}" if left else ""])),
                hint="--class NAME=LABEL,LABEL for each class; the runs' labels: "
                     + ", ".join(labels))
        return [MachineClass(name, "label", "named by the user", tuple(members))
                for name, members in named.items()]
    groups: dict[str, list[MachineRun]] = {}
    for r in runs:
        groups.setdefault(machine_info.fingerprint(r.results.machine), []).append(r)
    return [MachineClass(fp, "fingerprint", machine_info.describe(members[0].results.machine),
                         tuple(m.label for m in members)) for fp, members in groups.items()]


def class_rows(rows: Sequence[MergedRow], classes: Sequence[MachineClass]) -> list[ClassRow]:
    """Per comparison and class, the verdict across the class's hosts that measured it (each
    host's per-round ratios, at its own alpha and min_effect: the first host's)."""
    out = []
    for row in rows:
        for mc in classes:
            got = {h: row.per_machine[h] for h in mc.hosts if row.per_machine.get(h) is not None}
            measured = {h: c for h, c in got.items() if c is not None and c.round_ratios}
            if not measured:
                continue
            first = next(iter(measured.values()))
            v = hosts.across({h: c.round_ratios for h, c in measured.items()},
                             alpha=first.alpha, min_effect=first.min_effect)
            out.append(ClassRow(row, mc, v))
    return out


def _gate_reasons(results: Results) -> list[str]:
    from patchbench import gate

    return gate.failures(results)


def merge_runs(given: Sequence[tuple[str, RunInput]], *, allow_differing_builds: bool = False,
               gate: Callable[[Results], list[str]] | None = None,
               classes: Mapping[str, Sequence[str]] | None = None) -> Merged:
    """Merge runs of one comparison. Refuses runs of different comparisons, and (unless
    ``allow_differing_builds``) runs whose identical build inputs gave different artifacts.
    ``classes``: class name -> the labels of its hosts (default: by machine fingerprint). Each
    run is read through the live rule (patchbench.analysis.rejudge)."""
    if len(given) < 1:
        raise ReportError("nothing to merge: no saved runs were given")
    labels = [label for label, _ in given]
    if len(set(labels)) != len(labels):
        raise ReportError(f"two runs have the same label: {', '.join(labels)}",
                          hint="name them LABEL=PATH")
    runs = [(label, rejudge(as_results(run, label))) for label, run in given]
    comparison = require_same_comparison([r for _, r in runs], labels)
    gate_fn = gate or _gate_reasons
    machine_runs = [MachineRun(label, res, list(gate_fn(res))) for label, res in runs]
    diffs, identical = check_builds(machine_runs)
    unreproducible = [d for d in diffs if d.same_inputs]
    if unreproducible and not allow_differing_builds:
        raise ReportError(
            "builds differ: the same source, series and toolchain gave different artifacts",
            hint="rebuild and compare the manifests; pass --allow-differing-builds to merge "
                 "anyway with a 'builds differ' section",
            detail="\n".join(d.describe() for d in unreproducible))
    rows = _rows(machine_runs)
    found = machine_classes(machine_runs, classes)
    return Merged(comparison, machine_runs, rows, diffs, identical, classes=found,
                  class_rows=class_rows(rows, found))


def machine_rows(m: Merged) -> list[list[str]]:
    """One row per machine property, one column per machine."""
    def show(value: Any) -> str:
        return "-" if value in (None, "", []) else str(value)

    def machine(res: Results, *path: str) -> str:
        # the machine info is free-form (patchbench.measure.machine), as the run recorded it
        cur: Any = res.machine
        for p in path:
            cur = cur.get(p) if isinstance(cur, dict) else None
        return show(cur)

    props: list[tuple[str, Callable[[Results], str]]] = [
        ("run", lambda r: show(r.run_dir)),
        ("started", lambda r: show(r.started_at)),
        ("CPU", lambda r: machine(r, "cpu_model")),
        ("cores", lambda r: machine(r, "cpu_count")),
        ("memory", lambda r: f"{r.machine.get('memory_bytes', 0) / 2**30:.1f} GiB"),
        ("kernel", lambda r: machine(r, "kernel")),
        ("arch", lambda r: machine(r, "machine")),
        ("virtualization", lambda r: machine(r, "virtualization")),
        ("governor", lambda r: machine(r, "governor")),
        ("load at start", lambda r: ", ".join(f"{x:.2f}" for x in r.machine.get("load_avg", []))),
        ("hyperfine", lambda r: machine(r, "tools", "hyperfine")),
        ("go", lambda r: machine(r, "tools", "go")),
        ("seed", lambda r: show(r.seed)),
    ]
    return [[name, *[fn(run.results) for run in m.runs]] for name, fn in props]


def _cell(c: Verdict | None) -> str:
    if c is None:
        return "-"
    text = f"{c.speedup:.2f}×"
    if c.ci_low is not None:
        text += f" [{c.ci_low:.2f}, {c.ci_high:.2f}]"
    if c.effect_s is not None:  # schema 5: the effect in time beside the ratio
        text += f", {fmt_delta(c.effect_s)}"
    return f"{text} {c.verdict}"


def summary_rows(m: Merged) -> list[list[str]]:
    return [[row.name, *[_cell(row.per_machine[label]) for label in m.labels], row.agreement]
            for row in m.rows]


def metric_rows(m: Merged) -> list[list[str]]:
    """Every metric besides wall time (results version 6) of every comparison: its ratio, effect
    and answer on each machine ("-": not measured there)."""
    names = [n for n in METRICS if any(
        c is not None and c.metrics and n in c.metrics for r in m.rows
        for c in r.per_machine.values())]
    out = []
    for row in m.rows:
        for n in names:
            cells = []
            for label in m.labels:
                c = row.per_machine[label]
                mv = c.metrics.get(n) if c is not None and c.metrics else None
                cells.append("-" if mv is None else
                             f"{fmt_metric_ratio(mv)} {fmt_metric_answer(mv)}")
            out.append([row.name, n, *cells])
    return out


def median_rows(m: Merged) -> list[list[str]]:
    out = []
    for row in m.rows:
        cells = []
        for label in m.labels:
            med = row.medians[label]
            cells.append("-" if med is None else f"{fmt_time(med[0])} → {fmt_time(med[1])}")
        out.append([row.name, *cells])
    return out


@dataclass(frozen=True)
class KindRows:
    """A kind's own section of a merged report: its rows, one column per run."""

    name: str
    title: str
    headers: tuple[str, ...]  # the row's key columns
    note: str
    rows: list[list[str]]


def kind_sections(m: Merged) -> list[KindRows]:
    """The kinds' own sections (their blocks for View.MERGE), e.g. per stress scenario and build:
    hangs / leftovers / failed fresh runs on each machine. Rows in the order they first appear,
    grouped by scenario; "-": not in that run."""
    first: dict[str, rb.Across] = {}
    keys: dict[str, list[tuple[str, ...]]] = {}
    per_run: list[dict[str, dict[tuple[str, ...], str]]] = []
    for run in m.runs:
        cells: dict[str, dict[tuple[str, ...], str]] = {}
        for a in (b for sc in run.results.scenarios for b in KINDS[sc.kind].blocks(sc, View.MERGE)
                  if isinstance(b, rb.Across)):
            first.setdefault(a.title, a)
            seen = keys.setdefault(a.title, [])
            for key, value in a.cells:
                if key not in seen:
                    seen.append(key)
                cells.setdefault(a.title, {})[key] = value
        per_run.append(cells)
    out = []
    for title, found in keys.items():
        if not found:
            continue
        order = list(dict.fromkeys(k[0] for k in found))
        found.sort(key=lambda k: order.index(k[0]))
        a = first[title]
        out.append(KindRows(a.name, title, a.keys, a.note,
                           [[*key, *[c.get(title, {}).get(key, "-") for c in per_run]]
                            for key in found]))
    return out


def build_rows(m: Merged) -> list[list[str]]:
    rows = []
    for v, same in m.identical_builds.items():
        shas = []
        for run in m.runs:
            man = run.results.builds.get(v)
            shas.append(", ".join(f"{k} {s[:12]}" for k, s in _artifacts(man).items())
                        if man else "-")
        rows.append([v, *shas, "identical" if same else "DIFFER"])
    return rows


def _alert(m: Merged) -> list[Block]:
    if not m.build_differences:
        return []
    items = [[rb.Strong(d.describe()) if d.same_inputs else rb.Escaped(d.describe())]
             for d in m.build_differences]
    return [rb.Section((heading("⚠ Builds differ", level=2), bullets(items)), "alert",
                    "builds-differ")]


def gate_lines(m: Merged) -> rb.Bullets:
    """Each machine's gate, and the machines whose run ended in an error."""
    items: list[list[rb.Inline]] = [[rb.Strong(e)] for e in m.errors]
    depths = [0] * len(items)
    for run in m.runs:
        if run.gate:
            items.append([rb.Strong(f"{run.label}: gate FAILED")])
            items += [[rb.Escaped(g)] for g in run.gate]
            depths += [0, *[1] * len(run.gate)]
        else:
            items.append([rb.Escaped(f"{run.label}: gate passed")])
            depths.append(0)
    return bullets(items, depths=depths)


def gate_box(m: Merged) -> rb.Gate:
    reasons = [f"{r.label}: {g}" for r in m.runs for g in r.gate] + m.errors
    return rb.Gate(False, "Gate: FAILED", reasons=tuple(reasons)) if reasons else \
        rb.Gate(True, "Gate: passed on every machine")


def _labels(m: Merged) -> list[rb.Escaped]:
    return rb.escaped(m.labels)


def _escaped(rows: list[list[str]]) -> list[list[rb.Escaped]]:
    """Cells from the artifacts (names, labels): escaped."""
    return [rb.escaped(row) for row in rows]


def summary_table(m: Merged) -> rb.Table:
    n = len(m.labels)
    return table(["comparison", *_labels(m), "verdicts agree"], _escaped(summary_rows(m)),
                 "summary", styles=["", *["verdict"] * n, "agreement"])


def kind_table(m: Merged, sec: KindRows) -> rb.Table:
    return table([*sec.headers, *_labels(m)], _escaped(sec.rows), sec.name)


def blocks(m: Merged, view: View) -> list[Block]:
    """The merged report (``view``: report.md or report.html)."""
    page = view is View.PAGE
    out: list[Block] = [heading(f"{m.comparison}: {len(m.runs)} runs merged", level=1),
                        *_alert(m)]
    out += [gate_box(m)] if page else []
    labels = _labels(m)
    disagree = [r for r in m.rows if not r.agrees]
    if m.rows:
        said = ("speedup = median(baseline) / median(candidate) on each machine, 95% CI, verdict"
                + ("." if page else "; the last column says whether the machines agree."))
        out += [rb.Section((heading("Summary", level=2, id="summary" if page else ""), text(said))),
                summary_table(m)]
        out += ([rb.Chart("merge", partial(report_charts.merge_chart, [
            (r.name, list(_entries(r).items())) for r in m.rows]),
            "Speedup with its 95% CI on each machine.")] if page else
            [text(f"{len(m.rows) - len(disagree)} of {len(m.rows)} comparisons agree on every "
                  "machine." if disagree else "The verdicts agree on every machine.")])
        out += class_blocks(m)
        out.append(rb.Section((heading("Medians (baseline → candidate)", level=2),
                            table(["comparison", *labels], _escaped(median_rows(m)), "medians"))))
        if metric_rows(m):
            out.append(rb.Section((heading("Other metrics", level=2), text(METRICS_NOTE),
                                table(["comparison", "metric", *labels], _escaped(metric_rows(m)),
                                      "metrics", styles=["", "", *["verdict"] * len(labels)]))))
    out += [rb.Section((heading(sec.title, level=2), text(f"{sec.note}."), kind_table(m, sec)))
            for sec in kind_sections(m)]
    out += [] if page else [heading("Gate", level=2), gate_lines(m)]
    out.append(rb.Section((heading("Machines", level=2, id="machines" if page else ""),
                        table(["", *labels], _escaped(machine_rows(m)), "machines"))))
    out += [rb.Data(f"machine.json of {r.label}", r.results.machine) for r in m.runs] if page else []
    out.append(rb.Section((heading("Builds (artifact sha256)", level=2, id="builds" if page else ""),
                        table(["variant", *labels, "across machines"], _escaped(build_rows(m)),
                              "builds"))))
    out += [rb.Data(f"manifest of {v} on {r.label}", man)
            for r in m.runs for v, man in r.results.builds.items()] if page else []
    return out


CLASS_NOTE = ("Per class of machines, one verdict across its hosts: each host's mean per-round log "
              "ratio is one value, and their mean over hosts gets a t interval from their "
              "spread (the host is the unit, the rounds sit within hosts), judged like a "
              "comparison; host-dependent: the class answer is inconclusive and the hosts "
              "disagree beyond their own noise (an F test of the hosts' means against their "
              "rounds), so each host's own verdict is its answer. Classes are never pooled.")


def class_table_rows(m: Merged) -> list[list[str]]:
    out = []
    for cr in m.class_rows:
        v = cr.verdict
        ci = (f" [{v.ci_low:.3f}, {v.ci_high:.3f}]" if v.ci_low is not None
              and v.ci_high is not None else "")
        het = f"{v.heterogeneity_p:.2g}" if v.heterogeneity_p is not None else "-"
        spread = f"{100 * v.between_sd:.1f} %" if v.between_sd is not None else "-"
        out.append([cr.row.name, cr.machine_class.name, str(len(v.hosts)),
                    ", ".join(f"{h.host} {h.speedup:.3f}" for h in v.hosts),
                    f"{v.speedup:.3f}×{ci}", v.verdict, het, spread, v.note or "-"])
    return out


def class_blocks(m: Merged) -> list[Block]:
    if not m.class_rows:
        return []
    classes = [[c.name, "fingerprint" if c.by == "fingerprint" else "--class", c.what,
                ", ".join(c.hosts)] for c in m.classes]
    return [rb.Section((heading("Verdicts across hosts", level=2), text(CLASS_NOTE),
                     table(["comparison", "class", "hosts", "each host's speedup",
                            "speedup over hosts [95% CI]", "answer", "hosts differ (F test p)",
                            "spread of the hosts' offsets", "note"],
                           _escaped(class_table_rows(m)), "classes",
                           styles=["", "", "", "", "", "verdict", "", "", ""]),
                     table(["class", "formed by", "machines", "hosts"], _escaped(classes),
                           "machine-classes")))]


def render_markdown(m: Merged) -> str:
    return md_format.document(blocks(m, View.REPORT))


def render_html(m: Merged) -> str:
    return html_format.page(f"{m.comparison}: merged", blocks(m, View.PAGE))


def summary_blocks(m: Merged) -> list[Block]:
    """The merged result for a CI job summary: the table, agreement, builds and the gate."""
    out: list[Block] = [heading("patchbench ", rb.Code(m.comparison), f" on {len(m.runs)} machines"),
                        *_alert(m)]
    out += [summary_table(m)] if m.rows else []
    for sec in kind_sections(m):
        out += [kind_table(m, sec), text(f"({sec.note})")]
    return [*out, gate_lines(m)]


def summary_markdown(m: Merged) -> str:
    return md_format.document(summary_blocks(m), "\n\n")


def to_json(m: Merged) -> dict[str, Any]:
    return {
        "comparison": m.comparison,
        "runs": [{"label": r.label, "run_dir": r.results.run_dir, "gate": r.gate,
                  "machine": r.results.machine} for r in m.runs],
        "rows": [{"scenario": r.scenario, "params": r.params, "candidate": r.candidate,
                  "agreement": r.agreement, "agrees": r.agrees,
                  "per_machine": _entries(r)} for r in m.rows],
        "classes": [{"name": c.name, "by": c.by, "what": c.what, "hosts": list(c.hosts)}
                    for c in m.classes],
        "class_verdicts": [{"scenario": cr.row.scenario, "params": cr.row.params,
                            "candidate": cr.row.candidate, "class": cr.machine_class.name,
                            **dataclasses.asdict(cr.verdict)} for cr in m.class_rows],
        "build_differences": [d.describe() for d in m.build_differences],
        "identical_builds": m.identical_builds,
        "gate_failed": m.gate_failed,
        "errors": m.errors,
    }


def _entries(row: MergedRow) -> dict[str, dict[str, Any] | None]:
    """Each machine's comparison as results.json holds it (merged.json keeps them so, and the
    merge chart reads them so)."""
    return {label: c.model_dump(mode="json") if c is not None else None
            for label, c in row.per_machine.items()}


