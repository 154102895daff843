"""``patchbench init``: a project in the current folder (or ``--project DIR``), the way ``git init``
and ``cargo new`` make one: a working starting point in one command, never over what exists.

It writes matrix.yaml (with comments saying what goes where and which command adds it),
patches/, overlays/ and a .gitignore for builds/. With ``--runtime`` and ``--source`` it also
writes a target from that runtime's template (``target new``) and a starter comparison of the
template's standard scenarios whose one candidate is the unchanged build again: ``compare``
works at once and shows what the scenarios measure on this machine and how noisy they are,
before a patch exists; ``comparison new`` copies its scenarios for the first patch.
"""

from __future__ import annotations

from pathlib import Path

from patchbench.cli import editing, target, templates
from patchbench.errors import ConfigError
from patchbench.util import files
from patchbench.util.progress import say
from patchbench.util.workspace import Workspace

HEADER = """\
# patchbench project: targets (an upstream pinned to one commit, with its toolchain and build
# recipe) and comparisons (patch series under patches/ measured against the unchanged build).
# Every key is validated: an unknown one stops with this file's line and a suggestion.
# The commands write this file for you, comments kept:
#   patchbench target new NAME --runtime R --source DIR_OR_URL --ref REF   (patchbench templates)
#   patchbench series new NAME --target T --from YOUR_CLONE BASE..BRANCH    (your commits)
#   patchbench comparison new NAME --target T --candidate SERIES
version: 1

targets: {}

comparisons: {}
"""
GITIGNORE = "/builds/\n"
IGNORE_LIMIT = 1 << 20  # bytes of an existing .gitignore read


def _name(runtime: str, source: str, given: str | None) -> str:
    if given:
        return target.check_name(given)
    if runtime in ("go", "c", "rust"):  # a program of one's own: its folder's name
        tail = source.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]
        return templates.slug(tail, runtime)
    return runtime


def _exists(path: Path) -> bool:
    return path.exists() or path.is_symlink()


def _no_link(given: Path) -> None:
    """init follows no link: a matrix.yaml that is one (dangling or not) is refused, as given
    (the workspace has resolved it to where it points)."""
    if given.is_symlink():
        raise ConfigError(f"{given} is a symbolic link; init follows no link and writes nothing "
                          "through one", hint=f"remove it (rm {given}), or init another folder")


def _gitignore(ignore: Path, made: list[str]) -> None:
    """/builds/ in .gitignore: a new file, or added to a regular one that lacks it. A link or
    anything that is not a regular file (a FIFO would block the read) is left as it is."""
    if not _exists(ignore):
        files.write_text_atomic(ignore, GITIGNORE)
        made.append(".gitignore")
        return
    try:
        text = files.read_regular(ignore, IGNORE_LIMIT).decode("utf-8", "replace")
    except (OSError, ValueError) as exc:  # ELOOP: a link; ValueError: a FIFO, a device, too big
        why = "a symbolic link" if ignore.is_symlink() else (
            "not a regular file" if isinstance(exc, ValueError) and "regular" in str(exc)
            else f"unreadable ({getattr(exc, 'strerror', None) or exc})")
        say(f"note: {ignore} is {why}; left as it is (add /builds/ to it yourself)")
        return
    if "builds/" in text:
        return
    try:
        files.append_regular(ignore, ("" if text.endswith("\n") or not text else "\n") + GITIGNORE)
    except (OSError, ValueError) as exc:
        say(f"note: cannot add /builds/ to {ignore} ({getattr(exc, 'strerror', None) or exc}); "
            "left as it is")
        return
    made.append(".gitignore (builds/ added)")


