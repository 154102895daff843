"""A tiny container runtime for the stress exec mode's tests (no root, no runc): ``start``,
``delete`` and ``list`` keep "containers" as files under STATE; ``exec NAME [--drop
VARIANT=SIG ...] --variant V -- ARGV...`` runs ARGV in the foreground and forwards every signal
to it as runc does, except SIGWINCH (handled itself) and the signals ``--drop`` names for this
variant (a planted loss); a signal that comes before ARGV's pid is known is forwarded then."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from types import FrameType

FORWARDED = (signal.SIGUSR1, signal.SIGUSR2, signal.SIGHUP, signal.SIGTERM, signal.SIGINT)


def do_exec(state: Path, args: list[str]) -> int:
    name, rest = args[0], args[1:]
    if not (state / name).exists():
        print(f"fake_runtime: no container {name}", file=sys.stderr)
        return 1
    sep = rest.index("--")
    opts, argv = rest[:sep], rest[sep + 1:]
    variant = opts[opts.index("--variant") + 1]
    dropped = {signal.Signals[o.split("=", 1)[1]] for i, o in enumerate(opts)
               if i and opts[i - 1] == "--drop" and o.split("=", 1)[0] == variant}
    child: list[subprocess.Popen[bytes]] = []
    early: list[int] = []  # got before Popen returned (ARGV may already run): forwarded after

    def forward(sig: int, _frame: FrameType | None) -> None:
        if sig in dropped:
            return
        if child:
            child[0].send_signal(sig)
        else:
            early.append(sig)

    for sig in FORWARDED:
        signal.signal(sig, forward)
    signal.signal(signal.SIGWINCH, lambda _s, _f: None)  # "resize": never forwarded
    child.append(subprocess.Popen(argv))
    for sig in early:
        child[0].send_signal(sig)
    return child[0].wait()


def main() -> int:
    state, verb, args = Path(sys.argv[1]), sys.argv[2], sys.argv[3:]
    state.mkdir(parents=True, exist_ok=True)
    if verb == "start":
        (state / args[0]).write_text("")
        return 0
    if verb == "delete":
        (state / args[0]).unlink(missing_ok=True)
        return 0
    if verb == "list":
        for p in sorted(state.iterdir()):
            print(p.name)
        return 0
    if verb == "exec":
        return do_exec(state, args)
    print(f"fake_runtime: unknown verb {verb}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
