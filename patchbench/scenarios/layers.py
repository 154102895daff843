"""The ``layers`` kind: a layers × concurrency scan of user-namespaced container starts on
containerd, because idmapped overlay mounts can grow with an image's layers. For each variant's
own daemon and the same L-layer images: the exact mount syscalls of one start per L (bpftrace)
with a line fitted against L; k starts released at once, timed per (variant, L, k) cell in
interleaved rounds, with the mount table's size and what each round left; and a check that the
ID mapping works in the container. Needs ``runtime: containerd``; docs/scenarios.md#layers."""

from __future__ import annotations

import shlex
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field

from patchbench import results
from patchbench.analysis import scaling
from patchbench.config.scenarios import ScenarioConfig
from patchbench.errors import PatchbenchError
from patchbench.measure import bench, launcher, mounttrace
from patchbench.measure.bench import Cell, Invocation
from patchbench.measure.oci_image import OciImage, image_name
from patchbench.report import blocks as rb
from patchbench.report import charts
from patchbench.report.blocks import MARKDOWN, Block, View
from patchbench.report.kind_blocks import (
    images_line,
    k_chart,
    k_tables,
    timed_blocks,
    timed_charts,
    verify_blocks,
    verify_page,
)
from patchbench.report.numbers import fmt_ratio, fmt_time
from patchbench.results import Cell as CellResult
from patchbench.results import Check, Record, TimedResult
from patchbench.scenarios import burst
from patchbench.scenarios.base import (
    Kind,
    ScenarioContext,
    ScenarioKind,
    containerd_runtime,
    hang_gate,
    header,
    planned_daemons,
)
from patchbench.scenarios.burst import _instances
from patchbench.scenarios.command import timed_results, with_deadline
from patchbench.util import cmd, progress

if TYPE_CHECKING:  # types only: `invoke list` does not import the containerd runtime
    from patchbench.runtimes.containerd import ContainerdDaemon

# --- the config: the keys matrix.yaml gives this kind (registered by patchbench.scenarios) ---


class LayersConfig(ScenarioConfig):
    """containerd: image layers × concurrency, with exact mount-syscall counts."""

    kind: Literal["layers"] = Field(default="layers", description="`layers`.")
    layers: list[Annotated[int, Field(ge=1, le=500)]] = Field(min_length=1, description=(
        "Layer counts L of the generated images; each is its own set of cells."))
    k: list[Annotated[int, Field(ge=1)]] = Field(min_length=1, description=(
        "Containers started at once (`ctr run --rm`), per L."))
    args: list[str] = Field(default_factory=lambda: ["true"], min_length=1, description=(
        "The container's command."))
    count_mounts: bool = Field(default=True, description=(
        "Count the mount syscalls of one start per (variant, L) with bpftrace."))

    def shown_command(self) -> str:
        return ("ctr run --rm --null-io --snapshotter overlayfs --uidmap 0:100000:65536 "
                "--gidmap 0:100000:65536 --remap-labels IMAGE(L) ID " + shlex.join(self.args)
                + ", k at once")

    def plan_detail(self) -> str:
        return f", L = {self.layers}, k = {self.k}"

    def cells_per_variant(self) -> int:
        return len(self.layers) * len(self.k)  # one cell per (L, k)


# --- the result: this kind's part of results.json (registered by patchbench.scenarios) ---


class MountTable(Record):
    """The host's mount table during one cell's bursts: its largest size, and the longest time
    reading /proc/self/mountinfo took."""

    peak_mounts: int
    slowest_read_s: float


class LayersResult(TimedResult):
    """A layers × concurrency scan on containerd (cells are per variant, L and k)."""

    kind: Literal["layers"] = "layers"
    layers: list[int]
    k: list[int]
    images: dict[str, str]  # L -> manifest digest, the same for every variant
    mount_counts: dict[str, dict[str, dict[str, int]]]  # variant -> L -> syscall -> count
    mount_counts_by_comm: dict[str, dict[str, dict[str, int]]]  # variant -> L -> process -> count
    mount_fit: dict[str, dict[str, list[float]]]  # variant -> syscall -> [slope, intercept]
    seed_formula: str
    mount_table: dict[str, MountTable]  # cell label -> peak
    mounts_left: dict[str, int]  # cell label -> mounts of the run left after its rounds
    active_snapshots: dict[str, int]  # cell label -> most active snapshots after a round
    verify: dict[str, Check]
    runc: dict[str, str]
    charts: list[str] = Field(default_factory=list)


SYSCALLS = ("open_tree", "mount_setattr", "move_mount", "mount", "umount2")
# the seed: 100 containers x 2 x (1 + 50 + 50) mount operations for 50-layer images
SEED_FORMULA = ("2 × (1 + L + L) mount operations per container (100 × 2 × (1 + 50 + 50) = "
                "20,200 for 100 containers of 50 layers)")


