"""results.json -> markdown: the printed summary, report.md, and each kind's own tables. Only
data goes in; nothing here measures or writes."""

from __future__ import annotations

import math
from typing import Any

from tabulate import tabulate

from patchbench.results import (
    BurstResult,
    CommandResult,
    CtrStressResult,
    LayersResult,
    Pooled,
    Results,
    ScenarioResult,
    SoakResult,
    StressBuild,
    StressResult,
    Verdict,
)

UNTIMED = (StressResult, SoakResult, CtrStressResult)  # kinds without cells and comparisons


def fmt_time(seconds: float | None) -> str:
    if seconds is None or (isinstance(seconds, float) and math.isnan(seconds)):
        return "-"
    if seconds >= 1:
        return f"{seconds:.3f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} µs"


def fmt_delta(seconds: float) -> str:
    """A signed difference of times: +5.12 ms, -310.0 µs."""
    sign = "+" if seconds >= 0 else "-"
    return sign + fmt_time(abs(seconds))


def fmt_effect(c: Verdict) -> str:
    """Schema 5: the effect in time (candidate minus baseline) with its CI; "" before."""
    if c.effect_s is None or math.isnan(c.effect_s):
        return ""
    text = fmt_delta(c.effect_s)
    if c.effect_ci_low_s is not None and c.effect_ci_high_s is not None:
        text += f" [{fmt_delta(c.effect_ci_low_s)}, {fmt_delta(c.effect_ci_high_s)}]"
    return text


def fmt_ratio(c: Verdict | Pooled) -> str:
    if math.isnan(c.speedup):  # no round with finished runs of both (every run of one hung)
        return "-"
    text = f"{c.speedup:.2f}×"
    if c.ci_low is not None and c.ci_high is not None:
        text += f" [{c.ci_low:.2f}, {c.ci_high:.2f}]"
    if isinstance(c, Verdict) and (effect := fmt_effect(c)):
        text += f", {effect}"
    return text


def fmt_verdict(c: Verdict) -> str:
    """The verdict as stored; schema 5's inconclusive one says what the run could detect."""
    if c.rule5 and c.verdict == "inconclusive" and c.mde is not None:
        return f"inconclusive (could detect ±{c.mde:.1%})"
    return c.verdict


def fmt_p(p: float | None) -> str:
    if p is None:
        return "-"
    return f"{p:.2g}" if p >= 1e-4 else "<1e-4"


def fmt_ci(ci: list[float] | None) -> str:
    return f"[{fmt_time(ci[0])}, {fmt_time(ci[1])}]" if ci else "-"


SUMMARY_HEADERS = ["scenario", "candidate", "baseline median", "candidate median",
                   "speedup [95% CI]", "p (MWU)", "verdict"]


def paired(results: Results) -> bool:
    """Whether the run's verdicts are round-paired (results version 3 and later)."""
    return any(c.paired for sc in results.scenarios if not isinstance(sc, UNTIMED)
               for c in sc.comparisons)


def summary_headers(results: Results) -> list[str]:
    if paired(results):
        return [*SUMMARY_HEADERS[:5], "p (paired t)", "verdict"]
    return SUMMARY_HEADERS


def summary_rows(results: Results) -> list[list[str]]:
    rows = []
    for sc in results.scenarios:
        if isinstance(sc, UNTIMED):
            continue
        cells = {c.label: c for c in sc.cells}
        for comp in sc.comparisons:
            base, cand = cells[comp.baseline], cells[comp.candidate]
            row = [sc.name + (f" {comp.params}" if comp.params else ""), comp.candidate_variant,
                   fmt_time(base.summary.median), fmt_time(cand.summary.median), fmt_ratio(comp),
                   fmt_p(comp.p_value), fmt_verdict(comp)]
            if sc.rate:
                row[2] += f" ({sc.rate.count / base.summary.median:,.0f} {sc.rate.unit})"
                row[3] += f" ({sc.rate.count / cand.summary.median:,.0f} {sc.rate.unit})"
            rows.append(row)
    return rows


def summary_table(results: Results, fmt: str = "simple") -> str:
    return tabulate(summary_rows(results), headers=summary_headers(results), tablefmt=fmt,
                    disable_numparse=True)


