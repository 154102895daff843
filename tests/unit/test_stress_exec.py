"""The stress kind's exec mode, action `none` and signal-forwarding check, from data alone: the
config (with key paths), how recorded output is read and counted, the host's exclusion from the
leftovers, the gate rule and the report tables. The rounds themselves run in
tests/integration/test_stress_exec.py."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest

from patchbench import config, gate, results, scenarios
from patchbench.errors import ConfigError
from patchbench.report import html
from patchbench.report.blocks import Chart, View
from patchbench.scenarios import stress, stress_signals
from patchbench.scenarios.stress import StressBuild, StressConfig, StressResult, without_host
from patchbench.scenarios.stress_signals import SignalCheck, SignalCount
from tests.support import scenario_md

MATRIX = """\
version: 1
targets:
  hello:
    url: /nonexistent/hello
    ref: v1
    commit: 0123456789abcdef0123456789abcdef01234567
    toolchain: {kind: go, version: "1.22.1"}
    build:
      commands: [[go, build, -o, hello, .]]
      artifacts: [hello]
comparisons:
  fx:
    target: hello
    candidates:
      greet: [greet]
    scenarios:
      - name: sig
        kind: stress
        mode: exec
        host: [[start, "{host}"]]
        host_teardown: [[stop, "{host}"]]
        launch: [x, "{host}"]
        list: [ls]
        fresh: ["true"]
        actions: [none]
        signals: {send: [SIGUSR1, USR2, SIGWINCH], not_forwarded: [SIGWINCH]}
