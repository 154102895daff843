"""The statistics after measuring use threads (each candidate's comparison beside the cells'
summaries, the verify checks beside both): numpy, a lazy module, and the record models must be
ready before they start. A comparison has them ready from its warmups; bisect and history come
here with numpy still lazy, so this runs ``timed_results`` in a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = """
import random, sys
from pathlib import Path
from patchbench import build, scenarios
from patchbench.measure.bench import Cell, Samples
from patchbench.scenarios.command import CommandConfig, timed_results
from patchbench.util.layout import Layout

scenarios.load({"command"})
assert type(sys.modules["numpy"]).__name__ == "_LazyModule", "numpy is loaded already"
tmp = Path(sys.argv[1])
built = [build.Built(build.Variant(v, ()), tmp / v, {"artifacts": {}}, True)
         for v in ("baseline", "fix", "fix2")]
sc = CommandConfig(name="run", command=["x"], runs=20, rounds=5)
ctx = scenarios.ScenarioContext(scenario=sc, built=built, runtime=None, workdir=tmp / "w", seed=3,
                                layout=Layout(tmp / "b", tmp / "r"), project_root=tmp,
                                alpha=0.05, min_effect=0.02)
rng = random.Random(1)
samples = {}
for v in ("baseline", "fix", "fix2"):
    s = Samples()
    for r in range(5):
        for _ in range(4):
            s.times.append(1 + rng.random()); s.rounds.append(r + 1); s.exit_codes.append(0)
            s.metrics.setdefault("user", []).append(0.1); s.metrics.setdefault("system", []).append(0.1)
    samples[Cell(v)] = s
cells, comparisons, _, _ = timed_results(ctx, list(samples), samples)
print(len(cells), [c.verdict for c in comparisons])
"""


def test_the_statistics_threads_start_with_numpy_and_the_models_ready(tmp_path: Path) -> None:
    for _ in range(3):  # the race it guards against lost every time (8 of 8) before the fix
        out = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path)], capture_output=True,
                             text=True, timeout=120, cwd=Path(__file__).resolve().parents[2])
        assert out.returncode == 0, out.stderr[-3000:]
        n, verdicts = out.stdout.split(" ", 1)
        assert n == "3" and verdicts.count("'") == 4  # two candidates judged
