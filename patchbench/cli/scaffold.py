"""Scaffolding, so that no one writes patchbench's files by hand: ``series new`` turns your own
commits in a local clone into a patch series (``git format-patch``, three lines of context, the
DEP-3 fields filled from each commit), ``series add`` names upstream commits by reference, and
``comparison new`` writes a comparison into matrix.yaml with a round-trip YAML parser, so its
comments and layout stay as they were."""

from __future__ import annotations

import contextlib
import copy
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from patchbench import config
from patchbench import scenarios as _kinds  # noqa: F401  (a matrix is read with them registered)
from patchbench.errors import ConfigError, PatchError, SourceError
from patchbench.util import safeargs
from patchbench.util.git import run_git
from patchbench.util.models import NAME_RE
from patchbench.util.progress import say
from patchbench.util.workspace import Workspace

_SHA = re.compile(r"^[0-9a-f]{40}$")
MAX_COMMITS = 200  # a series of your own is a handful of commits; more is almost surely a wrong range


def _name(kind: str, name: str) -> str:
    if not re.fullmatch(NAME_RE, name):
        raise ConfigError(f"{kind} name {name!r}: lower case letters, digits, '.', '_', '-' (a plain "
                          "name; it becomes a folder or a matrix key)")
    return name


def _target(ws: Workspace, target: str) -> config.Project:
    project = config.load(ws.matrix, pending_series=frozenset())
    if target not in project.matrix.targets:
        raise ConfigError(f"no target {target!r} in {ws.matrix}"
                          + config.suggest(target, project.matrix.targets),
                          hint="targets: " + ", ".join(project.matrix.targets))
    return project


def _commits(clone: Path, revs: list[str]) -> list[str]:
    for rev in revs:
        try:
            safeargs.check_path(rev, "revision")
        except safeargs.UnsafeValue as exc:
            raise ConfigError(str(exc), hint="give a range such as v1.2.3..my-fix") from None
    res = run_git(["rev-list", "--reverse", "--no-merges", "--end-of-options", *revs], cwd=clone,
                  check=False)
    if res.returncode != 0:
        raise SourceError(f"{clone}: git cannot read the range {' '.join(revs)}",
                          detail=(res.stderr or res.stdout).strip())
    shas = [line.strip() for line in res.stdout.splitlines() if line.strip()]
    if not shas:
        raise ConfigError(f"{' '.join(revs)}: no commits in that range of {clone}",
                          hint="a range names the base first: BASE..YOUR-BRANCH")
    if len(shas) > MAX_COMMITS or not all(_SHA.match(s) for s in shas):
        raise ConfigError(f"{' '.join(revs)}: {len(shas)} commits; a series of your own is at most "
                          f"{MAX_COMMITS} (is the base of the range right?)")
    return shas


def _field(name: str, value: str) -> str:
    lines = value.strip().splitlines() or [""]
    return f"{name}: {lines[0]}\n" + "".join(f" {line}\n" if line.strip() else " .\n"
                                             for line in lines[1:])


def _with_dep3(text: str, subject: str, body: str, author: str, forwarded: str) -> str:
    """The format-patch text with DEP-3 fields in the commit message (the part after the mail
    headers, where ``patch --check`` looks), each field only if the message lacks it."""
    head, sep, rest = text.partition("\n\n")
    message, diff_sep, diff = rest.partition("\n---\n")
    if not sep or not diff_sep:
        raise PatchError("git format-patch gave an unexpected form (no message or no diff)")
    present = {m.group(1) for m in re.finditer(r"^([A-Z][A-Za-z-]+): ", message, re.M)}
    fields = ""
    if not present & {"Description", "Subject"}:
        fields += _field("Description", subject + ("\n\n" + body if body.strip() else ""))
    if not present & {"Author", "Origin"}:
        fields += _field("Author", author)
    if "Forwarded" not in present:
        fields += _field("Forwarded", forwarded)
    new_message = fields if not message.strip() or "Description" in fields else (
        message.rstrip("\n") + "\n\n" + fields)
    return f"{head}\n\n{new_message.rstrip(chr(10))}\n---\n{diff}"


