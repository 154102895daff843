"""matrix.yaml -> typed, validated, frozen objects.

An unknown key, a wrong type, a missing file or a path leaving the repository stops the run with
one message naming the file, the key path, the line and, where it helps, "did you mean ...".
YAML is read with ``safe_load`` only: a ``!!python/object`` tag is an error, never code.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from patchbench.config.scenarios import (
    AnyScenario,
    ScenarioConfig,
    config_models,
    no_kind_registered,
    rebuild_on_registration,
)
from patchbench.errors import ConfigError
from patchbench.util import safeargs, yamlsafe
from patchbench.util.limits import MAX_CELLS, MAX_SCENARIOS, MAX_TIMEOUT_S
from patchbench.util.models import NAME_RE, Name
from patchbench.util.models import StrictModel as _Model
from patchbench.util.suggest import suggest

SCHEMA_VERSION = 1
REQUIREMENTS = ("linux", "macos", "apple-silicon", "root", "cgroups")


class GoToolchain(_Model):
    """A pinned Go toolchain. ``download: true`` lets the go command fetch exactly that version
    through the Go module proxy (GOTOOLCHAIN=go<version>); otherwise the go on PATH must already be
    that version, and any other one is refused."""

    kind: Literal["go"] = Field(description="`go`: a Go toolchain.")
    version: Annotated[str, Field(pattern=r"^1\.\d+(\.\d+)?((rc|beta)\d+)?$")] = Field(
        description="The exact Go version, e.g. `1.23.6`; any other go is refused.")
    download: bool = Field(default=False, description=(
        "Let the go command fetch exactly this version through the Go module proxy "
        "(`GOTOOLCHAIN=go<version>`); otherwise the go on `PATH` must be that version."))
    cgo: bool = Field(default=False, description=(
        "Build with cgo: the C compiler, linker and C library join the fingerprint."))
    fingerprint: dict[Name, list[str]] = Field(default_factory=dict, description=(
        "Extra commands (name → argv) whose output goes into the toolchain fingerprint "
        "(C compiler, libseccomp, ...)."))


class SwiftToolchain(_Model):
    """Swift/Xcode on macOS; the fingerprint comes from ``swift --version`` and
    ``xcodebuild -version``."""

    kind: Literal["swift"] = Field(description="`swift`: Swift/Xcode on macOS.")
    version: str = Field(description="The Swift version the builds must be made with.")
    fingerprint: dict[Name, list[str]] = Field(default_factory=dict, description=(
        "Extra commands (name → argv) whose output goes into the toolchain fingerprint."))


class CToolchain(_Model):
    """A pinned C toolchain (autotools, meson or make recipes): the compiler driver and the
    programs it runs (cc1, collect2, as, ld) go into the fingerprint by path, version and sha256,
    with the pkg-config versions of the linked libraries. ``CFLAGS``, ``CPPFLAGS`` and ``LDFLAGS``
    are pinned here and ``-ffile-prefix-map=<tree>=.`` is added, so that builds in different
    directories give the same bytes (``SOURCE_DATE_EPOCH`` is set for every toolchain)."""

    kind: Literal["c"] = Field(description="`c`: a C compiler driver (gcc or clang).")
    cc: str = Field(default="gcc", pattern=r"^[A-Za-z0-9][A-Za-z0-9._+-]*$", description=(
        "The compiler driver on `PATH` (`CC`), e.g. `gcc` or `clang-16`."))
    version: str = Field(pattern=r"^\d+(\.\d+)*$", description=(
        "The exact version `CC -dumpfullversion` must print, e.g. `12.2.0`; any other is "
        "refused."))
    cflags: str = Field(default="-O2 -g", description=(
        "`CFLAGS`, pinned; `-ffile-prefix-map=<tree>=.` is appended."))
    cppflags: str = Field(default="", description="`CPPFLAGS`, pinned.")
    ldflags: str = Field(default="", description="`LDFLAGS`, pinned.")
    libraries: list[Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")]] = Field(
        default_factory=list, description=(
            "pkg-config names of the libraries the build links (e.g. `libseccomp`); each one's "
            "`--modversion` joins the fingerprint, and a missing one stops the build."))
    ccache: bool = Field(default=False, description=(
        "Compile through ccache (Debian's `ccache`), in a cache directory keyed by the "
        "toolchain fingerprint under `builds/ccache/`, shared by the variants."))
    fingerprint: dict[Name, list[str]] = Field(default_factory=dict, description=(
        "Extra commands (name → argv) whose output goes into the toolchain fingerprint "
        "(autoconf, automake, libtool versions, ...)."))


class RustToolchain(_Model):
    """A pinned Rust toolchain: ``rustc -vV`` and ``cargo -V`` with the binaries' sha256 in the
    fingerprint; the crates of each Cargo.lock fetched once into the source cache (``cargo
    fetch --locked``) and every variant built ``--offline --locked``; ``RUSTFLAGS`` pinned, with
    ``--remap-path-prefix`` for the crate cache and the target directory; a cargo target directory shared by
    the variants per (target, toolchain fingerprint, Cargo.lock hash), so a candidate's build
    starts warm."""

    kind: Literal["rust"] = Field(description="`rust`: rustc and cargo.")
    version: str = Field(pattern=r"^\d+\.\d+\.\d+$", description=(
        "The exact rustc release (`rustc -vV`'s `release:`), e.g. `1.95.0`; any other is "
        "refused."))
    rustup_toolchain: str | None = Field(
        default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$", description=(
            "The rustup toolchain to build with (`RUSTUP_TOOLCHAIN`), overriding the "
            "repository's `rust-toolchain.toml`; the manifest records both."))
    rustflags: str = Field(default="", description=(
        "`RUSTFLAGS`, pinned; `--remap-path-prefix` for the crate cache and the target "
        "directory is appended."))
    fingerprint: dict[Name, list[str]] = Field(default_factory=dict, description=(
        "Extra commands (name → argv) whose output goes into the toolchain fingerprint."))


Toolchain = Annotated[GoToolchain | SwiftToolchain | CToolchain | RustToolchain,
                      Field(discriminator="kind")]


# made by patchbench.docker.images, no registry
IMAGE_RECIPES = ("go-busybox", "debian-runc", "debian-c", "debian-rust")


class ImageRecipe(_Model):
    """An image patchbench builds itself (patchbench/docker/images.py): ``{recipe: go-busybox}``
    (busybox plus the pinned Go, small), ``{recipe: debian-runc}`` (Debian by mmdebstrap with
    runc's build dependencies, plus the pinned Go), ``{recipe: debian-c}`` (Debian with gcc,
    autotools and crun's libraries) or ``{recipe: debian-rust}`` (Debian with the linker, plus the
    host's Rust toolchain of the pinned release copied in)."""

    recipe: Literal["go-busybox", "debian-runc", "debian-c", "debian-rust"] = Field(description=(
        "`go-busybox` (static busybox plus the pinned Go), `debian-runc` (Debian bookworm by "
        "mmdebstrap with runc's build dependencies, plus the pinned Go), `debian-c` (Debian "
        "bookworm with gcc, autotools, libtool, gperf, pkg-config, python3, ccache and libyajl, "
        "libcap, libseccomp, libsystemd) or `debian-rust` (Debian bookworm with gcc, pkg-config "
        "and libseccomp-dev, plus the host's Rust sysroot of the pinned release)."))


class BuildRecipe(_Model):
    """How a target is built: the same commands, in the same environment, for every variant."""

    backend: Literal["host", "docker"] = Field(default="host", description=(
        "Where the build runs: on this machine, or in a container of `image` "
        "(`--backend` overrides it)."))
    commands: list[list[str]] = Field(min_length=1, description=(
        "The build commands (argv lists), run one after the other in the patched worktree."))
    env: dict[str, str] = Field(default_factory=dict, description=(
        "Environment variables added to the toolchain's allowlisted environment (over its own "
        "values), recorded in the fingerprint and the manifest; a cargo profile override such as "
        "`CARGO_PROFILE_RELEASE_LTO: \"false\"` also gives the target its own shared target "
        "directory."))
    artifacts: list[str] = Field(min_length=1, description=(
        "What the build produces, relative to the worktree: files, or directories when the path "
        "ends in `/` (copied whole, e.g. an install root). Each file is also a placeholder."))
    timeout: float = Field(default=1800.0, gt=0, le=MAX_TIMEOUT_S, description=(
        f"Seconds the whole build may take (at most {MAX_TIMEOUT_S:,.0f}, a day)."))
    image: str | ImageRecipe | None = Field(default=None, description=(
        "Docker backend only: a registry image pinned by digest (`name@sha256:...`, never pulled "
        "when the engine holds it) or `{recipe: NAME}`, an image made here without a registry."))
    version: list[str] = Field(default_factory=list, description=(
        "A command run after the build from the artifacts directory; its output goes into the "
        "manifest (e.g. `[runc, --version]`, to show the patched commit, never `-dirty`)."))
    network: bool = Field(default=False, description=(
        "Whether the build's commands may reach the network. Off by default: they run in a "
        "network namespace of their own (the docker backend: `--network none`), after "
        "patchbench fetched what they need with the network (the sources and submodules, "
        "Cargo.lock's crates by `cargo fetch`, go.mod's modules by `go mod download`, with "
        "`GOPROXY=off` for the build). Turn it on for a recipe that downloads while it builds."))

    @field_validator("artifacts")
    @classmethod
    def _relative(cls, value: list[str]) -> list[str]:
        for item in value:
            _check_relative(item, "artifact")
        return value

    @model_validator(mode="after")
    def _docker_needs_image(self) -> BuildRecipe:
        if self.backend == "docker" and not self.image:
            raise ValueError("the docker backend needs 'image': name@sha256:... or {recipe: NAME} "
                             f"(recipes: {', '.join(IMAGE_RECIPES)})")
        if self.image is not None and self.backend != "docker":
            raise ValueError("'image' is used only by the docker backend (backend: docker)")
        if isinstance(self.image, str) and not re.fullmatch(r"[^@\s]+@sha256:[0-9a-f]{64}", self.image):
            raise ValueError("'image' must be pinned by digest (name@sha256:<64 hex digits>)")
        if isinstance(self.image, str):
            safeargs.check_image(self.image, "'image'")
        return self


class Submodule(_Model):
    """A git submodule of a target (or of another submodule: its path is then below that one's).
    Its commit is never written here: it is the gitlink the parent's pinned tree records, fetched
    into the source cache, checked and checked out in every variant's worktree."""

    name: Name = Field(description=(
        "Its name for `--source NAME=DIR` (or `PATCHBENCH_SOURCE_<NAME>`) and the source cache."))
    path: str = Field(description=(
        "Where the gitlink is, relative to the target's tree, e.g. `libocispec` or "
        "`libocispec/runtime-spec` (a submodule of a submodule)."))
    url: str = Field(description="Where its commits come from (`--source NAME=...` replaces it).")
    omit: str | None = Field(default=None, description=(
        "Not fetched nor checked out (its directory stays empty); the reason, recorded in every "
        "manifest, e.g. `built with Debian's libyajl (--disable-embedded-yajl)`."))

    @field_validator("path")
    @classmethod
    def _path(cls, value: str) -> str:
        _check_relative(value, "submodule")
        if not value or value.endswith("/") or "//" in value or value in (".",):
            raise ValueError(f"submodule path {value!r}: expected a/b, relative, no trailing /")
        return value

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        return safeargs.check_url(value, "url")


class Target(_Model):
    """An upstream project pinned to one commit, with its toolchain and build recipe."""

    description: str = Field(default="", description="Free text shown by `invoke list`.")
    url: str = Field(description=(
        "Where the source comes from: an https, ssh, git or file URL, or a directory of this "
        "repository (`--source TARGET=...` replaces it)."))
    ref: str = Field(description=(
        "The tag or branch; it must still point at `commit`. Or the 40-hex commit itself, for "
        "an untagged commit (e.g. the base of a pull request)."))
    commit: Annotated[str, Field(pattern=r"^[0-9a-f]{40}$")] = Field(description=(
        "The pinned 40-hex commit; a `ref` that now points elsewhere is refused."))
    toolchain: Toolchain = Field(description="The pinned toolchain, chosen by its `kind`.")
    build: BuildRecipe = Field(description="How every variant is built.")
    requires: list[Literal["linux", "macos", "apple-silicon", "root", "cgroups"]] = Field(
        default_factory=list, description=(
            "What the machine must offer; an unmet requirement stops with exit 16 before "
            "building."))
    tools: list[str] = Field(default_factory=list, description=(
        "Run-time tools that must be on `PATH`, e.g. `busybox`."))
    submodules: list[Submodule] = Field(default_factory=list, description=(
        "Its git submodules, recursively (each one's commit is its parent's gitlink); every "
        "gitlink of the pinned tree must be declared, fetched or `omit`ted."))
    runtime: Literal["runc", "apple-container", "docker-run", "containerd"] | None = Field(
        default=None, description=(
            "The runtime set up around the binaries (state directories, daemons, cleanup, "
            "placeholders); none for a plain command."))

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        return safeargs.check_url(value, "url")

    @field_validator("ref")
    @classmethod
    def _ref(cls, value: str) -> str:
        return safeargs.check_ref(value, "ref")

    @field_validator("submodules")
    @classmethod
    def _unique_submodules(cls, value: list[Submodule]) -> list[Submodule]:
        for what in ("name", "path"):
            seen = [getattr(m, what) for m in value]
            dupes = sorted({v for v in seen if seen.count(v) > 1})
            if dupes:
                raise ValueError(f"submodule {what}s must be unique; repeated: {', '.join(dupes)}")
        return value


def default_image(target: Target) -> ImageRecipe:
    """The build image for ``--backend docker`` when a target names none: for a C target Debian
    with its build tools (debian-c), for a Rust target Debian with the host's Rust (debian-rust);
    for Go, Debian with a C toolchain for cgo or make builds (runc), busybox plus Go otherwise."""
    tc = target.toolchain
    if isinstance(tc, CToolchain):
        return ImageRecipe(recipe="debian-c")
    if isinstance(tc, RustToolchain):
        return ImageRecipe(recipe="debian-rust")
    cgo = isinstance(tc, GoToolchain) and tc.cgo
    if cgo or any(argv[0] == "make" for argv in target.build.commands):
        return ImageRecipe(recipe="debian-runc")
    return ImageRecipe(recipe="go-busybox")


def gate_problems(gate: Sequence[str], scenarios: Sequence[ScenarioConfig]) -> list[str]:
    """What is wrong with gating on the metrics ``gate``: an unknown name, or one that a timed
    scenario does not measure (its ``metrics``)."""
    from patchbench.analysis import metrics as mx

    out = []
    for name in gate:
        if name not in mx.METRICS:
            out.append(f"unknown metric {name!r}{suggest(name, mx.METRICS)}; known: "
                       + ", ".join(mx.METRICS))
            continue
        lacking = [sc.name for sc in scenarios
                   if (names := getattr(sc, "metric_names", None)) is not None and name not in names]
        if lacking:
            out.append(f"{name!r} is not among the metrics of scenario {', '.join(lacking)} "
                       "(add it to its `metrics`)")
    return out


class Comparison(_Model):
    """One target, its baseline and candidates, and the scenarios that measure them."""

    # its scenarios' union is built from the registered kinds' config models on first use
    model_config = ConfigDict(defer_build=True)

    description: str = Field(default="", description="Free text shown by `invoke list`.")
    target: Name = Field(description="The target (a key of `targets`) every variant is built from.")
    baseline: list[Name] = Field(default_factory=list, description=(
        "Patch series applied to the baseline too (e.g. measuring hooks); empty: the pinned "
        "commit unchanged."))
    candidates: dict[Name, list[Name]] = Field(min_length=1, description=(
        "Candidate name → the patch series (directories under `patches/`) applied, in order, "
        "on top of the baseline's. With the baseline, times a scenario's cells per variant "
        f"(conditions, parameters), at most {MAX_CELLS:,} cells, the cells a scenario of a saved "
        "run may hold."))
    overlays: list[Name] = Field(default_factory=list, description=(
        "Directories under `overlays/` whose files are added identically to every variant."))
    scenarios: list[AnyScenario] = Field(min_length=1, max_length=MAX_SCENARIOS, description=(
        "What is measured, each a scenario of one kind (`kind`, default `command`); names "
        f"must be unique; at most {MAX_SCENARIOS:,}."))
    alpha: float = Field(default=0.05, gt=0, lt=1, description=(
        "Significance level of the verdict (p < alpha)."))
    min_effect: float = Field(default=0.02, ge=0, lt=1, description=(
        "The smallest speedup or slowdown (as a fraction) that counts as faster or slower."))
    seed: int | None = Field(default=None, description=(
        "Seed of the round order and of the stress draws; default: a new one per run "
        "(`--seed` overrides it)."))
    rootfs: str | None = Field(default=None, description=(
        "runc: the containers' root filesystem, a directory or tarball; default: a busybox "
        "rootfs made here."))
    runtime: Literal["docker-run"] | None = Field(default=None, description=(
        "Measure one level up: `docker-run` registers every variant's runc with a dockerd of "
        "patchbench's own (only for a target whose runtime is runc)."))
    gate: list[str] = Field(default_factory=lambda: ["wall"], min_length=1, description=(
        "The metrics whose \"slower\" fails `--gate` (each measured by every timed scenario's "
        "`metrics`); `--gate-metric` overrides it."))
    gate_margin: float | None = Field(default=None, gt=0, lt=1, description=(
        "`--gate`: the slowdown (a fraction) a candidate may have and still pass. The gate "
        "passes a candidate shown slower by less than it, fails one shown slower by more, and "
        "adds rounds while neither is shown; default: `min_effect`."))

    @model_validator(mode="after")
    def _gated(self) -> Comparison:
        for problem in gate_problems(self.gate, self.scenarios):
            raise ValueError(f"gate: {problem}")
        return self

    @model_validator(mode="after")
    def _unique(self) -> Comparison:
        names = [s.name for s in self.scenarios]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"scenario names must be unique; repeated: {', '.join(dupes)}")
        if "baseline" in self.candidates:
            raise ValueError("'baseline' is reserved; name the candidate after its patch")
        variants = 1 + len(self.candidates)
        for sc in self.scenarios:  # refused before anything is built, not when saving
            cells = variants * sc.cells_per_variant()
            if cells > MAX_CELLS:
                raise ValueError(
                    f"candidates: {variants:,} variants (the baseline and {len(self.candidates):,} "
                    f"candidates) make {cells:,} cells in scenario {sc.name}, more than "
                    f"{MAX_CELLS:,}, the cells a scenario of a saved run may hold")
        return self


