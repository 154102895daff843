"""A history of 30 commits for the track tests: demo/slowstart copied into a temporary git
repository and 29 more commits on ``main``. Commit 12 plants a slowdown (a 10 ms sleep at start),
commit 22 a speed-up (the sleep cut to 2 ms); every other commit only touches a notes file.
``v1.0.0`` tags the first commit (the target's pinned commit: the track's reference)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from tests.support import REPO_ROOT, git

COMMITS = 30  # on the first-parent chain, the first included
SLOWDOWN_AT = 12
SPEEDUP_AT = 22
SLEEP = "\ttime.Sleep({ms} * time.Millisecond) // planted\n"


@dataclass(frozen=True)
class TrackHistory:
    path: Path
    shas: list[str]  # shas[0] is v1.0.0, shas[-1] is main

    @property
    def slowdown(self) -> str:
        return self.shas[SLOWDOWN_AT]

    @property
    def speedup(self) -> str:
        return self.shas[SPEEDUP_AT]


def _commit(repo: Path, subject: str, n: int) -> str:
    date = f"2026-10-{1 + n // 24:02d}T{n % 24:02d}:00:00Z"
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", subject,
        env={"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date})
    return git(repo, "rev-parse", "HEAD")


def _set_sleep(main_go: Path, ms: int) -> None:
    text = main_go.read_text()
    lines = [line for line in text.splitlines(keepends=True) if "// planted" not in line]
    text = "".join(lines)
    old = "func main() {\n"
    assert text.count(old) == 1
    main_go.write_text(text.replace(old, old + SLEEP.format(ms=ms)))


def make_track_history(path: Path) -> TrackHistory:
    shutil.copytree(REPO_ROOT / "demo" / "slowstart", path)
    git(path, "init", "-q", "-b", "main")
    shas = [_commit(path, "slowstart: the demo as bundled", 0)]
    notes = path / "NOTES"
    for n in range(1, COMMITS):
        if n == SLOWDOWN_AT:
            _set_sleep(path / "main.go", 10)
            subject = "slowstart: wait 10 ms for the configuration (a planted slowdown)"
        elif n == SPEEDUP_AT:
            _set_sleep(path / "main.go", 2)
            subject = "slowstart: wait 2 ms for the configuration (a planted speed-up)"
        else:
            with notes.open("a") as f:
                f.write(f"note {n}\n")
            subject = f"notes: entry {n}"
        shas.append(_commit(path, subject, n))
    git(path, "tag", "v1.0.0", shas[0])
    return TrackHistory(path, shas)