def detail_table(sc: CommandResult | BurstResult | LayersResult, fmt: str = "github") -> str:
    rate = sc.rate
    rows = []
    for c in sc.cells:
        s = c.summary
        row: list[object] = [c.label, s.n, fmt_time(s.median), fmt_ci(s.median_ci),
                             f"{fmt_time(s.mean)} ± {fmt_time(s.stdev)}", fmt_time(s.min),
                             fmt_time(s.max)]
        if rate:
            ci = s.median_ci
            row.append(f"{rate.count / s.median:,.0f}"
                       + (f" [{rate.count / ci[1]:,.0f}, {rate.count / ci[0]:,.0f}]" if ci else ""))
        if any(x.hangs is not None for x in sc.cells):
            row.append(c.hangs.text if c.hangs is not None else "-")
        rows.append([*row, "noisy" if s.noisy else ""])
    headers = ["cell", "n", "median", "95% CI of median", "mean ± σ", "min", "max"]
    if rate:
        headers.append(f"{rate.unit} [95% CI]")
    if any(x.hangs is not None for x in sc.cells):
        headers.append("hangs")
    return tabulate(rows, headers=[*headers, ""], tablefmt=fmt, disable_numparse=True)


def evidence_links(names: list[str], lost_sigchld: int) -> tuple[str, str]:
    """The lost-SIGCHLD remark (empty when none) and links to the first five evidence files."""
    sig = (f"; {lost_sigchld} with a zombie child under a sleeping parent (the classic "
           "lost-SIGCHLD signature)") if lost_sigchld else ""
    more = f" and {len(names) - 5} more" if len(names) > 5 else ""
    return sig, ", ".join(f"[{n}]({n})" for n in names[:5]) + more


def hang_blocks(sc: CommandResult | BurstResult | LayersResult) -> list[str]:
    """Runs with deadlines (results version 4): the rule, the conditions, and per candidate its
    hangs against the baseline's (Fisher's exact test) with the evidence saved before each kill."""
    if not isinstance(sc, CommandResult | BurstResult) or sc.deadline_s is None:
        return []
    out = [f"Each run had a {sc.deadline_s:g} s deadline: a run past it is a hang, its evidence "
           "saved, its process group killed; hangs are counted (n above counts the runs that "
           "finished) and left out of the timing."]
    if sc.conditions:
        out.append("Conditions (each its own set of interleaved cells):\n\n" + "\n".join(
            f"- `{c.name}`: {c.summary}" for c in sc.conditions))
    if not any(c.hangs is not None and (c.hangs.hangs or c.hangs.warmup_hangs)
               for c in sc.cells):
        out.append("No run hung.")
        return out
    rows = []
    for c in sc.comparisons:
        if c.hangs is not None:
            t = c.hangs
            rows.append([c.candidate, f"{t.hangs} of {t.runs}",
                         f"{t.baseline_hangs} of {t.baseline_runs}", fmt_p(t.p_value),
                         fmt_p(t.p_more)])
    out.append(tabulate(rows, headers=["candidate", "hangs", "baseline hangs",
                                       "p (Fisher, two-sided)", "p (hangs more, one-sided)"],
                        tablefmt="github", disable_numparse=True))
    seen = []
    for cell in sc.cells:
        h = cell.hangs
        if h is None or not h.evidence:
            continue
        sig, links = evidence_links(h.evidence, h.lost_sigchld)
        seen.append(f"- {cell.label}: {len(h.evidence)} evidence files (warmup runs included)"
                    f"{sig}: {links}")
    if seen:
        summary = (f" A readable account of every hang: [{sc.evidence_summary}]"
                   f"({sc.evidence_summary}).") if sc.evidence_summary else ""
        out.append("What was seen:" + summary + "\n\n" + "\n".join(seen))
    return out


