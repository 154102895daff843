"""By hand, outside the pipeline: the mount syscalls of one container start, per build of an OCI
runtime CLI (runc, crun, youki), counted exactly with bpftrace (patchbench.measure.mounttrace).

    python3 benchmarks/oci_mounts.py --variant baseline=BUILD/bin/crun \\
        --variant crun-mounts=OTHER/bin/crun --starts 3 --work /tmp/oci-mounts

Each variant gets a `true` bundle made as the runc runtime makes it (busybox rootfs, the config
from `<cli> spec`, no terminal) and a state root of its own under --work; each start is one
traced `<cli> --root ROOT run -b BUNDLE ID`. Prints one JSON document: per variant, the counts of
every start by syscall (mount, umount2, open_tree, move_mount, mount_setattr) and the failures.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from patchbench.measure import mounttrace
from patchbench.runtimes import runc as oci
from patchbench.util import cmd


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--variant", action="append", required=True, metavar="NAME=CLI",
                    help="a variant's OCI runtime CLI (repeatable)")
    ap.add_argument("--starts", type=int, default=3, help="traced starts per variant")
    ap.add_argument("--work", type=Path, required=True, help="a scratch directory")
    args = ap.parse_args()
    out: dict[str, object] = {"syscalls": list(mounttrace.SYSCALLS), "variants": {}}
    for spec in args.variant:
        name, _, cli_s = spec.partition("=")
        cli = Path(cli_s).resolve()
        work = (args.work / name).resolve()
        work.mkdir(parents=True, exist_ok=True)
        oci.make_bundles(work, cli, None, Path.cwd())
        root = work / "state"
        starts = []
        for i in range(args.starts):
            cid = f"pb-mounts-{name}-{i}"
            counts = mounttrace.trace([cli, "--root", root, "run", "-b", work / "bundle", cid],
                                      work / f"trace-{i}")
            cmd.run([cli, "--root", root, "delete", "-f", cid], check=False, timeout=60)
            if counts.exit_code != 0:
                print(f"{name}: start {i} exited {counts.exit_code}", file=sys.stderr)
                return 1
            starts.append({"by_syscall": counts.by_syscall(), "total": counts.total(),
                           "errors": counts.error_total()})
        out["variants"][name] = {"cli": cli.name, "starts": starts}  # type: ignore[index]
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
