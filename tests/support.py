"""Helpers shared by the tests: a fixture upstream (a small Go module in a local git repository
with fixed dates), patch series made with real ``git format-patch``, matrices, and checks that a
failed step left nothing behind."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from patchbench import config, pipeline
from patchbench.build import Built, Variant
from patchbench.source import cache as source
from patchbench.util import locks
from patchbench.util.workspace import Switches, Workspace


# Every patchbench run sweeps the cgroups that dead runs left (pipeline.load), on the whole
# machine. A test that leaves a dead run's cgroup on purpose holds this lock until its own sweep,
# and every other sweep in the test processes takes it first (tests/conftest.py), so that no
# test process beside it sweeps that cgroup first.
class _Reentrant:
    """A lock file shared by the test processes, taken again within one (a sweep inside a test
    that holds it) by counting; for the main thread only (a count shared by threads)."""

    def __init__(self, path: Path) -> None:
        self.path, self.depth, self.stack = path, 0, contextlib.ExitStack()

    def __enter__(self) -> None:
        if self.depth == 0:
            self.stack.enter_context(locks.held(
                self.path, 600, on_timeout=lambda: TimeoutError(f"{self.path} held for 600 s")))
        self.depth += 1

    def __exit__(self, *exc: object) -> None:
        self.depth -= 1
        if self.depth == 0:
            self.stack.close()


CGROUP_SWEEP = _Reentrant(Path(tempfile.gettempdir()) / "patchbench-tests-cgroup-sweep.lock")

REPO_ROOT = Path(__file__).resolve().parent.parent
# A committed demo run (two variants: baseline and baseline-again) that tests use as a saved run.
# Named, never "the newest under reports/demo/": `invoke compare demo` adds runs there.
DEMO_RUN = REPO_ROOT / "reports" / "demo" / "20261130T041023Z"
FIXED_DATE = "2025-01-02T03:04:05+00:00"
GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "Fixture Author",
    "GIT_AUTHOR_EMAIL": "fixture@example.invalid",
    "GIT_COMMITTER_NAME": "Fixture Author",
    "GIT_COMMITTER_EMAIL": "fixture@example.invalid",
    "GIT_AUTHOR_DATE": FIXED_DATE,
    "GIT_COMMITTER_DATE": FIXED_DATE,
    "GIT_CONFIG_NOSYSTEM": "1",
}
TARGET = "hello"

GO_MOD = "module example.com/hello\n\ngo 1.21\n"

# Two functions far apart, so that a patch touching both has two hunks.
MAIN_GO = """\
// hello is the fixture upstream of patchbench's tests.
package main

import (
	"fmt"
	"os"
)

func greeting() string {
	return "hello"
}

// padding so that the two functions land in separate hunks
// line 2
// line 3
// line 4
// line 5
// line 6
// line 7
// line 8
// line 9
// line 10

func farewell() string {
	return "bye"
}