def _lat_file(ctx: ScenarioContext[LayersConfig], cell: Cell) -> Path:
    return (ctx.workdir / f"{ctx.scenario.name}-latencies"
            / f"{cell.variant}-L{cell.param('L')}-k{cell.param('k')}.jsonl")


def fit(xs: list[int], ys: list[int]) -> tuple[float, float] | None:
    """Least-squares slope and intercept of ys against xs (None with fewer than 2 distinct x);
    the fitting code every scan shares (patchbench.analysis.scaling)."""
    return scaling.line(xs, ys)


class LayersKind(Kind, name="layers", config=LayersConfig, result=LayersResult):
    def plan(self, ctx: ScenarioContext[LayersConfig]) -> list[str]:
        sc: LayersConfig = ctx.scenario
        lines = []
        for b, d in planned_daemons(ctx):
            lines.append(f"  [{b.variant.name}] daemon:  {b.bin / 'containerd'} --config "
                         f"{d.paths.config}")
            argv = d.run_argv(image_name(max(sc.layers)),
                              f"{d.namespace}-L{max(sc.layers)}-k{max(sc.k)}-{{i}}", sc.args)
            lines.append(f"  [{b.variant.name}] measure: launcher -k K -deadline "
                         f"{sc.timeout:g}s -- {shlex.join(argv)}")
        lines.append(f"  images: L = {sc.layers} (busybox + one file per layer), k = {sc.k}")
        if sc.count_mounts:
            lines.append("  mount syscalls: one traced start per (variant, L) with bpftrace")
        return lines

    def run(self, ctx: ScenarioContext[LayersConfig]) -> tuple[LayersResult, list[str]]:
        sc: LayersConfig = ctx.scenario
        rt = containerd_runtime(ctx)
        variants = [b.variant.name for b in ctx.built]
        images = {n: rt.image(n) for n in sc.layers}
        daemons: dict[str, ContainerdDaemon] = {}
        for b in ctx.built:
            d = rt.daemon(b.variant.name, b.bin)
            for img in images.values():
                d.import_image(img)
            daemons[b.variant.name] = d
        counts, by_comm, warnings = (_count_mounts(ctx, daemons, images) if sc.count_mounts
                                     else ({}, {}, []))
        fits = {v: {s: list(f) for s in SYSCALLS
                    if (f := fit(sc.layers, [counts[v][str(n)][s] for n in sc.layers]))}
                for v in counts}

        exe = launcher.build(ctx.layout)
        (ctx.workdir / f"{sc.name}-latencies").mkdir(parents=True, exist_ok=True)

        def expand(cell: Cell) -> Invocation:
            d = daemons[cell.variant]
            n, k = int(cell.param("L") or 1), cell.param("k") or "1"
            argv = d.run_argv(images[n], f"{d.namespace}-L{n}-k{k}-{{i}}", sc.args)
            return with_deadline(ctx, exe, cell, Invocation(command=argv, env=d.env()),
                                 ["-k", k, "-o", str(_lat_file(ctx, cell))])

        cells = [Cell(v, (("L", str(n)), ("k", str(k))))
                 for v in variants for n in sc.layers for k in sc.k]
        table: dict[str, MountTable] = {}
        left: dict[str, int] = {}
        snaps: dict[str, int] = {}
        sampler = mounttrace.MountTableSampler(interval=0.05)
        mark = [0]

        def on_round(r: int, cell: Cell, result: dict[str, Any]) -> None:
            window = sampler.samples[mark[0]:] or [sampler.sample()]
            mark[0] = len(sampler.samples)
            peak = max(window, key=lambda s: s.mounts)
            prev = table.get(cell.label)
            slowest = max(s.read_seconds for s in window)
            table[cell.label] = MountTable(
                peak_mounts=max(peak.mounts, prev.peak_mounts if prev else 0),
                slowest_read_s=max(slowest, prev.slowest_read_s if prev else 0.0))
            d = daemons[cell.variant]
            n_left, _ = d.unmount_leftovers()
            left[cell.label] = left.get(cell.label, 0) + n_left
            active = [x for x in d.state_leftovers() if x.startswith("active snapshot")]
            snaps[cell.label] = max(snaps.get(cell.label, 0), len(active))

        sampler.start()
        try:
            samples, order = bench.measure(sc.name, cells, expand, runs=sc.runs,
                                           rounds=sc.rounds, warmup=sc.warmup,
                                           timeout=sc.timeout, seed=ctx.seed,
                                           workdir=ctx.workdir, on_round=on_round)
        finally:
            sampler.stop()
        cell_results, comparisons, ev_summary, timed_warnings = timed_results(ctx, cells, samples,
                                                                                 order)
        warnings += timed_warnings
        for c, res in zip(cells, cell_results, strict=True):
            res.instances = _instances(_lat_file(ctx, c))
        verify = {v: _verify(d, images[max(sc.layers)], sc.timeout) for v, d in daemons.items()}

        chart_names = _charts(ctx, cells, cell_results, counts)
        result = LayersResult(
            **header(sc, sc.shown_command()), layers=sc.layers, k=sc.k, order=order,
            cells=cell_results, comparisons=comparisons, deadline_s=sc.timeout,
            evidence_summary=ev_summary,
            images={str(n): img.manifest_digest for n, img in images.items()},
            mount_counts=counts, mount_counts_by_comm=by_comm, mount_fit=fits,
            seed_formula=SEED_FORMULA, mount_table=table, mounts_left=left,
            active_snapshots=snaps, verify=verify, runc=rt.runc_info(), charts=chart_names)
        warnings += [f"{sc.name} {label}: {n} mount(s) of the run were left after its rounds "
                     "(removed)" for label, n in left.items() if n]
        warnings += [f"{sc.name} {v}: the verify check FAILED: {c.output[:200]}"
                     for v, c in verify.items() if not c.passed]
        return result, warnings

    def gate(self, result: LayersResult) -> list[str]:
        base = next(iter(result.verify), None)
        out = [f"{result.name} {v}: verify failed" for v, c in result.verify.items()
               if not c.passed and v != base]
        out += [f"{result.name} {label}: {n} mount(s) left behind" for label, n in
                result.mounts_left.items() if n and not label.startswith(f"{base} ")]
        return out + hang_gate(result.name, result.comparisons, result.cells)

    def blocks(self, result: LayersResult, view: View) -> list[Block]:
        if view is View.PAGE:
            return page(result)
        return report(result, details=view is View.REPORT) if view in MARKDOWN else []


