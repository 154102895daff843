"""By hand, outside the pipeline: mount syscalls and start time of one user-namespaced `ctr run`
per image size L, for one or more containerd builds: does the fix make them O(1) in L, not O(L)?

    python3 benchmarks/containerd_mounts.py --variant v2.1.4=BUILD/bin --variant fix=OTHER/bin \\
        --runc /usr/sbin/runc --layers 1,16,64 --timings 5 --work /tmp/cd-mounts

Each variant gets its own daemon (patchbench.runtimes.containerd) under --work; the images are
made once by patchbench.measure.oci_image (identical digests for every variant). For each L: one traced
`ctr run --rm --uidmap 0:100000:65536 --gidmap 0:100000:65536 --remap-labels IMAGE ID true`
(patchbench.measure.mounttrace), then --timings untraced runs, timed from outside. Prints one JSON document.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from patchbench.measure import oci_image
from patchbench.runtimes import containerd as cd
from patchbench.util import cmd


def burst(daemon: cd.ContainerdDaemon, img: oci_image.OciImage, k: int, tag: str) -> dict[str, object]:
    """k `ctr run` at once: wall time until all exited, exit codes, and the mounts of the run
    left behind afterwards (none expected)."""
    started = time.monotonic()
    procs = [cmd.Background(daemon.run_argv(img, f"{tag}-{i}"), env=daemon.env())
             for i in range(k)]
    codes = [p.wait(300) for p in procs]
    seconds = round(time.monotonic() - started, 3)
    for p in procs:
        p.stop()
    return {"k": k, "seconds": seconds, "exit_codes": codes,
            "mounts_left": len(cd.mounts_under(daemon.paths.base))}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--variant", action="append", required=True, help="NAME=BIN_DIR")
    ap.add_argument("--runc", type=Path, required=True)
    ap.add_argument("--layers", default="1,16,64")
    ap.add_argument("--timings", type=int, default=5)
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--busybox", type=Path, default=Path("/usr/bin/busybox"))
    ap.add_argument("--burst", type=int, default=0,
                    help="also start this many containers at once per L, --timings times")
    args = ap.parse_args()
    layers = [int(x) for x in args.layers.split(",")]
    args.work.mkdir(parents=True, exist_ok=True)
    cd.probe_idmapped_overlay(args.work / "probe")
    images = {n: oci_image.write_image(args.work / "images" / f"layers-{n}.tar", n, args.busybox)
              for n in layers}
    out: dict[str, object] = {
        "runc": str(args.runc),
        "runc_version": cmd.run([args.runc, "--version"]).stdout.splitlines()[0],
        "images": {n: img.manifest_digest for n, img in images.items()},
        "load_before": os.getloadavg(),
        "variants": {},
    }
    for spec in args.variant:
        name, _, bin_dir = spec.partition("=")
        base = args.work / "runs" / f"{name}-{time.strftime('%H%M%S')}"
        namespace = "pb-hand-" + re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-")
        daemon = cd.ContainerdDaemon(Path(bin_dir), base, namespace, args.runc)
        version = cmd.run([Path(bin_dir) / "containerd", "--version"]).stdout.strip()
        rows: dict[str, object] = {"version": version, "runc": cd.runc_record(args.runc)}
        daemon.start()
        try:
            for n, img in images.items():
                daemon.import_image(img)
                counts = daemon.trace_run(img, f"t{n}", base / f"trace-{n}")
                times = []
                for i in range(args.timings):
                    started = time.monotonic()
                    cmd.run(daemon.run_argv(img, f"r{n}-{i}"), env=daemon.env(), timeout=120)
                    times.append(round(time.monotonic() - started, 4))
                bursts = [burst(daemon, img, args.burst, f"b{n}-{i}")
                          for i in range(args.timings if args.burst else 0)]
                rows[str(n)] = {"mounts": counts.as_dict(), "seconds": times, "bursts": bursts,
                                "state_leftovers": daemon.state_leftovers()}
                print(f"{name} L={n}: {counts.by_syscall()} by comm {counts.by_comm()} "
                      f"times {times} bursts {bursts}", file=sys.stderr)
        finally:
            daemon.stop()
            found, problems = daemon.cleanup_host()
            rows["host_leftovers"] = found.counts()
            rows["cleanup_problems"] = problems
        out["variants"][name] = rows  # type: ignore[index]
    out["load_after"] = os.getloadavg()
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
