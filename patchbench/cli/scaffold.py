"""Scaffolding, so that no one writes patchbench's files by hand: ``series new`` turns your own
commits in a local clone into a patch series (format-patch files, three lines of context, the
DEP-3 fields filled from each commit, each checked as ``patch --check`` will check it; a commit
upstream has recorded as upstream's), ``series add`` names upstream commits (or a pull
request's) by reference, and ``comparison new`` writes a comparison into matrix.yaml with the
scenarios of another or of a template, its comments and layout kept. Each writes as
cli/editing.py says: ownership checked, the project locked, nothing half-written."""

from __future__ import annotations

import copy
import os
import re
import shutil
from pathlib import Path
from typing import Any

from patchbench import config
from patchbench.cli import editing, scenario_edit, templates
from patchbench.errors import ConfigError, PatchbenchError, PatchError, SourceError
from patchbench.source import patchform
from patchbench.util import files, safeargs
from patchbench.util.git import run_git
from patchbench.util.models import NAME_RE, NAME_RULE
from patchbench.util.progress import say
from patchbench.util.suggest import suggest
from patchbench.util.workspace import Workspace

_SHA = re.compile(r"^[0-9a-f]{40}$")
MAX_COMMITS = 200  # a series of your own is a handful of commits; more is almost surely a wrong range
# the diff of a commit against its parent, with git's plumbing (no user configuration of diffs):
# no renames (refused in a patch: a delete and an add instead), three lines of context
DIFF_TREE = ["diff-tree", "-p", "--stat=100", "--summary", "--no-renames", "-U3", "--no-color",
             "--no-ext-diff", "--no-textconv", "--full-index"]


def _name(kind: str, name: str) -> str:
    if not re.fullmatch(NAME_RE, name):
        raise ConfigError(f"{kind} name {name!r}: {NAME_RULE} (it becomes a folder or a matrix "
                          "key)")
    return name


def _target(ws: Workspace, target: str) -> config.Project:
    project = config.load(ws.matrix, pending_series=frozenset())
    if target not in project.matrix.targets:
        raise ConfigError(f"no target {target!r} in {ws.matrix}"
                          + suggest(target, project.matrix.targets),
                          hint=("targets: " + ", ".join(project.matrix.targets) + "; or add it: "
                                if project.matrix.targets else "add it: ")
                          + f"patchbench target new {target} --runtime R --source DIR_OR_URL "
                            "--ref REF")
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


def _message(subject: str, body: str, author: str, forwarded: str, origin: str | None) -> str:
    """The commit message of a patch file, with the DEP-3 fields: a body that is a DEP-3 header
    already (it has a Description) is kept, with the fields it lacks added; any other
    is folded into a Description with the subject, then Origin or Author and Forwarded follow.
    No line of the body ends the message early or reads as a patch: a ``---`` line or a diff in
    it is indented."""
    body = body.replace("\r", "").strip("\n")
    present = {m.group(1) for m in re.finditer(r"^([A-Z][A-Za-z-]+): ", body, re.M)}
    if "Description" not in present:  # what patch --check asks for (DEP-3's Subject is not)
        present = set()  # the body becomes the Description's text, its field lines with it
    fields = ""
    if not present:
        fields += _field("Description", subject + ("\n\n" + body if body.strip() else ""))
    if origin and "Origin" not in present:
        fields += _field("Origin", origin)
    if not present & {"Author", "Origin"} and not origin:
        fields += _field("Author", author)
    if "Forwarded" not in present:
        fields += _field("Forwarded", forwarded)
    if not present:
        return fields
    kept = "\n".join(f" {line}" if patchform.breaks_message(line) else line
                     for line in body.splitlines())
    return kept.rstrip("\n") + ("\n\n" + fields if fields else "\n")


def _patch_text(clone: Path, sha: str, number: int, *, forwarded: str, origin: str | None
                ) -> str:
    """One commit as a format-patch file: git format-patch's mail headers (its ``From`` line
    zeroed unless upstream has the commit), the DEP-3 message, the diff against its parent."""
    fmt = "%s%x00%b%x00%an <%ae>%x00%P"
    subject, body, author, parents = run_git(["show", "-s", f"--format={fmt}", sha],
                                             cwd=clone).stdout.split("\0")[:4]
    if len(parents.split()) != 1:
        raise PatchError(f"commit {sha[:12]} ({subject.strip()}) has no parent: a series changes "
                         "a tree, it cannot make one", hint="start the range after it: BASE..BRANCH")
    mail = run_git(["format-patch", "-1", "--stdout", "--no-signature", "--no-stat",
                    *([] if origin else ["--zero-commit"]), "--start-number", str(number), sha],
                   cwd=clone).stdout
    head = mail.split("\n\n", 1)[0]
    diff = run_git([*DIFF_TREE, parents.strip(), sha], cwd=clone).stdout
    if "diff --git " not in diff:
        raise PatchError(f"commit {sha[:12]} ({subject.strip()}) changes no file",
                         hint="leave it out of the range, or drop it from your branch")
    message = _message(subject.strip(), body, author.strip(), forwarded, origin)
    return f"{head}\n\n{message.rstrip(chr(10))}\n---\n{diff}"