def paired_blocks(sc: CommandResult | BurstResult | LayersResult) -> list[str]:
    """The round-paired details: per-round ratios, the drift check and the pooled figures
    (descriptive only); report.html charts the per-round ratios. What a drift or a withheld
    verdict means is in the run's warnings."""
    comps = [c for c in sc.comparisons if c.paired]
    if not comps:
        return []
    rows = []
    for c in comps:
        drift = "-"
        if c.drift is not None:
            drift = (f"{'**drift**' if c.drift.flagged else 'none seen'} (spread "
                     f"{math.sqrt(c.drift.ratio):.1f}× the noise's, p {fmt_p(c.drift.p_value)})")
        pooled = "-"
        if c.pooled is not None:
            pooled = f"{fmt_ratio(c.pooled)}, p {fmt_p(c.pooled.p_value)}"
        rows.append([c.candidate, str(c.rounds), " ".join(f"{x:.3f}" for x in c.round_ratios),
                     drift, fmt_p(c.wilcoxon_p), pooled])
    what = ("geometric mean baseline / geometric mean candidate in each round; the verdict is "
            "the t interval on their logs, tested against ±min_effect" if all(c.rule5 for c in comps)
            else "median baseline / median candidate in each round; the verdict is the t "
            "interval on their logs")
    out = [f"Per-round ratios ({what}). Pooled figures assume independent runs: descriptive "
           "only.\n\n"
           + tabulate(rows, headers=["candidate", "rounds", "per-round ratios",
                                     "drift between blocks", "Wilcoxon p",
                                     "pooled ratio [CI], p (MWU)"],
                      tablefmt="github", disable_numparse=True)]
    return out


def verify_block(sc: CommandResult | LayersResult) -> str:
    lines = ["Check after measuring (`verify`):", ""]
    for variant, v in (sc.verify or {}).items():
        state = "passed" if v.passed else f"FAILED (exit {v.exit_code})"
        lines.append(f"- {variant}: {state} — `{v.output[:300]}`")
    return "\n".join(lines)


def burst_table(sc: BurstResult) -> str:
    """The seed report's shape: k | baseline | candidate | speedup, plus launcher overhead."""
    variants = list(sc.slope_s_per_instance)
    cells = {c.label: c for c in sc.cells}
    comps = {c.candidate: c for c in sc.comparisons}
    rows = []
    for k in sc.k:
        row: list[str] = [str(k)]
        row += [fmt_time(cells[f"{v} k={k}"].summary.median) for v in variants]
        row += [fmt_ratio(comps[f"{v} k={k}"]) for v in variants[1:]]
        row.append(fmt_time(sc.launcher_overhead[str(k)]))
        rows.append(row)
    headers = ["k at once", *variants, *[f"speedup {v} [95% CI]" for v in variants[1:]],
               "launcher overhead"]
    slope = ", ".join(f"{v} {s * 1e3:.2f} ms" for v, s in sc.slope_s_per_instance.items())
    return (tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True)
            + f"\n\nSlope (seconds per extra instance, least squares over median times): {slope}.")


def phase_table(sc: BurstResult) -> str:
    names = sc.phase_names
    rows = []
    for variant, per_k in (sc.phases or {}).items():
        for k, res in per_k.items():
            rows.append([variant, k, *[fmt_time(res.median.get(n)) for n in names],
                         fmt_time(res.total_median)])
    return ("Median phase times (every instance of every run):\n\n"
            + tabulate(rows, headers=["build", "k", *names, "total"], tablefmt="github",
                       disable_numparse=True))


def stress_table(per_build: dict[str, StressBuild]) -> str:
    rows = []
    for v, pb in per_build.items():
        rows.append([
            v, pb.rounds, pb.instances_killed, pb.kill_errors, pb.hangs, pb.leftovers,
            pb.fresh_failures,
            f"{fmt_time(pb.list_latency_median_s)} / {fmt_time(pb.list_latency_max_s)}",
            "; ".join(f"{k}: {n}" for k, n in sorted(pb.outcomes.items())),
        ])
    return tabulate(rows, headers=["build", "rounds", "instances", "kill errors", "hangs",
                                   "leftovers", "fresh run failed", "list latency median / max",
                                   "launched command outcomes"],
                    tablefmt="github", disable_numparse=True)


def stress_signal_rows(per_build: dict[str, Any], by_design: list[str]) -> list[list[str]]:
    """One row per build and signal (from results.json data): sent, forwarded, lost ("N of M"),
    not forwarded by design, instances never ready. Shared by the markdown and HTML reports."""
    rows = []
    for v, pb in per_build.items():
        for name, c in pb.get("signals", {}).items():
            design = (str(c["by_design"]) if name in by_design or c["by_design"] else "")
            rows.append([v, name, str(c["sent"]), str(c["forwarded"]),
                         f"{c['lost']} of {c['sent']}", design, str(pb.get("not_ready", 0))])
    return rows


SIGNAL_HEADERS = ["build", "signal", "sent", "forwarded", "lost", "not forwarded (by design)",
                  "never ready (nothing sent)"]


