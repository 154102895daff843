"""Facts about the file system that loading a matrix relied on (config.load records them in
``Project.facts``): a patch series' file exists, an overlay's directory exists, a path stays
inside the repository. The same matrix bytes, the same code and facts that still hold load the
same project again (cli/listing.py)."""

from __future__ import annotations

from pathlib import Path


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
