"""The bisect search without builds: found within ceil(log2(N)) probes, skips (commits that do
not build), an undecided step ending in a range, the classification rule (positive evidence in
the ends' direction) and the chart."""

from __future__ import annotations

import math

import pytest

from patchbench.bisect import judge, search
from patchbench.report import charts
from patchbench.report.charts import CommitPoint
from patchbench.source import history


def _probe_for(first_bad: int, skipped: frozenset[int] = frozenset(),
               undecided: frozenset[int] = frozenset()) -> tuple[list[int], search.Callable]:
    probed: list[int] = []

    def probe(i: int) -> search.Class:
        probed.append(i)
        if i in skipped:
            return "skipped"
        if i in undecided:
            return "undecided"
        return "bad" if i >= first_bad else "good"

    return probed, probe


@pytest.mark.parametrize("n", [2, 3, 17, 34, 100])
def test_every_first_bad_commit_is_found_within_ceil_log2_probes(n: int) -> None:
    for first_bad in range(1, n):
        probed, probe = _probe_for(first_bad)
        out = search.search(n, probe)
        assert out.found and out.first_bad == first_bad
        assert len(probed) <= search.expected_steps(n) == math.ceil(math.log2(n - 1))
        assert len(set(probed)) == len(probed) and 0 not in probed and n - 1 not in probed


def test_a_commit_that_does_not_build_is_skipped_and_the_search_goes_on() -> None:
    probed, probe = _probe_for(10, skipped=frozenset({8}))
    out = search.search(17, probe)
    assert out.found and out.first_bad == 10 and out.skipped() == [8]
    assert 8 in probed and probed.index(8) == 0  # the midpoint first, then its neighbour


def test_skipped_commits_next_to_the_change_leave_a_range() -> None:
    _, probe = _probe_for(10, skipped=frozenset({9}))
    out = search.search(17, probe)
    assert not out.found and out.first_bad is None
    assert (out.lo, out.hi) == (8, 10) and "skipped" in out.why


def test_an_undecided_step_ends_the_search_with_the_range_left() -> None:
    _, probe = _probe_for(10, undecided=frozenset({12}))
    out = search.search(17, probe)
    assert not out.found and (out.lo, out.hi) == (8, 16) and "undecided" in out.why


def test_pick_prefers_the_middle_then_the_nearest_unskipped() -> None:
    assert search.pick(0, 16, set()) == 8
    assert search.pick(0, 16, {8}) == 7
    assert search.pick(0, 16, {7, 8}) == 9
    assert search.pick(3, 4, set()) is None
    with pytest.raises(ValueError):
        search.search(1, lambda i: "good")


def test_a_step_is_put_on_a_side_only_from_positive_evidence_in_the_ends_direction() -> None:
    # a difference of any size, one-sided (the pair's way), whatever the verdict's margin says
    slower = judge.Pair(False, "", None, "more", 0.001)
    faster = judge.Pair(True, "", "less", "less", 0.0001)
    same, unclear, withheld = judge.Pair(False, "", "same"), judge.Pair(False, ""), \
        judge.Pair(None, "")
    ways = ("slower", "faster")
    for vs_good, vs_bad, expected in (
            (same, unclear, "good"), (unclear, faster, "good"), (same, faster, "good"),
            (unclear, same, "bad"), (slower, unclear, "bad"), (slower, same, "bad"),
            (slower, slower, "bad"),  # slower than good: beyond bad too, still like bad
            (unclear, unclear, "undecided"), (withheld, faster, "good"),
            (same, same, "undecided"), (slower, faster, "undecided"),  # in between
            # slower than bad and inconclusive against good: no evidence (it was "good")
            (unclear, slower, "undecided"), (faster, unclear, "undecided"),
            (withheld, withheld, "undecided")):
        cls, why = judge.classify(vs_good, vs_bad, "more", ways)
        assert cls == expected, (vs_good, vs_bad, why)
    assert judge.classify(unclear, slower, "more", ways)[1] == (
        "slower than bad, p 0.001: beyond an end, evidence for neither side")
    assert judge.classify(slower, faster, "more", ways)[1] == (
        "faster than bad, p 0.0001; slower than good, p 0.001: evidence for both sides")
    assert judge.classify(same, faster, "more", ways)[1] == (
        "the same as good; faster than bad, p 0.0001")
    # the ends the other way round (bad faster than good): the roles of the ways swap
    assert judge.classify(faster, unclear, "less", ways) == ("bad", "faster than good, p 0.0001")
    assert judge.classify(unclear, slower, "less", ways) == ("good", "slower than bad, p 0.001")
    assert judge.classify(slower, unclear, "less", ways)[0] == "undecided"


def test_every_nth_commit_keeps_both_ends() -> None:
    commits = [history.Commit(f"{i:040x}", f"c{i}", "2026-11-01") for i in range(10)]
    assert [int(c.sha, 16) for c in history.every(commits, 4)] == [0, 4, 8, 9]
    assert history.every(commits, 1) == commits
    assert [int(c.sha, 16) for c in history.every(commits, 20)] == [0, 9]


def test_the_chart_draws_a_point_and_a_ci_bar_per_commit() -> None:
    points = [CommitPoint("aaaa", 2.0, 1.9, 2.1), CommitPoint("bbbb", None),
              CommitPoint("cccc", 7.0, 6.8, 7.3, "bad")]
    drawn = charts.commit_chart(points, "median (ms)", "t <1>")
    assert drawn is not None
    svg = drawn.decode()
    assert svg.startswith("<svg") and svg.count("<circle") == 2 and "t &lt;1&gt;" in svg
    assert svg.count('class="ci"') == 2 and "×" in svg  # the skipped one on the axis
