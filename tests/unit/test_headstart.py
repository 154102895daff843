"""measure/headstart: a comparison's first warmup call, kept by one run, starts before the next
run's imports, and is taken only when the run builds the same call over the same files;
otherwise it is ended and the warmups run as always. Nothing of it runs beside a measured run,
nothing of it outlives the comparison, and the kept file is untrusted input. These tests run the
real hyperfine over a script that counts its runs (and, when told by a marker file, sleeps or
leaves a process behind)."""

from __future__ import annotations

import json
import os
import shutil
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from patchbench.errors import BenchmarkError
from patchbench.measure import bench, headstart
from patchbench.measure.bench import Cell, Invocation, Samples
from patchbench.util import idle, procguard
from patchbench.util.layout import Layout

pytestmark = pytest.mark.skipif(shutil.which("hyperfine") is None, reason="needs hyperfine")

CELLS = [Cell("baseline"), Cell("fix")]
OPTIONS = {"name": "demo", "seed": None}
# the escape is forked before the run is counted, and its marker looked at in the foreground: a
# test that waits for n runs and then takes the marker away finds n escapes (a background
# `[ -e ] && ...` looked later, under three test workers once after the marker was gone)
SCRIPT = """#!/bin/sh
if [ -e "$0.escape" ]; then setsid sleep 30 </dev/null >/dev/null 2>&1 & fi
echo "$1" >> "$0.count"
[ -e "$0.slow" ] && touch "$0.sleeping" && sleep 5
exit 0
"""


@pytest.fixture
def box(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Box]:
    b = Box(tmp_path)
    real = bench.hyperfine_many

    def counted(*a: Any, **k: Any) -> Any:
        b.calls.append(b.early_running())
        return real(*a, **k)

    monkeypatch.setattr(bench, "hyperfine_many", counted)
    yield b
    headstart.end()
    idle.clear()


class Box:
    """A builds/ folder, a matrix file, a script that appends a line per run to a file, and
    the hyperfine calls the run made itself (each: whether an early call was running then)."""

    def __init__(self, tmp: Path) -> None:
        self.layout = Layout(builds=tmp / "builds", reports=tmp / "reports")
        self.layout.builds.mkdir(mode=0o755)
        self.matrix = tmp / "matrix.yaml"
        self.matrix.write_text("comparisons: {}\n")
        self.script = tmp / "run.sh"
        self.script.write_text(SCRIPT)
        self.script.chmod(0o755)
        self.count = Path(f"{self.script}.count")
        self.extra: list[str] = []
        self.calls: list[bool] = []
        self.early: headstart.Early | None = None

    def mark(self, name: str) -> None:
        Path(f"{self.script}.{name}").touch()

    def runs(self) -> int:
        return len(self.count.read_text().split()) if self.count.exists() else 0

    def wait_runs(self, n: int) -> None:
        """Until the script has run ``n`` times in all (the early call's runs, say)."""
        deadline = time.monotonic() + 20
        while self.runs() < n and time.monotonic() < deadline:
            time.sleep(0.01)
        assert self.runs() >= n

    def expand(self, cell: Cell) -> Invocation:
        return Invocation(command=[str(self.script), cell.variant, *self.extra])

    def early_running(self) -> bool:
        return self.early is not None and self.early.bg is not None and \
            self.early.bg.proc.poll() is None

    def warm(self, *, warmup: int = 2) -> Path:
        """One run's warmups (a fresh run folder), as bench.measure makes them."""
        workdir = self.layout.new_run("demo")
        samples = {c: Samples() for c in CELLS}
        assert bench._warm_up("s", CELLS, self.expand, samples, [True], warmup=warmup,
                              timeout=5, workdir=workdir, log=workdir / "s.hyperfine.log",
                              head_start=True)
        return workdir

    def begin(self) -> headstart.Session | None:
        headstart.begin(self.layout, self.matrix, "demo", OPTIONS)
        session = headstart._SESSION
        self.early = session.early if session is not None else None
        return session

    def kept(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.layout.head_start("demo").read_text())
        return data

    def first_run(self, warmup: int = 2) -> None:
        self.begin()
        self.warm(warmup=warmup)
        self.calls.clear()


def test_a_run_keeps_its_warmup_call_with_its_folder_as_a_placeholder(box: Box) -> None:
    box.begin()
    workdir = box.warm()
    assert box.runs() == 4 and len(box.calls) == 1  # 2 warmups x 2 cells, run as always
    kept = box.kept()
    argv = kept["argv"]
    assert argv[0] == "hyperfine" and kept["misses"] == 0
    assert f"{headstart.RUN}/s.warmup.json" in argv and not any(str(workdir) in a for a in argv)
    assert list(kept["files"]) == [str(box.script)]
    digest = headstart._hashes([str(box.script)])
    assert digest is not None and kept["files"][str(box.script)]["sha256"] == digest[0][1]


