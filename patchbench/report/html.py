"""A self-contained ``report.html`` of one run: inline CSS, charts inlined as base64 PNG, the
summary table, the gate's reasons, per-scenario detail tables and charts, and the manifests and
machine info in collapsible ``<details>``. One entry point: :func:`render_html`.

Every chart is an ``<img class="chart" data-chart=KIND>``; every table of results has a class
(``summary``, ``detail``, ...) so that a browser test can find them."""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from patchbench.report import charts as report_charts

if TYPE_CHECKING:
    from patchbench.results import Results as ResultsModel

Results = dict[str, Any]  # results.json as loaded (schema 2 field names)


def as_dict(results: Results | ResultsModel) -> Results:
    """The results as results.json holds them (from the typed model, or as they are)."""
    return results if isinstance(results, dict) else results.dump()


def as_model(results: Results | ResultsModel) -> ResultsModel:
    """The typed results (for the markdown helpers and the gate, which take the model)."""
    from patchbench import results as results_mod

    return results_mod.parse(results, "results") if isinstance(results, dict) else results

CSS = """
:root { color-scheme: light; --fg: #1b1f24; --muted: #57606a; --line: #d0d7de; --bg2: #f6f8fa; }
* { box-sizing: border-box; }
body { font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
       color: var(--fg); background: #fff; margin: 0 auto; padding: 24px 32px; max-width: 1240px; }
h1 { font-size: 28px; margin: 0 0 8px; } h2 { font-size: 22px; margin-top: 36px;
     border-bottom: 1px solid var(--line); padding-bottom: 4px; } h3 { font-size: 18px; }
ul.meta { color: var(--muted); padding-left: 20px; }
code, pre { font: 13px/1.45 ui-monospace, "DejaVu Sans Mono", monospace; }
pre { background: var(--bg2); padding: 12px; overflow-x: auto; border-radius: 6px; }
table { border-collapse: collapse; margin: 12px 0; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid var(--line); padding: 6px 10px; text-align: left; vertical-align: top; }
th { background: var(--bg2); }
td.num { text-align: right; white-space: nowrap; }
.verdict-faster { background: #dafbe1; font-weight: 600; }
.verdict-slower { background: #ffebe9; font-weight: 600; }
.verdict-none { color: var(--muted); }
.gate { padding: 12px 16px; border-radius: 6px; margin: 16px 0; font-weight: 600; }
.gate.passed { background: #dafbe1; border: 1px solid #4ac26b; }
.gate.failed { background: #ffebe9; border: 1px solid #ff8182; }
.gate ul { font-weight: 400; margin: 6px 0 0; }
.alert { background: #fff8c5; border: 1px solid #d4a72c; padding: 4px 16px 12px; border-radius: 6px; }
.alert h2 { margin-top: 8px; border: 0; }
figure { margin: 16px 0; } img.chart { max-width: 100%; height: auto; border: 1px solid var(--line);
       border-radius: 6px; } figcaption { color: var(--muted); font-size: 14px; }
details { margin: 8px 0; } summary { cursor: pointer; font-weight: 600; }
"""


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def table(headers: Sequence[str], rows: Sequence[Sequence[object]], cls: str,
          cell_class: Callable[[int, int, object], str] | None = None) -> str:
    """An HTML table; every value is escaped. ``cell_class(row, col, value)`` adds a class."""
    out = [f'<table class="{esc(cls)}"><thead><tr>']
    out += [f"<th>{esc(h)}</th>" for h in headers]
    out.append("</tr></thead><tbody>")
    for i, row in enumerate(rows):
        out.append("<tr>")
        for j, v in enumerate(row):
            c = cell_class(i, j, v) if cell_class else ""
            out.append(f'<td class="{esc(c)}">{esc(v)}</td>' if c else f"<td>{esc(v)}</td>")
        out.append("</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def verdict_class(verdict: str) -> str:
    if "faster" in verdict:
        return "verdict-faster"
    if "slower" in verdict:
        return "verdict-slower"
    return "verdict-none"


def chart(png: bytes | None, kind: str, caption: str) -> str:
    if png is None:
        return ""
    data = base64.b64encode(png).decode()
    return (f'<figure><img class="chart" data-chart="{esc(kind)}" alt="{esc(caption)}" '
            f'src="data:image/png;base64,{data}"><figcaption>{esc(caption)}</figcaption></figure>')


def details(title: str, body: str) -> str:
    return f"<details><summary>{esc(title)}</summary>{body}</details>"


def json_block(data: Any) -> str:
    return f"<pre>{esc(json.dumps(data, indent=2, ensure_ascii=False))}</pre>"


def page(title: str, body: str) -> str:
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{esc(title)}</title><style>{CSS}</style></head>"
            f"<body>\n{body}\n</body></html>\n")


