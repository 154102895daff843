"""The cyclic garbage collector held off while a command starts (issue 21: the tool's own cost).

A comparison starts by importing about 450 modules and building its validated models: hundreds of
thousands of objects that live as long as the process. With the collector on, CPython scans them
again and again as they pile up (about 145 young, 13 middle and one full collection, 25-35 ms of
a warm demo's 0.45 s). ``starting`` turns it off for that stretch and, at its end, moves every
object made so far into the permanent generation (``gc.freeze``) before turning it on again, so
the later collections never scan them. Reference counting still frees everything that is not in
a cycle meanwhile; what the stretch leaves in cycles stays until the process ends: about 2,000
objects, 0.3 MB, for this repository's matrix (of 64,000 frozen), against the 10-25 ms a
collection to find them would cost. The freeze is the whole process's: tests that load a
project in-process undo it after each test (tests/conftest.py).
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def starting() -> Iterator[None]:
    """Hold the collector off for the body (the imports and the validation of a command's
    input); then freeze what exists and turn it on again, also on an error or Ctrl-C. Nested or
    with the collector already off (a caller's choice), it changes nothing."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()
