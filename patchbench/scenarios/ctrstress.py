"""The ``ctrstress`` kind: containerd containers killed or deleted mid-start, or the daemon
restarted mid-burst, then what is left counted (mounts, idmapped ones apart, snapshots, shims,
tasks, containers), removed, and a fresh container started, because a fix that changes how
mounts are made can leak them under stress. Each round's draw is applied to every variant
alike. The gate fails a candidate that leaves a kind of leftover the baseline never left, fails
its fresh start, or hangs where the baseline did not. Needs ``runtime: containerd``;
docs/scenarios.md#ctrstress."""

from __future__ import annotations

import contextlib
import itertools
import os
import random
import re
import shlex
import signal
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field, model_validator

from patchbench.config.scenarios import RoundsConfig
from patchbench.errors import PatchbenchError
from patchbench.measure import bench
from patchbench.measure.bench import Cell
from patchbench.measure.oci_image import OciImage, image_name
from patchbench.report.blocks import MARKDOWN, Block, View, table, text
from patchbench.report.kind_blocks import images_line, round_evidence
from patchbench.results import Record, ScenarioResult
from patchbench.scenarios import stress
from patchbench.scenarios.base import (
    Kind,
    ScenarioContext,
    ScenarioKind,
    containerd_runtime,
    evidence_summary,
    header,
    planned_daemons,
    report_evidence,
    wait_or_capture,
)
from patchbench.util import cmd, progress
from patchbench.util.cmd import Background

if TYPE_CHECKING:  # types only: `invoke list` does not import the containerd runtime
    from patchbench.runtimes.containerd import ContainerdDaemon

# --- the config: the keys matrix.yaml gives this kind (registered by patchbench.scenarios) ---


Action = Literal["kill", "delete", "restart"]


class CtrStressConfig(RoundsConfig):
    """``rounds`` rounds, each running every variant once; ``runs`` is not used (keep it equal
    to ``rounds``)."""

    kind: Literal["ctrstress"] = Field(default="ctrstress", description="`ctrstress`.")
    layers: list[Annotated[int, Field(ge=1, le=500)]] = Field(min_length=1, description=(
        "Layer counts of the images; each round draws one."))
    k: int = Field(default=8, ge=1, le=256, description="Containers started at once per round.")
    actions: list[Action] = Field(min_length=1, description=(
        "What a round does mid-start, drawn once per round for every variant: `kill` "
        "(`ctr task kill`), `delete` (`ctr container delete`, then `ctr task delete --force`) "
        "or `restart` (the variant's daemon)."))
    delay: tuple[float, float] = Field(default=(0.0, 1.0), description=(
        "[low, high] seconds: the seeded random delay before the action."))
    args: list[str] = Field(default_factory=lambda: ["true"], min_length=1, description=(
        "The container's command."))
    settle: float = Field(default=5.0, ge=0, description=(
        "Seconds to wait for the shims to go before counting leftovers."))

    @model_validator(mode="after")
    def _shape(self) -> CtrStressConfig:
        if self.delay[0] < 0 or self.delay[1] < self.delay[0]:
            raise ValueError("'delay' must be [low, high] seconds with 0 <= low <= high")
        if len(set(self.actions)) != len(self.actions):
            raise ValueError(f"'actions' lists an action twice: {self.actions}")
        if len(set(self.layers)) != len(self.layers):
            raise ValueError(f"'layers' lists a layer count twice: {self.layers}")
        return self

    def shown_command(self) -> str:
        return ("ctr run --rm --null-io --snapshotter overlayfs --uidmap 0:100000:65536 "
                "--gidmap 0:100000:65536 --remap-labels IMAGE(L) ID " + shlex.join(self.args)
                + f", {self.k} at once, then {'/'.join(self.actions)} mid-start")

    def plan_detail(self) -> str:
        return f", L = {self.layers}, k = {self.k}, actions {self.actions}"