class Matrix(_Model):
    """The top level of `matrix.yaml`."""

    model_config = ConfigDict(defer_build=True)  # it holds Comparison's schema

    version: Literal[1] = Field(description="The matrix format version; always 1.")
    targets: dict[Name, Target] = Field(description="Target name → the pinned upstream.")
    comparisons: dict[Name, Comparison] = Field(description=(
        "Comparison name → what `invoke compare NAME` builds and measures."))


def _rebuild() -> None:
    # a kind registered after their first use (a test's) is in their union once rebuilt
    for model in (Comparison, Matrix):
        if model.__pydantic_complete__:
            model.model_rebuild(force=True)


rebuild_on_registration(_rebuild)


def _check_relative(path: str, what: str) -> None:
    p = Path(path)
    if p.is_absolute() or ".." in p.parts:
        raise ValueError(f"{what} path {path!r} must stay inside the tree (relative, no '..')")


# --- loading -------------------------------------------------------------------------------


@dataclass(frozen=True)
class NamedTarget:
    """A target of the matrix with its name, resolved once (``Project.target_of``, ``named_target``)
    and handed to every stage: the name keys the source and artifact caches and names it in messages,
    the spec is what is fetched, checked and built."""

    name: str
    spec: Target


class Project:
    """The loaded matrix plus where it came from (the repository root holds patches/, overlays/)."""

    def __init__(self, matrix: Matrix, path: Path):
        self.matrix = matrix
        self.path = path
        self.root = path.parent

    def with_backend(self, backend: str | None) -> Project:
        """This project with every Go, C and Rust target built by ``backend`` (``--backend``):
        docker takes the target's image, else ``default_image``; host drops the image."""
        if backend is None:
            return self
        if backend not in ("host", "docker"):
            raise ConfigError(f"--backend {backend!r}: expected host or docker")
        targets = {}
        for name, t in self.matrix.targets.items():
            if isinstance(t.toolchain, GoToolchain | CToolchain | RustToolchain):
                image = (t.build.image or default_image(t)) if backend == "docker" else None
                t = t.model_copy(update={"build": t.build.model_copy(
                    update={"backend": backend, "image": image})})
            targets[name] = t
        return Project(self.matrix.model_copy(update={"targets": targets}), self.path)

    def target(self, name: str) -> Target:
        if name not in self.matrix.targets:
            raise ConfigError(
                f"no target {name!r} in {self.path}" + suggest(name, self.matrix.targets),
                hint="`patchbench list` shows the targets; add one: patchbench target new NAME "
                     "--runtime R --source DIR_OR_URL --ref REF",
            )
        return self.matrix.targets[name]

    def named_target(self, name: str) -> NamedTarget:
        """The target ``name`` with its name (ConfigError, with a suggestion, for no such one)."""
        return NamedTarget(name, self.target(name))

    def target_of(self, comp: Comparison) -> NamedTarget:
        """The target a comparison of this matrix builds (``load`` checked that it exists)."""
        return NamedTarget(comp.target, self.matrix.targets[comp.target])

    def comparison(self, name: str) -> Comparison:
        if name not in self.matrix.comparisons:
            raise ConfigError(
                f"no comparison {name!r} in {self.path}" + suggest(name, self.matrix.comparisons),
                hint="`patchbench list` shows the comparisons; add one: patchbench comparison "
                     "new NAME --target T --candidate SERIES",
            )
        return self.matrix.comparisons[name]

    def series_dir(self, name: str) -> Path:
        return self.root / "patches" / name

    def overlay_dir(self, name: str) -> Path:
        return self.root / "overlays" / name

    def all_series(self) -> list[str]:
        found = {p.parent.name for p in (self.root / "patches").glob("*/series")
                 if not p.parent.name.startswith(".")}  # hidden: an editing command's temporary
        for comp in self.matrix.comparisons.values():
            found.update(comp.baseline)
            for series in comp.candidates.values():
                found.update(series)
        return sorted(found)