def init(ws: Workspace, *, runtime: str | None, source: list[str] | str | None,
         ref: str | None, toolchain: str | None, name: str | None,
         given: Path | None = None) -> int:
    """``patchbench init [--runtime R --source PATH_OR_URL [--source SUB=PATH ...] [--ref REF]]``;
    ``given``: the path of matrix.yaml as the command line named it, before links were
    resolved."""
    _no_link(given if given is not None else ws.matrix)
    source, named = target.split_sources(source, name or runtime)
    if named and not source:
        raise ConfigError("init --source NAME=PATH names a submodule's source; give the target's "
                          "own too", hint="e.g. --source ~/src/crun --source libocispec=~/src/"
                          "libocispec")
    if _exists(ws.matrix):
        raise ConfigError(f"{ws.root} already holds a project ({ws.matrix.name}); init never "
                          "overwrites one",
                          hint="add a target to it: patchbench target new NAME --runtime R "
                               "--source DIR_OR_URL --ref REF")
    if source and not runtime:
        raise ConfigError("init --source: give --runtime too (the template of the target)",
                          hint="the runtimes: " + ", ".join(templates.names())
                               + " (patchbench templates)")
    if ref and not source:
        raise ConfigError("init --ref: give --source too (where the ref is)")
    ws.root.mkdir(parents=True, exist_ok=True)
    editing.check(ws)
    doc = editing.yaml().load(HEADER)
    resolved = None
    tname = None
    if runtime and source:
        tname = _name(runtime, source, name)
        resolved = target.resolve(ws, tname, runtime, source, ref, toolchain,
                                  submodule_sources=named)
        doc["targets"].fa.set_block_style()
        doc["targets"][tname] = resolved.entry
        doc["targets"].yaml_set_comment_before_after_key(
            tname, before=f"made by `patchbench init` from the {runtime} template", indent=2)
        starter = templates.get(runtime).comparison()
        comp = doc["comparisons"]
        comp.fa.set_block_style()
        from ruamel.yaml.comments import CommentedMap

        entry = CommentedMap()
        entry["description"] = (f"the unchanged {tname} against itself, with the {runtime} "
                                "template's standard scenarios: what they measure on this "
                                "machine and how noisy it is, before a patch exists")
        entry["target"] = tname
        entry["candidates"] = starter["candidates"]
        entry["scenarios"] = starter["scenarios"]
        comp[f"{tname}-noise"] = entry
        comp.yaml_set_comment_before_after_key(
            f"{tname}-noise", before="the starter comparison: `comparison new` copies its "
            "scenarios for your patch", indent=2)
    elif runtime:
        templates.get(runtime)  # a runtime without a source: only checked, said below
    with editing.locked(ws):
        _no_link(given if given is not None else ws.matrix)
        if _exists(ws.matrix):
            raise ConfigError(f"{ws.matrix} appeared meanwhile; init never overwrites it")

        try:
            editing.write_matrix(ws, editing.dump(doc), new=True)
        except FileExistsError:
            raise ConfigError(f"{ws.matrix} appeared meanwhile; init never overwrites it") \
                from None
        made = [ws.matrix.name]
        for folder in ("patches", "overlays"):
            if not _exists(ws.root / folder):
                (ws.root / folder).mkdir()
                made.append(folder + "/")
        _gitignore(ws.root / ".gitignore", made)
    print(f"{ws.root}: " + ", ".join(made))
    if resolved is not None and tname is not None and runtime is not None:
        print(f"target {tname} ({runtime} template) at {resolved.entry['ref']} "
              f"({resolved.commit[:12]}); comparison {tname}-noise")
        for note in resolved.notes:
            say(f"note: {note}")
        say(f"next: patchbench series new MY-FIX --target {tname} --from YOUR_CLONE "
            f"{resolved.entry['ref']}..YOUR_BRANCH (or first: patchbench compare {tname}-noise)")
    elif runtime:
        url = str(templates.get(runtime).target()["url"])
        say(f"next: patchbench target new {runtime} --runtime {runtime} --source {url} --ref REF "
            "(or a local clone)")
    else:
        say("next: patchbench target new NAME --runtime R --source DIR_OR_URL --ref REF "
            "(patchbench templates lists the runtimes)")
    return 0