def _origins(ws: Workspace, project: config.Project, target: str, clone: Path,
             shas: list[str]) -> dict[str, str]:
    """Your commit -> the upstream commit it is (source/provenance.py), with upstream's history
    fetched into the source cache as bisect fetches it; empty, with a note, when it cannot be
    read."""
    from patchbench import upstream
    from patchbench.source import history, provenance

    t = project.target(target)
    url = ws.sources.get(target) or t.url
    if "://" not in url and not url.startswith("git@"):
        local = Path(url) if Path(url).is_absolute() else project.root / url
        if not (local / ".git").exists() and not (local / "objects").is_dir():
            return {}  # a plain folder (snapshotted) has no history to recognise commits in
    try:
        checkout = upstream.fetch(project, ws, project.named_target(target))
        history.fetch_history(checkout, ws.builds)
        return provenance.recognise(checkout, clone, shas)
    except PatchbenchError as exc:
        say(f"note: upstream's history of {target} could not be read ({exc.message}); every "
            "commit is recorded as yours")
        return {}


def series_new(ws: Workspace, name: str, target: str, clone_dir: str | None, revs: list[str], *,
               forwarded: str | None = None) -> int:
    """``series new NAME --target T --from DIR RANGE``: your commits as ``patches/NAME/``; a
    commit that upstream has is recorded as upstream's (``Origin:``, its ``From`` SHA kept)."""
    _name("series", name)
    editing.check(ws)
    project = _target(ws, target)
    if not clone_dir:
        raise ConfigError("series new: --from DIR is required (the local clone with your commits)",
                          hint=f"patchbench series new {name} --target {target} --from "
                               "YOUR_CLONE BASE..BRANCH")
    if not revs:
        raise ConfigError("series new: give the revision range of your commits, such as "
                          "v1.2.3..my-fix",
                          hint=f"patchbench series new {name} --target {target} --from {clone_dir} "
                               f"{project.target(target).ref}..YOUR_BRANCH")
    clone = Path(clone_dir).resolve()
    if run_git(["rev-parse", "--git-dir"], cwd=clone, check=False).returncode != 0:
        raise SourceError(f"--from {clone_dir}: not a git repository",
                          hint="give the clone that holds your commits")
    series_dir = project.series_dir(name)
    if series_dir.exists() or series_dir.is_symlink():
        raise ConfigError(f"patches/{name} already exists; series new makes a new series",
                          hint=f"add upstream commits to it (appended): patchbench series add "
                               f"{name} --target {target} SHA... (or --pr N); or write your "
                               f"commits as another series: patchbench series new {name}-2 ...")
    shas = _commits(clone, revs)
    origins = _origins(ws, project, target, clone, shas)
    texts: list[tuple[str, str]] = []
    for i, sha in enumerate(shas, 1):
        up = origins.get(sha)
        text = _patch_text(clone, sha, i, origin=f"upstream, commit:{up}" if up else None,
                           forwarded=forwarded or ("not-needed" if up else "no"))
        subject = run_git(["show", "-s", "--format=%s", sha], cwd=clone).stdout.strip()
        slug = re.sub(r"[^A-Za-z0-9]+", "-", subject).strip("-")[:52].rstrip("-") or "patch"
        file_name = f"{i:04d}-{slug}.patch"
        try:  # what `patch --check` will read: refused here, before anything is written
            patchform.inspect(text)
        except patchform.UnsafePatch as exc:
            raise PatchError(f"commit {sha[:12]} ({subject}): its patch {exc.reason}",
                             hint=exc.hint or "leave the commit out of the range") from None
        texts.append((file_name, text))
    with editing.locked(ws):
        if series_dir.exists() or series_dir.is_symlink():
            raise ConfigError(f"patches/{name} was made meanwhile",
                              hint=f"choose another name: patchbench series new {name}-2 ...")
        series_dir.parent.mkdir(parents=True, exist_ok=True)
        tmp = files.staged_dir(series_dir.parent, name)
        try:
            for file_name, text in texts:
                (tmp / file_name).write_text(text, encoding="utf-8")
            (tmp / "series").write_text(
                f"# {name}: {len(texts)} commit{'s' if len(texts) > 1 else ''} for target "
                f"{target} (patchbench series new)\n" + "".join(f"{n}\n" for n, _ in texts),
                encoding="utf-8")
            os.chmod(tmp, 0o755)
            os.rename(tmp, series_dir)  # complete, or not there at all
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
    for n, _ in texts:
        print(f"patches/{name}/{n}")
    ups = [s for s in shas if s in origins]
    say(f"series {name}: {len(texts)} patch{'es' if len(texts) > 1 else ''} from {clone_dir}"
        + (f"; {len(ups)} of them upstream's ({', '.join(origins[s][:12] for s in ups)})"
           if ups else ""))
    say(f"next: patchbench comparison new {name} --target {target} --candidate {name}")
    return 0


