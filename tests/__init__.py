"""patchbench's tests (unit/, faults/, integration/)."""

import os
import sys

# This machine's environment sets PYTHONDONTWRITEBYTECODE=1, so every test process, and every
# patchbench or invoke process a test starts, compiled every module again (and pytest rewrote
# every test module's asserts again). The tests cache bytecode as Python does by default (under
# the gitignored __pycache__/); this package is imported before conftest.py and patchbench.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