# --- the result: this kind's part of results.json (registered by patchbench.scenarios) ---


class CtrStressCensus(Record):
    """What one variant had left after a ctrstress round (or after its fresh start)."""

    mounts: int  # mounts of the run in /proc/self/mountinfo
    idmapped_mounts: int  # of which idmapped
    snapshots: int  # active snapshots listed
    snapshot_dirs: int  # snapshot directories the snapshotter does not list
    shims: int
    tasks: int
    containers: int
    errors: list[str] = Field(default_factory=list)  # listings that failed


class CtrStressRound(Record):
    round: int
    variant: str
    layers: int
    k: int
    action: str  # kill, delete or restart
    delay_s: float
    exit_codes: list[int | None]  # of the k ctr run clients; None: hung
    kill_errors: int  # kill/delete attempts still refused at the timeout
    hangs: int
    # kill/delete per container: hit (took effect), missed (it had finished), refused (its
    # start failed anyway), hang, failed (still refused at the timeout); restart: 1
    action_outcomes: dict[str, int] = Field(default_factory=dict)
    restart_s: float | None = None  # stopping and starting the daemon again
    settle_s: float
    left: CtrStressCensus
    left_detail: list[str] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)
    fresh_ok: bool
    fresh_output: str = ""
    fresh_left: CtrStressCensus
    evidence: list[str] = Field(default_factory=list)  # evidence of hung `ctr run` clients


class CtrStressVariant(Record):
    """One variant's ctrstress rounds summed (leftovers after the rounds and their fresh starts)."""

    rounds: int
    actions: dict[str, int]
    hangs: int = 0
    kill_errors: int = 0
    fresh_failures: int = 0
    mounts: int = 0
    idmapped_mounts: int = 0
    snapshots: int = 0
    snapshot_dirs: int = 0
    shims: int = 0
    tasks: int = 0
    containers: int = 0
    rounds_with_leftovers: int = 0
    action_outcomes: dict[str, int] = Field(default_factory=dict)  # summed over the rounds


class CtrStressResult(ScenarioResult):
    """containerd containers killed mid-start, the daemon restarted mid-burst."""

    kind: Literal["ctrstress"] = "ctrstress"
    layers: list[int]
    instances: int  # k: containers started per round
    actions: list[str]
    delay: list[float]
    settle: float
    images: dict[str, str]  # L -> manifest digest
    rounds_detail: list[CtrStressRound]
    per_variant: dict[str, CtrStressVariant]
    runc: dict[str, str] = Field(default_factory=dict)
    evidence_summary: str | None = None  # a readable account of every hang


# the leftover kinds a census counts ("mounts" counts all of them, idmapped or not)
LEFTOVER_KINDS = ("mounts", "snapshots", "snapshot_dirs", "shims", "tasks", "containers")
# what the gate compares one by one: the idmapped mounts apart from the others, so that a
# baseline's rootfs mount left by a restart does not excuse a candidate's idmapped mounts
GATE_KINDS = ("idmapped_mounts", "other_mounts", "snapshots", "snapshot_dirs", "shims", "tasks",
              "containers")
SNAPSHOT_DIR = Path("io.containerd.snapshotter.v1.overlayfs") / "snapshots"


@dataclass(frozen=True)
class Draw:
    """One round's draw, the same for every variant."""

    round: int
    layers: int
    action: str
    delay: float


def draws(sc: CtrStressConfig, seed: int) -> list[Draw]:
    """Per round one (L, action) and one delay. The (L, action) pairs come in shuffled blocks of
    every pair, so each is drawn equally often (to within one block); the delay is uniform in
    ``delay``. Seeded: the same seed gives the same rounds."""
    rng = random.Random(seed)
    pairs = list(itertools.product(sc.layers, sc.actions))
    seq: list[tuple[int, str]] = []
    while len(seq) < sc.rounds:
        block = list(pairs)
        rng.shuffle(block)
        seq += block
    return [Draw(r, n, a, round(rng.uniform(*sc.delay), 4))
            for r, (n, a) in enumerate(seq[:sc.rounds], 1)]


