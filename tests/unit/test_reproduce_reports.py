"""The committed reference reports keep their raw samples and seeds: recomputing their statistics
from those samples gives exactly the numbers they report, and rendering their results again gives
exactly their report.md (whatever results version they were written in)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from patchbench import gate, results
from patchbench.analysis import metrics as mx
from patchbench.analysis import paired, stats
from patchbench.analysis.rejudge import rejudge
from patchbench.measure import hangs
from patchbench.results import EARLIER_METHODS
from patchbench.runs import document
from patchbench.scenarios import scans
from patchbench.scenarios.ctrstress import CtrStressResult
from patchbench.scenarios.mounts import MountsResult
from patchbench.scenarios.soak import SoakResult
from patchbench.scenarios.stress import StressResult
from tests.support import committed_reports

REPORTS = committed_reports("*/*/results.json")
IDS = [f"{p.parent.parent.name}/{p.parent.name}" for p in REPORTS]


@pytest.mark.parametrize("path", REPORTS, ids=IDS)
def test_a_saved_report_recomputes_from_its_raw_samples(path: Path) -> None:
    """Read through the live rule (patchbench.analysis.rejudge), each comparison is what the
    rule gives its raw samples with the run's seed, order and levels; the figures every rule
    shares (the pooled ones, a rule-5 record's per-round ratios) are what the file stored."""
    raw = results.load(path)
    data = rejudge(raw)
    checked = 0
    for i, (sc, stored) in enumerate(zip(data.scenarios, raw.scenarios, strict=True)):
        if isinstance(sc, StressResult):
            continue
        if isinstance(sc, SoakResult):
            checked += check_soak(sc)
            continue
        if isinstance(sc, CtrStressResult):
            checked += check_ctrstress(sc)
            continue
        if isinstance(sc, MountsResult):
            checked += check_mounts(sc)
            continue
        scan = getattr(sc, "scan", None)
        if scan is not None:  # a scan's fits are its cells' samples fitted again
            assert scans.fits(scan.name, sc.cells) == scan.fits
        cells = {c.label: c for c in sc.cells}
        for c, old in zip(sc.comparisons, stored.comparisons, strict=True):  # type: ignore[union-attr]
            b, k = cells[c.baseline].samples, cells[c.candidate].samples
            assert len(b.times) == cells[c.baseline].summary.n
            signs = paired.neighbour_signs(sc.order, c.baseline, c.candidate)
            again = paired.paired_verdict(b.times, b.rounds, k.times, k.rounds, alpha=c.alpha,
                                          min_effect=c.min_effect,
                                          min_rounds=c.min_rounds or stats.MIN_ROUNDS,
                                          signs=signs, seed=data.seed + i)
            assert c.method == again.method == paired.METHOD
            assert again.speedup == pytest.approx(c.speedup, rel=1e-12)
            assert again.ci_low == pytest.approx(c.ci_low, rel=1e-12)
            assert again.ci_high == pytest.approx(c.ci_high, rel=1e-12)
            assert again.p_value == pytest.approx(c.p_value, rel=1e-9, abs=1e-300)
            for f in ("mde", "effect_s", "p_slower", "p_equivalent"):
                assert getattr(again, f) == pytest.approx(getattr(c, f), rel=1e-9)
            if old.method in EARLIER_METHODS[1:]:  # a rule-5 record: the same per-round ratios
                assert list(again.round_ratios) == pytest.approx(old.round_ratios, rel=1e-12)
            pooled = stats.compare(b.times, k.times, alpha=c.alpha, min_effect=c.min_effect,
                                   seed=data.seed + i)
            if old.pooled is not None:  # the seed the run used: the stored pooled figures
                assert pooled.p_value == pytest.approx(old.pooled.p_value, rel=1e-9)
                assert pooled.ci_low == pytest.approx(old.pooled.ci_low, rel=1e-12)
            if c.verdict == "inconclusive" and "not called" in c.note:  # the family withdrew it
                assert again.verdict in ("faster", "slower")
            else:
                assert str(again.verdict) == c.verdict
            checked += 1
            for name, mv in (c.metrics or {}).items():  # results version 6: every metric judged
                m = mx.judge(name, b.metrics[name], b.rounds, k.metrics[name], k.rounds,
                             alpha=mv.alpha, min_effect=mv.min_effect, min_rounds=mv.min_rounds)
                assert m["verdict"] == mv.verdict or "not called" in mv.note
                for f in ("speedup", "ci_low", "ci_high", "p_value", "effect", "mde"):
                    if getattr(mv, f) is None:
                        assert m[f] is None
                    else:
                        assert m[f] == pytest.approx(getattr(mv, f), rel=1e-9, nan_ok=True)
                checked += 1
    if any(sc.kind != "stress" for sc in data.scenarios):
        assert checked > 0


def check_ctrstress(sc: CtrStressResult) -> int:
    """A ctrstress scenario's per-variant totals are the sums of its rounds."""
    from collections import Counter

    from patchbench.scenarios import ctrstress

    for v, pv in sc.per_variant.items():
        rounds = [r for r in sc.rounds_detail if r.variant == v]
        assert pv.rounds == len(rounds)
        assert pv.actions == dict(Counter(r.action for r in rounds))
        again = ctrstress.totals(rounds)
        assert {k: getattr(pv, k) for k in again} == again
    return len(sc.per_variant)


def check_mounts(sc: MountsResult) -> int:
    """A mounts scenario holds every traced start of every build (numbered 0 … runs − 1, runs /
    rounds per round, in the recorded order), each listing every traced syscall."""
    assert [sorted(o) for o in sc.order] == [sorted(sc.variants)] * sc.rounds
    for v in sc.variants:
        mine = [s for s in sc.starts if s.variant == v]
        assert [s.index for s in mine] == list(range(sc.runs))
        assert [s.round for s in mine] == [1 + i // (sc.runs // sc.rounds) for i in range(sc.runs)]
        for s in mine:
            assert list(s.calls) == sc.syscalls and list(s.errors) == sc.syscalls
            assert all(0 <= s.errors[n] <= s.calls[n] for n in sc.syscalls)
    return len(sc.variants)


def check_soak(sc: SoakResult) -> int:
    """A soak's counts come from its per-run exit codes, and its Fisher p-values from the
    counts."""
    checked = 0
    for cond in sc.conditions:
        variants = list(cond.per_variant)
        counts = {}
        for v, pv in cond.per_variant.items():
            assert pv.runs == len(pv.exit_codes) == len(pv.times)
            assert pv.hangs == hangs.count_hangs(pv.exit_codes)
            assert pv.failures == sum(c not in (0, hangs.HANG_EXIT_CODE) for c in pv.exit_codes)
            assert len(pv.evidence) == pv.hangs
            counts[v] = (hangs.HangCount(v, pv.hangs, pv.runs),
                         hangs.HangCount(v, pv.failures, pv.runs))
        for t in cond.tests:
            h = hangs.compare_hangs(counts[variants[0]][0], counts[t.candidate][0])
            f = hangs.compare_hangs(counts[variants[0]][1], counts[t.candidate][1])
            assert (h.p_value, h.p_more) == pytest.approx((t.hang_p, t.hang_p_more), rel=1e-12)
            assert (f.p_value, f.p_more) == pytest.approx((t.failure_p, t.failure_p_more),
                                                          rel=1e-12)
            checked += 1
    return checked


@pytest.mark.parametrize("path", REPORTS, ids=IDS)
def test_a_saved_report_renders_again_byte_for_byte(path: Path) -> None:
    """As patchbench.runs.store publishes it: with the gate's reasons for a run recorded as
    made with --gate (older runs did not record it, nor did their report.md show a gate)."""
    res = rejudge(results.load(path))
    reasons = res.gate_reasons(gate.failures) if res.gate is True else None
    assert document.markdown(res, gate=reasons) == (
        path.parent / "report.md").read_text()


@pytest.mark.parametrize("path", REPORTS, ids=IDS)
def test_an_older_version_upgrades_to_the_current_one(path: Path) -> None:
    raw = json.loads(path.read_text())
    data = results.load(path)
    assert data.schema_version == results.SCHEMA_VERSION >= raw["schema_version"]
    again = results.parse(json.loads(json.dumps(data.dump())), "round trip")
    assert again == data
    assert all("markdown" not in sc for sc in data.dump()["scenarios"])


def test_there_are_reference_reports() -> None:
    names = {p.parent.parent.name for p in REPORTS}
    assert {"demo", "runc-signal", "runc-burst", "runc-stress", "lima-log-sync"} <= names
