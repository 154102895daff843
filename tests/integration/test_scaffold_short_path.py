"""The commands of the short path, each on its own, with the real git (no build, no root): scenarios
changed by command into valid YAML of the documented forms, never a hand edit; a pull request
added to a series that holds part of it; commit-ishes pinned by their full SHA; submodules'
sources given to init as compare takes them; the comments of matrix.yaml kept without piling up."""

from __future__ import annotations

from pathlib import Path

import pytest

from patchbench import config
from tests.faults.scaffold_support import run_cli
from tests.integration import env_upstream
from tests.support import git

pytestmark = pytest.mark.integration


class Bench:
    def __init__(self, root: Path, builds: Path) -> None:
        self.root, self.builds = root, builds

    def __call__(self, *args: str) -> tuple[int, str, str]:
        return run_cli(["--project", str(self.root), *args, "--builds", str(self.builds)])

    def ok(self, *args: str) -> str:
        code, out, err = self(*args)
        assert code == 0, err
        return out + err

    def refused(self, code: int, *args: str) -> str:
        got, out, err = self(*args)
        assert got == code, out + err
        return err

    @property
    def matrix(self) -> str:
        return (self.root / "matrix.yaml").read_text()

    def scenario(self, comparison: str, name: str) -> object:
        project = config.load(self.root / "matrix.yaml")
        return next(s for s in project.comparison(comparison).scenarios if s.name == name)


@pytest.fixture
def bench(tmp_path: Path) -> tuple[Bench, Path]:
    up = env_upstream.make(tmp_path)
    b = Bench(tmp_path / "bench", tmp_path / "builds")
    b.root.mkdir()
    b.ok("init", "--runtime", "runc", "--source", str(up), "--ref", "v1.0.0")
    return b, up


def test_scenarios_by_command(bench: tuple[Bench, Path]) -> None:
    b, _ = bench
    b.ok("series", "add", "env", "--target", "runc", "--pr", "7")
    # one scenario of the template's five, with a bundle of its own
    err = b.refused(10, "comparison", "new", "env", "--target", "runc", "--candidate", "env",
                    "--env", "5000")
    assert "--scenario NAME" in err and "kill-mid-start" in err
    err = b.refused(10, "comparison", "new", "env", "--target", "runc", "--candidate", "env",
                    "--scenario", "rn")
    assert "did you mean 'run'" in err
    b.ok("comparison", "new", "env", "--target", "runc", "--candidate", "env", "--scenario",
         "run", "--env", "5000")
    assert "        bundle: {env: 5000}\n" in b.matrix
    sc = b.scenario("env", "run")
    assert [s.name for s in config.load(b.root / "matrix.yaml").comparison("env").scenarios] \
        == ["run"]
    assert sc.bundle.env == 5000  # type: ignore[attr-defined]
    # a scan of the environment's size: the placeholder must be used
    err = b.refused(10, "scenario", "set", "env", "run", "--scan", "envs=0,1000")
    assert "does not use {envs}" in err and "--env '{envs}'" in err
    b.ok("scenario", "set", "env", "run", "--env", "{envs}", "--scan", "envs=0,1000,5000")
    assert '        bundle: {env: "{envs}"}\n' in b.matrix
    assert "        scan: {name: envs, values: [0, 1000, 5000]}\n" in b.matrix
    # runs and rounds: a multiple, or said how
    err = b.refused(10, "scenario", "set", "env", "run", "--runs", "50")
    assert "not a multiple of its 20 rounds" in err and "--rounds 10" in err
    out = b.ok("scenario", "set", "env", "run", "--rounds", "30")
    assert "runs 200 -> 210" in out
    b.ok("scenario", "set", "env", "run", "--runs", "40", "--rounds", "8", "--warmup", "3")
    sc = b.scenario("env", "run")
    assert (sc.runs, sc.rounds, sc.warmup) == (40, 8, 3)  # type: ignore[attr-defined]
    # a list of variables, then none: the bundle goes with its last key
    b.ok("scenario", "set", "env", "run", "--scan", "none", "--env", "A=1", "--env", "B=2")
    assert "        bundle: {env: [A=1, B=2]}\n" in b.matrix and "scan:" not in b.matrix
    b.ok("scenario", "set", "env", "run", "--env", "none")
    assert "bundle:" not in b.matrix.split("  env:", 1)[1]
    # add one from the template; a soak has no bundle
    b.ok("scenario", "add", "env", "soak", "--like", "runc", "--runs", "100")
    assert b.scenario("env", "soak").runs == 100  # type: ignore[attr-defined]
    err = b.refused(10, "scenario", "add", "env", "soak", "--like", "runc")
    assert "has a scenario 'soak' already" in err and "--as soak-2" in err
    err = b.refused(10, "scenario", "set", "env", "soak", "--env", "10")
    assert "is a soak scenario, which has no bundle of its own" in err
    err = b.refused(10, "scenario", "set", "env", "exec", "--runs", "10")
    assert "no scenario 'exec'" in err and "scenario add env NAME --like" in err
    b.ok("scenario", "add", "env", "exec", "--like", "runc")
    err = b.refused(10, "scenario", "set", "env", "exec", "--env", "10")
    assert "does not run {bundle}" in err  # exec runs in bundle_sleep's container
    # three comparisons added: one comment each, none piled up at the end of another
    b.ok("comparison", "new", "env2", "--target", "runc", "--candidate", "env")
    b.ok("comparison", "new", "env3", "--target", "runc", "--candidate", "env", "--like", "env")
    assert b.matrix.count("# added by `patchbench comparison new`") == 3
    config.load(b.root / "matrix.yaml")