"""


def load(text: str, root: Path) -> config.Project:
    (root / "patches" / "greet").mkdir(parents=True, exist_ok=True)
    (root / "patches" / "greet" / "series").write_text("0001-greet.patch\n")
    path = root / "matrix.yaml"
    path.write_text(text)
    return config.load(path)


def test_the_exec_config_loads(tmp_path: Path) -> None:
    sc = load(MATRIX, tmp_path).comparison("fx").scenarios[0]
    assert isinstance(sc, StressConfig)
    assert (sc.mode, sc.actions, sc.host, sc.host_teardown) == (
        "exec", ["none"], [["start", "{host}"]], [["stop", "{host}"]])
    assert sc.signals is not None
    assert sc.signals.send == ["SIGUSR1", "SIGUSR2", "SIGWINCH"]  # USR2 is written out
    assert (sc.signals.ready, sc.signals.not_forwarded) == ("ready", ["SIGWINCH"])


@pytest.mark.parametrize(("old", "new", "path", "words"), [
    ("signals: {send:", "signals: {sendd: [SIGUSR1], send:", "scenarios.0.signals.sendd",
     "unknown key"),
    ("[SIGUSR1, USR2,", "[SIGUSR1, SIGFOO,", "scenarios.0.signals.send",
     "'SIGFOO' is not a signal name"),
    ("[SIGUSR1, USR2,", "[SIGKILL, USR2,", "scenarios.0.signals.send", "cannot be trapped"),
    ("[SIGUSR1, USR2,", "[SIGUSR1, SIGUSR1,", "scenarios.0.signals.send",
     "SIGUSR1 listed more than once"),
    ("not_forwarded: [SIGWINCH]", "not_forwarded: [SIGHUP]", "scenarios.0.signals",
     "must also be listed under 'send'"),
    ("not_forwarded: [SIGWINCH]}", "ready: USR1}", "scenarios.0.signals",
     "is also a signal name"),
    ("actions: [none]", "actions: [none, delete]\n        kill: {delete: [rm]}",
     "scenarios.0", "'signals' needs actions: [none]"),
    ("actions: [none]", "actions: [nothing]", "scenarios.0.actions.0", "'none'"),
    ("mode: exec", "mode: exek", "scenarios.0.mode", "'exec'"),
    ('host_teardown: [[stop, "{host}"]]', "", "scenarios.0", "needs 'host'"),
    ('host: [[start, "{host}"]]', "host: [[]]", "scenarios.0.host.0", "at least 1 item"),
    ("mode: exec", "mode: run", "scenarios.0", "for mode 'exec' only"),
])
def test_a_bad_exec_or_signal_config_names_its_key_path(
    tmp_path: Path, old: str, new: str, path: str, words: str
) -> None:
    assert old in MATRIX
    with pytest.raises(ConfigError) as info:
        load(MATRIX.replace(old, new), tmp_path)
    text = info.value.render()
    assert f"comparisons.fx.{path}" in text
    assert words in text


def test_signal_names() -> None:
    assert [stress_signals.canonical(n) for n in ("usr1", "USR2", "SIGWINCH", " SIGHUP ")] == [
        "SIGUSR1", "SIGUSR2", "SIGWINCH", "SIGHUP"]
    assert stress_signals.number("USR1") == int(signal.SIGUSR1)
    for bad in ("ready", "SIG_DFL", "", "SIGSTOP", "KILL"):
        with pytest.raises(ValueError):
            stress_signals.canonical(bad)


CHECK = SignalCheck(send=["SIGUSR1", "SIGUSR2", "SIGWINCH"], not_forwarded=["SIGWINCH"])


def test_what_counts_as_received() -> None:
    text = "USR2\nready\nrunc: some warning\nUSR1\nSIGWINCH\nUS"
    # before "ready" does not count, nor a line still being written, nor the runtime's output
    assert stress_signals.received(text, "ready") == {"SIGUSR1", "SIGWINCH"}
    assert stress_signals.received("USR1\n", "ready") == set()  # never ready
    assert stress_signals.is_ready("x\nready\n", "ready")
    assert not stress_signals.is_ready("x\nread", "ready")
    assert not stress_signals.is_ready("x\nready", "ready")  # no newline yet


def test_forwarded_lost_and_by_design_are_told_apart() -> None:
    got = stress_signals.count(CHECK, {"SIGUSR1"})
    assert got["SIGUSR1"] == SignalCount(sent=1, forwarded=1)
    assert got["SIGUSR2"] == SignalCount(sent=1, lost=1)
    assert got["SIGWINCH"] == SignalCount(sent=1, by_design=1)  # missing, but by design
    # a not-forwarded signal that does arrive is simply forwarded
    assert stress_signals.count(CHECK, {"SIGWINCH"})["SIGWINCH"] == SignalCount(sent=1,
                                                                                  forwarded=1)
    # never ready: nothing was sent, nothing is lost
    assert list(stress_signals.count(CHECK, None).values()) == [SignalCount()] * 3
    total: dict[str, SignalCount] = {}
    for got_set in ({"SIGUSR1"}, {"SIGUSR1", "SIGUSR2"}, None):
        total = stress_signals.add(
            total, stress_signals.count(CHECK, got_set))
    assert total["SIGUSR1"] == SignalCount(sent=2, forwarded=2)
    assert total["SIGUSR2"] == SignalCount(sent=2, forwarded=1, lost=1)
    assert total["SIGWINCH"] == SignalCount(sent=2, by_design=2)


class FakeProc:
    """Stands in for command.Background: records the signals it was sent."""

    def __init__(self, exited: bool = False) -> None:
        self.sent: list[int] = []
        self.proc = self
        self._exited = exited

    def poll(self) -> int | None:
        return 0 if self._exited else None

    def signal(self, sig: int) -> None:
        self.sent.append(sig)


def test_signals_go_only_to_ready_instances(tmp_path: Path) -> None:
    ready, silent, exited = FakeProc(), FakeProc(), FakeProc(exited=True)
    outs = [tmp_path / f"{i}.out" for i in range(3)]
    outs[0].write_text("ready\n")
    outs[1].write_text("ready")  # not a complete line: not ready
    outs[2].write_text("")
    sent = stress_signals.send_when_ready([ready, silent, exited], outs,  # type: ignore[list-item]
                                          CHECK, delay=0.0, timeout=0.2)
    assert sent == [True, False, False]
    assert ready.sent == [signal.SIGUSR1, signal.SIGUSR2, signal.SIGWINCH]  # in `send` order
    assert silent.sent == exited.sent == []


def test_the_host_is_not_a_leftover() -> None:
    host = "pb-abc-fix+-h1"
    found = [f"{host} (state, 3 cgroups)", "pb-abc-fix+-h10 (state)", "pb-abc-fix+-s1-0 (1 cgroup)"]
    assert without_host(found, host) == found[1:]  # exactly the host, not one named like it
    listed = [f"instance {host}", "instance pb-abc-fix+-h1-x"]
    assert without_host(listed, host) == listed[1:]
    assert stress.host_name("pb-abc-fix+", 7) == "pb-abc-fix+-h7"


def test_action_none_outcomes() -> None:
    assert stress.classify("none", 0) == "exit 0"
    assert stress.classify("none", -10) == "killed by SIGUSR1"
    assert stress.classify("none", None) == "hang"
    assert stress.classify("none", 0, {0: "ran to its end"}) == "ran to its end (0)"


def build(signals: dict[str, SignalCount] | None = None, **kw: Any) -> StressBuild:
    return StressBuild(rounds=1, instances_killed=8, kill_errors=0, hangs=kw.get("hangs", 0),
                       leftovers=0, fresh_failures=0, list_latency_median_s=0.01,
                       list_latency_max_s=0.01, outcomes={}, signals=signals or {},
                       not_ready=kw.get("not_ready", 0))


def sig(sent: int = 8, forwarded: int = 8, lost: int = 0, by_design: int = 0) -> SignalCount:
    return SignalCount(sent=sent, forwarded=forwarded, lost=lost, by_design=by_design)


def result(per_build: dict[str, StressBuild]) -> StressResult:
    return StressResult(name="sig", command="x", runs=1, rounds=1, warmup=0, rounds_detail=[],
                        per_build=per_build, instances=8, delay=[0, 0], actions=["none"],
                        mode="exec", not_forwarded=["SIGWINCH"])


def test_the_gate_rule() -> None:
    kind_gate = scenarios.get("stress").gate
    winch = sig(forwarded=0, by_design=8)
    ok = {"SIGUSR1": sig(), "SIGWINCH": winch}
    # by design is never lost, in the baseline and the candidates alike
    assert kind_gate(result({"baseline": build(ok), "fix": build(ok)})) == []
    # a signal the baseline always forwards, lost once by the candidate: fails
    lost = {"SIGUSR1": sig(forwarded=7, lost=1), "SIGWINCH": winch}
    assert kind_gate(result({"baseline": build(ok), "fix": build(lost)})) == [
        "sig fix: lost SIGUSR1 1 of 8 times (baseline: 0 of 8)"]
    # the baseline's own losses fail nothing; a candidate losing it as often passes
    assert kind_gate(result({"baseline": build(lost), "fix": build(lost)})) == []
    assert kind_gate(result({"baseline": build(lost), "fix": build(ok)})) == []
    worse = {"SIGUSR1": sig(forwarded=5, lost=3)}
    assert len(kind_gate(result({"baseline": build(lost), "fix": build(worse)}))) == 1
    # a signal the baseline never forwarded: nothing the candidate could lose against it
    never = {"SIGUSR1": sig(forwarded=0, lost=8)}
    assert kind_gate(result({"baseline": build(never), "fix": build(never)})) == []


def test_a_lost_signal_fails_the_whole_gate() -> None:
    ok = {"SIGUSR1": sig()}
    res = results.Results(
        tool="t", comparison="c", target="t", url="u", ref="r", commit="c", seed=1,
        settings=results.Settings(alpha=0.05, min_effect=0.02), started_at="s", machine={},
        builds={}, scenarios=[result({"baseline": build(ok),
                                      "fix": build({"SIGUSR1": sig(forwarded=6, lost=2)})})])
    again = results.parse(res.dump(), "test")  # through results.json and back
    assert gate.failures(again) == ["sig fix: lost SIGUSR1 2 of 8 times (baseline: 0 of 8)"]


def test_an_old_stress_result_reads_and_renders_as_before() -> None:
    old = {"rounds": 1, "instances_killed": 8, "kill_errors": 0, "hangs": 0, "leftovers": 0,
           "fresh_failures": 0, "list_latency_median_s": 0.01, "list_latency_max_s": 0.01,
           "outcomes": {"exit 0": 8}}
    sc = StressResult.model_validate({
        "name": "s", "command": "x", "runs": 1, "rounds": 1, "warmup": 0, "rounds_detail": [],
        "per_build": {"baseline": old}, "instances": 8, "delay": [0, 1], "actions": ["delete"]})
    assert (sc.mode, sc.not_forwarded, sc.per_build["baseline"].signals) == ("run", [], {})
    (table,) = scenario_md(sc)
    assert "launched command outcomes" in table and "exit 0: 8" in table
    assert "signal" not in html.blocks(stress.KIND.blocks(sc, View.PAGE))


def test_the_signal_table() -> None:
    sc = result({"baseline": build({"SIGUSR1": sig(), "SIGWINCH": sig(forwarded=0, by_design=8)}),
                 "fix": build({"SIGUSR1": sig(forwarded=7, lost=1),
                               "SIGWINCH": sig(forwarded=0, by_design=8)}, not_ready=1)})
    _, note, table = scenario_md(sc)
    assert "SIGWINCH: the runtime does not forward it by design" in note
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in table.splitlines()
            if line.startswith("| fix")]
    assert rows == [["fix", "SIGUSR1", "8", "7", "1 of 8", "", "1"],
                    ["fix", "SIGWINCH", "8", "0", "0 of 8", "8", "1"]]
    page = html.blocks([b for b in stress.KIND.blocks(sc, View.PAGE) if not isinstance(b, Chart)])
    assert "not forwarded (by design)" in page and "1 of 8" in page


@pytest.mark.parametrize("base", ["async-signal-notify", "async-signal-notify-v1"])
def test_the_planted_late_series_carry_the_patch_they_plant_into(base: str) -> None:
    """patches/<base>-late is <base> plus the planted delay: its first patch must stay an exact
    copy of <base>'s, or the planted comparison would no longer test <base>."""
    from tests.support import REPO_ROOT

    name = "0001-signals-register-signal.Notify-off-the-start-path.patch"
    late = REPO_ROOT / "patches" / f"{base}-late"
    assert (late / name).read_bytes() == (REPO_ROOT / "patches" / base / name).read_bytes()
    assert next(ln for ln in (late / "series").read_text().splitlines()
                if not ln.startswith("#")) == name


