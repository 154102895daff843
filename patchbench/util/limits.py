"""Every size patchbench bounds, in one place.

What a saved run may hold is the results loader's limit (``patchbench.results`` refuses a file
past it, exit 18). A run that would make more is refused up front, with exit 10 naming the key or
option, when the matrix and the command line are validated, before anything is fetched or built
(``patchbench.config``, ``patchbench.cli.spec``): so ``--runs``, a scenario's ``runs``, ``rounds``
and ``warmup`` are bounded by the samples a cell may hold, a comparison's cells per scenario (its
variants times a kind's cells per variant) by the cells a scenario may hold, and a ``history``
range by the cells one measurement may hold. The rest bound time: no timeout is longer than a day.
docs/security.md lists them all. This module imports nothing, so that the command line's parser
reads it without loading anything heavy."""

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
# the points of one `history` run: each is a build (minutes for a real runtime), so a range,
# a list of refs or the tags of a pattern past this are refused before anything is built
# (`--every` thins a range)
MAX_HISTORY_POINTS = 100