def test_the_next_run_starts_the_kept_call_early_and_takes_it(box: Box) -> None:
    box.first_run()
    session = box.begin()
    assert session is not None and session.early is not None  # started at begin
    scratch, cgroup = session.early.scratch, session.early.guard.path
    workdir = box.warm()
    assert box.calls == []  # no warmup call of the run's own
    assert box.runs() == 8  # the early call's 4 runs
    assert json.loads((workdir / "s.warmup.json").read_text())["results"]  # moved in
    assert "started early" in (workdir / "s.hyperfine.log").read_text()
    assert not scratch.exists()
    assert cgroup is None or not cgroup.exists()


def test_a_different_call_ends_the_early_one_and_warms_up_as_always(box: Box) -> None:
    box.first_run(warmup=2)
    box.begin()
    assert box.early is not None
    box.warm(warmup=3)  # --warmup 3 this time: another call
    assert box.calls == [False]  # the run's own call, the early one ended before it
    assert not box.early.scratch.exists()
    argv = box.kept()["argv"]
    assert argv[argv.index("--runs") + 1] == "3" and box.kept()["misses"] == 1


def test_a_call_that_differs_run_after_run_is_not_started_until_it_repeats(box: Box) -> None:
    box.first_run(warmup=2)
    box.begin()
    box.warm(warmup=3)  # a miss: kept with misses 1
    session = box.begin()
    assert session is not None and session.early is None  # not started after a miss
    box.warm(warmup=3)  # the same call as the kept one: its count goes back to 0
    assert box.kept()["misses"] == 0
    session = box.begin()
    assert session is not None and session.early is not None


def test_a_file_written_since_the_call_was_kept_stops_the_early_start(box: Box) -> None:
    box.first_run()
    box.script.write_text(box.script.read_text() + "# changed\n")
    session = box.begin()
    assert session is not None and session.early is None


def test_a_file_whose_content_differs_ends_the_early_call_and_warms_up_again(
        box: Box, monkeypatch: pytest.MonkeyPatch) -> None:
    box.first_run()
    box.mark("slow")  # the early call would take 20 s
    box.begin()
    assert box.early is not None
    monkeypatch.setattr(headstart.Call, "same_content", lambda self: False)
    box.layout.head_start("demo").unlink()
    (box.script.parent / "run.sh.slow").unlink()
    started = time.monotonic()
    box.warm()
    assert box.calls == [False]  # ended at once, then the run's own warmups
    assert time.monotonic() - started < 4
    assert not box.early.scratch.exists()


def test_an_error_while_the_early_call_runs_ends_it(box: Box, monkeypatch: pytest.MonkeyPatch
                                                   ) -> None:
    box.first_run()
    box.mark("slow")
    box.begin()
    early = box.early
    assert early is not None and early.bg is not None

    def interrupted(self: headstart.Call) -> bool:
        raise KeyboardInterrupt

    monkeypatch.setattr(headstart.Call, "same_content", interrupted)
    with pytest.raises(KeyboardInterrupt):
        box.warm()
    assert early.bg.proc.poll() is not None and not early.scratch.exists()
    assert early.guard.path is None or not early.guard.path.exists()


def test_an_early_call_never_taken_is_ended_with_its_folder_and_cgroup(box: Box) -> None:
    box.first_run(warmup=1)
    box.mark("slow")  # from now on each run takes 5 s
    box.begin()
    early = box.early
    assert early is not None and early.bg is not None
    headstart.end()  # the comparison failed before its warmups
    assert early.bg.proc.poll() is not None
    assert not early.scratch.exists()
    assert early.guard.path is None or not early.guard.path.exists()
    assert headstart.claim(["hyperfine"], 1.0, box.layout.runs) is None  # no session left


def test_a_scenario_measured_without_it_ends_the_early_call_first(box: Box) -> None:
    """A comparison whose first scenario is another kind's (or has no shared warmups): the
    early call never runs beside its measured runs."""
    box.first_run()
    box.mark("slow")
    box.begin()
    sleeping, deadline = Path(f"{box.script}.sleeping"), time.monotonic() + 10
    while not sleeping.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    Path(f"{box.script}.slow").unlink()  # the early call sleeps; the scenario's runs will not
    assert box.early_running()
    bench.measure("other", CELLS, box.expand, runs=1, rounds=1, warmup=0, timeout=10, seed=1,
                  workdir=box.layout.new_run("demo"))
    assert box.calls and not any(box.calls)  # no call of its ran beside the early one


def test_it_is_off_with_the_environment_variable(box: Box, monkeypatch: pytest.MonkeyPatch
                                                 ) -> None:
    monkeypatch.setenv(headstart.OFF, "0")
    assert box.begin() is None
    box.warm()
    assert not box.layout.head_start("demo").exists()


