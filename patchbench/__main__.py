"""``python3 -m patchbench``: the console script."""

from patchbench.cli.main import main

main()
