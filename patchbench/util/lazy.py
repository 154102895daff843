"""Modules imported on their first use, for the heavy ones only some commands need.

``np = lazy.module("numpy")`` binds a module object at once and runs numpy's import when an
attribute is first read (importlib's ``LazyLoader``): ``patchbench list`` and ``--help`` import
the kinds (their config models validate the matrix), and with them the statistics modules,
without paying for numpy (about 0.12 s), while the code that computes keeps a plain ``np.``."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType


def module(name: str) -> ModuleType:
    """The module ``name``: the one already imported, or one that imports itself on first use."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ImportError(f"no module named {name!r}", name=name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    loader.exec_module(mod)
    return mod