def series_new(ws: Workspace, name: str, target: str, clone_dir: str | None, revs: list[str], *,
               forwarded: str = "no") -> int:
    """``series new NAME --target T --from DIR RANGE``: your commits as ``patches/NAME/``."""
    _name("series", name)
    project = _target(ws, target)
    if not clone_dir:
        raise ConfigError("series new: --from DIR is required (the local clone with your commits)")
    if not revs:
        raise ConfigError("series new: give the revision range of your commits, such as "
                          "v1.2.3..my-fix")
    clone = Path(clone_dir).resolve()
    if run_git(["rev-parse", "--git-dir"], cwd=clone, check=False).returncode != 0:
        raise SourceError(f"--from {clone_dir}: not a git repository")
    series_dir = project.series_dir(name)
    if series_dir.exists() or series_dir.is_symlink():
        raise ConfigError(f"patches/{name} already exists", hint="choose another name, or remove it")
    shas = _commits(clone, revs)
    series_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=series_dir.parent))
    try:
        names = []
        for i, sha in enumerate(shas, 1):
            fmt = "%s%x00%b%x00%an <%ae>"
            subject, body, author = run_git(["show", "-s", f"--format={fmt}", sha],
                                            cwd=clone).stdout.split("\0")[:3]
            text = run_git(["format-patch", "-1", "--stdout", "--zero-commit", "--no-signature",
                            "-U3", "--start-number", str(i), sha], cwd=clone).stdout
            slug = re.sub(r"[^A-Za-z0-9]+", "-", subject).strip("-")[:52].rstrip("-") or "patch"
            file_name = f"{i:04d}-{slug}.patch"
            (tmp / file_name).write_text(_with_dep3(text, subject.strip(), body,
                                                    author.strip(), forwarded))
            names.append(file_name)
        (tmp / "series").write_text(
            f"# {name}: {len(names)} commit{'s' if len(names) > 1 else ''} for target {target} "
            "(patchbench series new)\n" + "".join(f"{n}\n" for n in names))
        os.chmod(tmp, 0o755)
        os.rename(tmp, series_dir)  # complete, or not there at all
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    for n in names:
        print(f"patches/{name}/{n}")
    say(f"series {name}: {len(names)} patch{'es' if len(names) > 1 else ''} from {clone_dir}")
    say(f"next: patchbench comparison new {name} --target {target} --candidate {name}")
    return 0


def series_add(ws: Workspace, name: str, target: str, commits: list[str]) -> int:
    """``series add NAME --target T SHA...``: upstream commits by reference; the matrix may
    already name the series (the order of the edits does not matter)."""
    from patchbench.cli.commands import load_project

    _name("series", name)
    project = load_project(ws, pending_series=frozenset({name}))
    from patchbench import upstream
    from patchbench.source import series_ref

    if target not in project.matrix.targets:
        raise ConfigError(f"no target {target!r}" + config.suggest(target, project.matrix.targets))
    checkout = upstream.fetch(project, ws, project.named_target(target))
    shas = [s for c in commits for s in c.replace(",", " ").split() if s]
    for line in series_ref.add(project.root, checkout, name, shas, ws.builds):
        print(line)
    if target in ws.sources:  # fetched from the --source clone, not from the target's url
        say(f"note: the commits were found in --source {target}=...; another machine needs them "
            f"in {project.matrix.targets[target].url} (or the same --source) to apply this series")
    return 0


def _yaml() -> Any:
    from ruamel.yaml import YAML

    y = YAML(typ="rt")
    y.preserve_quotes = True
    y.width = 100
    y.indent(mapping=2, sequence=4, offset=2)
    return y


def comparison_new(ws: Workspace, name: str, target: str, candidates: list[str], *,
                   like: str | None, description: str | None) -> int:
    """``comparison new NAME --target T --candidate SERIES``: a comparison in matrix.yaml with
    the scenarios of ``--like`` (default: the first comparison of the target); then the matrix
    is checked as ``compare`` would, and put back as it was if the check fails."""
    _name("comparison", name)
    for c in candidates:
        _name("series", c)
    project = _target(ws, target)
    comparisons = project.matrix.comparisons
    if name in comparisons:
        raise ConfigError(f"comparison {name!r} already exists in {ws.matrix}")
    if like is None:
        like = next((n for n, c in comparisons.items() if c.target == target), None)
        if like is None:
            raise ConfigError(f"no comparison of target {target!r} to copy scenarios from",
                              hint="give --like COMPARISON")
    elif like not in comparisons:
        raise ConfigError(f"--like {like!r}: no such comparison" + config.suggest(like, comparisons))
    for c in candidates:
        if not (project.series_dir(c) / "series").is_file():
            raise ConfigError(f"--candidate {c}: no series patches/{c}/series",
                              hint=f"make it first: patchbench series new {c} --target {target} "
                              "--from DIR BASE..BRANCH")
    y = _yaml()
    original = ws.matrix.read_text(encoding="utf-8")
    doc = y.load(original)
    from ruamel.yaml.comments import CommentedMap

    entry = CommentedMap()
    entry["description"] = description or (
        f"{', '.join(candidates)} vs the unchanged {target} (scenarios of {like})")
    entry["target"] = target
    entry["candidates"] = CommentedMap((c, [c]) for c in candidates)
    source_comp = doc["comparisons"][like]
    for key in ("runtime", "scenarios"):
        if key in source_comp:
            entry[key] = copy.deepcopy(source_comp[key])
    doc["comparisons"][name] = entry
    doc["comparisons"].yaml_set_comment_before_after_key(
        name, before=f"added by `patchbench comparison new` (scenarios of {like})", indent=2)
    tmp = ws.matrix.with_name(f".{ws.matrix.name}.{os.getpid()}.tmp")
    try:
        with tmp.open("w", encoding="utf-8") as f:
            y.dump(doc, f)
        try:  # the same check as compare; refuses before the real file changes
            config.load(tmp)
        except ConfigError as exc:
            exc.message = exc.message.replace(str(tmp), str(ws.matrix))
            raise
        finally:
            config.load(ws.matrix)  # messages name the real file again
        os.replace(tmp, ws.matrix)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    print(f"{ws.matrix}: comparison {name} ({target}; candidates {', '.join(candidates)}; "
          f"scenarios of {like})")
    say(f"next: patchbench compare {name} --dry-run, then patchbench compare {name}")
    return 0
