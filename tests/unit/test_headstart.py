"""measure/headstart: a comparison's first warmup call, kept by one run, starts before the next
run's imports, and is taken only when the run builds the same call over the same files;
otherwise it is killed and the warmups run as always. The kept file is untrusted input. These
tests run the real hyperfine over a script that counts its runs."""

from __future__ import annotations

import json
import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from patchbench.errors import BenchmarkError
from patchbench.measure import bench, headstart
from patchbench.measure.bench import Cell, Invocation, Samples
from patchbench.util import idle, procguard
from patchbench.util.layout import Layout

pytestmark = pytest.mark.skipif(shutil.which("hyperfine") is None, reason="needs hyperfine")

CELLS = [Cell("baseline"), Cell("fix")]
OPTIONS = {"name": "demo", "seed": None}


@pytest.fixture
def box(tmp_path: Path) -> Iterator[Box]:
    b = Box(tmp_path)
    yield b
    headstart.end()
    idle.clear()


class Box:
    """A builds/ folder, a matrix file, and a script that appends a line per run to a file."""

    def __init__(self, tmp: Path) -> None:
        self.layout = Layout(builds=tmp / "builds", reports=tmp / "reports")
        self.layout.builds.mkdir(mode=0o755)
        self.matrix = tmp / "matrix.yaml"
        self.matrix.write_text("comparisons: {}\n")
        self.script = tmp / "run.sh"
        self.script.write_text('#!/bin/sh\necho "$1" >> "$0.count"\n'
                               '[ -e "$0.slow" ] && sleep 5\nexit 0\n')
        self.script.chmod(0o755)
        self.count = Path(f"{self.script}.count")

    def runs(self) -> int:
        return len(self.count.read_text().split()) if self.count.exists() else 0

    def expand(self, cell: Cell) -> Invocation:
        return Invocation(command=[str(self.script), cell.variant])

    def warm(self, *, warmup: int = 2, head_start: bool = True) -> Path:
        """One run's warmups (a fresh run folder), as bench.measure makes them."""
        workdir = self.layout.new_run("demo")
        samples = {c: Samples() for c in CELLS}
        assert bench._warm_up("s", CELLS, self.expand, samples, [True], warmup=warmup,
                              timeout=5, workdir=workdir, log=workdir / "s.hyperfine.log",
                              head_start=head_start)
        return workdir

    def begin(self) -> headstart.Session | None:
        headstart.begin(self.layout, self.matrix, "demo", OPTIONS)
        return headstart._SESSION

    def kept(self) -> dict[str, object]:
        data: dict[str, object] = json.loads(self.layout.head_start("demo").read_text())
        return data


def test_a_run_keeps_its_warmup_call_with_its_folder_as_a_placeholder(box: Box) -> None:
    box.begin()
    workdir = box.warm()
    assert box.runs() == 4  # 2 warmups x 2 cells, run as always
    kept = box.kept()
    argv = kept["argv"]
    assert isinstance(argv, list) and argv[0] == "hyperfine"
    assert f"{headstart.RUN}/s.warmup.json" in argv and not any(str(workdir) in a for a in argv)
    files = kept["files"]
    assert isinstance(files, dict) and list(files) == [str(box.script)]
    assert files[str(box.script)]["sha256"] == headstart._hashes([str(box.script)])[0][1]  # type: ignore[index]


def test_the_next_run_starts_the_kept_call_early_and_takes_it(box: Box) -> None:
    box.begin()
    box.warm()
    session = box.begin()
    assert session is not None and session.early is not None  # started at begin
    scratch, cgroup = session.early.scratch, session.early.guard.path
    workdir = box.warm()
    assert box.runs() == 8  # the early call's 4 runs, and no second warmup call
    assert (workdir / "s.warmup.json").is_file()  # moved into the run's folder
    assert "started early" in (workdir / "s.hyperfine.log").read_text()
    assert not scratch.exists()
    assert cgroup is None or not cgroup.exists()


def test_a_different_call_kills_the_early_one_and_warms_up_as_always(box: Box) -> None:
    box.begin()
    box.warm(warmup=2)
    session = box.begin()
    assert session is not None and session.early is not None
    early = session.early
    box.warm(warmup=3)  # --warmup 3 this time: another call
    assert early.bg.proc.poll() is not None and not early.scratch.exists()
    assert "--runs" in box.kept()["argv"]  # type: ignore[operator]
    argv = box.kept()["argv"]
    assert isinstance(argv, list) and argv[argv.index("--runs") + 1] == "3"  # the new call kept


def test_a_file_written_since_the_call_was_kept_stops_the_early_start(box: Box) -> None:
    box.begin()
    box.warm()
    box.script.write_text(box.script.read_text() + "# changed\n")
    session = box.begin()
    assert session is not None and session.early is None


