"""All progress output goes through here, on stderr: stdout is for results (tables, paths)."""

from __future__ import annotations

import sys


def say(msg: str) -> None:
    """A progress line or a warning for the person at the terminal."""
    print(f"patchbench: {msg}", file=sys.stderr, flush=True)


def step(label: str, detail: str) -> None:
    """One step of a long measurement (a round of a cell, a stress round)."""
    say(f"  {label:<28} {detail}")
