"""``patchbench target new NAME --runtime R --source PATH_OR_URL --ref REF``: a target written into
matrix.yaml from a template (patchbench/templates/), so that no one writes a recipe by hand.

- The ref is resolved to its commit (``git ls-remote``; a 40-hex ref is the commit itself; a
  plain folder is snapshotted as ``compare`` does) and both are pinned; the commit is fetched into
  the source cache, where ``compare`` finds it.
- The toolchain is the one the source asks for: Go from go.mod (its ``toolchain`` line; else the
  ``go`` line, a minimum, which the installed Go meets or the module proxy's golang.org/toolchain
  provides), Rust from rust-toolchain.toml (an installed release only: patchbench downloads no
  Rust), C the compiler found. A pin that differs from what is installed is said; one that
  cannot be had is refused (exit 13) naming both versions. ``--toolchain`` pins another one.
- Recipe, artifacts, requirements, tools, submodules and runtime come from the template; a
  template without submodules takes those of the source's .gitmodules.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from patchbench import config
from patchbench.cli import editing, templates
from patchbench.errors import ConfigError, SourceError, ToolchainError
from patchbench.source import cache
from patchbench.util import cmd, safeargs
from patchbench.util.git import run_git
from patchbench.util.models import NAME_RE, NAME_RULE
from patchbench.util.progress import say
from patchbench.util.workspace import Workspace

GO_PROXY_SINCE = (1, 21, 0)  # golang.org/toolchain has go1.21.0 and later
_SHA = re.compile(r"^[0-9a-f]{40}$")


@dataclass
class Resolved:
    """A target entry made from a template, and what was found on the way."""

    entry: Any  # the round-trip mapping written under targets.NAME
    commit: str
    notes: list[str] = field(default_factory=list)


def check_name(name: str, what: str = "target") -> str:
    if not re.fullmatch(NAME_RE, name):
        raise ConfigError(f"{what} name {name!r}: {NAME_RULE}")
    return name


# --- the source --------------------------------------------------------------------------------


def _looks_remote(url: str) -> bool:
    return "://" in url or url.startswith("git@")


def _is_git(path: Path) -> bool:
    return (path / ".git").exists() or ((path / "HEAD").is_file() and (path / "objects").is_dir())


def source_url(ws: Workspace, source: str) -> tuple[str, str]:
    """(what matrix.yaml says, what git reads): a URL as given; a local folder relative to the
    project when inside it, else absolute."""
    try:
        safeargs.check_url(source, "--source")
    except safeargs.UnsafeValue as exc:
        raise ConfigError(str(exc), hint="give a local git clone (./x or /x) or an https, ssh, "
                          "git or file URL") from None
    if _looks_remote(source):
        return source, source
    path = Path(source).expanduser()
    if not path.is_dir():
        raise SourceError(f"--source {source}: no such folder",
                          hint="give a local git clone or the upstream's URL")
    path = path.resolve()
    try:
        shown = path.relative_to(ws.root.resolve()).as_posix() or "."
    except ValueError:
        shown = str(path)
    return shown, str(path)


def resolve_ref(url: str, ref: str | None, name: str) -> tuple[str, str]:
    """(ref, commit) of ``ref`` at ``url`` (None: the source's HEAD, pinned by its commit)."""
    if ref is not None:
        try:
            safeargs.check_ref(ref, "--ref")
        except safeargs.UnsafeValue as exc:
            raise ConfigError(str(exc)) from None
        if _SHA.match(ref):
            return ref, ref
    local = Path(url)
    if local.is_dir() and not _is_git(local):  # a plain folder: its snapshot, as compare makes it
        with tempfile.TemporaryDirectory() as tmp:
            commit = cache.snapshot_directory(local, Path(tmp) / "snapshot", ref or "snapshot")
        return (ref or commit), commit
    wanted = [ref, f"refs/tags/{ref}", f"refs/tags/{ref}^{{}}", f"refs/heads/{ref}"] if ref else ["HEAD"]
    try:
        out = run_git([*safeargs.GIT_TRANSPORTS, "ls-remote", "--", url, *wanted], timeout=120,
                      error=SourceError, what=f"resolve {ref or 'HEAD'} at {url}").stdout
    except SourceError as exc:
        raise SourceError(f"cannot read the source {url}", detail=exc.detail,
                          hint="check --source (a local clone works offline)") from None
    refs = {}
    for line in out.splitlines():
        sha, _, refname = line.partition("\t")
        refs[refname] = sha
    if ref is None:
        if "HEAD" not in refs:
            raise SourceError(f"{url} has no HEAD to pin", hint="give --ref TAG_OR_BRANCH")
        return refs["HEAD"], refs["HEAD"]
    for refname in (f"refs/tags/{ref}^{{}}", f"refs/tags/{ref}", f"refs/heads/{ref}", ref):
        if refname in refs:
            return ref, refs[refname]
    raise SourceError(f"--ref {ref}: no such tag or branch at {url}",
                      hint=f"list them: git ls-remote --tags --heads {url}; then patchbench target "
                           f"new {name} ... --ref ONE_OF_THEM (or a full commit SHA)")


def _show(repo: Path, commit: str, path: str) -> str | None:
    res = run_git(["show", f"{commit}:{path}"], cwd=repo, check=False, timeout=60)
    return res.stdout if res.returncode == 0 else None


# --- toolchains ---------------------------------------------------------------------------------


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", text)[:3])


def installed_go() -> str | None:
    if shutil.which("go") is None:
        return None
    res = cmd.run(["go", "env", "GOVERSION"], env={**os.environ, "GOTOOLCHAIN": "local"},
                      cwd=tempfile.gettempdir(), check=False, timeout=60)
    m = re.match(r"go(\d+\.\d+(?:\.\d+)?)", res.stdout.strip())
    return m.group(1) if res.returncode == 0 and m else None


def go_toolchain(go_mod: str | None, installed: str | None, pinned: str | None
                 ) -> tuple[str, bool, str | None]:
    """(version, download, note) for a Go target: ``pinned`` (--toolchain), else go.mod's
    ``toolchain`` line, else the installed Go when it meets the ``go`` line, else that minimum.
    A version other than the installed one is downloaded from the Go module proxy
    (golang.org/toolchain, from 1.21.0 on); an older one is refused."""
    toolchain_line = go_line = None
    for line in (go_mod or "").splitlines():
        words = line.split("//", 1)[0].split()
        if len(words) == 2 and words[0] == "toolchain":
            toolchain_line = words[1].removeprefix("go")
        elif len(words) == 2 and words[0] == "go":
            go_line = words[1]
    asked, why = None, ""
    if pinned:
        asked, why = pinned.removeprefix("go"), "--toolchain"
    elif toolchain_line and re.fullmatch(r"1\.\d+(\.\d+)?((rc|beta)\d+)?", toolchain_line):
        asked, why = toolchain_line, f"go.mod's toolchain line (go{toolchain_line})"
    elif go_line and re.fullmatch(r"1\.\d+(\.\d+)?((rc|beta)\d+)?", go_line):
        if installed and _version(installed) >= _version(go_line):
            return installed, False, (f"go.mod asks for at least Go {go_line} (its go line); "
                                      f"pinned the installed Go {installed}")
        asked = go_line if go_line.count(".") == 2 or _version(go_line) < (1, 21) \
            else f"{go_line}.0"
        why = f"go.mod's go line (go {go_line}), above the installed Go {installed or '(none)'}"
    if asked is None:
        if installed is None:
            raise ToolchainError("no go on PATH, and the source's go.mod names no version",
                                 hint="install Go, or give --toolchain VERSION")
        return installed, False, None
    if not re.fullmatch(r"1\.\d+(\.\d+)?((rc|beta)\d+)?", asked):
        raise ConfigError(f"--toolchain {pinned!r}: expected a Go version such as 1.22.4")
    if asked == installed:
        return asked, False, None
    if _version(asked) < GO_PROXY_SINCE:
        raise ToolchainError(
            f"the source asks for Go {asked} ({why}); the installed Go is {installed or '(none)'}, "
            "and the Go module proxy has Go toolchains from 1.21.0 on only",
            hint=f"build with the installed one: --toolchain {installed}" if installed else
            "install that Go, then give --toolchain VERSION")
    return asked, True, (f"pinned Go {asked} ({why}); the installed Go is "
                         f"{installed or '(none)'}: the go command downloads go{asked} from the "
                         "Go module proxy (golang.org/toolchain) on the first build")


def _rust_installed() -> tuple[str | None, str | None, list[str]]:
    """(release of the rustc on PATH, its host triple, the rustup toolchains installed)."""
    if shutil.which("rustc") is None:
        return None, None, []
    out = cmd.run(["rustc", "-vV"], check=False, timeout=60, cwd=tempfile.gettempdir()).stdout
    release = re.search(r"^release: (\S+)", out, re.M)
    host = re.search(r"^host: (\S+)", out, re.M)
    chains: list[str] = []
    if shutil.which("rustup"):
        res = cmd.run(["rustup", "toolchain", "list"], check=False, timeout=60)
        chains = [line.split()[0] for line in res.stdout.splitlines() if line.strip()]
    return (release.group(1) if release else None, host.group(1) if host else None, chains)


def rust_toolchain(toolchain_file: str | None, pinned: str | None,
                   installed: tuple[str | None, str | None, list[str]]
                   ) -> tuple[str, str | None, str | None]:
    """(version, rustup toolchain, note) for a Rust target: ``pinned`` (--toolchain), else the
    exact release rust-toolchain.toml asks for, else the installed rustc's. A release that is not
    installed is refused (ToolchainError, exit 13): patchbench does not download Rust."""
    release, host, chains = installed
    asked = None
    if toolchain_file:
        m = re.search(r'^\s*channel\s*=\s*"([^"]+)"', toolchain_file, re.M) or re.fullmatch(
            r"\s*(\S+)\s*", toolchain_file)
        channel = m.group(1) if m else None
        if channel and re.fullmatch(r"\d+\.\d+\.\d+", channel):
            asked = channel
    version = pinned or asked or release
    if version is None:
        raise ToolchainError("no rustc on PATH", hint="install Rust (rustup), then run this again")
    if not re.fullmatch(r"\d+\.\d+\.\d+", version):
        raise ConfigError(f"--toolchain {version!r}: expected a Rust release such as 1.95.0")
    chain = f"{version}-{host}" if host and f"{version}-{host}" in chains else None
    if chain is None and version != release:
        raise ToolchainError(
            f"the source asks for Rust {version} (rust-toolchain.toml), but this machine has "
            f"rustc {release or '(none)'}"
            + (f" and rustup toolchains {', '.join(chains)}" if chains else "")
            + "; patchbench does not download Rust toolchains",
            hint=f"rustup toolchain install {version}, or build with the installed one (the "
                 f"manifest records both): --toolchain {release}" if release else
                 f"rustup toolchain install {version}")
    note = None
    if asked and version != asked:
        note = (f"the source asks for Rust {asked} (rust-toolchain.toml); pinned {version} "
                "(--toolchain)")
    return version, chain, note


def c_compiler(cc: str, pinned: str | None) -> str:
    """The version of the C compiler ``cc`` found on PATH (``cc -dumpfullversion``)."""
    if shutil.which(cc) is None:
        raise ToolchainError(f"no C compiler {cc} on PATH",
                             hint="apt-get install gcc (or edit the target's toolchain.cc)")
    found = cmd.run([cc, "-dumpfullversion", "-dumpversion"], timeout=60,
                        error=ToolchainError).stdout.strip()
    if pinned and pinned != found:
        raise ToolchainError(f"--toolchain {pinned}: the C compiler {cc} found is {found}",
                             hint=f"install {cc} {pinned} first, or leave --toolchain out")
    return found


# --- the entry ----------------------------------------------------------------------------------


def _gitmodules(text: str | None) -> list[dict[str, str]]:
    """The submodules a .gitmodules declares (path and url)."""
    out: list[dict[str, str]] = []
    current: dict[str, str] | None = None
    for raw in (text or "").splitlines():
        line = raw.strip()
        if line.startswith("[submodule"):
            current = {}
            out.append(current)
        elif current is not None and "=" in line:
            key, _, value = line.partition("=")
            current[key.strip()] = value.strip()
    return [m for m in out if m.get("path") and m.get("url")]


def resolve(ws: Workspace, name: str, runtime: str, source: str, ref: str | None,
            toolchain: str | None, description: str | None = None) -> Resolved:
    """The target entry for ``name``: the template's, with the source's url, ref, commit and
    toolchain; the commit fetched into the source cache."""
    from ruamel.yaml.comments import CommentedMap
    from ruamel.yaml.scalarstring import DoubleQuotedScalarString as Quoted

    tpl = templates.get(runtime)
    shown, url = source_url(ws, source)
    ref, commit = resolve_ref(url, ref, name)
    say(f"{name}: {ref} is {commit}")
    checkout = cache.fetch(ws.builds, name, url, ref, commit, overridden=False)
    entry = tpl.target()
    out = Resolved(CommentedMap(), commit)
    tc = entry["toolchain"]
    kind = str(tc["kind"])
    new_tc = CommentedMap((k, v) for k, v in tc.items() if k not in ("version", "download",
                                                                       "rustup_toolchain"))
    if kind == "go":
        version, download, note = go_toolchain(_show(checkout.repo, commit, "go.mod"),
                                               installed_go(), toolchain)
        new_tc.insert(1, "version", Quoted(version))
        if download:
            new_tc.insert(2, "download", True)
    elif kind == "rust":
        text = _show(checkout.repo, commit, "rust-toolchain.toml") or _show(
            checkout.repo, commit, "rust-toolchain")
        version, chain, note = rust_toolchain(text, toolchain, _rust_installed())
        new_tc.insert(1, "version", Quoted(version))
        if chain:
            new_tc.insert(2, "rustup_toolchain", chain)
        crate = re.search(r'^\[package\][^\[]*?^name\s*=\s*"([A-Za-z0-9_-]+)"',
                          _show(checkout.repo, commit, "Cargo.toml") or "", re.M | re.S)
        if crate and runtime == "rust":  # the generic template's binary is the package's
            entry["build"]["commands"][-1][2] = entry["build"]["commands"][-1][2].replace(
                "release/app", f"release/{crate.group(1)}")
    elif kind == "c":
        version, note = c_compiler(str(tc.get("cc", "gcc")), toolchain), None
        new_tc.insert(2, "version", Quoted(version))
    else:  # pragma: no cover - the shipped templates are go, rust and c
        raise ConfigError(f"template {runtime}: toolchain kind {kind} cannot be resolved here")
    if note:
        out.notes.append(note)
    out.entry["description"] = description or (
        f"{entry.get('description', runtime)} (made from the {runtime} template)")
    out.entry["url"] = shown
    out.entry["ref"] = ref
    out.entry["commit"] = commit
    subs = entry.get("submodules")
    if subs is None:
        declared = _gitmodules(_show(checkout.repo, commit, ".gitmodules"))
        if declared:
            subs = [CommentedMap([("name", templates.slug(Path(m["path"]).name, f"sub{i}")),
                                  ("path", m["path"]), ("url", m["url"])])
                    for i, m in enumerate(declared, 1)]
            out.notes.append(f"declared the {len(subs)} submodule(s) of the source's .gitmodules; "
                             "a submodule of a submodule must be added by hand, or `omit`ted")
    if subs:
        out.entry["submodules"] = subs
    out.entry["toolchain"] = new_tc
    for key in ("build", "requires", "tools", "runtime"):
        if key in entry:
            out.entry[key] = entry[key]
    return out


def target_new(ws: Workspace, name: str, *, runtime: str | None, source: str | None,
               ref: str | None, toolchain: str | None, description: str | None) -> int:
    """``target new NAME --runtime R --source PATH_OR_URL [--ref REF]``."""
    check_name(name)
    if not runtime or not source:
        raise ConfigError("target new: --runtime and --source are required",
                          hint=f"e.g. patchbench target new {name} --runtime runc --source "
                               "$HOME/src/runc --ref v1.2.5 (patchbench templates lists the "
                               "runtimes)")
    editing.check(ws)
    project = config.load(ws.matrix, pending_series=frozenset())
    if name in project.matrix.targets:
        raise ConfigError(f"target {name!r} already exists in {ws.matrix}",
                          hint=f"choose another name: patchbench target new {name}-2 ...")
    resolved = resolve(ws, name, runtime, source, ref, toolchain, description)
    with editing.locked(ws):
        doc = editing.read_matrix(ws)
        if name in doc["targets"]:
            raise ConfigError(f"target {name!r} was added to {ws.matrix} meanwhile")
        targets = doc["targets"]
        if hasattr(targets, "fa"):
            targets.fa.set_block_style()
        targets[name] = resolved.entry
        targets.yaml_set_comment_before_after_key(
            name, before=f"added by `patchbench target new` from the {runtime} template", indent=2)
        editing.write_matrix(ws, editing.dump(doc))
    print(f"{ws.matrix}: target {name} ({runtime} template) at {resolved.entry['ref']} "
          f"({resolved.commit[:12]})")
    for note in resolved.notes:
        say(f"note: {note}")
    say(f"next: patchbench series new MY-FIX --target {name} --from YOUR_CLONE "
        f"{resolved.entry['ref']}..YOUR_BRANCH")
    return 0