def test_other_options_or_another_matrix_are_another_key(box: Box) -> None:
    box.first_run()
    headstart.begin(box.layout, box.matrix, "demo", {**OPTIONS, "seed": 7})
    assert headstart._SESSION is not None and headstart._SESSION.early is None
    box.matrix.write_text("comparisons: {other: {}}\n")
    session = box.begin()
    assert session is not None and session.early is None


def test_a_failing_early_call_is_the_warmups_error(box: Box) -> None:
    box.first_run()
    box.mark("slow")  # still running when it is killed
    box.begin()
    assert box.early is not None and box.early.bg is not None
    box.early.bg.proc.kill()  # hyperfine itself fails: as a failing call would
    with pytest.raises(BenchmarkError, match="exited with code"):
        box.warm()


def test_the_seconds_of_a_taken_call_count_from_the_claim(box: Box) -> None:
    box.first_run()
    box.begin()
    assert box.early is not None and box.early.bg is not None
    box.wait_runs(8)  # the early call ran meanwhile: the run was busy elsewhere
    box.early.bg.proc.wait(20)
    workdir = box.layout.new_run("demo")
    samples = {c: Samples() for c in CELLS}
    bench._warm_up("s", CELLS, box.expand, samples, [True], warmup=2, timeout=5,
                   workdir=workdir, log=workdir / "log", head_start=True)
    assert sum(s.seconds for s in samples.values()) < 0.5


def test_a_call_with_a_credential_in_it_is_never_kept(box: Box) -> None:
    box.extra = ["https://user:hunter2@example.com/x"]
    box.begin()
    box.warm()
    assert not box.layout.head_start("demo").exists()


def test_a_call_running_a_file_by_a_relative_path_is_not_kept(
        box: Box, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(box.script.parent)
    box.extra = ["run.sh"]  # an argument naming a file it would not hash
    box.begin()
    box.warm()
    assert not box.layout.head_start("demo").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="escapes are looked for as root")
@pytest.mark.parametrize("taken", [True, False])
def test_what_outlives_the_early_call_is_the_runs_escape(box: Box, monkeypatch: pytest.MonkeyPatch,
                                                         taken: bool) -> None:
    guard = procguard.activate("headstart-test")
    if not guard.available:
        procguard.deactivate(guard)
        pytest.skip(f"no cgroup: {guard.reason}")
    own: list[object] = []
    real = procguard.check_active

    def checked(*a: Any, **k: Any) -> Any:
        own.append(real(*a, **k))
        return own[-1]

    monkeypatch.setattr(procguard, "check_active", checked)
    try:
        box.first_run(warmup=1)  # no escape yet
        assert not guard.found
        own.clear()
        box.mark("escape")  # from now on every run leaves a `sleep 30` behind
        session = box.begin()
        assert session is not None and session.early is not None
        box.wait_runs(4)  # the early call's two runs, each leaving a process
        Path(f"{box.script}.escape").unlink()  # the run's own warmups (not taken) leave none
        box.warm(warmup=1 if taken else 2)
        steps = [f.step for f in guard.found]
        assert steps and ("then not taken" in steps[0]) is not taken
        if taken:
            assert own == [None]  # the run's own cgroup held none of it
    finally:
        warnings = procguard.deactivate(guard)
    gated = [w for w in warnings if w.startswith(procguard.ESCAPED + ":")]
    unused = [w for w in warnings if w.startswith(procguard.ESCAPED_UNUSED)]
    # taken: the measured binaries' escape, gated; not taken: said, but it fails no candidate
    assert (bool(gated), bool(unused)) == ((True, False) if taken else (False, True))


# --- the kept file is untrusted input ----------------------------------------------------------

def _kept(box: Box) -> tuple[Path, dict[str, Any]]:
    box.first_run()
    path = box.layout.head_start("demo")
    return path, json.loads(path.read_text())


