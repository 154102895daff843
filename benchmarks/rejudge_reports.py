"""Every committed reference report's round-paired comparisons, judged again by the rule of
results schema 5 from their raw samples: the stored verdict beside the new one.

    python3 benchmarks/rejudge_reports.py [--out FILE]

The reports themselves are not changed: a report keeps the verdict of the rule it was made with
(its ``method``); this table shows where the new rule differs. Comparisons judged by the pooled
rule (results version 1-2) are left out."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from patchbench import results  # noqa: E402
from patchbench.analysis import paired  # noqa: E402
from patchbench.report.numbers import fmt_delta  # noqa: E402
from patchbench.results import PAIRED5_METHOD  # noqa: E402


def rows(reports: Path) -> list[list[str]]:
    out = []
    for path in sorted(reports.glob("*/*/results.json")):
        data = results.load(path)
        for sc in data.scenarios:
            cells = {c.label: c for c in getattr(sc, "cells", [])}
            for c in getattr(sc, "comparisons", []):
                b, k = cells[c.baseline].samples, cells[c.candidate].samples
                if not c.paired or not set(b.rounds) & set(k.rounds):
                    continue
                v = paired.paired_verdict(b.times, b.rounds, k.times, k.rounds, alpha=c.alpha,
                                          min_effect=c.min_effect)
                t = paired.paired_verdict(b.times, b.rounds, k.times, k.rounds, alpha=c.alpha,
                                          min_effect=c.min_effect, method=PAIRED5_METHOD)
                ci = f" [{v.ci_low:.3f}, {v.ci_high:.3f}]" if v.ci_low and v.ci_high else ""
                effect = fmt_delta(v.effect_s)
                if v.effect_ci_low_s is not None and v.effect_ci_high_s is not None:
                    effect += f" [{fmt_delta(v.effect_ci_low_s)}, {fmt_delta(v.effect_ci_high_s)}]"
                old_ci = f" [{c.ci_low:.3f}, {c.ci_high:.3f}]" if c.ci_low and c.ci_high else ""
                same = {"no significant difference": ("equivalent", "inconclusive")}
                differs = (c.verdict != v.verdict
                           and v.verdict not in same.get(c.verdict, ()))
                out.append([
                    f"{path.parent.parent.name}/{path.parent.name}", sc.name,
                    c.candidate + (f" {c.params}" if c.params and c.params not in c.candidate
                                   else ""),
                    str(c.rounds), f"{c.speedup:.3f}{old_ci}", c.verdict, f"{v.speedup:.3f}{ci}",
                    effect, str(v.verdict), str(t.verdict),
                    f"±{v.mde:.1%}" if v.mde is not None else "-",
                    "**differs**" if differs else "",
                ])
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reports", type=Path, default=ROOT / "reports")
    ap.add_argument("--out", type=Path, help="also write the markdown table to this file")
    args = ap.parse_args(argv)
    header = ["report", "scenario", "candidate", "R", "old speedup [CI]", "old verdict",
              "new speedup [CI]", "new effect [CI]", "new verdict", "plain t verdict",
              "could detect", ""]
    body = rows(args.reports)
    lines = ["# The committed reports under the verdict rule of schema 5 "
             "(benchmarks/rejudge_reports.py)", "",
             "Command: `python3 benchmarks/rejudge_reports.py"
             + (" --out ..." if args.out else "") + "`", "",
             "Old: the stored verdict (schema 3-4: per-round medians, min_effect on the ratio "
             "scale). New: per-round means of logs, min_effect on the log scale tested with the "
             "interval, TOST for equivalence, skewness-corrected (the t and Hall's "
             "transformation must both reject; `paired.METHOD`); plain t: the same without the "
             "correction (`PAIRED5_METHOD`, the first schema-5 records). \"No significant "
             "difference\" now splits into equivalent and inconclusive; **differs** marks any "
             "other change.", "",
             "| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in body]
    n_diff = sum(r[-1] == "**differs**" for r in body)
    lines += ["", f"{len(body)} comparisons; the new rule differs from the stored verdict in "
              f"{n_diff} (beyond splitting \"no significant difference\")."]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