def gate_block(reasons: Sequence[str]) -> str:
    if not reasons:
        return ('<div class="gate passed" id="gate">Gate: passed: no candidate significantly '
                "slower, every check passed.</div>")
    items = "".join(f"<li>{esc(r)}</li>" for r in reasons)
    return f'<div class="gate failed" id="gate">Gate: FAILED<ul>{items}</ul></div>'


def summary_section(results: Results) -> str:
    from patchbench.report.markdown import summary_headers, summary_rows

    model = as_model(results)
    rows = summary_rows(model)
    if not rows:
        return ""
    headers = summary_headers(model)
    verdict_col = len(headers) - 1
    body = table(headers, rows, "summary",
                 lambda i, j, v: verdict_class(str(v)) if j == verdict_col
                 else ("num" if 2 <= j <= 5 else ""))
    return f'<h2 id="summary">Summary</h2>{body}'


def builds_section(results: Results) -> str:
    rows = []
    for name, man in results["builds"].items():
        fp = man["fingerprint"]
        rows.append([name, man["built_commit"][:12],
                     ", ".join(s["name"] for s in man["series"]) or "(none)",
                     fp.get("version") or fp.get("swift", ""),
                     ", ".join(f"{k} {v['sha256'][:12]}" for k, v in man["artifacts"].items())])
    manifests = "".join(details(f"manifest of {name}", json_block(man))
                        for name, man in results["builds"].items())
    return ('<h2 id="builds">Builds</h2>'
            + table(["variant", "built commit", "series", "toolchain", "artifacts (sha256)"],
                    rows, "builds") + manifests)


def _ci(ci: Sequence[float] | None) -> str:
    from patchbench.report.markdown import fmt_time

    return f"[{fmt_time(ci[0])}, {fmt_time(ci[1])}]" if ci else "-"


def detail_rows(sc: dict[str, Any]) -> list[list[str]]:
    from patchbench.report.markdown import fmt_time

    rows = []
    hung = has_hangs(sc)
    for c in sc.get("cells", []):
        s = c["summary"]
        h = c.get("hangs")
        rows.append([c["label"], str(s["n"]), fmt_time(s["median"]), _ci(s.get("median_ci")),
                     f"{fmt_time(s['mean'])} ± {fmt_time(s['stdev'])}", fmt_time(s["min"]),
                     fmt_time(s["max"]),
                     *([f"{h['hangs']} of {h['runs']}" if h else "-"] if hung else []),
                     "noisy" if s.get("noisy") else ""])
    return rows


def has_hangs(sc: dict[str, Any]) -> bool:
    """Whether the cells were measured with per-run deadlines (results version 4)."""
    return any(c.get("hangs") is not None for c in sc.get("cells", []))


def ratio_text(c: dict[str, Any]) -> str:
    if c["speedup"] != c["speedup"]:  # NaN: no round with finished runs of both
        return "-"
    text = f"{c['speedup']:.2f}×"
    if c.get("ci_low") is not None:
        text += f" [{c['ci_low']:.2f}, {c['ci_high']:.2f}]"
    if c.get("effect_s") is not None:  # schema 5: the effect in time beside the ratio
        from patchbench.report.markdown import fmt_delta

        text += f", {fmt_delta(c['effect_s'])}"
        if c.get("effect_ci_low_s") is not None:
            text += (f" [{fmt_delta(c['effect_ci_low_s'])}, "
                     f"{fmt_delta(c['effect_ci_high_s'])}]")
    return text


