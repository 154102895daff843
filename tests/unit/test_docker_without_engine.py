"""The docker pieces that need no engine: SDK error classification, the engine's choice and its
refusal without root, the run directory's length, the container environment, the worktree's git
directory, and a digest-pinned image that is present and therefore never pulled."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import docker.errors
import pytest
import requests.exceptions
import yaml

from patchbench.build import docker as docker_backend
from patchbench.docker import engine, images
from patchbench.errors import BuildError, RequirementError, ToolchainError


class _Resp:
    def __init__(self, status: int, reason: str = "boom"):
        self.status_code = status
        self.reason = reason
        self.url = "http://engine/x"

    def json(self) -> dict[str, str]:
        return {"message": self.reason}


@pytest.mark.parametrize(("exc", "cls", "needle"), [
    (docker.errors.ImageNotFound("No such image: x"), RequirementError, "not present"),
    (requests.exceptions.ConnectionError("refused"), RequirementError, "unreachable"),
    (docker.errors.DockerException("Error while fetching server API version: x"), RequirementError,
     "unreachable"),
    (requests.exceptions.ReadTimeout("read timed out"), BuildError, "did not answer in time"),
    (docker.errors.APIError("500 Server Error", _Resp(500, "driver failed")),  # type: ignore[no-untyped-call]
     BuildError, "HTTP 500"),
    (docker.errors.APIError("409 Conflict", _Resp(409, "name in use")),  # type: ignore[no-untyped-call]
     BuildError, "HTTP 409"),
    (docker.errors.ContainerError(None, 2, "sh -c x", "img", b"oops"), BuildError, "code 2"),
    (OSError("broken pipe"), BuildError, "talking to the Docker engine failed"),
    (ValueError("odd"), BuildError, "unexpected ValueError"),
])
def test_every_sdk_error_is_classified(exc: Exception, cls: type[Exception], needle: str) -> None:
    err = engine.classify(exc, "step")
    assert type(err) is cls
    assert err.message.startswith("step: ") and needle in err.message


def test_the_default_class_is_the_callers() -> None:
    err = engine.classify(requests.exceptions.ReadTimeout("t"), "go version", ToolchainError)
    assert isinstance(err, ToolchainError) and err.exit_code == 13


def test_sdk_errors_context_translates_and_lets_ctrl_c_through() -> None:
    with pytest.raises(RequirementError) as info, engine.sdk_errors("look up"):
        raise docker.errors.ImageNotFound("No such image: y")
    assert info.value.exit_code == 16
    with pytest.raises(KeyboardInterrupt), engine.sdk_errors("look up"):
        raise KeyboardInterrupt


def test_without_engine_and_without_root_exit_16_names_the_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine, "SYSTEM_SOCKET", str(tmp_path / "no.sock"))
    monkeypatch.setattr("patchbench.docker.engine.os.geteuid", lambda: 1000)
    with pytest.raises(RequirementError) as info, engine.engine(tmp_path / "engine", environ={}):
        pass
    assert info.value.exit_code == 16
    assert "docker.io" in (info.value.hint or "")
    assert not (tmp_path / "engine").exists()


def test_docker_host_that_does_not_answer_is_an_error_not_a_fallback(tmp_path: Path) -> None:
    host = f"unix://{tmp_path}/absent.sock"
    with pytest.raises(RequirementError) as info, \
            engine.engine(tmp_path / "engine", environ={"DOCKER_HOST": host}):
        pass
    assert "unreachable" in info.value.message
    assert not (tmp_path / "engine").exists()


def test_run_directory_stays_short_enough_for_unix_sockets(tmp_path: Path) -> None:
    short = Path("/pb-short/e")  # never created: only the path's length matters
    assert engine.run_dir_for(short) == short / "run"
    deep = tmp_path.joinpath(*["a-rather-long-directory-name"] * 5)
    run = engine.run_dir_for(deep)
    assert len(str(run / "x" / "containerd" / "containerd.sock.ttrpc")) <= engine.SOCKET_MAX
    assert run == engine.run_dir_for(deep)  # stable for the same state directory
    assert run != engine.run_dir_for(deep / "other")


def test_container_env_drops_host_paths_and_pins_the_local_go() -> None:
    env = docker_backend.container_env({
        "PATH": "/host/bin", "HOME": "/root-of-host", "GOCACHE": "/host/cache", "GOPROXY": "off",
        "GOTOOLCHAIN": "go1.23.6", "SOURCE_DATE_EPOCH": "1", "GOFLAGS": "-trimpath",
    })
    assert env["PATH"] == images.PATH_IN_IMAGE and env["HOME"] == "/root"
    assert env["GOCACHE"].startswith(docker_backend.CACHE_ROOT)
    assert env["GOTOOLCHAIN"] == "local"
    assert (env["GOPROXY"], env["SOURCE_DATE_EPOCH"], env["GOFLAGS"]) == ("off", "1", "-trimpath")


def test_git_common_dir_of_a_worktree(tmp_path: Path) -> None:
    bare = tmp_path / "repo.git"
    gitdir = bare / "worktrees" / "src"
    gitdir.mkdir(parents=True)
    (gitdir / "commondir").write_text("../..\n")
    tree = tmp_path / "src"
    tree.mkdir()
    (tree / ".git").write_text(f"gitdir: {gitdir}\n")
    assert docker_backend.git_common_dir(tree) == bare.resolve()
    plain = tmp_path / "plain"
    (plain / ".git").mkdir(parents=True)
    assert docker_backend.git_common_dir(plain) is None


class _FakeImages:
    def __init__(self, present: set[str]):
        self.present = present
        self.pulled: list[tuple[str, str]] = []

    def get(self, ref: str) -> Any:
        if ref not in self.present:
            raise docker.errors.ImageNotFound(f"No such image: {ref}")
        return type("Img", (), {"id": "sha256:" + "1" * 64})()

    def pull(self, repo: str, tag: str) -> None:
        self.pulled.append((repo, tag))
        raise docker.errors.APIError("no registry")  # type: ignore[no-untyped-call]


def test_a_present_digest_pinned_image_is_never_pulled(monkeypatch: pytest.MonkeyPatch) -> None:
    ref = "golang@sha256:" + "a" * 64
    fake = _FakeImages({ref})
    client = type("Client", (), {"images": fake})()
    monkeypatch.setattr(images, "package_list", lambda eng, image: ["pkg=1"])
    image = images.ensure_ref(engine.Engine(client, "unix:///x", own=False, version={"engine": "1"}),
                              ref)
    assert fake.pulled == []
    assert (image.ref, image.id, image.packages) == (ref, "sha256:" + "1" * 64, ["pkg=1"])
    absent = "golang@sha256:" + "b" * 64
    with pytest.raises(RequirementError) as info:
        images.ensure_ref(engine.Engine(client, "unix:///x", own=False), absent)
    assert fake.pulled == [("golang", "sha256:" + "b" * 64)]
    assert info.value.message.startswith(f"pull {absent}")


def test_toolchain_module_names_the_pinned_version() -> None:
    assert images.toolchain_module("1.26.8").startswith("golang.org/toolchain@v0.0.1-go1.26.8.linux-")


def test_go_tree_is_found_in_a_module_cache_without_the_network(tmp_path: Path) -> None:
    module = images.toolchain_module("1.99.1")
    path, _, ver = module.partition("@")
    root = tmp_path / "gomod" / f"{path}@{ver}"
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "go").write_text("#!/bin/sh\n")
    (root / "VERSION").write_text("go1.99.1\ntime 2026-01-01\n")
    tree = images.go_tree("1.99.1", tmp_path, environ={"GOMODCACHE": str(tmp_path / "none")},
                          allow_download=False)
    assert (tree.root, tree.origin) == (root, "module cache")
    assert tree.sha256 == images.tree_sha256(root)
    (root / "bin" / "go").chmod(0o755)  # modes are normalised: bin/ and pkg/tool/ executable
    assert images.tree_sha256(root) == tree.sha256
    (root / "test").mkdir()  # not in the toolchain module, so not in the image
    (root / "test" / "x.go").write_text("package x\n")
    assert images.tree_sha256(root) == tree.sha256
    (root / "bin" / "gofmt").write_text("x")
    assert images.tree_sha256(root) != tree.sha256


def _linked(path: Path, elsewhere: Path, text: str) -> None:
    """``path`` replaced by a link to ``elsewhere``, which holds ``text``."""
    elsewhere.write_text(text)
    path.unlink()
    path.symlink_to(elsewhere)


def _goroot(tmp_path: Path) -> Path:
    root = tmp_path / "goroot"
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "go").write_text("#!/bin/sh\n")
    (root / "src").mkdir()
    (root / "src" / "a.go").write_text("package a\n")
    (root / "VERSION").write_text("go1.99.1\n")
    return root


def test_the_tree_hash_is_kept_and_taken_again_only_when_an_entry_changed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _goroot(tmp_path)
    kept = images.kept_tree_path(tmp_path / "state", root)
    hashed: list[Path] = []
    real = images.sha256_file
    monkeypatch.setattr(images, "sha256_file", lambda p: hashed.append(p) or real(p))
    first = images.tree_sha256(root, kept)
    assert first == images.tree_sha256(root) and len(hashed) == 6  # 3 files, twice
    hashed.clear()
    assert images.tree_sha256(root, kept) == first and hashed == []  # kept: nothing read
    (root / "src" / "a.go").write_text("package b\n")  # rewritten: another size and mtime
    changed = images.tree_sha256(root, kept)
    assert changed != first and len(hashed) == 3
    os.utime(root / "VERSION", ns=(1, 1))  # touched: the contents are the same, hashed again
    hashed.clear()
    assert images.tree_sha256(root, kept) == changed and len(hashed) == 3
    (root / "src" / "b.go").write_text("package a\n")  # added
    assert images.tree_sha256(root, kept) not in (first, changed)


def test_a_tree_changed_while_it_is_hashed_is_not_kept(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    root = _goroot(tmp_path)
    kept = images.kept_tree_path(tmp_path / "state", root)
    real = images.sha256_file

    def touching(p: Path) -> str:
        (root / "VERSION").write_text("go1.99.2\n")  # rewritten while the tree is read
        return real(p)

    monkeypatch.setattr(images, "sha256_file", touching)
    images.tree_sha256(root, kept)
    assert not kept.exists()
    monkeypatch.setattr(images, "sha256_file", real)
    digest = images.tree_sha256(root, kept)
    assert json.loads(kept.read_text())["sha256"] == digest


@pytest.mark.parametrize("damage", ["link", "not json", "no id", "an id of another shape",
                                    "packages not strings", "go not strings"])
def test_a_damaged_image_record_is_not_used(tmp_path: Path, damage: str) -> None:
    record = {"recipe": "go-busybox", "key": "k", "id": "sha256:" + "1" * 64, "tag": "t",
              "go": {"version": "go1.99.1"}, "packages": ["BusyBox v1"], "engine": {}}
    path = tmp_path / "go-busybox-0123456789abcdef.json"
    path.write_text(json.dumps(record))
    assert images._kept_record(path) == {**record, "rust": {}}
    if damage == "link":
        _linked(path, tmp_path / "other.json", json.dumps(record))
    elif damage == "not json":
        path.write_text("{")
    else:
        key, value = {"no id": ("id", None), "an id of another shape": ("id", "sha256:x; rm"),
                      "packages not strings": ("packages", [1]),
                      "go not strings": ("go", {"version": 1})}[damage]
        path.write_text(json.dumps({**record, key: value}))
    assert images._kept_record(path) is None


@pytest.mark.parametrize("damage", ["link", "not json", "wrong hash", "foreign owner"])
def test_a_damaged_kept_tree_hash_is_ignored(tmp_path: Path, damage: str) -> None:
    root = _goroot(tmp_path)
    kept = images.kept_tree_path(tmp_path / "state", root)
    digest = images.tree_sha256(root, kept)
    data = json.loads(kept.read_text())
    forged = {**data, "sha256": "0" * 64}
    if damage == "link":
        _linked(kept, tmp_path / "elsewhere.json", json.dumps(forged))
    elif damage == "not json":
        kept.write_text("{")
    elif damage == "wrong hash":
        kept.write_text(json.dumps({**data, "sha256": "not a hash"}))
    else:
        if os.geteuid() != 0:
            pytest.skip("the ownership rule applies as root")
        kept.write_text(json.dumps(forged))
        os.chown(kept, 4242, 4242)
    assert images.tree_sha256(root, kept) == digest


def test_dry_run_lines_name_engine_image_and_every_docker_step(tmp_path: Path) -> None:
    from patchbench import config

    target = config.Target.model_validate({
        "url": "x", "ref": "v1", "commit": "0" * 40,
        "toolchain": {"kind": "go", "version": "1.23.6", "cgo": True},
        "build": {"commands": [["make", "runc"]], "artifacts": ["runc"], "backend": "docker",
                  "image": {"recipe": "debian-runc"}},
    })
    lines = docker_backend.plan_lines(target, tmp_path, environ={})
    text = "\n".join(lines)
    assert "--iptables=false --bridge=none" in text and str(tmp_path / "engine" / "data") in text
    assert "recipe debian-runc" in text and "go1.23.6" in text
    assert "cc, ld, ldd --version" in text
    assert "/bin/sh -c 'make runc'" in text
    lines = docker_backend.plan_lines(target, tmp_path, environ={"DOCKER_HOST": "tcp://h:2375"})
    assert lines[0] == "engine  DOCKER_HOST=tcp://h:2375 (must answer)"


def test_fingerprint_queries_are_asked_once_per_image_and_kept_redacted(tmp_path: Path) -> None:
    from patchbench.util import cmd

    class FakeBackend:
        state = tmp_path / "builds"

        def __init__(self) -> None:
            self.calls: list[tuple[str, list[str]]] = []
            self.fail = False

        def run(self, image: images.Image, argv: list[str], **_: Any) -> cmd.Result:
            self.calls.append((image.id, list(argv)))
            out = "go version go1.23.6 linux/amd64 https://user:hunter2@proxy.invalid/\n"
            return cmd.Result(tuple(argv), 1 if self.fail else 0, out, "", 0.1)

    backend = FakeBackend()
    a = docker_backend.ContainerRunner(backend, images.Image("recipe:x", "sha256:" + "a" * 64))
    b = docker_backend.ContainerRunner(backend, images.Image("recipe:x", "sha256:" + "b" * 64))
    first = a.run(["go", "version"], env={"GOFLAGS": "-mod=vendor"})
    again = a.run(["go", "version"], env={"GOFLAGS": "-mod=vendor"})
    assert len(backend.calls) == 1 and again.returncode == 0
    assert "hunter2" in first.stdout and "hunter2" not in again.stdout  # recorded redacted
    (entry,) = (tmp_path / "builds" / "images" / "queries").iterdir()
    assert "hunter2" not in entry.read_text()
    # another image, another environment or another argv is asked again
    b.run(["go", "version"], env={"GOFLAGS": "-mod=vendor"})
    a.run(["go", "version"], env={"GOFLAGS": "-mod=mod"})
    a.run(["go", "env", "-json"], env={"GOFLAGS": "-mod=vendor"})
    assert len(backend.calls) == 4
    # a damaged entry is asked again; a failed answer is never kept
    entry.write_text("{not json")
    a.run(["go", "version"], env={"GOFLAGS": "-mod=vendor"})
    assert len(backend.calls) == 5 and json_ok(entry)
    backend.fail = True
    for _ in range(2):
        assert b.run(["true"], env={}).returncode == 1
    assert len(backend.calls) == 7


def json_ok(path: Path) -> bool:
    import json

    return isinstance(json.loads(path.read_text()), dict)


def test_removing_volumes_that_were_never_made_is_not_an_error() -> None:
    from types import SimpleNamespace

    asked: list[str] = []

    def get(name: str) -> Any:
        asked.append(name)
        raise docker.errors.NotFound(f"get {name}: no such volume")

    be = docker_backend.DockerBackend(Path("/nonexistent"), volume_prefix="pbtest-x")
    be._engine = SimpleNamespace(client=SimpleNamespace(volumes=SimpleNamespace(get=get)))  # type: ignore[assignment]
    be.remove_volumes()  # no BuildError
    assert sorted(asked) == sorted(be.volumes())


def test_c_and_rust_targets_get_their_recipes_and_plan_lines(tmp_path: Path) -> None:
    from patchbench import config

    def target(tc: dict[str, Any], commands: list[list[str]]) -> config.Target:
        return config.Target.model_validate({
            "url": "x", "ref": "v1", "commit": "0" * 40, "toolchain": tc,
            "build": {"commands": commands, "artifacts": ["a"]}})

    c = target({"kind": "c", "version": "12.2.0", "libraries": ["libcap"]}, [["make", "crun"]])
    r = target({"kind": "rust", "version": "1.95.0"}, [["cargo", "build", "--offline"]])
    assert config.default_image(c).recipe == "debian-c"
    assert config.default_image(r).recipe == "debian-rust"
    for t, recipe, words in ((c, "debian-c", ("Debian's compiler", "cc1, collect2, as, ld")),
                             (r, "debian-rust", (f"copied to {images.RUST_IN_IMAGE}",
                                                 "rustc -vV; cargo -V"))):
        docker_t = t.model_copy(update={"build": t.build.model_copy(
            update={"backend": "docker", "image": config.default_image(t)})})
        text = "\n".join(docker_backend.plan_lines(docker_t, tmp_path, environ={}))
        assert f"recipe {recipe}" in text and all(w in text for w in words), text
        assert "go version" not in text
    assert images.RECIPES["debian-c"].toolchain == "none"
    assert {"libyajl-dev", "libcap-dev", "libseccomp-dev", "gperf", "ccache"} <= set(
        images.RECIPES["debian-c"].packages)
    assert images.RECIPES["debian-rust"].path.startswith(f"{images.RUST_IN_IMAGE}/bin:")
    assert images.RECIPES["debian-runc"].path == images.PATH_IN_IMAGE  # Go images as before


def test_backend_switch_takes_c_and_rust_targets_too(tmp_path: Path) -> None:
    from patchbench import config

    (tmp_path / "matrix.yaml").write_text(yaml.safe_dump({"version": 1, "targets": {
        "c": {"url": "x", "ref": "v1", "commit": "0" * 40,
              "toolchain": {"kind": "c", "version": "12.2.0"},
              "build": {"commands": [["make"]], "artifacts": ["a"]}},
        "r": {"url": "x", "ref": "v1", "commit": "0" * 40,
              "toolchain": {"kind": "rust", "version": "1.95.0"},
              "build": {"commands": [["cargo", "build"]], "artifacts": ["a"]}}},
        "comparisons": {}}))
    docker_p = config.load(tmp_path / "matrix.yaml").with_backend("docker")
    assert docker_p.target("c").build.image == config.ImageRecipe(recipe="debian-c")
    assert docker_p.target("r").build.image == config.ImageRecipe(recipe="debian-rust")
    assert {docker_p.target(n).build.backend for n in ("c", "r")} == {"docker"}


def test_container_env_takes_the_images_path_and_drops_rustup_home() -> None:
    env = docker_backend.container_env({"PATH": "/host/bin", "RUSTUP_HOME": "/host/.rustup",
                                        "CARGO_HOME": "/b/sources/cargo-home"},
                                       images.RUST_PATH_IN_IMAGE)
    assert env["PATH"] == images.RUST_PATH_IN_IMAGE and "RUSTUP_HOME" not in env
    assert env["CARGO_HOME"] == "/b/sources/cargo-home"  # under builds/: mounted at its path


def test_repositories_of_a_tree_and_its_submodule_worktrees(tmp_path: Path) -> None:
    def worktree(tree: Path, bare: Path) -> None:
        gitdir = bare / "worktrees" / tree.name
        gitdir.mkdir(parents=True)
        (gitdir / "commondir").write_text("../..\n")
        tree.mkdir(parents=True, exist_ok=True)
        (tree / ".git").write_text(f"gitdir: {gitdir}\n")

    tree = tmp_path / "src"
    worktree(tree, tmp_path / "crun.git")
    worktree(tree / "libocispec", tmp_path / "libocispec.git")
    worktree(tree / "libocispec" / "runtime-spec", tmp_path / "runtime-spec.git")
    assert docker_backend.repositories(tree) == [
        (tmp_path / n).resolve() for n in ("crun.git", "libocispec.git", "runtime-spec.git")]


def test_rust_tree_refuses_another_release(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from patchbench.util import cmd

    def fake_run(argv: Any, **_: Any) -> cmd.Result:
        out = "rustc 1.94.0\nrelease: 1.94.0\n" if "-vV" in argv else str(tmp_path)
        return cmd.Result(tuple(argv), 0, out, "", 0.0)

    monkeypatch.setattr(images.cmd, "run", fake_run)
    with pytest.raises(ToolchainError, match=r"copies the host's Rust 1.95.0, but rustc .* is "
                                             r"1.94.0"):
        images.rust_tree("1.95.0", "1.95.0-x86_64-unknown-linux-gnu")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "rustc").write_text("#!/bin/sh\n")
    (tmp_path / "bin" / "rustc").chmod(0o755)
    (tmp_path / "share").mkdir()
    (tmp_path / "share" / "doc").write_text("docs are not copied")
    tree = images.rust_tree("1.94.0", None)
    assert tree.release == "1.94.0" and tree.root == tmp_path.resolve()
    before = tree.sha256
    (tmp_path / "share" / "doc").write_text("changed docs change nothing")
    assert images.rust_tree("1.94.0", None).sha256 == before
    (tmp_path / "bin" / "rustc").chmod(0o644)  # a mode of a copied file does
    assert images.rust_tree("1.94.0", None).sha256 != before


@pytest.mark.parametrize(("files", "network", "fetched", "proxy"), [
    (["go.mod"], False, True, "off"),  # modules first, with the network; the build offline
    (["go.work"], False, True, "off"),
    (["go.mod", "vendor/modules.txt"], False, False, "off"),  # vendored: nothing to fetch
    (["Makefile"], False, False, None),  # no module at the root: left as it is
    (["go.mod"], True, False, None),  # the recipe has the network: it fetches what it needs
])
def test_a_docker_go_build_without_the_network_gets_its_modules_first(
        tmp_path: Path, files: list[str], network: bool, fetched: bool, proxy: str | None) -> None:
    from patchbench.config import BuildRecipe

    for f in files:
        (tmp_path / f).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f).write_text("")
    calls: list[tuple[list[str], bool, str | None]] = []
    backend: Any = docker_backend.DockerBackend.__new__(docker_backend.DockerBackend)
    backend.bound = lambda recipe: "image"
    backend.run = lambda image, argv, *, env, network=True, **kw: calls.append(
        (list(argv), network, env.get("GOPROXY")))
    recipe = BuildRecipe.model_validate({"backend": "docker", "image": "x@sha256:" + "0" * 64,
                                         "commands": [["go", "build"]], "artifacts": ["x"],
                                         "network": network})
    env = {"GOTOOLCHAIN": "local", "GOPROXY": "https://proxy.golang.org"}
    backend.run_recipe(tmp_path, recipe, env, tmp_path / "log", "build x")
    *first, build = calls
    assert build[0][:2] == ["/bin/sh", "-c"] and build[1] is network
    assert build[2] == (proxy or "https://proxy.golang.org")
    assert [c[:2] for c in first] == ([(["go", "mod", "download"], True)] if fetched else [])