def test_a_pull_request_completes_a_series_that_holds_part_of_it(
        bench: tuple[Bench, Path]) -> None:
    b, up = bench
    first, second = git(up, "rev-list", "--reverse", "main^2", "^main^1").split()
    b.ok("series", "add", "env", "--target", "runc", second[:9])  # a short SHA
    series = b.root / "patches" / "env" / "series"
    err = b.refused(10, "series", "add", "env", "--target", "runc", second)
    assert "already names" in err and "--pr" not in err
    b.ok("series", "add", "env", "--target", "runc", "--pr", "7")
    refs = [line.split()[1] for line in series.read_text().splitlines()
            if line.startswith("upstream ")]
    assert refs == [first, second]  # the pull request's order, each once
    err = b.refused(10, "series", "new", "env", "--target", "runc", "--from", str(up),
                    "v1.0.0..main")
    assert "patchbench series add env --target runc" in err
    code, out, err = b("patch", "--check", "--series", "env")  # used by no comparison
    assert code == 0 and "ok (2 patches)" in out, err


def test_a_pull_request_in_the_pinned_commit_says_which_commit_to_pin(tmp_path: Path) -> None:
    up = env_upstream.make(tmp_path)
    b = Bench(tmp_path / "bench", tmp_path / "builds")
    b.root.mkdir()
    b.ok("init", "--runtime", "runc", "--source", str(up), "--ref", "main")
    err = b.refused(10, "series", "add", "env", "--target", "runc", "--pr", "7")
    assert "is in the pinned commit" in err and f"--ref {git(up, 'rev-parse', 'main^1')[:12]}" \
        in err
    err = b.refused(11, "series", "add", "env", "--target", "runc", "--pr", "8")
    assert "no merge commit 'Merge pull request #8" in err and "--pr 8 SHA SHA" in err


@pytest.mark.parametrize(("ref", "pinned_ref"), [
    ("v1.0.0", "v1.0.0"), ("main~1", None), ("SHORT", None), ("main", None)])
def test_any_commit_ish_is_pinned_by_its_full_sha(tmp_path: Path, ref: str,
                                                  pinned_ref: str | None) -> None:
    up = env_upstream.make(tmp_path)
    want = {"v1.0.0": "v1.0.0", "main~1": "main~1", "SHORT": "main^2", "main": "main"}[ref]
    sha = git(up, "rev-parse", f"{want}^{{commit}}")
    given = sha[:9] if ref == "SHORT" else ref
    b = Bench(tmp_path / "bench", tmp_path / "builds")
    b.root.mkdir()
    b.ok("init", "--runtime", "runc", "--source", str(up), "--ref", given)
    target = config.load(b.root / "matrix.yaml").matrix.targets["runc"]
    assert target.commit == sha and target.ref == (pinned_ref or sha)
    code, _, err = b("compare", "runc-noise", "--dry-run")
    assert code == 0, err
    err = Bench(tmp_path / "b2", tmp_path / "builds").refused(
        11, "init", "--runtime", "runc", "--source", str(up), "--ref", "v9~1")
    assert "no such tag, branch or commit" in err and "TAG~N" in err


def test_init_takes_submodule_sources_as_compare_does(tmp_path: Path) -> None:
    up = env_upstream.make(tmp_path)
    lib = tmp_path / "libocispec"
    lib.mkdir()
    b = Bench(tmp_path / "bench", tmp_path / "builds")
    b.root.mkdir()
    err = b.refused(10, "init", "--runtime", "crun", "--source", str(up), "--ref", "v1.0.0",
                    "--source", f"libocispek={lib}")
    assert "no submodule 'libocispek'" in err and "did you mean 'libocispec'" in err
    assert not (b.root / "matrix.yaml").exists()
    err = b.refused(10, "init", "--runtime", "crun", "--source", f"libocispec={lib}")
    assert "give the target's own too" in err
    b.ok("init", "--runtime", "crun", "--source", str(up), "--ref", "v1.0.0",
         "--source", f"libocispec={lib}")
    target = config.load(b.root / "matrix.yaml").matrix.targets["crun"]
    urls = {m.name: m.url for m in target.submodules}
    assert urls["libocispec"] == str(lib.resolve())
    assert urls["runtime-spec"].startswith("https://")


def test_a_pull_request_added_again_leaves_the_series_as_it_was(
        bench: tuple[Bench, Path]) -> None:
    b, _ = bench
    b.ok("series", "add", "env", "--target", "runc", "--pr", "7")
    series = b.root / "patches" / "env" / "series"
    once = series.read_text()
    assert once.count("# pull request #7: 2 commits, from merge") == 1
    b.ok("series", "add", "env", "--target", "runc", "--pr", "7")
    assert series.read_text() == once  # its note is not written a second time
