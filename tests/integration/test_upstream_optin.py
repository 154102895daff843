"""The real upstreams, end to end, on the repository's own matrix.yaml (builds and reports in
temporary directories, few runs). Opt-in, because they need a local git copy of the upstream and
build it (runc also needs root):

    PATCHBENCH_TEST_RUNC_GIT=/path/to/runc.git PATCHBENCH_TEST_LIMA_GIT=/path/to/lima.git \\
        python -m pytest tests/integration/test_upstream_optin.py

These are the only tests that may reach the Go module proxy (the lima build fetches its modules,
and both pin a Go toolchain that ``GOTOOLCHAIN=go<version>`` fetches on first use)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from patchbench import pipeline
from patchbench.runtimes import runc
from patchbench.source import patching
from patchbench.util.workspace import Switches, Workspace
from tests import support
from tests.support import REPO_ROOT

pytestmark = pytest.mark.integration

# Read when this module is imported, during collection: before the session fixture in conftest
# drops every PATCHBENCH_* variable and switches Go to offline (GOPROXY=off, GOTOOLCHAIN=local).
RUNC_GIT = os.environ.get("PATCHBENCH_TEST_RUNC_GIT", "")
LIMA_GIT = os.environ.get("PATCHBENCH_TEST_LIMA_GIT", "")
GO_NETWORK_ENV = {k: os.environ.get(k) for k in (
    "GOPROXY", "GOTOOLCHAIN", "GOSUMDB", "GONOSUMDB", "GOPRIVATE", "GONOPROXY", "GOINSECURE",
    "GOFLAGS", "GOENV")}


@pytest.fixture
def online_go(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Go settings this session started with (the module proxy, toolchain downloads)."""
    for key, value in GO_NETWORK_ENV.items():
        if value is None:
            monkeypatch.delenv(key, raising=False)
        else:
            monkeypatch.setenv(key, value)


def options(tmp_path: Path, target: str, source: str, **kw: Any) -> tuple[Workspace, Switches]:
    return (Workspace(root=REPO_ROOT, matrix=REPO_ROOT / "matrix.yaml",
                      builds=tmp_path / "builds", reports=tmp_path / "reports",
                      sources={target: source}), Switches(seed=1, **kw))


def has_static_busybox() -> bool:
    found = shutil.which("busybox")
    return found is not None and runc.is_static(Path(found).resolve())


CANDIDATES = ["async-signal-notify", "async-signal-notify-v1"]  # matrix.yaml's runc-signal


@pytest.mark.root
@pytest.mark.skipif(not RUNC_GIT, reason="set PATCHBENCH_TEST_RUNC_GIT to a runc git directory")
@pytest.mark.skipif(os.geteuid() != 0, reason="runc comparisons need root")
@pytest.mark.skipif(not has_static_busybox(), reason="needs a static busybox on PATH")
def test_runc_signal(tmp_path: Path, online_go: None) -> None:
    ws, sw = options(tmp_path, "runc", RUNC_GIT, runs=4, rounds=2, warmup=1)
    results, run_dir = support.compare(pipeline.load(ws), ws, "runc-signal", sw)
    assert run_dir is not None and run_dir.parent == tmp_path / "reports" / "runc-signal"
    assert [s["name"] for s in results["scenarios"]] == ["run", "exec", "exec-detached"]
    for sc in results["scenarios"]:
        for cell in sc["cells"]:
            assert len(cell["samples"]["times"]) == 4
            assert cell["samples"]["exit_codes"] == [0] * 4
        assert [c["candidate_variant"] for c in sc["comparisons"]] == CANDIDATES
        for comp in sc["comparisons"]:
            assert comp["speedup"] > 0
            assert comp["ci_low"] is not None and comp["ci_high"] is not None
            assert comp["ci_low"] <= comp["ci_high"]
    builds = results["builds"]
    assert sorted(builds) == sorted(["baseline", *CANDIDATES])
    base, cand = builds["baseline"], builds["async-signal-notify"]
    assert base["fingerprint"] == cand["fingerprint"]  # the series touches no go.sum either
    assert base["fingerprint"]["version"] == "go1.23.6"
    assert base["fingerprint"]["env"].get("GOPROXY") == GO_NETWORK_ENV["GOPROXY"]  # not "off"
    assert base["artifacts"]["runc"]["sha256"] != cand["artifacts"]["runc"]["sha256"]
    for man in (base, cand):
        assert man["fetched_from"] == "--source override"
        assert man["version_output"] and man["version_output"].startswith("runc version")
        assert "dirty" not in man["version_output"]
    assert base["built_commit"] != cand["built_commit"]
    assert base["version_output"] != cand["version_output"]  # it names the patched commit
    teardown = results["teardown"]
    assert sorted(teardown) == sorted(["baseline", *CANDIDATES])
    for t in teardown.values():
        assert t["left_after_teardown"] == []


@pytest.mark.skipif(not LIMA_GIT, reason="set PATCHBENCH_TEST_LIMA_GIT to a lima git directory")
def test_lima_log_sync(tmp_path: Path, online_go: None) -> None:
    ws, sw = options(tmp_path, "lima", LIMA_GIT, runs=4, rounds=2, warmup=0)
    results, run_dir = support.compare(pipeline.load(ws), ws, "lima-log-sync", sw)
    assert run_dir is not None
    assert [s["name"] for s in results["scenarios"]] == ["throughput", "burst-stall"]
    for sc in results["scenarios"]:
        (comp,) = sc["comparisons"]
        assert comp["candidate_variant"] == "coalesced-log-sync"
        assert comp["ci_low"] is not None
        for variant in ("baseline", "coalesced-log-sync"):
            v = sc["verify"][variant]
            assert v["passed"] is True, (sc["name"], variant, v)
            assert v["exit_code"] == 0
    overlay = patching.load_overlay(REPO_ROOT, "lima-logbench")
    builds = results["builds"]
    assert sorted(builds) == ["baseline", "coalesced-log-sync"]
    entries = [man["overlays"] for man in builds.values()]
    assert entries[0] == entries[1] == [{"name": "lima-logbench", "sha256": overlay.digest,
                                         "files": list(overlay.files)}]
    assert builds["baseline"]["fingerprint"]["version"] == "go1.25.7"
    assert builds["baseline"]["fingerprint"]["env"].get("GOPROXY") == GO_NETWORK_ENV["GOPROXY"]