# --- counting ------------------------------------------------------------------------------


def _unescape(field_: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field_)


def run_mounts(prefix: Path, mountinfo: str) -> list[tuple[str, bool]]:
    """(mount point, idmapped) of every mount at or below ``prefix`` in a mountinfo text, last
    mounted first (the order to unmount them)."""
    pre = str(prefix).rstrip("/")
    out = []
    for line in mountinfo.splitlines():
        parts = line.split(" ")
        if len(parts) < 6:
            continue
        point = _unescape(parts[4])
        if point == pre or point.startswith(pre + "/"):
            out.append((point, "idmapped" in parts[5].split(",")))
    return list(reversed(out))


def listed_snapshots(text: str) -> tuple[list[str], int]:
    """Active snapshot keys and how many snapshots in all, from ``ctr snapshots ls``."""
    active, total = [], 0
    for line in text.splitlines()[1:]:
        cols = line.split()
        if len(cols) >= 2:
            total += 1
            if cols[-1] == "Active":
                active.append(cols[0])
    return active, total


def listed_tasks(text: str) -> list[str]:
    """Task ids from ``ctr tasks ls``."""
    return [line.split()[0] for line in text.splitlines()[1:] if line.strip()]


@dataclass
class Census:
    """What one variant has left after a round."""

    mounts: list[str] = field(default_factory=list)
    idmapped: list[str] = field(default_factory=list)  # the idmapped ones among ``mounts``
    snapshots: list[str] = field(default_factory=list)  # active snapshots listed
    snapshot_dirs: int = 0  # snapshot directories the snapshotter does not list
    shims: list[int] = field(default_factory=list)
    tasks: list[str] = field(default_factory=list)
    containers: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # a listing that failed

    def counts(self) -> dict[str, int]:
        return {"mounts": len(self.mounts), "idmapped_mounts": len(self.idmapped),
                "snapshots": len(self.snapshots), "snapshot_dirs": self.snapshot_dirs,
                "shims": len(self.shims), "tasks": len(self.tasks),
                "containers": len(self.containers)}

    def kinds(self) -> list[str]:
        """The leftover kinds present (in ``LEFTOVER_KINDS`` order)."""
        c = self.counts()
        return [k for k in LEFTOVER_KINDS if c[k]]

    def record(self) -> CtrStressCensus:
        return CtrStressCensus(**self.counts(), errors=self.errors)


def unlisted_dirs(d: ContainerdDaemon) -> int:
    """Snapshot directories of the overlayfs snapshotter that ``ctr snapshots ls`` does not list
    (removed snapshots whose directories the snapshotter has not deleted yet, or leaked)."""
    _, total = listed_snapshots(d.ctr("snapshots", "--snapshotter", d.snapshotter, "ls").stdout)
    snapdir = d.paths.root / SNAPSHOT_DIR
    dirs = sum(1 for p in snapdir.iterdir() if p.is_dir()) if snapdir.is_dir() else 0
    return max(0, dirs - total)


def census(d: ContainerdDaemon, dirs_before: int = 0) -> Census:
    """Count what the variant's daemon has left (the daemon must be up); unlisted snapshot
    directories count beyond the ``dirs_before`` there were when the round began (the snapshotter
    removes them itself, so they are never removed here and would otherwise count again)."""
    out = Census()
    for point, idm in run_mounts(d.paths.base.resolve(), d.mountinfo.read_text()):
        out.mounts.append(point)
        if idm:
            out.idmapped.append(point)
    out.shims = d.shims()
    try:
        out.tasks = listed_tasks(d.ctr("tasks", "ls").stdout)
        out.containers = d.ctr("containers", "ls", "-q").stdout.split()
        out.snapshots, _ = listed_snapshots(
            d.ctr("snapshots", "--snapshotter", d.snapshotter, "ls").stdout)
        out.snapshot_dirs = max(0, unlisted_dirs(d) - dirs_before)
    except PatchbenchError as exc:
        out.errors.append(exc.message)
    return out


