"""A/A runs (``compare --aa``, ``--aa-layout``): which variants an A/A builds, the twin it measures
against the baseline, and what results.json records of it (``results.AABuild``)."""

from __future__ import annotations

from patchbench import results
from patchbench.build import Built, Variant, identical_artifacts, toolchains
from patchbench.build.toolchains import LayoutChange
from patchbench.config import Target
from patchbench.util.progress import say

LAYOUT_TWIN = "baseline-layout"  # compare --aa-layout: the baseline's layout-only rebuild
SAME_TWIN = "baseline-again"  # compare --aa: the baseline's build measured twice


def variants(target: Target, planned: list[Variant], layout_wanted: bool
             ) -> tuple[list[Variant], LayoutChange | str | None]:
    """The variants to build: for ``--aa-layout``, the baseline and its layout-only rebuild, or
    the planned ones and why this toolchain kind has none (then the run falls back to ``--aa``)."""
    if not layout_wanted:
        return planned, None
    layout = toolchains.layout_change(target)
    if isinstance(layout, str):
        say(f"warning: --aa-layout: {layout}; falling back to the baseline against itself (--aa)")
        return planned, layout
    return [planned[0], Variant(LAYOUT_TWIN, planned[0].series, layout=layout)], layout


def pair(built: list[Built], layout: LayoutChange | str | None, aa: bool
         ) -> tuple[list[Built], results.AABuild | None]:
    """The builds to measure and the A/A record (None: not an A/A run)."""
    if isinstance(layout, LayoutChange):
        record = _layout_record(built[0], built[1], layout)
        say(f"A/A (layout): {record.twin} is built with {layout.method}; {record.note}")
        return built, record
    if not aa and layout is None:
        return built, None
    twin = Built(Variant(SAME_TWIN, built[0].variant.series), built[0].path, built[0].manifest,
                 True)
    return [built[0], twin], results.AABuild(
        kind="same-binary", twin=twin.variant.name, sha256_equal=True,
        note="the baseline's build measured twice" + (
            f" (--aa-layout fell back: {layout})" if isinstance(layout, str) else ""))


def _layout_record(base: Built, twin: Built, layout: LayoutChange) -> results.AABuild:
    """What an A/A against a layout build records: the flags, and whether the sha256 differ."""
    arts = base.manifest["artifacts"]
    same = identical_artifacts(base, twin)
    equal = len(same) == len(arts) == len(twin.manifest["artifacts"])
    if equal:
        note = ("sha256 equal: the flags did not reach the linker (a recipe that passes its own "
                "-ldflags or LDFLAGS overrides them), so this A/A measured one binary twice")
    elif same:
        note = (f"sha256 differ for {', '.join(sorted(set(arts) - set(same)))}; equal for "
                f"{', '.join(same)} (the flags did not reach their link)")
    else:
        note = "sha256 differ: the same code, laid out differently"
    return results.AABuild(kind="layout", twin=twin.variant.name, method=layout.method,
                           why=layout.why, sha256_equal=equal, note=note)