def stress_signal_table(sc: StressResult) -> str:
    rows = stress_signal_rows({v: pb.model_dump() for v, pb in sc.per_build.items()},
                              sc.not_forwarded)
    note = (f" {', '.join(sc.not_forwarded)}: the runtime does not forward it by design; a "
            "missing one is shown apart and never fails the gate." if sc.not_forwarded else "")
    return ("Signals sent to the launched process once the process inside said it was ready, "
            "and whether it recorded them:" + note + "\n\n"
            + tabulate(rows, headers=SIGNAL_HEADERS, tablefmt="github", disable_numparse=True))


def layers_blocks(sc: LayersResult) -> list[str]:
    """Mount syscalls per start against L (with the fitted line and the seed's formula), the
    time table per (L, k), the mount table and leftovers per cell, verify, charts."""
    out = []
    variants = list(sc.mount_counts)
    if variants:
        syscalls = list(next(iter(next(iter(sc.mount_counts.values())).values())))
        rows = []
        for n in sc.layers:
            row = [str(n)]
            for v in variants:
                c = sc.mount_counts[v][str(n)]
                row.append(" / ".join(str(c[s]) for s in syscalls))
            rows.append(row)
        fit_row = ["fit (slope × L + intercept)"]
        for v in variants:
            fit_row.append(" / ".join(
                f"{f[0]:.2f}L{f[1]:+.1f}" if (f := sc.mount_fit.get(v, {}).get(s)) else "-"
                for s in syscalls))
        rows.append(fit_row)
        out.append("Mount syscalls of one container start (ctr, the daemon, its shim, runc), "
                   f"{' / '.join(syscalls)}:\n\n"
                   + tabulate(rows, headers=["L", *variants], tablefmt="github",
                              disable_numparse=True)
                   + f"\n\nThe seed's count: {sc.seed_formula}.")
    out.append("Per (L, k): median time until all k containers exited, and, per variant in "
               "that order, the largest mount table seen during its bursts, the slowest read "
               "of /proc/self/mountinfo, and the mounts of the run left after its rounds "
               "(removed after each round).")
    cells = {c.label: c for c in sc.cells}
    comps = {c.candidate: c for c in sc.comparisons}
    tvariants = list(dict.fromkeys(c.variant for c in sc.cells))
    rows = []
    for n in sc.layers:
        for k in sc.k:
            labels = [f"{v} L={n} k={k}" for v in tvariants]
            row = [str(n), str(k), *[fmt_time(cells[lb].summary.median) for lb in labels]]
            row += [fmt_ratio(comps[lb]) for lb in labels[1:]]
            tables = [sc.mount_table.get(lb) for lb in labels]
            row += [", ".join(str(t.peak_mounts) if t else "-" for t in tables),
                    ", ".join(fmt_time(t.slowest_read_s) if t else "-" for t in tables),
                    ", ".join(str(sc.mounts_left.get(lb, 0)) for lb in labels)]
            rows.append(row)
    out.append(tabulate(rows, headers=["L", "k", *tvariants,
                                       *[f"speedup {v} [95% CI]" for v in tvariants[1:]],
                                       "mount table peak", "slowest mountinfo read",
                                       "mounts left"],
                        tablefmt="github", disable_numparse=True))
    out.append("Images (identical for every variant): "
               + ", ".join(f"L={n} `{d}`" for n, d in sc.images.items())
               + (f". runc: {sc.runc.get('version', '').splitlines()[0]} "
                  f"(sha256 {sc.runc.get('sha256', '')[:12]})" if sc.runc else "") + ".")
    if sc.verify:
        out.append(verify_block(sc))
    out += [f"![{name}]({name})" for name in sc.charts]
    return out


