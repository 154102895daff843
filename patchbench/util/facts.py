"""Facts about the file system that loading a matrix relied on (config.load records them in
``Project.facts``): a patch series' file exists, an overlay's directory exists, a path stays
inside the repository. The same matrix bytes, the same code and facts that still hold load the
same project again (util/validated.py)."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Any


def inside(root: str, relative: str) -> bool:
    """Whether ``root/relative`` stays inside ``root`` once every link in it is followed."""
    return (Path(root) / relative).resolve().is_relative_to(Path(root).resolve())


def holds(fact: object) -> bool:
    """Whether a recorded fact still holds; False for anything that is not a known fact."""
    if not isinstance(fact, list) or not all(isinstance(x, str) for x in fact):
        return False
    match fact:
        case ["file", path]:
            return Path(path).is_file()
        case ["dir", path]:
            return Path(path).is_dir()
        case ["inside", root, relative]:
            return inside(root, relative)
    return False


def code_key(h: Any) -> None:
    """Feed ``h`` what validation depends on besides the matrix: every module of patchbench (its
    path, size and mtime), pydantic's and PyYAML's installed files and the Python version."""
    package = Path(__file__).resolve().parent.parent  # patchbench/
    for dirpath, dirnames, filenames in os.walk(package):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith(".py"):
                st = os.stat(os.path.join(dirpath, name))
                h.update(f"{os.path.join(dirpath, name)}\0{st.st_size}\0{st.st_mtime_ns}\n"
                         .encode())
    for name in ("pydantic", "yaml"):  # found, not imported
        spec = importlib.util.find_spec(name)
        origin = spec.origin if spec is not None else None
        if not origin:
            continue
        # PyYAML: its package and the libyaml binding it parses with when built (_yaml*.so)
        extra = sorted(Path(origin).parent.glob("_yaml*")) if name == "yaml" else []
        for path in (origin, *map(str, extra)):
            st = os.stat(path)
            h.update(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    h.update(sys.version.encode())
