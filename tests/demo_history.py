"""A local history for the demo, for the bisect and history tests: demo/slowstart copied into a
temporary git repository, then 33 more commits on ``main``. Commit 10 plants a 5 ms start-up
delay (as patches/demo-plus-5ms does), commit 22 a lost wakeup (patches/demo-lost-wakeup, applied
as it is: rare with ``-boot 5ms``, common with ``-boot 1ms``, which the tests use); every other
commit only touches a notes file. Tags: ``v1.0.0`` (the start), ``v1.1.0`` (commit 16, after
the delay, before the lost wakeup); ``main`` is the last commit."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from tests.support import REPO_ROOT, git

COMMITS = 33  # after the start: 34 commits on the first-parent chain
DELAY_AT = 10
LOST_WAKEUP_AT = 22
TAG_AT = {0: "v1.0.0", 16: "v1.1.0"}


@dataclass(frozen=True)
class DemoHistory:
    path: Path
    shas: list[str]  # shas[0] is v1.0.0, shas[-1] is main

    @property
    def delay(self) -> str:
        return self.shas[DELAY_AT]

    @property
    def lost_wakeup(self) -> str:
        return self.shas[LOST_WAKEUP_AT]


def _commit(repo: Path, subject: str, n: int) -> str:
    date = f"2026-11-{1 + n // 24:02d}T{n % 24:02d}:00:00Z"
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", subject,
        env={"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date})
    return git(repo, "rev-parse", "HEAD")


def _plant_delay(main_go: Path) -> None:
    text = main_go.read_text()
    old = "func main() {\n"
    assert text.count(old) == 1
    main_go.write_text(text.replace(old, old + "\ttime.Sleep(5 * time.Millisecond) "
                                    "// a planted start-up delay\n"))


def _plant_lost_wakeup(repo: Path) -> None:
    patch = next((REPO_ROOT / "patches" / "demo-lost-wakeup").glob("*.patch"))
    git(repo, "apply", "--whitespace=nowarn", str(patch))


def make_demo_history(path: Path) -> DemoHistory:
    shutil.copytree(REPO_ROOT / "demo" / "slowstart", path)
    git(path, "init", "-q", "-b", "main")
    shas = [_commit(path, "slowstart: the demo as bundled", 0)]
    notes = path / "NOTES"
    for n in range(1, COMMITS + 1):
        if n == DELAY_AT:
            _plant_delay(path / "main.go")
            subject = "slowstart: read the configuration first (plants a 5 ms start-up delay)"
        elif n == LOST_WAKEUP_AT:
            _plant_lost_wakeup(path)
            subject = "slowstart: wait for the boots on a condition variable (a lost wakeup)"
        else:
            with notes.open("a") as f:
                f.write(f"note {n}\n")
            subject = f"notes: entry {n}"
        shas.append(_commit(path, subject, n))
    for i, tag in TAG_AT.items():
        git(path, "tag", tag, shas[i])
    return DemoHistory(path, shas)


@dataclass(frozen=True)
class MergedHistory:
    """main: m0 (v1.0.0), m1, m2, m3, then the merge of ``side`` (forked at m1: s1, s2 plants the
    5 ms delay, s3), then m4 (``main``)."""

    path: Path
    merge: str
    delay: str


def make_merged_history(path: Path) -> MergedHistory:
    shutil.copytree(REPO_ROOT / "demo" / "slowstart", path)
    git(path, "init", "-q", "-b", "main")
    notes = path / "NOTES"

    def note(n: int, text: str) -> str:
        with notes.open("a") as f:
            f.write(f"{text}\n")
        return _commit(path, f"notes: {text}", n)

    m0 = _commit(path, "slowstart: the demo as bundled", 0)
    git(path, "tag", "v1.0.0", m0)
    m1 = note(1, "main 1")
    git(path, "checkout", "-q", "-b", "side", m1)
    (path / "SIDE").write_text("side 1\n")
    _commit(path, "side: entry 1", 2)
    _plant_delay(path / "main.go")
    delay = _commit(path, "slowstart: read the configuration first (plants a 5 ms delay)", 3)
    (path / "SIDE").write_text("side 1\nside 3\n")
    _commit(path, "side: entry 3", 4)
    git(path, "checkout", "-q", "main")
    note(5, "main 2")
    note(6, "main 3")
    date = "2026-11-01T07:00:00Z"
    git(path, "merge", "-q", "--no-ff", "-m", "Merge branch 'side'", "side",
        env={"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date})
    merge = git(path, "rev-parse", "HEAD")
    note(8, "main 4")
    return MergedHistory(path, merge, delay)