def burst_tables(sc: dict[str, Any]) -> str:
    from patchbench.report.markdown import fmt_time

    ks = [int(k) for k in sc.get("k", [])]
    if not ks:
        return ""
    variants = list(dict.fromkeys(c["variant"] for c in sc.get("cells", [])))
    cells = {(c["variant"], int(c["params"]["k"])): c for c in sc.get("cells", [])}
    comps = {c["candidate"]: c for c in sc.get("comparisons", [])}
    rows = []
    for k in ks:
        row = [str(k)]
        row += [fmt_time(cells[(v, k)]["summary"]["median"]) if (v, k) in cells else "-"
                for v in variants]
        row += [ratio_text(comps[f"{v} k={k}"]) if f"{v} k={k}" in comps else "-"
                for v in variants[1:]]
        row.append(fmt_time(sc.get("launcher_overhead", {}).get(str(k))))
        rows.append(row)
    out = table(["k at once", *variants, *[f"speedup {v} [95% CI]" for v in variants[1:]],
                 "launcher overhead"], rows, "burst")
    slopes = sc.get("slope_s_per_instance") or {}
    if slopes:
        out += ("<p>Slope (least squares over the medians): "
                + esc(", ".join(f"{v} {s * 1e3:.2f} ms per extra instance"
                                for v, s in slopes.items())) + ".</p>")
    phase_rows = []
    for build, per_k in (sc.get("phases") or {}).items():
        for k, ph in per_k.items():
            names = sc.get("phase_names") or list(ph["median"])
            phase_rows.append([build, k, *[fmt_time(ph["median"].get(n)) for n in names],
                               fmt_time(ph.get("total_median"))])
    if phase_rows:
        names = sc.get("phase_names") or list(
            next(iter(next(iter(sc["phases"].values())).values()))["median"])
        out += "<h3>Phases (medians over every instance)</h3>" + table(
            ["build", "k", *names, "total"], phase_rows, "phases")
    return out


def stress_table(sc: dict[str, Any]) -> str:
    from patchbench.report.markdown import SIGNAL_HEADERS, fmt_time, stress_signal_rows

    per_build = sc.get("per_build") or {}
    if sc.get("kind") != "stress" or not per_build:
        return ""
    rows = []
    for build, pb in per_build.items():
        outcomes = "; ".join(f"{o}: {n}" for o, n in sorted(pb.get("outcomes", {}).items()))
        rows.append([build, pb["rounds"], pb["instances_killed"], pb["kill_errors"], pb["hangs"],
                     pb["leftovers"], pb["fresh_failures"],
                     f"{fmt_time(pb.get('list_latency_median_s'))} / "
                     f"{fmt_time(pb.get('list_latency_max_s'))}", outcomes])
    out = table(["build", "rounds", "instances", "kill errors", "hangs", "leftovers",
                 "fresh run failed", "list latency median / max", "outcomes"], rows, "stress")
    sig_rows = stress_signal_rows(per_build, sc.get("not_forwarded") or [])
    if sig_rows:
        out += ("<h3>Signals sent once the process inside was ready</h3>"
                + table(SIGNAL_HEADERS, sig_rows, "stress-signals"))
    return out


