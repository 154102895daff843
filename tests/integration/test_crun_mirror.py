"""Opt-in, against local mirrors (never the network): ``PATCHBENCH_TEST_CRUN_GIT=DIR`` with
``PATCHBENCH_TEST_LIBOCISPEC_GIT``, ``PATCHBENCH_TEST_RUNTIME_SPEC_GIT`` and
``PATCHBENCH_TEST_IMAGE_SPEC_GIT`` builds the repository's ``crun`` target (C toolchain,
libocispec and its two spec submodules at their gitlinks, yajl omitted for Debian's libyajl) and
its ``crun-mounts`` candidate, and checks the manifests: one fingerprint, different binaries,
every submodule at its pinned commit, the omission recorded, ``crun --version`` naming the
pinned commit."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from patchbench import build, config, pipeline
from patchbench.util.workspace import Workspace
from tests import support
from tests.support import REPO_ROOT

MIRRORS = {name: os.environ.get(f"PATCHBENCH_TEST_{var}_GIT", "")  # read before conftest drops them
           for name, var in (("crun", "CRUN"), ("libocispec", "LIBOCISPEC"),
                             ("runtime-spec", "RUNTIME_SPEC"), ("image-spec", "IMAGE_SPEC"))}
PINNED = {"libocispec": "bf749566cda632fb2f5dcf9c4eb5bbec71ac7d5f",
          "libocispec/runtime-spec": "d64c1d945da7cf6970061c7c9ff4391fafdf2a15",
          "libocispec/image-spec": "26647a49f642c7d22a1cd3aa0a48e4650a542269",
          "libocispec/yajl": "6bc5219389fd2752631682b0a8368e6d8218a8c5"}


@pytest.mark.skipif(not all(MIRRORS.values()), reason="set PATCHBENCH_TEST_CRUN_GIT, "
                    "_LIBOCISPEC_GIT, _RUNTIME_SPEC_GIT and _IMAGE_SPEC_GIT to local mirrors")
def test_crun_and_its_submodules_build_from_pinned_mirrors(tmp_path: Path) -> None:
    ws = Workspace(root=REPO_ROOT, matrix=REPO_ROOT / "matrix.yaml", builds=tmp_path / "builds",
                   reports=tmp_path / "reports", sources=dict(MIRRORS))
    project = config.load(ws.matrix)
    comp = project.comparison("crun-mounts")
    base, cand = support.build(project, ws, "crun", pipeline.variants_of(comp), [])
    assert build.toolchains.differing_keys(base.manifest["fingerprint"],
                                           cand.manifest["fingerprint"]) == []
    assert base.manifest["artifacts"]["crun"]["sha256"] != cand.manifest["artifacts"]["crun"]["sha256"]
    subs = {s["path"]: s for s in base.manifest["submodules"]}
    assert {p: s["commit"] for p, s in subs.items()} == PINNED
    assert "libyajl" in subs["libocispec/yajl"]["omitted"]
    assert "commit: d655ea642246ca606c3486e052d4d8a37afe8c92" in base.manifest["version_output"]
    assert base.manifest["fingerprint"]["libraries"]["yajl"]
