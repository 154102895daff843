"""Helpers of the scaffolding commands' tests: a project over the fixture upstream, a clone of it
to make commits in, and patchbench's command line run in this process (exit code and output) or
as a process of its own (to race two, or to kill one mid-write)."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from patchbench.cli import main
from tests import support
from tests.support import REPO_ROOT, TARGET, git


@dataclass
class Scaffold:
    """A project (matrix.yaml pinning the upstream's v1, series ``greet`` in comparison ``fx``)
    and ``clone``, where a test makes the commits ``series new`` copies."""

    root: Path
    builds: Path
    clone: Path
    upstream: support.Upstream

    @property
    def matrix(self) -> Path:
        return self.root / "matrix.yaml"

    def argv(self, *args: str) -> list[str]:
        return ["--project", str(self.root), *args, "--builds", str(self.builds)]

    def run(self, *args: str) -> tuple[int, str, str]:
        """``patchbench --project ROOT ARGS --builds BUILDS`` in this process."""
        return run_cli(self.argv(*args))

    def process(self, *args: str, prelude: str = "") -> subprocess.Popen[str]:
        """The same as a process of its own; ``prelude``: Python run first (a fault planted)."""
        code = (f"{prelude}\nimport sys\nfrom patchbench.cli import main\n"
                "main.run(sys.argv[1:])")
        env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
        return subprocess.Popen([sys.executable, "-c", code, *self.argv(*args)], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def commit(self, branch: str, files: dict[str, str | None], message: str,
               *, base: str = "v1") -> str:
        """A commit on a new ``branch`` from ``base``: each file written (None: removed)."""
        git(self.clone, "checkout", "-q", "-B", branch, base)
        for name, text in files.items():
            path = self.clone / name
            if text is None:
                git(self.clone, "rm", "-q", "--", name)
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        git(self.clone, "add", "-A")
        git(self.clone, "commit", "-q", "--allow-empty", "--no-verify", "-m", message)
        return git(self.clone, "rev-parse", "HEAD")


def make(tmp: Path, upstream: support.Upstream, go_version: str) -> Scaffold:
    root = tmp / "project"
    proj = support.Project(root, upstream, go_version, tmp / "builds", tmp / "reports")
    proj.add_series("greet", ["greet"])
    proj.write()
    clone = tmp / "clone"
    git(tmp, "clone", "-q", str(upstream.path), str(clone))
    return Scaffold(root, tmp / "builds", clone, upstream)


@contextlib.contextmanager
def _signals_kept() -> Iterator[None]:
    old = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    """patchbench's command line in this process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with _signals_kept(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main.run(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        else:  # pragma: no cover - main.run always exits
            code = 0
    return code, out.getvalue(), err.getvalue()


def staged(root: Path) -> list[Path]:
    """Temporary files and folders of patchbench's (and of its older names) left in a project."""
    return sorted(p for folder in (root, root / "patches") if folder.is_dir()
                  for p in folder.iterdir()
                  if p.name.startswith(".") and p.name not in (".gitignore",))


__all__ = ["TARGET", "Scaffold", "make", "run_cli", "staged"]