def report(result: LayersResult, *, details: bool = True) -> list[Block]:
    """Mount syscalls per start against L (with the fitted line and the seed's formula), the
    time table per (L, k), the mount table and leftovers per cell, verify, charts."""
    sc = result
    out = timed_blocks(sc, deadlines=False) if details else []
    variants = list(sc.mount_counts)
    if variants:
        syscalls = list(next(iter(next(iter(sc.mount_counts.values())).values())))
        rows = []
        for n in sc.layers:
            row = [str(n)]
            for v in variants:
                c = sc.mount_counts[v][str(n)]
                row.append(" / ".join(str(c[s]) for s in syscalls))
            rows.append(row)
        fit_row = ["fit (slope × L + intercept)"]
        for v in variants:
            fit_row.append(" / ".join(
                f"{f[0]:.2f}L{f[1]:+.1f}" if (f := sc.mount_fit.get(v, {}).get(s)) else "-"
                for s in syscalls))
        rows.append(fit_row)
        out += [rb.text("Mount syscalls of one container start (ctr, the daemon, its shim, "
                        f"runc), {' / '.join(syscalls)}:"),
                rb.table(["L", *variants], rows),
                rb.text(f"The seed's count: {sc.seed_formula}.")]
    out.append(rb.text(
        "Per (L, k): median time until all k containers exited, and, per variant in that "
        "order, the largest mount table seen during its bursts, the slowest read of "
        "/proc/self/mountinfo, and the mounts of the run left after its rounds (removed after "
        "each round)."))
    cells = {c.label: c for c in sc.cells}
    comps = {c.candidate: c for c in sc.comparisons}
    tvariants = list(dict.fromkeys(c.variant for c in sc.cells))
    rows = []
    for n in sc.layers:
        for k in sc.k:
            labels = [f"{v} L={n} k={k}" for v in tvariants]
            row = [str(n), str(k), *[fmt_time(cells[lb].summary.median) for lb in labels]]
            row += [fmt_ratio(comps[lb]) for lb in labels[1:]]
            tables = [sc.mount_table.get(lb) for lb in labels]
            row += [", ".join(str(t.peak_mounts) if t else "-" for t in tables),
                    ", ".join(fmt_time(t.slowest_read_s) if t else "-" for t in tables),
                    ", ".join(str(sc.mounts_left.get(lb, 0)) for lb in labels)]
            rows.append(row)
    out += [rb.table(["L", "k", *tvariants,
                      *[f"speedup {v} [95% CI]" for v in tvariants[1:]],
                      "mount table peak", "slowest mountinfo read", "mounts left"], rows),
            images_line(sc.images, sc.runc),
            *verify_blocks(sc.verify)]
    return out + [rb.Image(name, name) for name in sc.charts]