func main() {
	fmt.Println(greeting())
	fmt.Println(farewell())
	os.Exit(0)
}
"""

DEP3 = """\
Description: {description}
Author: Fixture Author <fixture@example.invalid>
Origin: vendor, patchbench tests
Forwarded: not-needed
"""


def committed_reports(pattern: str) -> list[Path]:
    """The files under reports/ that git tracks whose path relative to reports/ matches
    ``pattern`` part for part (``*/*/results.json``), sorted. Tests of "every committed report"
    use this rather than a glob, so that runs a local ``invoke compare`` left there (untracked)
    change nothing."""
    out = subprocess.run(["git", "-C", str(REPO_ROOT), "ls-files", "-z", "--", "reports"],
                         capture_output=True, check=True).stdout.decode()
    want = PurePosixPath(pattern)
    found = []
    for name in filter(None, out.split("\0")):
        rel = PurePosixPath(name).relative_to("reports")
        if len(rel.parts) == len(want.parts) and rel.match(pattern):
            found.append(REPO_ROOT / name)
    return sorted(found)


def git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """Run git for a fixture (not through patchbench), with a fixed identity and dates."""
    full = {**os.environ, **GIT_IDENTITY, **(env or {})}
    res = subprocess.run(
        ["git", "-c", "core.hooksPath=/dev/null", "-c", "commit.gpgSign=false", *args],
        cwd=cwd, env=full, capture_output=True, text=True, check=False,
    )
    if res.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed in {cwd}:\n{res.stdout}{res.stderr}")
    return res.stdout.strip()


def _commit_all(repo: Path, subject: str, description: str | None = None) -> str:
    git(repo, "add", "-A")
    msg = subject if description is None else f"{subject}\n\n{DEP3.format(description=description)}"
    git(repo, "commit", "-q", "-m", msg)
    return git(repo, "rev-parse", "HEAD")


def _format_patch(repo: Path, commit: str) -> str:
    return git(repo, "format-patch", "-1", "--zero-commit", "--no-signature", "--stdout",
               commit) + "\n"


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, (old, path)
    path.write_text(text.replace(old, new))


@dataclass
class Upstream:
    """The fixture upstream: ``a`` is tagged ``v1`` (the pinned commit), ``b`` a later commit."""

    path: Path
    a: str
    b: str
    patches: dict[str, str] = field(default_factory=dict)  # name -> format-patch text

    def move_tag(self, ref: str, commit: str) -> None:
        git(self.path, "tag", "-f", ref, commit)


def make_upstream(path: Path) -> Upstream:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    (path / "go.mod").write_text(GO_MOD)
    (path / "main.go").write_text(MAIN_GO)
    a = _commit_all(path, "hello: first version")
    git(path, "tag", "v1")
    main = path / "main.go"
    patches: dict[str, str] = {}

    def patch_from_a(name: str, edits: list[tuple[str, str]], subject: str) -> None:
        git(path, "checkout", "-q", "--detach", a)
        for old, new in edits:
            _edit(main, old, new)
        c = _commit_all(path, subject, f"{subject} (fixture patch {name})")
        patches[name] = _format_patch(path, c)

    # applies to A: changes the greeting
    patch_from_a("greet", [('return "hello"', 'return "hello, patched"')],
                 "hello: a patched greeting")
    # applies on top of greet: changes the farewell
    git(path, "checkout", "-q", "--detach", a)
    _edit(main, 'return "hello"', 'return "hello, patched"')
    _commit_all(path, "tmp")
    _edit(main, 'return "bye"', 'return "goodbye"')
    c = _commit_all(path, "hello: a longer farewell", "say goodbye (fixture patch farewell)")
    patches["farewell"] = _format_patch(path, c)
    # does not compile
    patch_from_a("broken", [('return "hello"', "return undefinedGreetingForTests")],
                 "hello: break the build")
    # two hunks; the second one conflicts with A (made against a tree whose farewell differs)
    git(path, "checkout", "-q", "--detach", a)
    _edit(main, 'return "bye"', 'return "see you"')
    _commit_all(path, "tmp")
    _edit(main, 'return "hello"', 'return "hi"')
    _edit(main, 'return "see you"', 'return "later"')
    c = _commit_all(path, "hello: shorter words", "conflicts in its second hunk")
    patches["conflict"] = _format_patch(path, c)
    # B: a later upstream commit, where v1 may be moved in a test
    git(path, "checkout", "-q", "main")
    (path / "README").write_text("hello, the fixture upstream\n")
    b = _commit_all(path, "hello: add a README")
    git(path, "gc", "-q", "--prune=now")
    return Upstream(path, a, b, patches)


def copy_upstream(template: Upstream, dest: Path) -> Upstream:
    shutil.copytree(template.path, dest, symlinks=True)
    return Upstream(dest, template.a, template.b, dict(template.patches))


# --- project (matrix.yaml + patches/) --------------------------------------------------------


def write_series(root: Path, name: str, patches: list[tuple[str, str]],
                 series_text: str | None = None) -> Path:
    """patches/<name>/ with the given (file name, text) patches and a series listing them."""
    d = root / "patches" / name
    d.mkdir(parents=True, exist_ok=True)
    for fname, text in patches:
        (d / fname).write_text(text)
    if series_text is None:
        series_text = f"# {name}: a fixture series\n" + "".join(f"{f}\n" for f, _ in patches)
    (d / "series").write_text(series_text)
    return d


def patch_file(n: int, name: str) -> str:
    return f"{n:04d}-{name}.patch"


# a matrix's first lines with one target ``t`` (for tests that only load the matrix)
ONE_TARGET = """\
version: 1
targets:
  t:
    url: https://example.com/t.git
    ref: v1
    commit: 0123456789abcdef0123456789abcdef01234567
    toolchain: {kind: go, version: "1.22"}
    build: {commands: [[go, build, -o, t, .]], artifacts: [t]}
"""


def matrix_data(
    upstream: Upstream, go_version: str, *, url: str | None = None, ref: str = "v1",
    commit: str | None = None, candidates: dict[str, list[str]] | None = None,
    baseline: list[str] | None = None, commands: list[list[str]] | None = None,
    scenarios: list[dict[str, Any]] | None = None, build_timeout: float = 120,
) -> dict[str, Any]:
    comp: dict[str, Any] = {
        "description": "fixture comparison",
        "target": TARGET,
        "candidates": candidates if candidates is not None else {"greet": ["greet"]},
        "scenarios": scenarios if scenarios is not None else [
            {"name": "run", "command": ["{hello}"], "warmup": 0, "runs": 4, "rounds": 2,
             "timeout": 10}
        ],
    }
    if baseline:
        comp["baseline"] = baseline
    return {
        "version": 1,
        "targets": {
            TARGET: {
                "description": "the fixture upstream",
                "url": url if url is not None else str(upstream.path),
                "ref": ref,
                "commit": commit or upstream.a,
                "toolchain": {"kind": "go", "version": go_version, "download": False},
                "build": {
                    "commands": commands or [["go", "build", "-o", "hello", "."]],
                    "artifacts": ["hello"],
                    "timeout": build_timeout,
                },
            }
        },
        "comparisons": {"fx": comp},
    }


def write_matrix(root: Path, data: dict[str, Any]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    path = root / "matrix.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@dataclass
class Project:
    """A fixture project directory plus the workspace pointing every output into tmp_path."""

    root: Path
    upstream: Upstream
    go_version: str
    builds: Path
    reports: Path

    @property
    def matrix(self) -> Path:
        return self.root / "matrix.yaml"

    def options(self, **kw: Any) -> Workspace:
        return Workspace(root=self.root, matrix=self.matrix, builds=self.builds,
                         reports=self.reports, **kw)

    def write(self, **kw: Any) -> config.Project:
        write_matrix(self.root, matrix_data(self.upstream, self.go_version, **kw))
        return config.load(self.matrix)

    def load(self) -> config.Project:
        return config.load(self.matrix)

    def add_series(self, name: str, patch_names: list[str]) -> Path:
        return write_series(self.root, name, [
            (patch_file(i, p), self.upstream.patches[p]) for i, p in enumerate(patch_names, 1)
        ])

    @property
    def cache(self) -> Path:
        return self.builds / "sources" / f"{TARGET}.git"


# --- what a failed step must not leave behind -------------------------------------------------


def worktrees(repo: Path) -> list[str]:
    out = git(repo, "worktree", "list", "--porcelain")
    return [line.split(" ", 1)[1] for line in out.splitlines() if line.startswith("worktree ")]


def cache_state(repo: Path) -> dict[str, Any]:
    """Refs, worktrees and every file outside objects/ (with its content hash)."""
    files = {}
    for p in sorted(repo.rglob("*")):
        rel = p.relative_to(repo).as_posix()
        if p.is_file() and not rel.startswith("objects/"):
            files[rel] = p.read_bytes()
    return {
        "refs": git(repo, "for-each-ref", "--format=%(refname) %(objectname)"),
        "worktrees": worktrees(repo),
        "files": files,
    }


def assert_nothing_left(builds: Path, repo: Path | None = None) -> None:
    """No worktree but the bare repository, no .rej/.orig, no am state, no scratch directory,
    no unstamped artifact directory."""
    if repo is not None and repo.exists():
        assert worktrees(repo) == [str(repo)], worktrees(repo)
        wt = repo / "worktrees"
        assert not wt.exists() or not any(wt.iterdir()), list(wt.iterdir())
        assert git(repo, "fsck", "--no-dangling") == ""
    if not builds.exists():
        return
    leftovers = [p for p in builds.rglob("*")
                 if p.suffix in (".rej", ".orig") or p.name in ("rebase-apply", "rebase-merge")]
    assert leftovers == []
    tmp = builds / "tmp"
    if tmp.exists():
        assert list(tmp.iterdir()) == []
    sources = builds / "sources"
    if sources.exists():
        assert [p.name for p in sources.iterdir() if p.name.startswith(".")] == []
    artifacts = builds / "artifacts"
    if artifacts.exists():
        for d in artifacts.glob("*/*"):
            assert (d / "COMPLETE").is_file(), f"unstamped build directory {d}"


def go_version() -> str:
    out = subprocess.run(["go", "version"], capture_output=True, text=True, check=True).stdout
    m = re.match(r"go version go(\S+) ", out)
    assert m, out
    return m.group(1)


# --- the command line ------------------------------------------------------------------------


def invoke_argv(*args: str) -> list[str]:
    import sys

    return [sys.executable, "-m", "invoke", "--search-root", str(REPO_ROOT), *args]


def invoke(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run patchbench's real command line (tasks.py through invoke)."""
    return subprocess.run(invoke_argv(*args), cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, check=False)


def processes_with(marker: str) -> list[str]:
    """Command lines of this machine's processes that contain ``marker``."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in text:
            found.append(f"{cmdline.parent.name}: {text}")
    return found


def compare(project: config.Project, ws: Workspace, name: str, sw: Switches | None = None,
            **switches: Any) -> tuple[dict[str, Any], Path | None]:
    """pipeline.compare, with its results as the dict results.json holds ({} on a dry run)."""
    res, _lines, run_dir = pipeline.compare(project, ws, name, sw or Switches(**switches))
    return (res.dump() if res is not None else {}), run_dir


def fetch(project: config.Project, ws: Workspace, target: str) -> source.Checkout:
    """pipeline.fetch of the target named ``target``."""
    return pipeline.fetch(project, ws, project.named_target(target))


def build(project: config.Project, ws: Workspace, target: str, variants: Iterable[Variant],
          overlays: Iterable[str] = ()) -> list[Built]:
    """pipeline.build_variants of the target named ``target``."""
    return pipeline.build_variants(project, ws, project.named_target(target), list(variants),
                                   list(overlays))


def scenario_md(sc: Any) -> list[str]:
    """A scenario's own part of report.md (its kind's blocks), one markdown string per block."""
    from patchbench.report import markdown
    from patchbench.report.blocks import View
    from patchbench.scenarios import KINDS

    return markdown.blocks(KINDS[sc.kind].blocks(sc, View.REPORT))


def scenario_page(sc: Any) -> str:
    """A scenario's own part of report.html (its kind's blocks)."""
    from patchbench.report import html
    from patchbench.report.blocks import View
    from patchbench.scenarios import KINDS

    return html.blocks(KINDS[sc.kind].blocks(sc, View.PAGE))


def page_charts(page: str) -> str:
    """Every SVG chart a report.html inlines (as base64 data), one after the other."""
    import base64

    return "".join(base64.b64decode(m).decode()
                   for m in re.findall(r'src="data:image/svg\+xml;base64,([^"]+)"', page))