def clean(d: ContainerdDaemon) -> list[str]:
    """Remove what a census counts: tasks, containers and active snapshots of the namespace
    (through the daemon), then mounts of the run and shims still running (unlisted snapshot
    directories are the snapshotter's own to delete). Returns what was removed or failed."""
    removed: list[str] = []
    try:
        removed += d.cleanup_state()
    except PatchbenchError as exc:
        removed.append(f"cleaning the namespace failed: {exc.message}")
    done, failed = d.unmount_leftovers()
    if done:
        removed.append(f"{done} mount(s)")
    removed += [f"unmount failed: {f}" for f in failed]
    for pid in d.shims():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        removed.append(f"shim pid {pid}")
    return removed


# --- one round -------------------------------------------------------------------------------


def action_argv(d: ContainerdDaemon, action: str, cid: str) -> list[str]:
    """One attempt of ``kill`` or ``delete`` on one container; exit 0 when it took effect."""
    if action == "kill":
        return d.ctr_argv("tasks", "kill", "-s", "KILL", cid)
    delete, force = (shlex.join(d.ctr_argv(*a)) for a in (("containers", "delete", cid),
                                                          ("tasks", "delete", "--force", cid)))
    # refused while a task is there: force-delete the task (then it took effect), then the
    # container, which the run's own client may have removed first (what is left is counted)
    return ["sh", "-c", f"{delete} || {{ {force} && {{ {delete}; true; }}; }}"]


def apply(d: ContainerdDaemon, action: str, clients: dict[str, Background], timeout: float,
          log: Path | None = None, pause: float = 0.02) -> Counter[str]:
    """Apply ``action`` to the round's containers and return how each went: ``hit`` (it took
    effect), ``missed`` (refused, and the container's client had exited 0: it finished before
    the action could reach it), ``refused`` (refused, and the client had failed: the container
    did not start, whether through a partly applied attempt or by itself), ``hang`` (an attempt
    did not return within ``timeout``) or ``failed`` (still refused after ``timeout``). ``kill`` and
    ``delete`` chase every container: one attempt per container at once, repeated every
    ``pause`` seconds until it takes effect or the container's client has exited (a container is
    killable only once its task exists). ``restart`` stops the daemon and starts it again."""
    if action == "restart":
        d.stop()
        d.start()
        return Counter(restart=1)
    out: Counter[str] = Counter()
    pending = list(clients)
    deadline = time.monotonic() + timeout
    while pending:
        tries = {cid: cmd.Background(action_argv(d, action, cid), env=d.env(), log=log)
                 for cid in pending}
        again = []
        for cid, proc in tries.items():
            code = proc.wait(max(0.1, deadline - time.monotonic()))
            proc.stop()
            if code is None:
                out["hang"] += 1
            elif code == 0:
                out["hit"] += 1
            elif (exited := clients[cid].proc.poll()) is not None:
                out["missed" if exited == 0 else "refused"] += 1
            elif time.monotonic() >= deadline:
                out["failed"] += 1
            else:
                again.append(cid)
        pending = again
        if pending:
            time.sleep(pause)
    return out