def page(result: LayersResult) -> list[Block]:
    """The burst kind's table per k (for each variant and k, its last cell: the largest L;
    the page has no per-(L, k) table yet, report.md has), verify, this kind's data as it is,
    the charts (the burst kind's among them)."""
    sc = result
    data = sc.model_dump(mode="json")
    return [*k_tables(burst.KIND.name, sc.k, sc.cells, sc.comparisons),
            *verify_page(sc.verify),
            rb.Data(f"{sc.kind} data", {k: v for k, v in data.items()
                                        if k not in ("cells", "comparisons", "order")}),
            *timed_charts(data), k_chart(burst.KIND.name, data)]


Counts = dict[str, dict[str, dict[str, int]]]  # variant -> L -> syscall (or comm) -> calls


def _count_mounts(ctx: ScenarioContext[LayersConfig], daemons: dict[str, ContainerdDaemon],
                  images: dict[int, OciImage]) -> tuple[Counts, Counts, list[str]]:
    """One traced start per (variant, L): its mount syscalls, per syscall and per process name;
    a start that failed is a warning."""
    sc = ctx.scenario
    counts: Counts = {}
    by_comm: Counts = {}
    warnings = []
    for v, d in daemons.items():
        for n, img in images.items():
            mc = d.trace_run(img, f"{d.namespace}-trace-L{n}",
                             ctx.workdir / "mounttrace" / f"{v}-L{n}", timeout=sc.timeout * 5)
            if mc.exit_code != 0:
                warnings.append(f"{sc.name} {v} L={n}: the traced start exited {mc.exit_code}")
            counts.setdefault(v, {})[str(n)] = mc.by_syscall()
            by_comm.setdefault(v, {})[str(n)] = mc.by_comm()
            progress.step(f"{v} L={n}", f"mount syscalls {mc.by_syscall()}")
    return counts, by_comm, warnings


def _charts(ctx: ScenarioContext[LayersConfig], cells: list[Cell], cell_results: list[CellResult],
            counts: Counts) -> list[str]:
    """The time chart (and with mount counts, their chart), files for the report folder."""
    sc = ctx.scenario
    variants = list(dict.fromkeys(c.variant for c in cells))
    medians = {(c.variant, int(c.param("L") or 1), int(c.param("k") or 1)): r.summary.median
               for c, r in zip(cells, cell_results, strict=True)}  # NaN: every run hung
    names = [f"{sc.name}-time.svg"]
    charts.layers_time(ctx.workdir / names[0], sc.layers, sc.k, variants, medians, sc.name)
    if counts:
        names.append(f"{sc.name}-mounts.svg")
        charts.layers_mounts(ctx.workdir / names[1], sc.layers, counts, SYSCALLS[:3], sc.name)
    for name in names:
        ctx.extra_files[name] = ctx.workdir / name
    return names


def _verify(d: ContainerdDaemon, image: OciImage, timeout: float) -> Check:
    """Inside: every layer's file is there and root-owned files show uid 0. Outside: the
    container's process runs as the mapped uid (100000)."""
    files = ["/bin/busybox", *image.layer_files()]
    inner = ["sh", "-c", 'stat -c %u "$@"; ls /layers | wc -l', "sh", *files]
    argv = d.run_argv(image, f"{d.namespace}-verify", inner, null_io=False)
    shown = shlex.join(argv)
    try:
        res = cmd.run(argv, env=d.env(), timeout=timeout * 5, check=False)
        words = res.stdout.split()
        inside_ok = (res.returncode == 0 and words[:-1] == ["0"] * len(files)
                     and words[-1:] == [str(image.layers - 1)])
        host_uid = _host_uid(d, image, timeout)
    except PatchbenchError as exc:
        return results.Check(command=shown, exit_code=None, passed=False, output=exc.message)
    out = (f"inside: {len(files)} files uid {sorted(set(words[:-1]))}, "
           f"{words[-1] if words else '?'} layer files; host uid of the container's process: "
           f"{host_uid}")
    return results.Check(command=shown, exit_code=res.returncode,
                         passed=inside_ok and host_uid == 100000, output=out)


def _host_uid(d: ContainerdDaemon, image: OciImage, timeout: float) -> int | None:

    cid = f"{d.namespace}-hostuid"
    cmd.run(d.run_argv(image, cid, ["sleep", "30"], detach=True), env=d.env(),
                timeout=timeout * 5)
    try:
        for line in d.ctr("tasks", "ls").stdout.splitlines()[1:]:
            cols = line.split()
            if cols and cols[0] == cid:
                for st in Path(f"/proc/{cols[1]}/status").read_text().splitlines():
                    if st.startswith("Uid:"):
                        return int(st.split()[1])
        return None
    finally:
        d.ctr("tasks", "kill", "-s", "KILL", cid, check=False)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if d.ctr("tasks", "delete", cid, check=False).returncode == 0:
                break
            time.sleep(0.1)
        d.ctr("containers", "delete", cid, check=False)


KIND: ScenarioKind[LayersConfig, LayersResult] = LayersKind()