def test_a_file_whose_content_differs_once_the_early_call_ended_warms_up_again(
        box: Box, monkeypatch: pytest.MonkeyPatch) -> None:
    box.begin()
    box.warm()
    assert box.begin() is not None
    monkeypatch.setattr(headstart.Call, "same_content", lambda self: False)
    box.warm()
    assert box.runs() == 12  # the early call's 4 runs, then the warmups again


def test_an_early_call_never_taken_is_killed_with_its_folder_and_cgroup(box: Box) -> None:
    box.begin()
    box.warm(warmup=1)
    Path(f"{box.script}.slow").touch()  # from now on each run takes 5 s
    session = box.begin()
    assert session is not None and session.early is not None
    early = session.early
    headstart.end()  # the comparison failed before its warmups
    assert early.bg.proc.poll() is not None
    assert not early.scratch.exists()
    assert early.guard.path is None or not early.guard.path.exists()
    assert headstart.claim(["hyperfine"], 1.0, box.layout.runs) is None  # no session left


def test_it_is_off_with_the_environment_variable(box: Box, monkeypatch: pytest.MonkeyPatch
                                                 ) -> None:
    monkeypatch.setenv(headstart.OFF, "0")
    assert box.begin() is None
    box.warm()
    assert not box.layout.head_start("demo").exists()


def test_other_options_or_another_matrix_are_another_key(box: Box) -> None:
    box.begin()
    box.warm()
    headstart.begin(box.layout, box.matrix, "demo", {**OPTIONS, "seed": 7})
    assert headstart._SESSION is not None and headstart._SESSION.early is None
    box.matrix.write_text("comparisons: {other: {}}\n")
    session = box.begin()
    assert session is not None and session.early is None


def test_a_failing_early_call_is_the_warmups_error(box: Box) -> None:
    box.begin()
    box.warm()
    session = box.begin()
    assert session is not None and session.early is not None
    session.early.bg.proc.kill()  # hyperfine itself fails (killed): as a failing call would
    with pytest.raises(BenchmarkError, match="exited with code"):
        box.warm()


@pytest.mark.skipif(os.geteuid() != 0, reason="escapes are looked for as root")
def test_what_outlives_the_early_call_is_the_runs_escape(box: Box) -> None:
    guard = procguard.activate("headstart-test")
    if not guard.available:
        procguard.deactivate(guard)
        pytest.skip(f"no cgroup: {guard.reason}")
    try:
        box.script.write_text('#!/bin/sh\necho "$1" >> "$0.count"\n'
                              'setsid sleep 30 </dev/null >/dev/null 2>&1 &\n')
        box.begin()
        box.warm(warmup=1)  # escapes in the run's own cgroup: found here
        guard.found.clear()
        assert box.begin() is not None
        box.warm(warmup=1)  # the early call's, in its own cgroup: recorded with the run's
        assert guard.found and "warmups" in guard.found[-1].step
    finally:
        warnings = procguard.deactivate(guard)
    assert any(w.startswith(procguard.ESCAPED) for w in warnings)


# --- the kept file is untrusted input ----------------------------------------------------------

def _kept(box: Box) -> tuple[Path, dict[str, object]]:
    box.begin()
    box.warm()
    path = box.layout.head_start("demo")
    return path, json.loads(path.read_text())


@pytest.mark.parametrize("change", [
    "extra key", "not hyperfine", "no --", "negative timeout", "bad digest", "bad identity",
    "relative file", "too many args", "wrong version",
])
def test_a_kept_file_of_another_shape_is_ignored(box: Box, change: str) -> None:
    path, data = _kept(box)
    want = data["key"]
    assert isinstance(want, str) and headstart.read(path, want) is not None
    argv, files = data["argv"], data["files"]
    assert isinstance(argv, list) and isinstance(files, dict)
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
    path.write_text(json.dumps(data))
    assert headstart.read(path, want) is None


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
def test_as_root_a_kept_file_others_may_write_is_ignored(box: Box) -> None:
    path, data = _kept(box)
    path.chmod(path.stat().st_mode | stat.S_IWOTH)
    assert headstart.read(path, str(data["key"])) is None


@pytest.mark.skipif(os.geteuid() != 0, reason="ownership is checked as root")
def test_as_root_a_kept_call_whose_binary_others_may_replace_is_ignored(box: Box) -> None:
    path, data = _kept(box)
    folder = box.script.parent
    mode = folder.stat().st_mode
    folder.chmod(mode | stat.S_IWOTH)  # anyone may now put another file in its place
    try:
        assert headstart.read(path, str(data["key"])) is None
    finally:
        folder.chmod(mode)
    assert headstart.read(path, str(data["key"])) is not None


def test_a_kept_call_naming_a_file_it_did_not_hash_does_not_start(box: Box) -> None:
    path, data = _kept(box)
    other = box.script.with_name("other.sh")
    shutil.copy(box.script, other)
    argv = data["argv"]
    assert isinstance(argv, list)
    argv[-1] = f"{other} fix"
    path.write_text(json.dumps(data))
    session = box.begin()
    assert session is not None and session.early is None