def settle(d: ContainerdDaemon, seconds: float, dirs_before: int) -> float:
    """Wait until no shim of the daemon runs and the snapshotter has deleted the directories of
    removed snapshots (at most ``seconds``); return the time waited."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        try:
            if not d.shims() and unlisted_dirs(d) <= dirs_before:
                break
        except PatchbenchError:
            pass  # counted by the census
        time.sleep(0.2)
    return time.monotonic() - t0


def run_round(ctx: ScenarioContext[CtrStressConfig], variant: str, d: ContainerdDaemon, image: OciImage,
              draw: Draw, log: Path) -> CtrStressRound:
    sc: CtrStressConfig = ctx.scenario
    ids = [f"{d.namespace}-r{draw.round}-{i}" for i in range(sc.k)]
    launched = time.monotonic()
    evidence: list[str] = []
    dirs_before = unlisted_dirs(d)
    procs = {cid: cmd.Background(d.run_argv(image, cid, sc.args), env=d.env(), log=log)
             for cid in ids}
    restart_s = None
    try:
        time.sleep(draw.delay)
        t0 = time.monotonic()
        how = apply(d, draw.action, procs, sc.timeout, log)
        if draw.action == "restart":
            restart_s = round(time.monotonic() - t0, 3)
        # a hung `ctr run`: its evidence before the kill (and the group's kill below)
        codes, evidence = wait_or_capture(
            list(procs.values()), sc.timeout, lambda i: d.run_argv(image, ids[i], sc.args),
            ctx.workdir / f"{sc.name}-evidence" / variant, launched)
    finally:
        for p in procs.values():
            p.stop()
    waited = settle(d, sc.settle, dirs_before)
    left = census(d, dirs_before)
    removed = clean(d)
    fresh_id = f"{d.namespace}-r{draw.round}-fresh"
    fresh_ok, fresh_out = _fresh(d, image, fresh_id, sc.timeout, log)
    settle(d, sc.settle, dirs_before)
    after = census(d, dirs_before)
    if after.kinds():
        removed += clean(d)
    return CtrStressRound(
        round=draw.round, variant=variant, layers=draw.layers, k=sc.k, action=draw.action,
        delay_s=draw.delay, exit_codes=codes, kill_errors=how["failed"],
        hangs=sum(c is None for c in codes) + how["hang"], action_outcomes=dict(how),
        restart_s=restart_s,
        settle_s=round(waited, 3), left=left.record(), left_detail=_detail(left),
        removed=removed, fresh_ok=fresh_ok, fresh_output=fresh_out,
        fresh_left=after.record(), evidence=evidence)


def _detail(c: Census, limit: int = 20) -> list[str]:
    items = ([f"idmapped mount {m}" if m in c.idmapped else f"mount {m}" for m in c.mounts]
             + [f"active snapshot {s}" for s in c.snapshots]
             + [f"shim pid {p}" for p in c.shims] + [f"task {t}" for t in c.tasks]
             + [f"container {x}" for x in c.containers])
    if c.snapshot_dirs:
        items.append(f"{c.snapshot_dirs} unlisted snapshot dir(s)")
    return items[:limit] + ([f"... {len(items) - limit} more"] if len(items) > limit else [])


def _fresh(d: ContainerdDaemon, image: OciImage, cid: str, timeout: float, log: Path
           ) -> tuple[bool, str]:
    try:
        res = cmd.run(d.run_argv(image, cid, ["true"]), env=d.env(), timeout=timeout,
                          check=False, log=log)
    except PatchbenchError as exc:
        return False, exc.message[-500:]
    return res.returncode == 0, (res.stderr.strip() or res.stdout.strip())[-500:]


# --- totals and the gate ------------------------------------------------------------------


def totals(rounds: list[CtrStressRound]) -> dict[str, int]:
    """Per variant: rounds, hangs, kill errors, fresh failures, and each leftover kind summed
    over the rounds (after the round and after its fresh start)."""
    out: Counter[str] = Counter(rounds=len(rounds))
    for r in rounds:
        out["hangs"] += r.hangs
        out["kill_errors"] += r.kill_errors
        out["fresh_failures"] += not r.fresh_ok
        for census_ in (r.left, r.fresh_left):
            for key in (*LEFTOVER_KINDS, "idmapped_mounts"):
                out[key] += getattr(census_, key)
        out["rounds_with_leftovers"] += any(getattr(r.left, k) for k in LEFTOVER_KINDS)
    return dict(out)


def outcomes(rounds: list[CtrStressRound]) -> dict[str, int]:
    """How the kill and delete attempts went, summed (hit, missed, hang, failed; restart)."""
    out: Counter[str] = Counter()
    for r in rounds:
        out.update(r.action_outcomes)
    return dict(sorted(out.items()))


def gate_failures(name: str, per_variant: dict[str, dict[str, int]]) -> list[str]:
    """A candidate (every variant after the first, the baseline) fails where it has leftovers
    of a kind (``GATE_KINDS``), fresh-start failures or hangs and the baseline has none of
    them."""
    if not per_variant:
        return []
    def kinds(t: dict[str, int]) -> dict[str, int]:
        return {**t, "other_mounts": t.get("mounts", 0) - t.get("idmapped_mounts", 0)}

    base_name, *cands = per_variant
    base = kinds(per_variant[base_name])
    out = []
    for v in cands:
        mine = kinds(per_variant[v])
        why = [f"{mine[k]} leftover {k.replace('_', ' ')}" for k in GATE_KINDS
               if mine.get(k, 0) and not base.get(k, 0)]
        why += [f"{mine[k]} {label}" for k, label in (("fresh_failures", "failed fresh starts"),
                                                      ("hangs", "hangs"))
                if mine.get(k, 0) and not base.get(k, 0)]
        if why:
            out.append(f"{name} {v}: " + ", ".join(why) + f" (the baseline {base_name}: none)")
    return out


class CtrStressKind(Kind, name="ctrstress", config=CtrStressConfig, result=CtrStressResult):
    def plan(self, ctx: ScenarioContext[CtrStressConfig]) -> list[str]:
        sc: CtrStressConfig = ctx.scenario
        lines = []
        for b, d in planned_daemons(ctx):
            v = b.variant.name
            argv = d.run_argv(image_name(max(sc.layers)), f"{d.namespace}-rR-{{i}}", sc.args)
            lines += [f"  [{v}] launch:   {sc.k} x {shlex.join(argv)}",
                      f"  [{v}] kill:     {shlex.join(d.ctr_argv('tasks', 'kill', '-s', 'KILL', 'ID'))}",
                      f"  [{v}] delete:   {shlex.join(d.ctr_argv('containers', 'delete', 'ID'))}"
                      " (then tasks delete --force ID and again, if refused)",
                      f"  [{v}] restart:  stop {b.bin / 'containerd'} --config {d.paths.config}"
                      " and start it again"]
        lines.append(f"  per round: one of L = {sc.layers} x actions {sc.actions}, a delay in "
                     f"{list(sc.delay)} s; then leftovers counted and removed, a fresh start")
        return lines

    def run(self, ctx: ScenarioContext[CtrStressConfig]) -> tuple[CtrStressResult, list[str]]:
        sc: CtrStressConfig = ctx.scenario
        rt = containerd_runtime(ctx)
        images = {n: rt.image(n) for n in sc.layers}
        daemons: dict[str, ContainerdDaemon] = {}
        for b in ctx.built:
            d = rt.daemon(b.variant.name, b.bin)
            have = d.images()
            for img in images.values():
                if have.get(img.name) != img.manifest_digest:
                    d.import_image(img)
            daemons[b.variant.name] = d
        plan = draws(sc, ctx.seed)
        order = bench.schedule([Cell(v) for v in daemons], sc.rounds, ctx.seed)
        log = ctx.workdir / f"{sc.name}.ctrstress.log"
        rounds: list[CtrStressRound] = []
        for draw, cells in zip(plan, order, strict=True):
            for cell in cells:
                one = run_round(ctx, cell.variant, daemons[cell.variant], images[draw.layers],
                                draw, log)
                rounds.append(one)
                left = {k: v for k, v in one.left.model_dump().items() if v and k != "errors"}
                progress.step(cell.variant, f"round {draw.round}: L={draw.layers} "
                              f"{draw.action:<7} after {draw.delay:.2f} s: "
                              f"{one.action_outcomes} exits "
                              f"{dict(Counter(one.exit_codes))} left {left or 'nothing'} "
                              f"fresh {'ok' if one.fresh_ok else 'FAILED'}")
        summary: list[str] = []
        for one in rounds:  # each hung client's evidence into the report folder, named there
            if one.evidence:
                files = [ctx.workdir / f"{sc.name}-evidence" / one.variant / n
                         for n in one.evidence]
                one.evidence, _ = report_evidence(
                    ctx, files, f"{sc.name}-{one.variant}-r{one.round}", summary)
        per_variant = {v: CtrStressVariant(
            **totals([r for r in rounds if r.variant == v]),
            actions=dict(Counter(r.action for r in rounds if r.variant == v)),
            action_outcomes=outcomes([r for r in rounds if r.variant == v]))
            for v in daemons}
        res = CtrStressResult(
            **header(sc, sc.shown_command()), order=[[c.label for c in cs] for cs in order],
            layers=sc.layers, instances=sc.k, actions=list(sc.actions), delay=list(sc.delay),
            settle=sc.settle, images={str(n): img.manifest_digest for n, img in images.items()},
            rounds_detail=rounds, per_variant=per_variant, runc=rt.runc_info(),
            evidence_summary=evidence_summary(ctx, summary))
        warnings = [f"{sc.name} {v}: " + ", ".join(
            f"{getattr(pv, k)} {k.replace('_', ' ')}"
            for k in ("hangs", *LEFTOVER_KINDS, "fresh_failures") if getattr(pv, k))
            + " (leftovers removed after each round"
            + ("; unlisted snapshot dirs are the snapshotter's to delete)" if pv.snapshot_dirs
               else ")")
            for v, pv in per_variant.items()
            if pv.hangs or pv.fresh_failures or any(getattr(pv, k) for k in LEFTOVER_KINDS)]
        warnings += [f"{sc.name} {r.variant} round {r.round}: counting failed: {e}"
                     for r in rounds for e in r.left.errors]
        return res, warnings

    def gate(self, result: CtrStressResult) -> list[str]:
        return gate_failures(result.name, {v: pv.model_dump()
                                           for v, pv in result.per_variant.items()})

    def blocks(self, result: CtrStressResult, view: View) -> list[Block]:
        if view is View.PAGE:
            return page(result)
        return report(result, details=view is View.REPORT) if view in MARKDOWN else []


def report(result: CtrStressResult, *, details: bool = True) -> list[Block]:
    """Per variant: rounds, actions, hangs, leftovers by kind, fresh-start failures; then
    every round with its draw and what each variant left."""
    sc = result
    rows = [[v, str(pv.rounds), ", ".join(f"{a} {n}" for a, n in sorted(pv.actions.items())),
             ", ".join(f"{a} {n}" for a, n in pv.action_outcomes.items()
                       if a != "restart") or "-",
             str(pv.hangs), str(pv.kill_errors), f"{pv.mounts} ({pv.idmapped_mounts})",
             f"{pv.snapshots} / {pv.snapshot_dirs}", str(pv.shims),
             f"{pv.tasks} / {pv.containers}", str(pv.rounds_with_leftovers),
             str(pv.fresh_failures)]
            for v, pv in sc.per_variant.items()]
    out: list[Block] = [
        text(f"{sc.instances} containers per round (L = {', '.join(map(str, sc.layers))}), "
             f"one action per round after a seeded delay in [{sc.delay[0]:g}, "
             f"{sc.delay[1]:g}] s, the same for every variant; afterwards (up to "
             f"{sc.settle:g} s for the shims to go) what is left is counted, then removed, "
             "and a fresh container must run `true`. A kill or delete is retried on each "
             "container until it takes effect (hit) or the container has finished (missed) "
             "or failed to start (refused). Leftovers are summed over the rounds (after each "
             "round and after its fresh start)."),
        table(["variant", "rounds", "actions", "kills/deletes: hit, missed, refused", "hangs",
               "kill errors", "mounts left (idmapped)", "snapshots active / unlisted dirs",
               "shims left", "tasks / containers left", "rounds with leftovers",
               "fresh start failed"], rows)]
    variants = list(sc.per_variant)
    cells: dict[tuple[int, str, str], list[int]] = {}
    for r in sc.rounds_detail:  # (L, action, variant) -> summed leftovers
        acc = cells.setdefault((r.layers, r.action, r.variant), [0] * 6)
        for c in (r.left, r.fresh_left):
            for i, n in enumerate((c.mounts, c.idmapped_mounts, c.snapshots, c.shims,
                                   c.tasks, c.containers)):
                acc[i] += n
    rows = [[str(n), a, *[("{} ({}) / {} / {} / {} / {}".format(*cells[(n, a, v)])
                           if (n, a, v) in cells else "-") for v in variants]]
            for n, a in sorted({(k[0], k[1]) for k in cells})]
    out += [text("Leftovers by L and action (summed over rounds and fresh starts; mounts "
                 "(idmapped) / active snapshots / shims / tasks / containers):"),
            table(["L", "action", *variants], rows)]
    by_round: dict[int, list[str]] = {}
    draw: dict[int, list[str]] = {}
    for r in sc.rounds_detail:
        c = r.left
        left = (f"{c.mounts} ({c.idmapped_mounts}) / {c.snapshots} / {c.shims} / "
                f"{c.tasks} / {c.containers}")
        exits = ", ".join(f"{code if code is not None else 'hang'}×{n}" for code, n in sorted(
            ((x, r.exit_codes.count(x)) for x in set(r.exit_codes)),
            key=lambda t: (t[0] is None, t[0] or 0)))
        hits = ", ".join(f"{a} {n}" for a, n in sorted(r.action_outcomes.items())
                         if a != "restart")
        by_round.setdefault(r.round, []).append(
            f"{r.variant}: {hits + '; ' if hits else ''}exits {exits}; left {left}; "
            f"fresh {'ok' if r.fresh_ok else 'FAILED'}")
        draw[r.round] = [str(r.round), str(r.layers), r.action, f"{r.delay_s:.2f} s"]
    rows = [[*draw[n], "<br>".join(by_round[n])] for n in sorted(draw)]
    out += [text("Every round (left: mounts (idmapped) / active snapshots / shims / tasks / "
                 "containers):"),
            table(["round", "L", "action", "delay", "per variant"], rows),
            images_line(sc.images, sc.runc)]
    return out + round_evidence(sc)


def page(result: CtrStressResult) -> list[Block]:
    """Per variant: rounds, actions, hangs, leftovers by kind, fresh-start failures."""
    sc = result
    if not sc.per_variant:
        return []
    rows = [[v, pv.rounds, ", ".join(f"{a} {n}" for a, n in sorted(pv.actions.items())),
             ", ".join(f"{a} {n}" for a, n in pv.action_outcomes.items()
                       if a != "restart") or "-",
             pv.hangs, f"{pv.mounts} ({pv.idmapped_mounts})",
             f"{pv.snapshots} / {pv.snapshot_dirs}", pv.shims, f"{pv.tasks} / {pv.containers}",
             pv.fresh_failures]
            for v, pv in sc.per_variant.items()]
    return [text(f"{sc.instances} containers per round, layers "
                 f"{', '.join(map(str, sc.layers))}; one action per round, the same for every "
                 "variant; leftovers counted, then removed, after each round."),
            table(["variant", "rounds", "actions", "kills/deletes: hit, missed, refused",
                   "hangs", "mounts left (idmapped)", "snapshots active / unlisted dirs",
                   "shims left", "tasks / containers left", "fresh start failed"], rows,
                  stress.KIND.name)]  # the stress kind's table class: found as one


KIND: ScenarioKind[CtrStressConfig, CtrStressResult] = CtrStressKind()