def ctrstress_table(sc: dict[str, Any]) -> str:
    """Per variant: rounds, actions, hangs, leftovers by kind, fresh-start failures."""
    per_variant = sc.get("per_variant") or {}
    if sc.get("kind") != "ctrstress" or not per_variant:
        return ""
    rows = []
    for v, pv in per_variant.items():
        actions = ", ".join(f"{a} {n}" for a, n in sorted(pv.get("actions", {}).items()))
        outcomes = ", ".join(f"{a} {n}" for a, n in pv.get("action_outcomes", {}).items()
                             if a != "restart") or "-"
        rows.append([v, pv["rounds"], actions, outcomes, pv["hangs"],
                     f"{pv['mounts']} ({pv['idmapped_mounts']})",
                     f"{pv['snapshots']} / {pv['snapshot_dirs']}", pv["shims"],
                     f"{pv['tasks']} / {pv['containers']}", pv["fresh_failures"]])
    return (f"<p>{esc(sc.get('instances'))} containers per round, layers "
            f"{esc(', '.join(map(str, sc.get('layers', []))))}; one action per round, the same for "
            "every variant; leftovers counted, then removed, after each round.</p>"
            + table(["variant", "rounds", "actions", "kills/deletes: hit, missed, refused", "hangs",
                     "mounts left (idmapped)", "snapshots active / unlisted dirs", "shims left",
                     "tasks / containers left", "fresh start failed"], rows, "stress"))


def soak_table(sc: dict[str, Any]) -> str:
    """Per condition and variant: hangs N of M with Fisher's p, failures, leftovers, escaped
    processes; then links to every hang's evidence."""
    from patchbench.report.markdown import fmt_p, fmt_time

    if sc.get("kind") != "soak":
        return ""
    rows, links = [], []
    for cond in sc.get("conditions", []):
        tests = {t["candidate"]: t for t in cond.get("tests", [])}
        for v, pv in cond["per_variant"].items():
            t = tests.get(v)
            rows.append([cond["name"], v, f"{pv['hangs']} of {pv['runs']}",
                         fmt_p(t["hang_p"]) if t else "-", pv["failures"],
                         fmt_p(t["failure_p"]) if t else "-", len(pv["leftovers"]),
                         len(pv["escaped"]), fmt_time(pv.get("median_s"))])
            links += [f'<li>{esc(cond["name"])} / {esc(v)}: <a href="{esc(n)}">{esc(n)}</a></li>'
                      for n in pv.get("evidence", [])]
    out = (f"<p>{esc(sc['block'])} runs of a variant per block, variants interleaved block by "
           f"block; each run has a {esc(sc['deadline_s'])} s deadline.</p>"
           + table(["condition", "variant", "hangs", "p (Fisher)", "failures", "p (Fisher)",
                    "leftovers", "escaped", "median (exit 0)"], rows, "soak"))
    if links:
        out += ("<h3>Hang evidence (saved before the kill)</h3>"
                + (f'<p><a href="{esc(sc["evidence_summary"])}">every hang, described</a></p>'
                   if sc.get("evidence_summary") else "")
                + f'<ul class="evidence">{"".join(links)}</ul>')
    return out


def verify_list(sc: dict[str, Any]) -> str:
    checks = sc.get("verify") or {}
    if not checks:
        return ""
    items = "".join(
        f"<li><b>{esc(v)}</b>: {'passed' if c['passed'] else 'FAILED'} "
        f"(exit {esc(c['exit_code'])}) <code>{esc(str(c.get('output', ''))[:500])}</code></li>"
        for v, c in checks.items())
    return f'<h3>Check after measuring (verify)</h3><ul class="verify">{items}</ul>'


CHARTS: list[tuple[str, Callable[[dict[str, Any]], bytes | None], str]] = [
    ("distribution", report_charts.distribution_chart,
     "Every run per cell with a box of the quartiles; the black diamond is the median and its "
     "bar the 95% bootstrap CI of the median."),
    ("rounds", report_charts.round_ratio_chart,
     "Speedup within each round (baseline median / candidate median of that round's runs): "
     "a drift during the run shows as a slope; the band is the overall 95% CI."),
    ("burst", report_charts.burst_chart,
     "Burst scan: seconds until the last of k instances exits (median, 95% CI bars), and the "
     "speedup per k with its 95% CI."),
    ("stress", report_charts.stress_chart,
     "How every instance launched in the stress rounds ended, per build."),
]


def scenario_charts(sc: dict[str, Any]) -> list[tuple[str, bytes, str]]:
    """Every chart that applies to this scenario's data: (kind, PNG, caption)."""
    out = []
    for kind, fn, caption in CHARTS:
        png = fn(sc)
        if png is not None:
            out.append((kind, png, caption))
    return out