class FakeRuntime:
    """A runtime whose containers are files in ``dir``: the host's commands touch and remove
    them; ``cleanup`` removes them all, unless ``stuck``."""

    def __init__(self, dir: Path, stuck: bool = False) -> None:
        self.dir = dir
        self.stuck = stuck
        self.cleanups = 0
        dir.mkdir()

    def placeholders(self, variant: str, bin_dir: Path) -> dict[str, str]:
        return {"id": f"pb-t-{variant}+"}

    def leftovers(self, variant: str, bin_dir: Path) -> list[str]:
        return [f"{p.name} (state)" for p in sorted(self.dir.iterdir())]

    def cleanup(self, variant: str, bin_dir: Path) -> list[str]:
        self.cleanups += 1
        if not self.stuck:
            for p in self.dir.iterdir():
                p.unlink()
        return []


def one_round(tmp_path: Path, runtime: FakeRuntime, teardown: list[str]) -> stress.StressRound:
    from patchbench.build import Built, Variant
    from patchbench.scenarios.base import ScenarioContext

    sc = StressConfig.model_validate({
        "name": "x", "mode": "exec", "runs": 1, "rounds": 1, "instances": 2, "delay": [0, 0],
        "actions": ["none"], "host": [["touch", f"{runtime.dir}/{{host}}"]],
        "host_teardown": [teardown],
        # an instance runs only while its host exists
        "launch": ["test", "-e", f"{runtime.dir}/{{host}}"], "list": ["true"],
        "fresh": ["test", "-e", f"{runtime.dir}/{{host}}"]})
    b = Built(Variant("fix", ()), tmp_path, {"artifacts": []}, True)
    ctx = ScenarioContext(scenario=sc, built=[b], runtime=runtime, workdir=tmp_path, seed=1,
                          layout=None,  # type: ignore[arg-type]
                          project_root=tmp_path, alpha=0.05, min_effect=0.02)
    return stress.run_round(ctx, b, 1, ("none", 0.0), tmp_path / "log")


def test_the_host_is_no_leftover_and_never_outlives_its_round(tmp_path: Path) -> None:
    host = "pb-t-fix+-h1"
    # the host exists during the round (the instances and the fresh run find it), is not a
    # leftover, and its teardown removes it: nothing for the runtime's cleanup to do
    rt = FakeRuntime(tmp_path / "a")
    rd = one_round(tmp_path, rt, ["rm", f"{rt.dir}/{{host}}"])
    assert (rd.exit_codes, rd.fresh_ok, rd.leftovers, rd.host) == ([0, 0], True, [], host)
    assert (rt.cleanups, list(rt.dir.iterdir())) == (0, [])
    # a failing teardown: the runtime's cleanup removes the host, still no leftover
    rt = FakeRuntime(tmp_path / "b")
    rd = one_round(tmp_path, rt, ["false"])
    assert (rd.leftovers, rt.cleanups, list(rt.dir.iterdir())) == ([], 1, [])
    # a host that even the cleanup cannot remove is a leftover after all
    rt = FakeRuntime(tmp_path / "c", stuck=True)
    rd = one_round(tmp_path, rt, ["false"])
    assert rd.leftovers == [f"{host} (state)"] and rt.cleanups == 1
