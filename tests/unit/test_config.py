"""matrix.yaml: safe loading, unknown keys with file:line and "did you mean", wrong types,
references to unknown targets and series."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from patchbench import config
from patchbench.errors import ConfigError
from tests.support import REPO_ROOT

BASE = """\
version: 1
targets:
  hello:
    url: /nonexistent/hello
    ref: v1
    commit: 0123456789abcdef0123456789abcdef01234567
    toolchain: {kind: go, version: "1.22.1"}
    build:
      commands: [[go, build, -o, hello, .]]
      artifacts: [hello]
comparisons:
  fx:
    target: hello
    candidates:
      greet: [greet]
    scenarios:
      - name: run
        command: ["{hello}"]
        runs: 4
        rounds: 2
"""


def line_of(fragment: str) -> int:
    """The 1-based line of BASE holding ``fragment``."""
    return next(n for n, text in enumerate(BASE.splitlines(), 1) if fragment in text)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "patches" / "greet").mkdir(parents=True)
    (tmp_path / "patches" / "greet" / "series").write_text("0001-greet.patch\n")
    return tmp_path


def write(root: Path, text: str) -> Path:
    path = root / "matrix.yaml"
    path.write_text(text)
    return path


def load_error(root: Path, text: str) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        config.load(write(root, text))
    return info.value


def test_the_base_matrix_loads(root: Path) -> None:
    project = config.load(write(root, BASE))
    comp = project.comparison("fx")
    assert comp.target == "hello"
    assert comp.candidates == {"greet": ["greet"]}
    assert comp.scenarios[0].runs == 4
    assert project.target("hello").toolchain.download is False
    assert project.root == root


def test_the_repository_matrix_loads() -> None:
    project = config.load(REPO_ROOT / "matrix.yaml")
    assert "demo" in project.matrix.comparisons


@pytest.mark.parametrize("tagged", [
    '!!python/object/apply:os.system ["touch PWNED"]',
    '!!python/object/new:os.system ["touch PWNED"]',
    "!!python/name:os.system",
])
def test_python_tags_are_refused_and_never_run(
    root: Path, tagged: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(root)
    text = BASE.replace("runs: 4", f"runs: {tagged}")
    err = load_error(root, text)
    assert f"{root / 'matrix.yaml'}:{line_of('runs: 4')}:" in err.message
    assert "not valid YAML" in err.message
    assert "python" in err.message
    assert not (root / "PWNED").exists()
    assert not Path(os.getcwd(), "PWNED").exists()


def test_a_python_tag_as_the_whole_document_is_refused(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(root)
    err = load_error(root, '!!python/object/apply:os.system ["touch PWNED"]\n')
    assert f"{root / 'matrix.yaml'}:1:" in err.message
    assert not (root / "PWNED").exists()


@pytest.mark.parametrize(("broken", "line"), [
    (BASE.replace("    ref: v1", "\tref: v1"), line_of("ref: v1")),
    (BASE.replace("artifacts: [hello]", "artifacts: [hello"), line_of("artifacts: [hello]") + 1),
])
def test_malformed_yaml_names_the_line(root: Path, broken: str, line: int) -> None:
    err = load_error(root, broken)
    assert err.message.startswith(f"{root / 'matrix.yaml'}:{line}: not valid YAML")


@pytest.mark.parametrize(("old", "new", "path", "suggestion"), [
    ("runs: 4", "runz: 4", "comparisons.fx.scenarios.0.runz", "runs"),
    ('command: ["{hello}"]', 'comand: ["{hello}"]', "comparisons.fx.scenarios.0.comand",
     "command"),
    ("    ref: v1", "    reff: v1", "targets.hello.reff", "ref"),
    ("artifacts: [hello]", "artifact: [hello]", "targets.hello.build.artifact", "artifacts"),
    ('version: "1.22.1"}', 'versoin: "1.22.1"}', "targets.hello.toolchain.versoin", "version"),
    ("    candidates:", "    candidatez:", "comparisons.fx.candidatez", "candidates"),
    ("comparisons:", "comparisonz:", "comparisonz", "comparisons"),
])
def test_unknown_key_names_file_line_path_and_suggestion(
    root: Path, old: str, new: str, path: str, suggestion: str
) -> None:
    assert old in BASE
    err = load_error(root, BASE.replace(old, new))
    line = line_of(old)
    expected = (f"{root / 'matrix.yaml'}:{line}: {path}: unknown key "
                f"(did you mean {suggestion!r}?)")
    assert expected in err.render()


@pytest.mark.parametrize(("old", "new", "path", "words"), [
    ("runs: 4", "runs: many", "comparisons.fx.scenarios.0.runs", "integer"),
    ("runs: 4", "runs: 0", "comparisons.fx.scenarios.0.runs", "greater than or equal to 1"),
    ("commands: [[go, build, -o, hello, .]]", "commands: go build",
     "targets.hello.build.commands", "list"),
    ('version: "1.22.1"}', 'version: "1.22.1", download: maybe}',
     "targets.hello.toolchain.download", "boolean"),
    ("commit: 0123456789abcdef0123456789abcdef01234567", "commit: v1",
     "targets.hello.commit", "pattern"),
])
def test_wrong_type_names_line_and_key_path(
    root: Path, old: str, new: str, path: str, words: str
) -> None:
    assert old in BASE
    err = load_error(root, BASE.replace(old, new))
    assert err.message.startswith(f"{root / 'matrix.yaml'}:{line_of(old)}: {path}: ")
    assert words in err.message


@pytest.mark.parametrize("name", ["go", "rust", "c", "swift"])
def test_a_target_or_comparison_named_like_a_toolchain_keeps_its_name_in_the_key_path(
        root: Path, name: str) -> None:
    """A toolchain's kind is a tag in pydantic's error location, dropped only right after
    ``toolchain``: a target or comparison of that name is named in the error."""
    text = BASE.replace("  hello:\n", f"  {name}:\n").replace("target: hello", f"target: {name}")
    err = load_error(root, text.replace("  fx:\n", f"  {name}:\n").replace(
        'command: ["{hello}"]', "command: x"))
    assert f"comparisons.{name}.scenarios.0.command: Input should be a valid list" in err.message
    err = load_error(root, text.replace('version: "1.22.1"', "version: 122"))
    assert f"targets.{name}.toolchain.version: Input should be a valid string" in err.message


def test_runs_must_be_a_multiple_of_rounds(root: Path) -> None:
    err = load_error(root, BASE.replace("runs: 4", "runs: 5"))
    assert "comparisons.fx.scenarios.0" in err.message
    assert "multiple of rounds" in err.message


def test_comparison_naming_an_unknown_target(root: Path) -> None:
    err = load_error(root, BASE.replace("    target: hello", "    target: helo"))
    assert f"{root / 'matrix.yaml'}:{line_of('target: hello')}:" in err.message
    assert "comparisons.fx.target" in err.message
    assert "'helo'" in err.message
    assert "did you mean 'hello'?" in err.message


def test_comparison_naming_an_unknown_series(root: Path) -> None:
    err = load_error(root, BASE.replace("greet: [greet]", "greet: [gret]"))
    assert f"{root / 'matrix.yaml'}:{line_of('greet: [greet]')}:" in err.message
    assert "comparisons.fx.candidates.greet" in err.message
    assert "patches/gret/series" in err.message
    assert "did you mean 'greet'?" in err.message


def test_unknown_series_in_baseline(root: Path) -> None:
    err = load_error(root, BASE.replace("    candidates:", "    baseline: [nope]\n    candidates:"))
    assert "comparisons.fx.baseline" in err.message
    assert "'nope'" in err.message
    assert "did you mean" not in err.message


@pytest.mark.parametrize("text", ["", "- a\n- b\n", "just a string\n"])
def test_top_level_must_be_a_mapping(root: Path, text: str) -> None:
    err = load_error(root, text)
    assert "top level must be a mapping" in err.message


def test_unsupported_version(root: Path) -> None:
    err = load_error(root, BASE.replace("version: 1", "version: 2"))
    assert err.message.startswith(f"{root / 'matrix.yaml'}:1: version:")


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        config.load(tmp_path / "nope.yaml")


@pytest.mark.parametrize("artifact", ["../hello", "/usr/bin/hello"])
def test_artifact_paths_must_stay_in_the_tree(root: Path, artifact: str) -> None:
    err = load_error(root, BASE.replace("artifacts: [hello]", f"artifacts: [{artifact!r}]"))
    assert "targets.hello.build.artifacts" in err.message
    assert "inside the tree" in err.message


def test_rootfs_leaving_the_repository(root: Path) -> None:
    err = load_error(root, BASE.replace("    target: hello", "    target: hello\n    rootfs: ../x"))
    assert "comparisons.fx.rootfs" in err.message
    assert "leaves the repository" in err.message


def test_missing_overlay(root: Path) -> None:
    err = load_error(root, BASE.replace("    target: hello", "    target: hello\n    overlays: [ov]"))
    assert "comparisons.fx.overlays" in err.message
    assert "overlays/ov" in err.message


def test_baseline_is_a_reserved_candidate_name(root: Path) -> None:
    err = load_error(root, BASE.replace("greet: [greet]", "baseline: [greet]"))
    assert "reserved" in err.message


def test_docker_backend_needs_a_pinned_image(root: Path) -> None:
    text = BASE.replace("      artifacts: [hello]",
                        "      artifacts: [hello]\n      backend: docker\n      image: golang:1")
    err = load_error(root, text)
    assert "targets.hello.build" in err.message
    assert "digest" in err.message


def _with_build(extra: str) -> str:
    return BASE.replace("      artifacts: [hello]", "      artifacts: [hello]\n" + extra)


def test_docker_image_is_a_digest_or_a_recipe(root: Path) -> None:
    digest = "0" * 64
    project = config.load(write(root, _with_build(
        f"      backend: docker\n      image: golang@sha256:{digest}")))
    assert project.target("hello").build.image == f"golang@sha256:{digest}"
    project = config.load(write(root, _with_build(
        "      backend: docker\n      image: {recipe: go-busybox}")))
    image = project.target("hello").build.image
    assert isinstance(image, config.ImageRecipe) and image.recipe == "go-busybox"


@pytest.mark.parametrize(("extra", "needle"), [
    ("      backend: docker", "needs 'image'"),
    ("      backend: docker\n      image: golang@sha256:abc", "64 hex"),
    ("      backend: docker\n      image: {recipe: alpine}", "go-busybox"),
    ("      backend: docker\n      image: {recipe: go-busybox, tag: x}", "unknown key"),
    ("      image: {recipe: go-busybox}", "only by the docker backend"),
])
def test_docker_image_errors(root: Path, extra: str, needle: str) -> None:
    err = load_error(root, _with_build(extra))
    assert "targets.hello.build" in err.message
    assert needle in err.message + (err.detail or "")


def test_unknown_target_and_comparison_by_name(root: Path) -> None:
    project = config.load(write(root, BASE))
    with pytest.raises(ConfigError, match="did you mean 'hello'"):
        project.target("helo")
    with pytest.raises(ConfigError, match="did you mean 'fx'"):
        project.comparison("fxx")


def test_source_overrides_from_environment_and_flags() -> None:
    env = {"PATCHBENCH_SOURCE_MY_TARGET": "/src/a", "PATCHBENCH_SOURCE_EMPTY": "", "HOME": "/x"}
    out = config.parse_source_overrides(["hello=/src/hello", "my-target=/src/b"], env)
    assert out == {"my-target": "/src/b", "hello": "/src/hello"}


@pytest.mark.parametrize("pair", ["hello", "hello=", "=x", "Bad Name=/x"])
def test_malformed_source_override(pair: str) -> None:
    with pytest.raises(ConfigError, match="TARGET=PATH_OR_URL"):
        config.parse_source_overrides([pair], {})


def test_a_duplicate_key_is_refused_naming_both_lines(root: Path) -> None:
    # YAML itself keeps the last of two equal keys without a word; a pinned commit given twice
    # must not silently become the second one
    text = BASE.replace(
        "    ref: v1\n", "    ref: v1\n    commit: fedcba9876543210fedcba9876543210fedcba98\n"
    )
    err = load_error(root, text)
    first = line_of("ref: v1") + 1
    assert err.message == (
        f"{root / 'matrix.yaml'}:{first + 1}: targets.hello.commit: duplicate key (first set on "
        f"line {first}); YAML would silently keep only the last one"
    )


def test_the_same_key_in_different_mappings_is_fine(root: Path) -> None:
    second = BASE[BASE.index("  hello:"):BASE.index("comparisons:")].replace("hello:", "other:", 1)
    text = BASE.replace("comparisons:", second + "comparisons:")
    project = config.load(write(root, text))
    assert set(project.matrix.targets) == {"hello", "other"}


def test_backend_switch_builds_every_go_target_in_docker(root: Path) -> None:
    project = config.load(write(root, BASE))
    assert project.with_backend(None) is project
    docker = project.with_backend("docker")
    recipe = docker.target("hello").build
    assert recipe.backend == "docker" and recipe.image == config.ImageRecipe(recipe="go-busybox")
    assert project.target("hello").build.backend == "host"  # the loaded project is unchanged
    assert docker.with_backend("host").target("hello").build.image is None
    with pytest.raises(ConfigError, match="expected host or docker"):
        project.with_backend("podman")


def test_default_image_needs_a_c_toolchain_for_cgo_or_make() -> None:
    def target(cgo: bool, commands: list[list[str]]) -> config.Target:
        return config.Target.model_validate({
            "url": "x", "ref": "v1", "commit": "0" * 40,
            "toolchain": {"kind": "go", "version": "1.23.6", "cgo": cgo},
            "build": {"commands": commands, "artifacts": ["a"]}})

    assert config.default_image(target(False, [["go", "build"]])).recipe == "go-busybox"
    assert config.default_image(target(True, [["go", "build"]])).recipe == "debian-runc"
    assert config.default_image(target(False, [["make", "runc"]])).recipe == "debian-runc"
