"""How the commands that write into a project (init, target new, series new and add,
comparison new) do it, held to the rules ``compare`` reads the project by.

- As root, the project's ownership and links are checked first, as ``compare`` checks them
  (util/ownership.py): a world-writable project folder, a matrix.yaml of another user or a
  patches/ that links into another user's folder is refused before anything is read or written.
- The project folder is locked (flock on the folder itself) while its files are edited, and
  matrix.yaml is read again under the lock, so two editing commands started together both
  land; what a killed one left (its temporary files) is removed under that lock.
- matrix.yaml is replaced by a complete new file: a temporary file made with ``mkstemp``
  (O_EXCL, a random name: never written through a planted link) beside it, validated as
  ``compare`` validates it, then renamed over it with the old file's mode and owner; a refusal
  leaves the old file as it was. Comments and layout are kept (a round-trip YAML parser).
"""

from __future__ import annotations

import contextlib
import io
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from patchbench import config
from patchbench import scenarios as _kinds  # noqa: F401  (a matrix is read with them registered)
from patchbench.errors import ConfigError
from patchbench.util import files, locks, ownership
from patchbench.util.progress import say
from patchbench.util.workspace import Workspace

LOCK_TIMEOUT = 600.0  # s: another editing command holds the project (a series new fetching)


def check(ws: Workspace) -> None:
    """As root: the project's ownership and links, as ``compare`` checks them."""
    ownership.check_project(ws.matrix, ws.root, ws.builds)


@contextlib.contextmanager
def locked(ws: Workspace) -> Iterator[None]:
    """The project folder locked for the body; what a killed editing command left is removed."""
    if not ws.root.is_dir():
        raise ConfigError(f"no project folder {ws.root}",
                          hint="make one: patchbench --project DIR init (or mkdir it first)")

    def waiting() -> None:
        say(f"waiting for another patchbench command editing {ws.root}")

    def too_long() -> Exception:
        return ConfigError(f"another patchbench command has been editing {ws.root} for "
                           f"{LOCK_TIMEOUT:g} s", hint="wait for it, then run this again")

    with locks.folder(ws.root, LOCK_TIMEOUT, on_wait=waiting, on_timeout=too_long):
        for folder in (ws.root, ws.root / "patches"):
            for left in files.sweep_staged(folder):
                say(f"removed {left}, left by a patchbench command that was killed")
        yield


def yaml() -> Any:
    """The round-trip YAML parser and writer (comments, order and quotes kept)."""
    from ruamel.yaml import YAML

    y = YAML(typ="rt")
    y.preserve_quotes = True
    y.width = 4096  # no line of the file is folded anew
    y.indent(mapping=2, sequence=4, offset=2)
    return y


def read_matrix(ws: Workspace) -> Any:
    """matrix.yaml as a round-trip document (read under the lock)."""
    try:
        text = ws.matrix.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {ws.matrix}: {exc}") from None
    return yaml().load(text)


def dump(doc: Any) -> str:
    out = io.StringIO()
    yaml().dump(doc, out)
    return out.getvalue()


def write_matrix(ws: Workspace, text: str, *, pending_series: frozenset[str] = frozenset(),
                 new: bool = False) -> config.Project:
    """Replace matrix.yaml by ``text`` once it validates as ``compare`` would validate it (the
    message names matrix.yaml, not the temporary file); return the project it loads as.
    ``new``: there is no matrix.yaml, and one that appears meanwhile is never replaced
    (FileExistsError)."""
    loaded: list[config.Project] = []

    def validate(tmp: Path) -> None:
        try:
            loaded.append(config.load(tmp, pending_series=pending_series))
        except ConfigError as exc:
            exc.message = exc.message.replace(str(tmp), str(ws.matrix))
            raise
        try:
            st = os.stat(ws.matrix)
        except FileNotFoundError:
            return
        if os.geteuid() == 0:  # as its owner left it (root or the user who ran sudo: checked)
            os.chown(tmp, st.st_uid, st.st_gid)

    mode = 0o644
    with contextlib.suppress(FileNotFoundError):
        mode = stat.S_IMODE(os.stat(ws.matrix).st_mode)
    files.write_text_atomic(ws.matrix, text, mode=mode, check=validate, exclusive=new)
    project = loaded[0]
    return config.Project(project.matrix, ws.matrix)