def _full_shas(ws: Workspace, checkout: Any, given: list[str]) -> list[str]:
    """Each commit-ish given (a full or short SHA, ``v1.2.3~4``, a branch or tag of the source)
    as the full SHA of the commit it names in the source's history (fetched when one is not a
    full SHA already)."""
    from patchbench.source import history

    if all(_SHA.match(c.lower()) for c in given):
        return [c.lower() for c in given]
    history.fetch_history(checkout, ws.builds)
    out = []
    for c in given:
        sha = c.lower() if _SHA.match(c.lower()) else history.resolve(checkout, c)
        if sha != c.lower():
            say(f"{c} is {sha}")
        out.append(sha)
    return out


def series_add(ws: Workspace, name: str, target: str, commits: list[str], *,
               pr: str | None = None) -> int:
    """``series add NAME --target T SHA...`` (or ``--pr N``): upstream commits by reference; the
    matrix may already name the series (the order of the edits does not matter). ``--pr N``
    without commits takes the whole pull request: its merge commit's second parent's commits in
    the source's history, else its head at the forge."""
    from patchbench.cli.commands import load_project

    _name("series", name)
    editing.check(ws)
    project = load_project(ws, pending_series=frozenset({name}))
    from patchbench import upstream
    from patchbench.source import provenance, series_ref

    if target not in project.matrix.targets:
        raise ConfigError(f"no target {target!r}" + suggest(target, project.matrix.targets),
                          hint=f"add it first: patchbench target new {target} --runtime R "
                               "--source DIR_OR_URL --ref REF")
    number = provenance.pr_number(pr) if pr else None
    given = [s for c in commits for s in c.replace(",", " ").split() if s]
    if not given and number is None:
        raise ConfigError("series add: name upstream commits (SHAs, tags, branches) or a pull "
                          "request",
                          hint=f"patchbench series add {name} --target {target} SHA... (or --pr N)")
    for c in given:
        try:
            safeargs.check_path(c, "commit")
        except safeargs.UnsafeValue as exc:
            raise ConfigError(str(exc), hint="name a commit: its SHA, a tag or a branch") \
                from None
    series_file = project.series_dir(name) / "series"
    old_target = series_ref.target_of(series_file)
    if old_target is not None and old_target != target:
        raise ConfigError(f"patches/{name} is a series for target {old_target}, not {target}",
                          hint=f"patchbench series add {name} --target {old_target} ..., or "
                               f"another name: patchbench series add {name}-{target} ...")
    checkout = upstream.fetch(project, ws, project.named_target(target))
    note = None
    if given:
        shas = _full_shas(ws, checkout, given)
    else:
        assert number is not None
        found = provenance.pr_commits(checkout, number, ws.builds, MAX_COMMITS)
        shas = found.commits
        note = (f"pull request #{number}: {len(shas)} commit{'s' if len(shas) > 1 else ''}, "
                f"from {found.found_by}")
        say(f"pull request {number}: {len(shas)} commit{'s' if len(shas) > 1 else ''} "
            f"({found.found_by}) on top of the pinned {checkout.commit[:12]}")
    existed = series_file.is_file()
    with editing.locked(ws):
        for line in series_ref.add(project.root, checkout, name, shas, ws.builds, pr=number,
                                   whole_pr=not given, note=note):
            print(line)
    if existed:
        say(f"patches/{name}/series: added to the series it was")
    if target in ws.sources:  # fetched from the --source clone, not from the target's url
        say(f"note: the commits were found in --source {target}=...; another machine needs them "
            f"in {project.matrix.targets[target].url} (or the same --source) to apply this series")
    used = any(name in s for c in project.matrix.comparisons.values()
               for s in [*c.candidates.values(), c.baseline])
    if not used:
        say(f"next: patchbench comparison new {name} --target {target} --candidate {name}")
    return 0