@pytest.mark.parametrize("change", [
    "extra key", "not hyperfine", "no --", "negative timeout", "bad digest", "bad identity",
    "relative file", "too many args", "wrong version", "a prepare", "export elsewhere",
    "a program from PATH", "negative misses", "a name like an option",
    "a program in the run's folder", "a path out of the run's folder", "a NUL in a file",
    "a link on a file's path",
])
def test_a_kept_file_of_another_shape_is_ignored(box: Box, change: str) -> None:
    path, data = _kept(box)
    want = data["key"]
    assert headstart.read(path, want) is not None
    argv, files = data["argv"], data["files"]
    entry = next(iter(files.values()))
    match change:
        case "extra key":
            data["env"] = {}
        case "not hyperfine":
            argv[0] = "sh"
        case "no --":
            argv.remove("--")
        case "negative timeout":
            data["timeout"] = -1
        case "bad digest":
            entry["sha256"] = "0" * 63
        case "bad identity":
            entry["identity"] = [1, 2, 3]
        case "relative file":
            data["files"] = {"run.sh": entry}
        case "too many args":
            data["argv"] = ["hyperfine", "--", *["x"] * headstart.MAX_ARGS]
        case "wrong version":
            data["version"] = 2
        case "a prepare":
            at = argv.index("--")
            data["argv"] = [*argv[:at], "--prepare", "touch /tmp/x", *argv[at:]]
        case "export elsewhere":
            argv[argv.index("--export-json") + 1] = "/tmp/x.json"
        case "a program from PATH":
            argv[-1] = "sh -c true"
        case "negative misses":
            data["misses"] = -1
        case "a name like an option":
            argv[argv.index("--command-name") + 1] = "--shell=bash"
        case "a program in the run's folder":
            argv[-1] = f"/{headstart.RUN}/x.sh fix"
        case "a path out of the run's folder":
            argv[-1] = f"{box.script} fix {headstart.RUN}/../../x"
        case "a NUL in a file":
            data["files"] = {**files, f"{box.script}\0x": entry}
        case "a link on a file's path":
            link = box.script.parent / "via"
            link.symlink_to(box.script.parent)
            data["files"] = {str(link / box.script.name): entry}
            argv[-1] = f"{link / box.script.name} fix"
    path.write_text(json.dumps(data))
    assert headstart.read(path, want) is None


def test_a_kept_call_of_more_words_than_the_bound_is_ignored(box: Box) -> None:
    path, data = _kept(box)
    at = data["argv"].index("--")
    head, commands = data["argv"][:at - 4], data["argv"][at + 1:]

    def call(n: int) -> list[str]:
        names = [x for i in range(n) for x in ("--command-name", f"s c{i} warmup")]
        return [*head, *names, "--", *(commands * n)[:n]]

    data["argv"] = call(100)  # 312 words: the shape, and under the bound
    path.write_text(json.dumps(data))
    assert headstart.read(path, data["key"]) is not None
    data["argv"] = call(200)  # 612 words
    path.write_text(json.dumps(data))
    assert len(data["argv"]) > headstart.MAX_ARGS and headstart.read(path, data["key"]) is None


def test_a_kept_file_through_a_link_too_large_or_of_another_key_is_ignored(box: Box) -> None:
    path, data = _kept(box)
    want = str(data["key"])
    assert headstart.read(path, "0" * 64) is None
    real = path.with_name("real.json")
    path.rename(real)
    path.symlink_to(real)
    assert headstart.read(path, want) is None
    path.unlink()
    path.write_text(" " * (headstart.MAX_PLAN_BYTES + 1))
    assert headstart.read(path, want) is None


@pytest.mark.skipif(os.geteuid() != 0, reason="ownership is checked as root")
@pytest.mark.parametrize("where", ["file", "builds", "binary's folder"])
def test_as_root_a_kept_call_others_may_change_is_ignored(box: Box, where: str) -> None:
    path, data = _kept(box)
    target = {"file": path, "builds": box.layout.builds, "binary's folder": box.script.parent}
    changed = target[where]
    mode = changed.stat().st_mode
    changed.chmod(mode | stat.S_IWOTH)  # anyone may now replace what is in it
    try:
        assert headstart.read(path, str(data["key"])) is None
    finally:
        changed.chmod(mode)
    assert headstart.read(path, str(data["key"])) is not None


@pytest.mark.skipif(os.geteuid() != 0, reason="ownership is checked as root")
def test_as_root_a_kept_call_whose_program_others_may_replace_is_ignored(box: Box) -> None:
    """The program in a folder of its own (not a parent of builds/), which anyone may write."""
    own = box.script.parent / "bin"
    own.mkdir(mode=0o755)
    program = own / "run.sh"
    shutil.copy(box.script, program)
    path, data = _kept(box)
    digest = headstart._hashes([str(program)])
    ident = headstart.identity(str(program))
    assert digest is not None and ident is not None
    data["files"] = {str(program): {"sha256": digest[0][1], "identity": list(ident)}}
    at = data["argv"].index("--")
    data["argv"][at + 1:] = [f"{program} baseline", f"{program} fix"]
    path.write_text(json.dumps(data))
    assert headstart.read(path, data["key"]) is not None
    own.chmod(0o777)
    try:
        assert headstart.read(path, data["key"]) is None
    finally:
        own.chmod(0o755)


def test_a_kept_call_naming_a_file_it_did_not_hash_does_not_start(box: Box) -> None:
    path, data = _kept(box)
    other = box.script.with_name("other.sh")
    shutil.copy(box.script, other)
    data["argv"][-1] = f"{other} fix"
    path.write_text(json.dumps(data))
    session = box.begin()
    assert session is not None and session.early is None