def ctrstress_blocks(sc: CtrStressResult) -> list[str]:
    """Per variant: rounds, actions, hangs, leftovers by kind, fresh-start failures; then every
    round with its draw and what each variant left."""
    rows = []
    for v, pv in sc.per_variant.items():
        rows.append([v, str(pv.rounds), ", ".join(f"{a} {n}" for a, n in sorted(pv.actions.items())),
                     ", ".join(f"{a} {n}" for a, n in pv.action_outcomes.items()
                               if a != "restart") or "-",
                     str(pv.hangs), str(pv.kill_errors), f"{pv.mounts} ({pv.idmapped_mounts})",
                     f"{pv.snapshots} / {pv.snapshot_dirs}", str(pv.shims),
                     f"{pv.tasks} / {pv.containers}", str(pv.rounds_with_leftovers),
                     str(pv.fresh_failures)])
    out = [f"{sc.instances} containers per round (L = {', '.join(map(str, sc.layers))}), one action per "
           f"round after a seeded delay in [{sc.delay[0]:g}, {sc.delay[1]:g}] s, the same for "
           "every variant; afterwards (up to "
           f"{sc.settle:g} s for the shims to go) what is left is counted, then removed, and a "
           "fresh container must run `true`. A kill or delete is retried on each container "
           "until it takes effect (hit) or the container has finished (missed) or failed to "
           "start (refused). Leftovers are "
           "summed over the rounds (after each round and after its fresh start).\n\n"
           + tabulate(rows, headers=["variant", "rounds", "actions",
                                     "kills/deletes: hit, missed, refused", "hangs",
                                     "kill errors",
                                     "mounts left (idmapped)", "snapshots active / unlisted dirs",
                                     "shims left", "tasks / containers left",
                                     "rounds with leftovers", "fresh start failed"],
                      tablefmt="github", disable_numparse=True)]
    variants = list(sc.per_variant)
    cells: dict[tuple[int, str, str], list[int]] = {}
    for r in sc.rounds_detail:  # (L, action, variant) -> summed leftovers
        acc = cells.setdefault((r.layers, r.action, r.variant), [0] * 6)
        for c in (r.left, r.fresh_left):
            for i, n in enumerate((c.mounts, c.idmapped_mounts, c.snapshots, c.shims, c.tasks,
                                   c.containers)):
                acc[i] += n
    rows = [[str(n), a, *[("{} ({}) / {} / {} / {} / {}".format(*cells[(n, a, v)])
                           if (n, a, v) in cells else "-") for v in variants]]
            for n, a in sorted({(k[0], k[1]) for k in cells})]
    out.append("Leftovers by L and action (summed over rounds and fresh starts; mounts "
               "(idmapped) / active snapshots / shims / tasks / containers):\n\n"
               + tabulate(rows, headers=["L", "action", *variants], tablefmt="github",
                          disable_numparse=True))
    by_round: dict[int, list[str]] = {}
    draw: dict[int, list[str]] = {}
    for r in sc.rounds_detail:
        c = r.left
        left = (f"{c.mounts} ({c.idmapped_mounts}) / {c.snapshots} / {c.shims} / "
                f"{c.tasks} / {c.containers}")
        exits = ", ".join(f"{code if code is not None else 'hang'}×{n}" for code, n in sorted(
            ((x, r.exit_codes.count(x)) for x in set(r.exit_codes)),
            key=lambda t: (t[0] is None, t[0] or 0)))
        hits = ", ".join(f"{a} {n}" for a, n in sorted(r.action_outcomes.items())
                         if a != "restart")
        by_round.setdefault(r.round, []).append(
            f"{r.variant}: {hits + '; ' if hits else ''}exits {exits}; left {left}; "
            f"fresh {'ok' if r.fresh_ok else 'FAILED'}")
        draw[r.round] = [str(r.round), str(r.layers), r.action, f"{r.delay_s:.2f} s"]
    rows = [[*draw[n], "<br>".join(by_round[n])] for n in sorted(draw)]
    out.append("Every round (left: mounts (idmapped) / active snapshots / shims / tasks / "
               "containers):\n\n"
               + tabulate(rows, headers=["round", "L", "action", "delay", "per variant"],
                          tablefmt="github", disable_numparse=True))
    out.append("Images (identical for every variant): "
               + ", ".join(f"L={n} `{d}`" for n, d in sc.images.items())
               + (f". runc: {sc.runc.get('version', '').splitlines()[0]} "
                  f"(sha256 {sc.runc.get('sha256', '')[:12]})" if sc.runc else "") + ".")
    return out + round_evidence(
        [(f"{r.variant} round {r.round}", r.evidence) for r in sc.rounds_detail],
        sc.evidence_summary)


