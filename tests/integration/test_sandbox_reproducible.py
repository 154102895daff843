"""Builds in the sandbox (util/sandbox.py) are the same bytes every time: each target of the
repository's matrix.yaml built twice, in two builds directories of their own (cold caches: Go's
build cache, ccache, the cargo target folder, the module and crate caches; the demo's first
build with the tests' shared Go build cache), gives the same sha256, as the build's uid (not
root), without the network for the build itself.

The demo always runs (it is in this repository). The upstreams are opt-in, from local mirrors
(never fetched from the network), and may reach the Go module proxy and crates.io for what their
fetch steps need (a pinned Go toolchain, lima's modules, youki's crates):

    PATCHBENCH_TEST_RUNC_GIT=... PATCHBENCH_TEST_LIMA_GIT=... PATCHBENCH_TEST_YOUKI_GIT=... \\
    PATCHBENCH_TEST_CRUN_GIT=... PATCHBENCH_TEST_LIBOCISPEC_GIT=... \\
    PATCHBENCH_TEST_RUNTIME_SPEC_GIT=... PATCHBENCH_TEST_IMAGE_SPEC_GIT=... \\
        python3 -m pytest -n 0 tests/integration/test_sandbox_reproducible.py
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from patchbench import config
from patchbench.build import Variant
from patchbench.util.workspace import Workspace
from tests import support
from tests.support import REPO_ROOT

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap (bwrap)"),
]

# read when this module is imported, before the session fixture in conftest drops every
# PATCHBENCH_* variable and switches Go to offline
MIRRORS = {name: os.environ.get(f"PATCHBENCH_TEST_{var}_GIT", "") for name, var in (
    ("runc", "RUNC"), ("lima", "LIMA"), ("youki", "YOUKI"), ("crun", "CRUN"),
    ("libocispec", "LIBOCISPEC"), ("runtime-spec", "RUNTIME_SPEC"),
    ("image-spec", "IMAGE_SPEC"))}
ONLINE = {k: os.environ.get(k) for k in ("GOPROXY", "GOTOOLCHAIN", "GOSUMDB", "GOFLAGS",
                                         "GOENV")}
RUSTUP_HOME = Path(os.environ.get("RUSTUP_HOME") or Path.home() / ".rustup")  # before HOME moves
NEEDS = {"demo": [], "runc": ["runc"], "lima": ["lima"], "youki": ["youki"],
         "crun": ["crun", "libocispec", "runtime-spec", "image-spec"]}


@pytest.fixture
def online(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Go and Rust settings this session started with (the module proxy, rustup's home)."""
    for key, value in ONLINE.items():
        if value is None:
            monkeypatch.delenv(key, raising=False)
        else:
            monkeypatch.setenv(key, value)
    if RUSTUP_HOME.is_dir():  # rustup's proxies find their toolchains there, whatever HOME is
        monkeypatch.setenv("RUSTUP_HOME", str(RUSTUP_HOME))


def build_once(tmp: Path, target: str, monkeypatch: pytest.MonkeyPatch, *, cold: bool
               ) -> dict[str, str]:
    if cold:  # a Go build cache of its own (else the session's, tests/conftest.py)
        monkeypatch.setenv("PATCHBENCH_GO_CACHE", str(tmp / "go-cache"))
    sources = {name: MIRRORS[name] for name in NEEDS[target]}
    ws = Workspace(root=REPO_ROOT, matrix=REPO_ROOT / "matrix.yaml", builds=tmp / "builds",
                   reports=tmp / "reports", sources=sources)
    [built] = support.build(config.load(ws.matrix), ws, target, [Variant("baseline", ())])
    man = built.manifest
    assert man["built_in"]["sandbox"].startswith("bubblewrap"), man["built_in"]
    assert man["built_in"]["network"] is False
    if os.geteuid() == 0:
        assert man["built_in"]["uid"] not in (0, None)
        assert man["built_in"]["user_namespaces"] == "disabled"
    return {name: a["sha256"] for name, a in man["artifacts"].items()}


@pytest.mark.parametrize("target", list(NEEDS))
def test_built_twice_in_the_sandbox_the_same_bytes(tmp_path: Path, target: str, online: None,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    missing = [name for name in NEEDS[target] if not MIRRORS[name]]
    if missing:
        pytest.skip("set " + ", ".join(f"PATCHBENCH_TEST_{m.upper().replace('-', '_')}_GIT"
                                       for m in missing) + " to local mirrors")
    if target in ("runc", "crun", "youki") and os.geteuid() != 0:
        pytest.skip("the runtimes' targets require root")
    # the demo's first build may use the session's warm Go build cache; every other build here
    # starts with every cache cold
    first = build_once(tmp_path / "one", target, monkeypatch, cold=target != "demo")
    second = build_once(tmp_path / "two", target, monkeypatch, cold=True)
    assert first == second