def _like(project: config.Project, target: str, like: str | None) -> tuple[str, Any, bool]:
    """(what is copied, its comparison mapping in round-trip form, whether a template): --like
    names a comparison of the project or a template; without it, the target's first comparison,
    else the template the target was made from."""
    comparisons = project.matrix.comparisons
    if like is None:
        like = next((n for n, c in comparisons.items() if c.target == target), None)
        if like is None:
            like = templates.of_target(project.target(target))
            if like is None:
                ours = ", ".join(comparisons) or "(none)"
                raise ConfigError(
                    f"no comparison of target {target!r} to copy scenarios from, and no template "
                    "has its recipe's shape",
                    hint=f"give --like with one of the comparisons ({ours}) or templates "
                         f"({', '.join(templates.names())}): patchbench comparison new NAME "
                         f"--target {target} --candidate SERIES --like TEMPLATE")
            return like, templates.get(like).comparison(), True
    if like in comparisons:
        return like, None, False
    if like in templates.names():
        return like, templates.get(like).comparison(), True
    raise ConfigError(f"--like {like!r}: no such comparison or template"
                      + suggest(like, [*comparisons, *templates.names()]),
                      hint=f"comparisons: {', '.join(comparisons) or '(none)'}; templates: "
                           f"{', '.join(templates.names())} (patchbench templates)")


def _flow(items: list[str]) -> Any:
    from ruamel.yaml.comments import CommentedSeq

    seq = CommentedSeq(items)
    seq.fa.set_flow_style()
    return seq


def comparison_new(ws: Workspace, name: str, target: str, candidates: list[str], *,
                   like: str | None, description: str | None, scenarios: list[str] | None = None,
                   settings: scenario_edit.Settings | None = None) -> int:
    """``comparison new NAME --target T --candidate SERIES``: a comparison in matrix.yaml with
    the scenarios of ``--like`` (a comparison or a template; only those ``--scenario`` names
    when given, each changed by ``settings``); the matrix is read again and written under the
    project's lock, and checked as ``compare`` would before it replaces the old one."""
    settings = settings or scenario_edit.Settings()
    _name("comparison", name)
    for c in candidates:
        _name("series", c)
    editing.check(ws)
    with editing.locked(ws):
        project = _target(ws, target)
        if name in project.matrix.comparisons:
            raise ConfigError(f"comparison {name!r} already exists in {ws.matrix}",
                              hint=f"run it: patchbench compare {name}; or choose another name")
        source, copied, is_template = _like(project, target, like)
        for c in candidates:
            if not (project.series_dir(c) / "series").is_file():
                raise ConfigError(f"--candidate {c}: no series patches/{c}/series",
                                  hint=f"make it first: patchbench series new {c} --target "
                                       f"{target} --from DIR BASE..BRANCH")
        doc = editing.read_matrix(ws)
        from ruamel.yaml.comments import CommentedMap

        what = f"the {source} template" if is_template else source
        entry = CommentedMap()
        entry["description"] = description or (
            f"{', '.join(candidates)} vs the unchanged {target} (scenarios of {what})")
        entry["target"] = target
        entry["candidates"] = CommentedMap((c, _flow([c])) for c in candidates)
        source_comp = copied if is_template else doc["comparisons"][source]
        for key in ("runtime", "scenarios"):
            if key in source_comp:
                entry[key] = copy.deepcopy(source_comp[key])
        entry["scenarios"] = scenario_edit.pick(entry["scenarios"], scenarios or [],
                                                f"the {source} template" if is_template
                                                else f"comparison {source}")
        if settings.per_scenario and len(entry["scenarios"]) != 1:
            raise ConfigError(
                f"--env, --bind-mounts and --scan change one scenario; {what} has "
                f"{len(entry['scenarios'])} ({', '.join(str(s['name']) for s in entry['scenarios'])})",
                hint="name the one with --scenario NAME (e.g. --scenario run)")
        runtime = entry.get("runtime") or project.target(target).runtime
        for sc in entry["scenarios"]:
            scenario_edit.apply(sc, settings, f"comparison {name}", runtime)
        scenario_edit.strip_trailing_comments(entry)
        comps = doc["comparisons"]
        if hasattr(comps, "fa"):
            comps.fa.set_block_style()
        comps[name] = entry
        comps.yaml_set_comment_before_after_key(
            name, before=f"added by `patchbench comparison new` (scenarios of {what})", indent=2)
        editing.write_matrix(ws, editing.dump(doc))
    picked = ", ".join(str(sc["name"]) for sc in entry["scenarios"])
    print(f"{ws.matrix}: comparison {name} ({target}; candidates {', '.join(candidates)}; "
          f"scenarios {picked} of {what}"
          + (f"; {settings.words()}" if settings.any else "") + ")")
    say(f"next: patchbench compare {name} --dry-run, then patchbench compare {name}")
    return 0