def round_evidence(rounds: list[tuple[str, list[str]]], summary: str | None) -> list[str]:
    """The hung instances of stress-like rounds, each with the evidence saved before its kill
    (nothing when none hung)."""
    seen = [f"- {label}: " + ", ".join(f"[{n}]({n})" for n in names)
            for label, names in rounds if names]
    if not seen:
        return []
    said = (f" A readable account of every hang: [{summary}]({summary})." if summary else "")
    return ["Hung instances, with the evidence saved before the kill:" + said + "\n\n"
            + "\n".join(seen)]


def extra_blocks(sc: ScenarioResult) -> list[str]:
    """A kind's own sections after its detail table (markdown blocks; images start with '![')."""
    if isinstance(sc, BurstResult):
        out = [burst_table(sc)]
        if sc.chart:
            out.append(f"![time against k]({sc.chart})")
        if sc.phases:
            out.append(phase_table(sc))
        return out
    if isinstance(sc, StressResult):
        out = [stress_table(sc.per_build)]
        if any(pb.signals for pb in sc.per_build.values()):
            out.append(stress_signal_table(sc))
        out += round_evidence(
            [(f"{r.variant} round {r.round}", r.evidence) for r in sc.rounds_detail],
            sc.evidence_summary)
        return out
    if isinstance(sc, LayersResult):
        return layers_blocks(sc)
    if isinstance(sc, SoakResult):
        return soak_blocks(sc)
    if isinstance(sc, CtrStressResult):
        return ctrstress_blocks(sc)
    return [verify_block(sc)] if sc.verify else []


def soak_blocks(sc: SoakResult) -> list[str]:
    """Per condition and variant: hangs N of M with Fisher's p against the baseline, failures,
    leftovers, escaped processes; then what each hang looked like, by evidence file."""
    rows = []
    for cond in sc.conditions:
        tests = {t.candidate: t for t in cond.tests}
        for v, pv in cond.per_variant.items():
            t = tests.get(v)
            codes = ", ".join(f"{k}: {n}" for k, n in sorted(pv.failure_codes.items()))
            rows.append([
                cond.name, v, f"{pv.hangs} of {pv.runs}", fmt_p(t.hang_p) if t else "-",
                f"{pv.failures}" + (f" ({codes})" if codes else ""),
                fmt_p(t.failure_p) if t else "-", str(len(pv.leftovers)), str(len(pv.escaped)),
                fmt_time(pv.median_s)])
    out = [f"{sc.block} runs of a variant per block, variants interleaved block by block; each "
           f"run has a {sc.deadline_s:g} s deadline. Fisher's exact test (two-sided) against the "
           "baseline under the same condition.",
           tabulate(rows, headers=["condition", "variant", "hangs", "p (Fisher)", "failures",
                                   "p (Fisher)", "leftovers", "escaped", "median (exit 0)"],
                    tablefmt="github", disable_numparse=True)]
    conds = [f"- `{c.name}`: {c.summary}; {c.blocks} blocks in {c.wall_s:.0f} s"
             + (" (stopped by the time budget)" if c.stopped_by == "budget" else "")
             for c in sc.conditions]
    out.append("Conditions:\n\n" + "\n".join(conds))
    seen = []
    for cond in sc.conditions:
        for v, pv in cond.per_variant.items():
            if pv.evidence:
                sig, links = evidence_links(pv.evidence, pv.lost_sigchld)
                seen.append(f"- `{cond.name}` / {v}: {len(pv.evidence)} hangs{sig}; evidence "
                            f"(saved before the kill): {links}")
            for e in pv.escaped[:3] + pv.leftovers[:3]:
                seen.append(f"- `{cond.name}` / {v}: {e}")
    if seen:
        summary = (f" A readable account of every hang: [{sc.evidence_summary}]"
                   f"({sc.evidence_summary}).") if sc.evidence_summary else ""
        out.append("What was seen, by condition:" + summary + "\n\n" + "\n".join(seen))
    else:
        out.append("Nothing was seen: no hang, leftover or escaped process under any condition.")
    return out


