"""Every size patchbench bounds, in one place. Details: docs/internals.md."""

from __future__ import annotations

# what a saved run may hold (patchbench.results)
MAX_FILE_BYTES = 16 * 2**20  # the largest committed run is 1.8 MB
MAX_SAMPLES = 100_000  # per cell (times, and each other per-run list)
MAX_CELLS = 10_000  # per scenario
MAX_SCENARIOS = 1_000  # per run
MAX_RUNS = 256  # runs in one merge
MAX_DEPTH = 32  # nesting of objects and lists (a committed run nests at most 9 deep)

# what a run may ask for
MAX_TIMEOUT_S = 86_400.0  # one run, a command around it, a build: at most a day
