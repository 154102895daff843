"""``python3 -m patchbench.cli.reference``: write docs/matrix.md, the reference of every
matrix.yaml key (patchbench.config.matrix_doc), once every scenario kind has registered its config
model (importing patchbench.scenarios does; the config package sits below the kinds)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from patchbench import scenarios  # noqa: F401  (every kind's config model: config_models)
from patchbench.config.matrix_doc import DEFAULT_OUT, MissingDescription, render

PROG = "python3 -m patchbench.cli.reference"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=PROG, description="Write docs/matrix.md, the reference of every matrix.yaml key.")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 when the file differs from the generated text")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help=f"the reference file (default: {DEFAULT_OUT})")
    args = parser.parse_args(argv)
    try:
        text = render()
    except MissingDescription as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    out: Path = args.out
    if args.check:
        current = out.read_text(encoding="utf-8") if out.is_file() else None
        if current != text:
            print(f"{out} is stale: run {PROG}", file=sys.stderr)
            return 1
        return 0
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
