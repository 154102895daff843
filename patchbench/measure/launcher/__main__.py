"""``python3 -m patchbench.measure.launcher pin``: build the launcher for every pinned platform
(cross-compiled, with the pinned Go release) and write pins.py with the sources' digest and each
binary's sha256; ``--check`` says whether pins.py is up to date and changes nothing (exit 1 if
not). For the developers: run it after changing burst.go, deadline.go, go.mod or pins.GO."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from patchbench.measure import launcher
from patchbench.measure.launcher import pins

TEMPLATE = '''"""The launcher patchbench runs as root, pinned (written by ``python3 -m
patchbench.measure.launcher pin``; never edit by hand): the Go release it is built with, the
digest of its sources, and per platform the sha256 of the binary they give. patchbench uses a
launcher only when it hashes to this pin."""

GO = "{go}"
SOURCES = "{sources}"
SHA256 = {{
{rows}}}
'''


def pinned_text() -> str:
    rows = ""
    with tempfile.TemporaryDirectory(prefix="patchbench-pin-") as tmp:
        for platform in launcher.PLATFORMS:
            digest = launcher.compile_to(Path(tmp) / platform.replace("/", "-"), platform)
            rows += f'    "{platform}": "{digest}",\n'
    return TEMPLATE.format(go=pins.GO, sources=launcher.sources_digest(), rows=rows)


def main(argv: list[str]) -> int:
    if argv not in (["pin"], ["pin", "--check"]):
        print(__doc__, file=sys.stderr)
        return 2
    path = Path(pins.__file__)
    text = pinned_text()
    if "--check" in argv:
        same = path.read_text() == text
        print(f"{path}: {'up to date' if same else 'out of date (run: pin)'}")
        return 0 if same else 1
    path.write_text(text)
    print(f"{path}: written")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