def _line_index(text: str, path: Path | None = None) -> dict[tuple[str, ...], int]:
    """Map each key path of the YAML document to its 1-based line, for error messages; with
    ``path``, a key given twice in one mapping is an error."""
    index: dict[tuple[str, ...], int] = {}
    duplicates: list[tuple[tuple[str, ...], int, int]] = []
    try:
        root = yaml.compose(text, Loader=yamlsafe.SAFE_LOADER)
    except yaml.YAMLError:
        return index

    def walk(node: yaml.Node, path: tuple[str, ...]) -> None:
        index.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                kpath = (*path, str(key.value))
                if kpath in index and kpath != path:
                    duplicates.append((kpath, index[kpath], key.start_mark.line + 1))
                index[kpath] = key.start_mark.line + 1
                walk(value, kpath)
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                walk(item, (*path, str(i)))

    if root is not None:
        walk(root, ())
    if duplicates and path is not None:
        kpath, first, again = duplicates[0]
        raise ConfigError(
            f"{path}:{again}: {'.'.join(kpath)}: duplicate key (first set on line {first}); YAML "
            "would silently keep only the last one",
        )
    return index


def _fields_at(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """The field names valid at ``loc`` (for 'did you mean' on an unknown key)."""
    current: Any = model
    kinds = config_models()
    for part in loc[:-1]:
        if str(part) in kinds and (current is ScenarioConfig or not (
                isinstance(current, type) and issubclass(current, BaseModel))):
            current = kinds[str(part)]  # the tag of a scenario's kind
            continue
        if isinstance(current, type) and issubclass(current, BaseModel):
            field = current.model_fields.get(str(part))
            if field is None:
                return []
            current = field.annotation
        else:
            args = getattr(current, "__args__", ())
            # dict[str, X] -> X ; list[X] -> X ; unions: the first model among them
            models = [a for a in args if isinstance(a, type) and issubclass(a, BaseModel)]
            if models:
                current = models[0]
            elif args:
                current = args[-1]
            else:
                return []
            if isinstance(current, type) and issubclass(current, BaseModel):
                continue
            inner = getattr(current, "__args__", ())
            models = [a for a in inner if isinstance(a, type) and issubclass(a, BaseModel)]
            current = models[0] if models else current
    if isinstance(current, type) and issubclass(current, BaseModel):
        return list(current.model_fields)
    return []


def _plain_loc(raw: tuple[Any, ...]) -> tuple[str, ...]:
    """An error location without pydantic's union tags (toolchain kinds, scenario kinds)."""
    loc = [str(p) for p in raw if not str(p).startswith("function-")]
    out: list[str] = []
    kinds = config_models()
    for i, part in enumerate(loc):
        if i >= 1 and loc[i - 1] == "toolchain" and part in TOOLCHAIN_TAGS:
            continue  # the toolchain's kind tag, right after ``toolchain`` (not a name: "go")
        if i >= 2 and loc[i - 2] == "scenarios" and part in kinds:
            continue  # the scenario's kind tag, right after its index
        out.append(part)
    return tuple(out)


TOOLCHAIN_TAGS = ("GoToolchain", "SwiftToolchain", "CToolchain", "RustToolchain", "go", "swift",
                  "c", "rust")


def _format_validation(
    err: ValidationError, path: Path, text: str, lines: dict[tuple[str, ...], int]
) -> ConfigError:
    messages = []
    for item in err.errors():
        loc = _plain_loc(item["loc"])
        line = None
        for cut in range(len(loc), -1, -1):
            if loc[:cut] in lines:
                line = lines[loc[:cut]]
                break
        where = ".".join(loc) or "(top level)"
        msg = item["msg"]
        if item["type"] == "extra_forbidden":
            msg = "unknown key" + suggest(loc[-1], _fields_at(Matrix, tuple(item["loc"])))
        elif item["type"] == "missing":
            msg = "missing key (required here)"
        elif msg.startswith("Value error, "):
            msg = msg[len("Value error, ") :]
        messages.append(f"{path}:{line or '?'}: {where}: {msg}")
    first, *rest = messages
    return ConfigError(
        first,
        hint="docs/matrix.md describes every key",
        detail="\n".join(rest) if rest else None,
    )


def load(path: Path, *, pending_series: frozenset[str] = frozenset()) -> Project:
    """Load and validate ``path``; also check that every named patch series and overlay exists
    (except ``pending_series``: the series a ``series add`` is about to make)."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}", hint=(
            f"no project in {path.parent}: make one there with `patchbench --project "
            f"{path.parent} init` (or give the --project that has one)")
            if isinstance(exc, FileNotFoundError) else None) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        at = raw[: exc.start].count(b"\n") + 1
        raise ConfigError(f"{path}:{at}: not UTF-8 text (byte {exc.start})",
                          hint="save the matrix as UTF-8") from None
    try:
        # the safe loader only (libyaml's when built), after bounds on size, depth and aliases
        data = yamlsafe.load(text)
    except yamlsafe.YamlLimitError as exc:
        raise ConfigError(f"{path}:{exc.line or '?'}: refused: {exc.message}",
                          hint="a matrix is plain, small YAML") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{mark.line + 1}" if mark is not None else "?"
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(
            f"{path}:{where}: not valid YAML: {problem}",
            hint="only plain YAML is accepted (no !!python tags or other custom types)",
        ) from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}:1: the top level must be a mapping with 'version', 'targets'")
    lines = _line_index(text, path)  # also refuses duplicate keys
    if not config_models():
        raise no_kind_registered()
    try:
        matrix = Matrix.model_validate(data)
    except ValidationError as exc:
        raise _format_validation(exc, path, text, lines) from None
    project = Project(matrix, path)
    existing = [s for s in project.all_series() if (project.series_dir(s) / "series").is_file()]
    for cname, comp in matrix.comparisons.items():
        if comp.target not in matrix.targets:
            line = lines.get(("comparisons", cname, "target"), "?")
            raise ConfigError(
                f"{path}:{line}: comparisons.{cname}.target: names target {comp.target!r}, "
                "which is not defined" + suggest(comp.target, matrix.targets),
            )
        named = [("baseline", s) for s in comp.baseline] + [
            (f"candidates.{cand}", s) for cand, series in comp.candidates.items() for s in series
        ]
        for key, series in named:
            if series in pending_series:
                continue
            if not (project.series_dir(series) / "series").is_file():
                line = lines.get(("comparisons", cname, *key.split(".")), "?")
                raise ConfigError(
                    f"{path}:{line}: comparisons.{cname}.{key}: patch series {series!r} has no "
                    f"file patches/{series}/series" + suggest(series, existing),
                )
        for overlay in comp.overlays:
            if not project.overlay_dir(overlay).is_dir():
                line = lines.get(("comparisons", cname, "overlays"), "?")
                raise ConfigError(
                    f"{path}:{line}: comparisons.{cname}.overlays: no directory overlays/{overlay}"
                )
        if comp.rootfs is not None:
            _check_repo_path(project, comp.rootfs, f"comparisons.{cname}.rootfs", lines)
        target_runtime = matrix.targets[comp.target].runtime
        if comp.runtime is not None and target_runtime != "runc":
            line = lines.get(("comparisons", cname, "runtime"), "?")
            raise ConfigError(
                f"{path}:{line}: comparisons.{cname}.runtime: {comp.runtime} measures a runc "
                f"target through Docker, but target {comp.target!r} has runtime "
                f"{target_runtime or 'none'}",
                hint="remove 'runtime:' or name a target with 'runtime: runc'",
            )
    return project


def runtime_of(comp: Comparison, target: Target) -> str | None:
    """The runtime a comparison of ``target`` measures with: its own ``runtime:``, else its
    target's."""
    return comp.runtime or target.runtime


def shown(path: Path) -> str:
    """``path`` as the user would write it: relative to the current directory when inside it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError):
        return str(path)


def _check_repo_path(
    project: Project, value: str, key: str, lines: dict[tuple[str, ...], int]
) -> None:
    p = Path(value)
    if p.is_absolute():
        return  # an explicit path of the user's machine, given on purpose
    if not (project.root / value).resolve().is_relative_to(project.root.resolve()):
        line = lines.get(tuple(key.split(".")), "?")
        raise ConfigError(f"{project.path}:{line}: {key}: {value!r} leaves the repository")


def check_source_names(project: Project, sources: dict[str, str],
                       flagged: frozenset[str]) -> list[str]:
    """A ``--source NAME=...`` must name a target or a declared submodule (a typo is told, not
    silently ignored): ConfigError for a flag, a warning (returned) for PATCHBENCH_SOURCE_*."""
    targets = project.matrix.targets
    known = set(targets) | {m.name for t in targets.values() for m in t.submodules}
    warnings = []
    for name in sources:
        if name in known:
            continue
        msg = f"--source {name}=...: no target {name!r} in {project.path.name}" + suggest(
            name, targets)
        if name in flagged:
            raise ConfigError(msg, hint="targets: " + ", ".join(targets))
        warnings.append(f"warning: PATCHBENCH_SOURCE_* names no target of this matrix: {msg}")
    return warnings


def parse_source_overrides(pairs: list[str], environ: dict[str, str]) -> dict[str, str]:
    """``--source TARGET=PATH_OR_URL`` (repeatable) over ``PATCHBENCH_SOURCE_<TARGET>``."""
    out: dict[str, str] = {}
    for key, value in environ.items():
        if key.startswith("PATCHBENCH_SOURCE_") and value:
            # PATCHBENCH_SOURCE_MY_RT__2 is target my-rt.2: '__' stands for '.', '_' for '-'
            name = key[len("PATCHBENCH_SOURCE_") :].lower().replace("__", ".").replace("_", "-")
            out[name] = _source(value, key)
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not re.match(NAME_RE, name) or not value:
            raise ConfigError(
                f"--source {pair!r}: expected TARGET=PATH_OR_URL", hint="e.g. --source runc=/src/runc"
            )
        out[name] = _source(value, f"--source {name}")
    return out


def _source(value: str, where: str) -> str:
    try:
        return safeargs.check_url(value, where)
    except safeargs.UnsafeValue as exc:
        raise ConfigError(str(exc), hint="give a local path (./x or /x) or an https, ssh, git "
                          "or file URL") from None