def statistics_line(results: Results) -> str:
    st = results.settings
    if not paired(results):
        return (f"- statistics: speedup = median(baseline) / median(candidate), 95% bootstrap CI; "
                f"Mann–Whitney U two-sided, alpha {st.alpha}, minimum effect {st.min_effect:.0%}")
    least = min(c.min_rounds or 0 for sc in results.scenarios if not isinstance(sc, UNTIMED)
                for c in sc.comparisons)
    if any(c.rule5 for sc in results.scenarios if not isinstance(sc, UNTIMED)
           for c in sc.comparisons):
        return (f"- statistics: round-paired (schema 5) — per round, the ratio of the geometric "
                f"means; speedup = their geometric mean, with a {1 - st.alpha:.0%} t interval "
                f"(R−1 degrees of freedom); faster/slower: significant and beyond "
                f"±{st.min_effect:.0%} on the log scale (one-sided test at alpha {st.alpha}); "
                f"equivalent: the {1 - 2 * st.alpha:.0%} interval within ±{st.min_effect:.0%} "
                f"(TOST); otherwise inconclusive, with the change this run could detect; the "
                f"effect in time is the mean per-round difference (candidate − baseline); no "
                f"verdict with fewer than {least} rounds")
    return (f"- statistics: round-paired — per round, the ratio of the medians; speedup = their "
            f"geometric mean, with a {1 - st.alpha:.0%} t interval on the mean log ratio (R−1 "
            f"degrees of freedom) and a two-sided t test; alpha {st.alpha}, minimum effect "
            f"{st.min_effect:.0%}; no verdict with fewer than {least} rounds")


def runtime_block(results: Results) -> list[str]:
    """The engine, image and registered runtimes a run set up (docker-run), if any."""
    rt = results.runtime
    if rt is None:
        return []
    eng = rt.engine
    out = ["", f"Runtime `{rt.name}`: engine {eng.get('engine', '?')} (API {eng.get('api', '?')}, "
           f"containerd {eng.get('containerd', '?')}"
           + (f", docker CLI {eng['cli']}" if eng.get("cli") else "") + ")"
           + (f"; image `{rt.image.get('id', '')}` ({rt.image.get('ref', '')})" if rt.image else "")
           + ".", ""]
    out += [f"- `{name}` = {r.path} (sha256 `{r.sha256[:12]}`, checked against the manifest)"
            for name, r in rt.registered.items()]
    return out


def render(results: Results) -> str:
    """report.md."""
    m = results.machine
    lines = [
        f"# {results.comparison}: {results.description or ''}".rstrip(": "),
        "",
        f"- target: `{results.target}` {results.url} at `{results.ref}` (`{results.commit}`)",
        f"- run: {results.started_at} → {results.finished_at}, seed {results.seed}"
        + (" — **A/A run** (baseline against itself: the noise floor)" if results.aa else ""),
        f"- machine: {m['cpu_model']}, {m['cpu_count']} cores, kernel {m['kernel']}, "
        f"load {', '.join(f'{x:.2f}' for x in m['load_avg'])} at start"
        + (f", {m['virtualization']}" if m.get("virtualization") else ""),
        statistics_line(results),
        "",
        "## Builds",
        "",
    ]
    brows = []
    for name, man in results.builds.items():
        fp = man["fingerprint"]
        arts = ", ".join(f"{k} {v['sha256'][:12]}" for k, v in man["artifacts"].items())
        brows.append([name, man["built_commit"][:12],
                      ", ".join(s["name"] for s in man["series"]) or "(none)",
                      (fp.get("version") or fp.get("swift", "")) + (  # docker: the build image
                          f" in {fp['image']['ref']} {fp['image']['id'][:19]}" if "image" in fp
                          else ""), arts])
    lines.append(tabulate(brows, headers=["variant", "built commit", "series", "toolchain",
                                           "artifacts (sha256)"], tablefmt="github"))
    lines += runtime_block(results)
    if summary_rows(results):
        lines += ["", "## Summary", "", summary_table(results, "github"), ""]
    else:
        lines += [""]
    for sc in results.scenarios:
        lines += [f"## Scenario `{sc.name}` ({sc.kind})", ""]
        if sc.description:
            lines += [sc.description, ""]
        lines += [f"Command: `{sc.command}`", ""]
        if not isinstance(sc, UNTIMED) and sc.cells:
            lines += [f"{sc.runs} runs per cell in {sc.rounds} interleaved rounds, warmup "
                      f"{sc.warmup}.", "", detail_table(sc), ""]
            for block in paired_blocks(sc) + hang_blocks(sc):
                lines += [block, ""]
        for extra in extra_blocks(sc):
            lines += [extra, ""]
    if results.warnings:
        lines += ["## Warnings", ""] + [f"- {w}" for w in results.warnings] + [""]
    return "\n".join(lines)