KNOWN_KINDS = ("command", "burst", "stress", "soak", "ctrstress")


def scenario_section(sc: dict[str, Any]) -> str:
    parts = [f'<h2 id="scenario-{esc(sc["name"])}">Scenario <code>{esc(sc["name"])}</code> '
             f"({esc(sc['kind'])})</h2>"]
    if sc.get("description"):
        parts.append(f"<p>{esc(sc['description'])}</p>")
    parts.append(f"<p>Command: <code>{esc(sc['command'])}</code></p>")
    if sc.get("cells", []):
        parts.append(f"<p>{esc(sc['runs'])} runs per cell in {esc(sc['rounds'])} interleaved "
                     f"rounds, warmup {esc(sc['warmup'])}.</p>")
        parts.append(table(["cell", "n", "median", "95% CI of median", "mean ± σ", "min", "max",
                            *(["hangs"] if has_hangs(sc) else []), ""], detail_rows(sc), "detail",
                           lambda i, j, v: "num" if 1 <= j <= 6 else ""))
    parts.append(burst_tables(sc))
    parts.append(stress_table(sc))
    parts.append(soak_table(sc))
    parts.append(ctrstress_table(sc))
    parts.append(verify_list(sc))
    if sc.get("kind") not in KNOWN_KINDS:  # a kind this page has no tables for: its data
        parts.append(details(f"{sc.get('kind')} data", json_block(
            {k: v for k, v in sc.items() if k not in ("cells", "comparisons", "order")})))
    parts += [chart(png, kind, caption) for kind, png, caption in scenario_charts(sc)]
    return "".join(parts)


def machine_summary(m: dict[str, Any]) -> str:
    return (f"{m.get('cpu_model')}, {m.get('cpu_count')} cores, kernel {m.get('kernel')}, "
            f"load {', '.join(f'{x:.2f}' for x in m.get('load_avg', []))} at start"
            + (f", {m['virtualization']}" if m.get("virtualization") else ""))


def render_html(results: Results | ResultsModel, *, gate: Sequence[str] | None = None) -> str:
    """The whole report of one run as one HTML document (no external resources).
    ``gate``: the gate's reasons (``patchbench.gate.failures``); None: not shown."""
    from patchbench.report.markdown import statistics_line

    results = as_dict(results)
    title = f"{results['comparison']}: {results.get('description') or ''}".rstrip(": ")
    meta = [
        f"target <code>{esc(results['target'])}</code> {esc(results['url'])} at "
        f"<code>{esc(results['ref'])}</code> (<code>{esc(results['commit'])}</code>)",
        f"run {esc(results['started_at'])} → {esc(results['finished_at'])}, seed "
        f"{esc(results['seed'])}"
        + (" — <b>A/A run</b> (baseline against itself: the noise floor)" if results["aa"]
           else ""),
        f"machine: {esc(machine_summary(results['machine']))}",
        esc(statistics_line(as_model(results)).removeprefix("- ")),
    ]
    body = [f"<h1>{esc(title)}</h1>", '<ul class="meta">'
            + "".join(f"<li>{m}</li>" for m in meta) + "</ul>",
            gate_block(gate) if gate is not None else "", summary_section(results)]
    body += [scenario_section(sc) for sc in results["scenarios"]]
    if results.get("warnings"):
        body.append('<h2 id="warnings">Warnings</h2><ul class="warnings">'
                    + "".join(f"<li>{esc(w)}</li>" for w in results["warnings"]) + "</ul>")
    body.append(builds_section(results))
    body.append('<h2 id="machine">Machine</h2>' + details("machine.json",
                                                          json_block(results["machine"])))
    body.append(details("settings, seed and round order", json_block({
        "settings": results["settings"], "seed": results["seed"],
        "order": {sc["name"]: sc.get("order") for sc in results["scenarios"]}})))
    return page(title, "\n".join(b for b in body if b))
