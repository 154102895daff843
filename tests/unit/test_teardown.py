"""A run's teardown runs every step and raises nothing: one failing step must neither skip the
others (the engine would keep running) nor lose the measurement."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from patchbench import runtimes
from patchbench.errors import BenchmarkError


class Flaky:
    """A runtime whose cleanup of 'a' fails (its engine died) and whose record fails too."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def cleanup(self, variant: str, bin_dir: Path) -> list[str]:
        self.calls.append(f"cleanup {variant}")
        if variant == "a":
            raise BenchmarkError("the engine is gone")
        return [f"container of {variant}"]

    def record(self) -> dict[str, Any] | None:
        raise OSError("no such file")

    def close(self) -> None:
        self.calls.append("close")

    def leftovers(self, variant: str, bin_dir: Path) -> list[str]:
        self.calls.append(f"leftovers {variant}")
        return []


def test_a_failing_step_skips_nothing_and_is_recorded() -> None:
    rt = Flaky()
    td = runtimes.tear_down(rt, [("a", Path("/a")), ("b", Path("/b"))])  # type: ignore[arg-type]
    assert rt.calls == ["cleanup a", "cleanup b", "close", "leftovers a", "leftovers b"]
    assert td.removed == {"a": [], "b": ["container of b"]}
    assert td.left == {"a": [], "b": []}
    assert td.record is None
    assert td.problems == ["teardown: cleanup of a failed: the engine is gone",
                           "teardown: the runtime's record failed: no such file"]
