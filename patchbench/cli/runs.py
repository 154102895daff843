"""Entry points of the commands on saved runs (``invoke export``, ``diff``, ``merge``): find the
runs, call the module that does the work, write and print. Errors are PatchbenchErrors, turned into
one line and an exit code by ``cli.guarded``."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

from patchbench.errors import ReportError
from patchbench.util.files import write_json_atomic, write_text_atomic

GATE_FAILED_EXIT_CODE = 4


def load(path: Path) -> dict[str, Any]:
    """The one place that reads a saved run: any results version, as schema 2's dict."""
    from patchbench import results

    return results.load(path).dump()


def resolve_run(arg: str, reports: Path) -> Path:
    """A run folder given as a path, or as COMPARISON/STAMP under the reports directory."""
    for cand in (Path(arg), reports / arg):
        if (cand / "results.json").is_file() or (cand.is_file() and cand.name == "results.json"):
            return cand if cand.is_dir() else cand.parent
    raise ReportError(f"{arg}: no results.json there (nor under {reports})",
                      hint="give a run folder such as reports/demo/20261129T225457Z")


def find_runs(arg: str, reports: Path) -> list[tuple[str, Path]]:
    """``[LABEL=]PATH``: a run folder, or a folder holding runs. A run is labelled LABEL, else by
    the subfolder of PATH it is in (the CI artifact's name, for ``runs/patchbench-hosted/...``),
    else by its place below PATH."""
    label, _, path_text = arg.rpartition("=") if "=" in arg else ("", "", arg)
    path = Path(path_text)
    if not path.exists() and (reports / path_text).exists():
        path = reports / path_text
    if (path / "results.json").is_file():
        return [(label or path.name, path)]
    found = sorted(p.parent for p in path.glob("**/results.json")) if path.is_dir() else []
    if not found:
        raise ReportError(f"{path_text}: no saved run (results.json) there or below")
    if label and len(found) == 1:
        return [(label, found[0])]
    base = label or path.resolve().name
    rel = [p.relative_to(path) for p in found]
    tops = [r.parts[0] for r in rel]
    if len(set(tops)) == len(tops):  # one run per subfolder (per CI artifact): name it so
        return [(f"{label}/{t}" if label else t, p) for t, p in zip(tops, found, strict=True)]
    return [(f"{base}/{r}", p) for r, p in zip(rel, found, strict=True)]


def failed_machines(args: list[str], reports: Path) -> list[str]:
    """Machines whose ``invoke compare`` ended in an error (not 0, not 4 = gate failed), from the
    ``exit-code-MACHINE`` files the CI workflow leaves beside its runs."""
    out = []
    for arg in args:
        path = Path(arg.rpartition("=")[2])
        path = path if path.exists() else reports / path
        for f in sorted(path.glob("**/exit-code-*")) if path.is_dir() else []:
            try:
                code = f.read_text(errors="replace").strip()
            except OSError as exc:
                code = f"unreadable ({exc.strerror or exc})"
            if code not in ("0", "4"):
                out.append(f"{f.name.removeprefix('exit-code-')}: invoke compare exited {code} "
                           "(an error, not a gate verdict; see that job's log)")
    return out


def do_export(run: str, fmt: str, out: str | None, reports: Path) -> int:
    from patchbench.runs.export import write_export

    run_dir = resolve_run(run, reports)
    results = load(run_dir)
    out_dir = Path(out) if out else run_dir / "export"
    for path in write_export(results, fmt, out_dir):
        print(path)
    return 0


def do_diff(run_a: str, run_b: str, reports: Path) -> int:
    from patchbench.runs.diff import diff_runs, render_diff

    a_dir, b_dir = resolve_run(run_a, reports), resolve_run(run_b, reports)
    print(render_diff(diff_runs(load(a_dir), load(b_dir), name_a=run_a, name_b=run_b)), end="")
    return 0


def do_merge(args: list[str], *, reports: Path, out: str | None, summary: str | None,
             gate: bool, allow_differing_builds: bool) -> int:
    from patchbench.runs import merge
    from patchbench.runs.summary import append_text, summary_path

    if not args:
        raise ReportError("nothing to merge", hint="invoke merge DIR [--run PATH ...]")
    errors = failed_machines(args, reports)
    found = [run for arg in args for run in find_runs(arg, reports)]
    merged = merge.merge_runs([(label, load(path)) for label, path in found],
                              allow_differing_builds=allow_differing_builds)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    out_dir = Path(out) if out else reports / merged.comparison / f"merged-{stamp}"
    merged.errors.extend(errors)
    text = merge.render_markdown(merged)
    try:
        write_text_atomic(out_dir / "report.md", text)
        write_text_atomic(out_dir / "report.html", merge.render_html(merged))
        write_json_atomic(out_dir / "merged.json", merge.to_json(merged))
        # the job summary's text, also kept for a pull-request comment (the workflow posts it)
        write_text_atomic(out_dir / "summary.md", merge.summary_markdown(merged))
    except OSError as exc:
        raise ReportError(f"cannot write the merged report under {out_dir}: "
                          f"{exc.strerror or exc}") from None
    print(text)
    print(f"saved: {out_dir}")
    target = summary_path(summary, os.environ)
    if target is not None:
        append_text(target, merge.summary_markdown(merged))
        print(f"summary appended to {target}", file=sys.stderr)
    if gate and (merged.gate_failed or merged.errors):
        print("gate: FAILED: " + "; ".join(
            [*(f"{r.label}: gate failed" for r in merged.runs if r.gate), *merged.errors]))
        return GATE_FAILED_EXIT_CODE
    return 0
