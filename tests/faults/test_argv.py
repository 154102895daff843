"""Safety class 1 (docs/safety.md): no value from the command line, the environment or matrix.yaml
reaches an external command as an option. The reported attack (``--source "runc=--upload-pack=CMD;:
://"`` ran CMD as root) is refused and CMD never runs, by each way in; every URL, ref, path and
image is checked, and the git and hyperfine calls put ``--`` before the values they pass."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from patchbench import config
from patchbench.errors import ConfigError, SourceError
from patchbench.measure import bench
from patchbench.measure.bench import Invocation
from patchbench.source import cache as source
from patchbench.util import cmd, safeargs
from tests.support import REPO_ROOT, invoke_argv

COMMIT = "0" * 40


def write_matrix(root: Path, url: str = "/nonexistent/hello", ref: str = "v1") -> Path:
    data: dict[str, Any] = {
        "version": 1,
        "targets": {"hello": {
            "url": url, "ref": ref, "commit": COMMIT,
            "toolchain": {"kind": "go", "version": "1.21"},
            "build": {"commands": [["go", "build", "-o", "hello", "."]], "artifacts": ["hello"]},
        }},
        "comparisons": {"fx": {"target": "hello", "candidates": {"c": []},
                               "scenarios": [{"name": "run", "command": ["{hello}"]}]}},
    }
    root.mkdir(parents=True, exist_ok=True)
    path = root / "matrix.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def evil(marker: Path) -> str:
    return f"--upload-pack=touch {marker};: ://"


def run_cli(tmp_path: Path, *args: str, env: dict[str, str] | None = None
            ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        invoke_argv(*args, "--matrix", str(tmp_path / "p" / "matrix.yaml"),
                    "--builds", str(tmp_path / "builds"), "--reports", str(tmp_path / "reports")),
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, **(env or {})})


def test_an_upload_pack_in_source_is_refused_and_never_runs(tmp_path: Path) -> None:
    marker = tmp_path / "PWNED"
    write_matrix(tmp_path / "p")
    res = run_cli(tmp_path, "fetch", "hello", "--source", f"hello={evil(marker)}")
    assert not marker.exists(), "the command inside --source ran"
    assert res.returncode == 10, res.stderr
    assert "starts with '-'" in res.stderr


def test_the_same_value_from_the_environment(tmp_path: Path) -> None:
    marker = tmp_path / "PWNED"
    write_matrix(tmp_path / "p")
    res = run_cli(tmp_path, "fetch", "hello", env={"PATCHBENCH_SOURCE_HELLO": evil(marker)})
    assert not marker.exists()
    assert res.returncode == 10, res.stderr
    assert "PATCHBENCH_SOURCE_HELLO" in res.stderr


def test_the_same_value_in_matrix_yaml(tmp_path: Path) -> None:
    marker = tmp_path / "PWNED"
    write_matrix(tmp_path / "p", url=evil(marker))
    res = run_cli(tmp_path, "fetch", "hello")
    assert not marker.exists()
    assert res.returncode == 10, res.stderr
    assert "targets.hello.url" in res.stderr


def test_a_ref_that_is_an_option_in_matrix_yaml(tmp_path: Path) -> None:
    write_matrix(tmp_path / "p", ref="--upload-pack=x")
    with pytest.raises(ConfigError, match=r"targets\.hello\.ref"):
        config.load(tmp_path / "p" / "matrix.yaml")


BAD_URLS = [
    "-x", "--upload-pack=touch x", "--upload-pack=x;: ://", "ext::sh -c touch% x", "fd::17",
    "http://example.com/x.git", "ftp://example.com/x", "ssh://-oProxyCommand=x/y",
    "ssh://-user@host/x", "-oProxyCommand=x:y", "-host:x",
    "https://exa mple.com/x", "/tmp/x\n--upload-pack=y", "", "transport::/tmp/x",
]
GOOD_URLS = [
    "https://github.com/opencontainers/runc", "git@github.com:lima-vm/lima.git",
    "ssh://git@example.com/x.git", "git://example.com/x.git", "file:///srv/git/x",
    "/srv/src/runc", "src/runc", "./-starts-with-dash", "~/src/runc", "/path with space/x",
]


@pytest.mark.parametrize("url", BAD_URLS)
def test_unsafe_urls_are_refused(url: str) -> None:
    with pytest.raises(safeargs.UnsafeValue):
        safeargs.check_url(url)
    if url:
        with pytest.raises(ConfigError):
            config.parse_source_overrides([f"t={url}"], {})
        with pytest.raises(ConfigError):
            config.parse_source_overrides([], {"PATCHBENCH_SOURCE_T": url})


@pytest.mark.parametrize("url", GOOD_URLS)
def test_ordinary_urls_and_paths_pass(url: str) -> None:
    assert safeargs.check_url(url) == url
    assert config.parse_source_overrides([f"t={url}"], {}) == {"t": url}


@pytest.mark.parametrize("ref", ["-d", "--upload-pack=x", "a..b", "a b", "v1^{}", "@", "x.lock",
                                 "x~1", "a:b", ".hidden", "a//b", "tag\n", "HEAD@{1}"])
def test_unsafe_refs_are_refused(ref: str) -> None:
    with pytest.raises(safeargs.UnsafeValue):
        safeargs.check_ref(ref)


@pytest.mark.parametrize("ref", ["v1.2.3", "main", "release/1.0", "v2.0.0-rc.1"])
def test_ordinary_refs_pass(ref: str) -> None:
    assert safeargs.check_ref(ref) == ref


@pytest.mark.parametrize("image", ["-x@sha256:" + "a" * 64, "golang:1.26",
                                   "golang@sha256:" + "a" * 63, "golang @sha256:" + "a" * 64])
def test_unsafe_images_are_refused(image: str) -> None:
    with pytest.raises(ValidationError):
        config.BuildRecipe.model_validate({"backend": "docker", "image": image,
                                           "commands": [["make"]], "artifacts": ["x"]})


def test_a_pinned_image_passes() -> None:
    image = "docker.io/library/golang@sha256:" + "a" * 64
    assert config.BuildRecipe.model_validate({"backend": "docker", "image": image,
                                              "commands": [["make"]], "artifacts": ["x"]}).image


def test_source_fetch_refuses_before_git_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                              ) -> None:
    calls: list[list[str]] = []
    monkeypatch.setattr(source, "run_git", lambda args, **kw: calls.append(args))
    for url, ref in [("--upload-pack=x", "v1"), ("ext::sh -c x", "v1"), ("/tmp/x", "-d")]:
        with pytest.raises(SourceError):
            source.fetch(tmp_path / "builds", "t", url, ref, COMMIT, overridden=True)
    assert calls == []


def test_git_gets_dashdash_and_only_allowed_transports(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[str]] = []

    def fake(args: list[str], **kw: Any) -> cmd.Result:
        calls.append(args)
        return cmd.Result(tuple(args), 0, f"{COMMIT}\trefs/tags/v1\n", "", 0.0)

    monkeypatch.setattr(source, "run_git", fake)
    source._resolve_remote("https://example.com/x.git", "v1", "t")
    source._fetch_into(tmp_path, "https://example.com/x.git", "v1", COMMIT, "t")
    checkout = source.Checkout("t", tmp_path, COMMIT, "v1", False, False)
    monkeypatch.setattr(source, "missing_blobs", lambda repo, commit: [])
    monkeypatch.setattr(source, "locked", lambda *a, **k: _null())
    # no checkout to hash here (tests/faults/test_kept_sources.py does)
    monkeypatch.setattr(source.integrity, "verify_tree", lambda *a, **k: None)
    source.add_worktree(checkout, tmp_path / "wt", tmp_path)
    source.remove_worktree(checkout, tmp_path / "wt", tmp_path)
    for args in calls:
        for value in ("https://example.com/x.git", str(tmp_path / "wt")):
            if value in args:
                assert "--" in args and args.index("--") < args.index(value), args
        if "ls-remote" in args or "fetch" in args:
            assert "protocol.allow=never" in args, args


def _null() -> Any:
    import contextlib

    return contextlib.nullcontext()


def test_hyperfine_gets_dashdash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[str]] = []

    def fake(argv: list[str], **kw: Any) -> cmd.Result:
        seen.append([str(a) for a in argv])
        export = Path(argv[argv.index("--export-json") + 1])
        export.write_text(json.dumps({"results": [{"times": [0.1]}]}))
        return cmd.Result(tuple(argv), 0, "", "", 0.0)

    monkeypatch.setattr(bench.cmd, "run", fake)
    bench.hyperfine(Invocation(["--show-output"]), runs=1, warmup=0, per_run_timeout=1,
                    export=tmp_path / "e.json", log=tmp_path / "log", name="n")
    argv = seen[0]
    assert argv[-2:] == ["--", "--show-output"]
