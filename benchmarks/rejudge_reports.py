"""Every committed reference report's comparisons, judged again by the live rule from their raw
samples (patchbench.analysis.rejudge, the converter every saved run is read through): the stored
verdict beside the live one, every changed answer marked.

    python3 benchmarks/rejudge_reports.py [--out FILE] [--write]

``--write`` renders each report's report.md (and report.html where it has one) again from the
re-judged run, as ``invoke report`` shows it; the results.json files are left as they were
made (their raw samples and their version are what the converter reads)."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from patchbench import gate, results, scenarios  # noqa: E402,F401
from patchbench.analysis import rejudge  # noqa: E402
from patchbench.results import TimedResult  # noqa: E402
from patchbench.runs import document  # noqa: E402
from tests.support import committed_reports  # noqa: E402


def _ratio(speedup: float, lo: float | None, hi: float | None) -> str:
    if math.isnan(speedup):
        return "-"
    ci = f" [{lo:.3f}, {hi:.3f}]" if lo is not None and hi is not None else ""
    return f"{speedup:.3f}{ci}"


def rows(paths: Sequence[Path]) -> list[list[str]]:
    out = []
    for path in paths:
        old = results.load(path)
        new = rejudge.rejudge(old)
        for so, sn in zip(old.scenarios, new.scenarios, strict=True):
            if not isinstance(so, TimedResult) or not isinstance(sn, TimedResult):
                continue
            for co, cn in zip(so.comparisons, sn.comparisons, strict=True):
                what = [f"{path.parent.parent.name}/{path.parent.name}", so.name,
                        co.candidate + (f" {co.params}" if co.params and co.params
                                        not in co.candidate else "")]
                stalled = (f"{cn.stalls.baseline}+{cn.stalls.candidate}" if cn.stalls else "0")
                out.append([*what, "wall", str(cn.rounds), _ratio(co.speedup, co.ci_low,
                                                                  co.ci_high),
                            co.verdict, _ratio(cn.speedup, cn.ci_low, cn.ci_high), cn.verdict,
                            stalled, "**changed**" if co.verdict != cn.verdict else ""])
                for name, mo in (co.metrics or {}).items():
                    mn = (cn.metrics or {})[name]
                    out.append([*what, name, str(mn.rounds),
                                _ratio(mo.speedup, mo.ci_low, mo.ci_high), mo.verdict,
                                _ratio(mn.speedup, mn.ci_low, mn.ci_high), mn.verdict, "",
                                "**changed**" if mo.verdict != mn.verdict else ""])
    return out


def write(paths: Sequence[Path]) -> list[Path]:
    """Render each report again from its re-judged run; the files that changed."""
    changed = []
    for path in paths:
        res = rejudge.rejudge(results.load(path))
        reasons = res.gate_reasons(gate.failures) if res.gate is True else None
        md = path.parent / "report.md"
        text = document.markdown(res, gate=reasons)
        if md.read_text() != text:
            md.write_text(text)
            changed.append(md)
        page = path.parent / "report.html"
        timed = any(isinstance(sc, TimedResult) and sc.comparisons for sc in res.scenarios)
        if page.exists() and timed:  # what the rule shows; the rest is as it was rendered
            html = document.html(res, gate=res.gate_reasons(gate.failures))
            if page.read_text() != html:
                page.write_text(html)
                changed.append(page)
    return changed


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, help="also write the markdown table to this file")
    ap.add_argument("--write", action="store_true",
                    help="render every committed report.md and report.html again")
    args = ap.parse_args(argv)
    paths = committed_reports("*/*/results.json")
    header = ["report", "scenario", "candidate", "metric", "R", "stored ratio [CI]",
              "stored answer", "live ratio [CI]", "live answer", "stalls", ""]
    body = rows(paths)
    n_changed = sum(r[-1] == "**changed**" for r in body)
    lines = ["# The committed reports under the live rule (benchmarks/rejudge_reports.py)", "",
             "Command: `python3 benchmarks/rejudge_reports.py"
             + (" --out ..." if args.out else "") + (" --write" if args.write else "") + "`", "",
             "Stored: the answer and ratio of the rule each run was judged by (its `method`: "
             "the pooled rule of results version 1-2, per-round medians of 3-4, the rules of "
             "5-7). Live: the same run read today, every comparison judged again from its raw "
             "samples by the live rule (`patchbench.analysis.rejudge`): runs past 5x the median "
             "counted apart (**stalls**: baseline+candidate), the widened standard error's "
             "degrees of freedom cut, the other metrics called only when the gated ones "
             "changed. \"No significant difference\" (results version 1-4) is split into "
             "equivalent and inconclusive since version 5; it is marked changed too.", "",
             "| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in body]
    lines += ["", f"{len(body)} answers (wall time and every metric of every comparison); "
              f"{n_changed} changed."]
    if args.write:
        changed = write(paths)
        lines += ["", f"Rendered again: {len(changed)} files."]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
