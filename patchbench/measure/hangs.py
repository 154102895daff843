"""Hangs: counting runs that passed their deadline, reading the evidence the launcher saved before
the kill (process tree, signal masks, wchan, zombie children; a zombie under a sleeping parent is
named as the lost-SIGCHLD signature), comparing hang counts with Fisher's exact test, and the runs
that test needs to tell two hang rates apart. A hung run exits with ``HANG_EXIT_CODE`` (124)
under the launcher, so that hyperfine records it as an exit code and the measurement goes on.
Data only; the report renders it."""

from __future__ import annotations

import json
import math
import signal
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import NormalDist

from pydantic import BaseModel, ConfigDict, ValidationError

from patchbench.analysis import stats
from patchbench.errors import ReportError

HANG_EXIT_CODE = 124  # launcher/deadline.go: HangExitCode
KILL_SLACK = 12.0  # seconds the launcher may take past a deadline: evidence, kill, 10 s grace
EVIDENCE_GLOB = "hang-*.json"
LOST_SIGCHLD = "the classic lost-SIGCHLD signature"


class ProcessInfo(BaseModel):
    """One process as ``/proc`` showed it at the deadline (masks are hex, as in /proc)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    pid: int
    ppid: int = 0
    pgid: int = 0
    comm: str = ""
    state: str = ""
    sig_cgt: str = ""
    sig_blk: str = ""
    sig_ign: str = ""
    sig_pnd: str = ""
    shd_pnd: str = ""
    wchan: str = ""
    cmdline: str = ""
    threads: int = 0
    thread_wchans: dict[str, int] | None = None
    zombie: bool = False
    error: str | None = None

    @property
    def sleeping(self) -> bool:
        return self.state.startswith(("S", "D"))


class Evidence(BaseModel):
    """One hang, as the launcher saved it before the kill."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    schema_: int = 1
    instance: int
    argv: list[str]
    pid: int
    deadline_s: float
    elapsed_s: float
    time: str
    processes: list[ProcessInfo]
    findings: list[str] = []
    killed: list[int] = []
    file: str = ""  # the evidence file's name (set by load_evidence)

    def zombies_under_sleepers(self) -> list[tuple[ProcessInfo, ProcessInfo]]:
        """(zombie, its sleeping parent) pairs: the lost-SIGCHLD signature."""
        by_pid = {p.pid: p for p in self.processes}
        out = []
        for p in self.processes:
            parent = by_pid.get(p.ppid)
            if p.zombie and parent is not None and parent.sleeping:
                out.append((p, parent))
        return out

    @property
    def lost_sigchld(self) -> bool:
        return bool(self.zombies_under_sleepers())


def load_evidence_file(path: Path) -> Evidence:
    """One evidence file, as the launcher wrote it."""
    try:
        data = json.loads(path.read_text())
        if isinstance(data, dict) and "schema" in data:
            data["schema_"] = data.pop("schema")
        return Evidence.model_validate({**data, "file": path.name})
    except (OSError, ValueError, ValidationError) as exc:
        raise ReportError(f"hang evidence {path.name} cannot be read: {exc}".splitlines()[0],
                          detail=str(path)) from None


def load_evidence(directory: Path) -> list[Evidence]:
    """Every hang's evidence in ``directory`` (none when it does not exist), oldest first."""
    if not directory.is_dir():
        return []
    out = [load_evidence_file(p) for p in sorted(directory.glob(EVIDENCE_GLOB))]
    return sorted(out, key=lambda e: (e.time, e.instance))


def signal_names(mask: str) -> list[str]:
    """The signals set in a ``/proc/PID/status`` mask (hex; bit n-1 is signal n), e.g.
    ``["SIGCHLD"]``; real-time signals as ``SIGRTMIN+k``."""
    if not mask:
        return []
    try:
        bits = int(mask, 16)
    except ValueError:
        return [f"?{mask}"]
    rtmin = int(signal.SIGRTMIN)
    names = []
    n = 1
    while bits:
        if bits & 1:
            if n >= rtmin:
                names.append(f"SIGRTMIN+{n - rtmin}" if n > rtmin else "SIGRTMIN")
            else:
                try:
                    names.append(signal.Signals(n).name)
                except ValueError:
                    names.append(f"SIG{n}")
        bits >>= 1
        n += 1
    return names


def _masks(p: ProcessInfo) -> str:
    parts = []
    for label, mask in (("blocked", p.sig_blk), ("pending", p.sig_pnd), ("shared pending", p.shd_pnd)):
        names = signal_names(mask)
        if names:
            parts.append(f"{label}: {' '.join(names)}")
    caught = signal_names(p.sig_cgt)
    if caught:
        shown = " ".join(caught) if len(caught) <= 8 else f"{len(caught)} signals"
        chld = "" if len(caught) <= 8 else (", SIGCHLD among them" if "SIGCHLD" in caught
                                            else ", not SIGCHLD")
        parts.append(f"caught: {shown}{chld}")
    return "; ".join(parts) or "no signal caught, blocked or pending"


def describe(ev: Evidence) -> str:
    """A readable account of one hang: the tree with states, wchans and signal masks, then what
    it looks like."""
    lines = [
        f"instance {ev.instance} (pid {ev.pid}) still running after {ev.elapsed_s:.2f} s "
        f"(deadline {ev.deadline_s:g} s): {' '.join(ev.argv)}",
    ]
    by_pid = {p.pid: p for p in ev.processes}

    def depth(p: ProcessInfo) -> int:
        d, cur, seen = 0, p, set()
        while cur.ppid in by_pid and cur.pid not in seen:
            seen.add(cur.pid)
            cur = by_pid[cur.ppid]
            d += 1
        return d

    for p in ev.processes:
        if p.error:
            lines.append(f"{'  ' * (depth(p) + 1)}{p.pid}: {p.error}")
            continue
        wchan = p.wchan if p.wchan not in ("", "0") else "-"
        threads = ""
        if p.thread_wchans:
            threads = "; threads in " + ", ".join(f"{w} x{n}" for w, n in sorted(p.thread_wchans.items()))
        lines.append(f"{'  ' * (depth(p) + 1)}{p.pid} {p.comm} [{p.state}] wchan {wchan}"
                     f"{threads}; {_masks(p)}")
    pairs = ev.zombies_under_sleepers()
    for z, parent in pairs:
        lines.append(f"  -> zombie child {z.pid} ({z.comm}) under sleeping parent {parent.pid} "
                     f"({parent.comm}, wchan {parent.wchan or '-'}): {LOST_SIGCHLD}")
    if not pairs:
        lines.append("  -> no zombie child under a sleeping parent")
    return "\n".join(lines)


# --- capturing, for hangs patchbench itself detects (the stress kind) ---------------------------


def _read(path: str) -> str:
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def _stat(pid: int) -> tuple[int, int] | None:
    """(ppid, pgid) of ``pid`` from /proc/PID/stat, or None when it is gone."""
    from patchbench.util.cleanup import stat_fields

    try:
        fields = stat_fields(pid) or []
        return int(fields[1]), int(fields[2])
    except (OSError, IndexError, ValueError):
        return None


def _proc(pid: int) -> dict[str, object]:
    """One process as the launcher's readProc reads it (the same JSON keys)."""
    status = _read(f"/proc/{pid}/status")
    if not status:
        return {"pid": pid, "error": "gone before it could be read"}
    keys = {"Name": "comm", "State": "state", "SigCgt": "sig_cgt", "SigBlk": "sig_blk",
            "SigIgn": "sig_ign", "SigPnd": "sig_pnd", "ShdPnd": "shd_pnd"}
    out: dict[str, object] = {"pid": pid}
    for line in status.splitlines():
        k, _, v = line.partition(":")
        if k in keys:
            out[keys[k]] = v.strip()
        elif k == "PPid":
            out["ppid"] = int(v.strip() or 0)
        elif k == "Threads":
            out["threads"] = int(v.strip() or 0)
    st = _stat(pid)
    out["pgid"] = st[1] if st else 0
    out["zombie"] = str(out.get("state", "")).startswith("Z")
    out["wchan"] = _read(f"/proc/{pid}/wchan").strip()
    out["cmdline"] = _read(f"/proc/{pid}/cmdline").replace("\0", " ").strip()
    tasks = sorted(Path(f"/proc/{pid}/task").glob("*")) if Path(f"/proc/{pid}/task").is_dir() else []
    if len(tasks) > 1:
        waits: dict[str, int] = {}
        for t in tasks:
            w = _read(f"{t}/wchan").strip()
            if w and w != "0":
                waits[w] = waits.get(w, 0) + 1
        out["thread_wchans"] = waits
    return out


def tree_of(pid: int) -> list[int]:
    """``pid``, its descendants, and every member of its process group (a command started in a
    group of its own), parents first; as the launcher's treeOf."""
    children: dict[int, list[int]] = {}
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        st = _stat(int(entry.name))
        if st is None:
            continue
        children.setdefault(st[0], []).append(int(entry.name))
        if st[1] == pid:
            members.append(int(entry.name))
    out: list[int] = []

    def walk(p: int) -> None:
        if p in out:
            return
        out.append(p)
        for c in sorted(children.get(p, [])):
            walk(c)

    walk(pid)
    for m in sorted(members):
        walk(m)
    return out


def capture(pid: int, argv: Sequence[str], instance: int, deadline_s: float, elapsed_s: float,
            directory: Path) -> Path:
    """Save the evidence of a hang patchbench detected itself, before it kills ``pid``: the same
    file the launcher writes (process tree, State, signal masks, wchan, zombies, findings)."""
    import time as _time

    procs = [_proc(p) for p in tree_of(pid)]
    by_pid = {int(str(p["pid"])): p for p in procs}
    findings = []
    for p in procs:
        parent = by_pid.get(int(str(p.get("ppid", 0))))
        if p.get("zombie") and parent is not None and str(parent.get("state", "")).startswith(
                ("S", "D")):
            findings.append(f"zombie child {p['pid']} ({p.get('comm', '')}) under sleeping parent "
                            f"{parent['pid']} ({parent.get('comm', '')}, wchan "
                            f"{parent.get('wchan', '')}): {LOST_SIGCHLD}")
    now = _time.time()
    stamp = _time.strftime("%Y%m%dT%H%M%S", _time.gmtime(now)) + f".{int(now % 1 * 1e9):09d}Z"
    ev = {"schema": 1, "instance": instance, "argv": list(argv), "pid": pid,
          "deadline_s": deadline_s, "elapsed_s": round(elapsed_s, 6),
          "time": _time.strftime("%Y-%m-%dT%H:%M:%S", _time.gmtime(now)) + "Z",
          "processes": procs, "findings": findings, "killed": [int(str(p["pid"])) for p in procs]}
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"hang-{stamp}-i{instance}-pid{pid}.json"
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(ev, indent=2) + "\n")
    tmp.replace(path)
    return path


# --- counting --------------------------------------------------------------------------------


def count_hangs(exit_codes: Iterable[int | None]) -> int:
    """Runs that passed their deadline (the launcher's exit code 124)."""
    return sum(1 for c in exit_codes if c == HANG_EXIT_CODE)


@dataclass(frozen=True)
class HangCount:
    variant: str
    hangs: int
    runs: int

    def __post_init__(self) -> None:
        if not 0 <= self.hangs <= self.runs:
            raise ValueError(f"{self.variant}: {self.hangs} hangs of {self.runs} runs")

    @property
    def text(self) -> str:
        return f"hangs: {self.hangs} of {self.runs}"

    @classmethod
    def from_exit_codes(cls, variant: str, exit_codes: Sequence[int | None]) -> HangCount:
        return cls(variant, count_hangs(exit_codes), len(exit_codes))


@dataclass(frozen=True)
class HangComparison:
    candidate: HangCount
    baseline: HangCount
    p_value: float  # Fisher's exact test, two-sided: do the two hang rates differ?
    p_more: float  # one-sided: does the candidate hang more often than the baseline?
    p_less: float  # one-sided: does the candidate hang less often than the baseline?


def compare_hangs(baseline: HangCount, candidate: HangCount) -> HangComparison:
    a, b = candidate.hangs, candidate.runs - candidate.hangs
    c, d = baseline.hangs, baseline.runs - baseline.hangs
    return HangComparison(candidate, baseline, stats.fisher_exact(a, b, c, d),
                          stats.fisher_exact(a, b, c, d, alternative="greater"),
                          stats.fisher_exact(a, b, c, d, alternative="less"))


# --- the runs a comparison needs ---------------------------------------------------------------

EXACT_EVENTS = 500  # above this many expected hangs in all, power by the normal approximation


def _binomial(n: int, p: float) -> dict[int, float]:
    """The probabilities of Binomial(n, p) where they are not negligible (within 9 sd)."""
    if p <= 0.0 or p >= 1.0:
        return {0 if p <= 0.0 else n: 1.0}
    mean, sd = n * p, math.sqrt(n * p * (1 - p))
    lo, hi = max(0, math.floor(mean - 9 * sd - 5)), min(n, math.ceil(mean + 9 * sd + 5))
    lp, lq = math.log(p), math.log1p(-p)
    return {k: math.exp(stats._log_comb(n, k) + k * lp + (n - k) * lq) for k in range(lo, hi + 1)}


def _critical(runs: int, total: int, level: float) -> int:
    """The smallest count x of one of two groups of ``runs`` runs, ``total`` hangs in both, at
    which the one-sided Fisher test (that group hangs more) has p < ``level``; above ``total``
    when none has."""
    hi = min(runs, total)
    top = min(hi, math.floor(total / 2 + 10 * math.sqrt(total) + 5))  # beyond: below 1e-40
    log_all = stats._log_comb(2 * runs, total)
    tail = 0.0
    for x in range(top, max(0, total - runs) - 1, -1):
        tail += math.exp(stats._log_comb(runs, x) + stats._log_comb(runs, total - x) - log_all)
        if tail >= level:
            return x + 1
    return max(0, total - runs)


def fisher_power(runs: int, rate_low: float, rate_high: float, level: float) -> float:
    """The chance that the one-sided Fisher test at ``level`` finds that a commit hanging at
    ``rate_high`` hangs more than one hanging at ``rate_low``, with ``runs`` runs of each: exact
    (every pair of counts, the test's own critical value), or by the normal approximation when
    more than ``EXACT_EVENTS`` hangs are expected."""
    if runs < 1 or not 0.0 <= rate_low < rate_high <= 1.0:
        return 0.0
    if runs * (rate_low + rate_high) > EXACT_EVENTS:
        z = NormalDist().inv_cdf(1 - level)
        mean = (rate_low + rate_high) / 2
        null_sd = math.sqrt(2 * mean * (1 - mean))
        sd = math.sqrt(rate_low * (1 - rate_low) + rate_high * (1 - rate_high))
        return NormalDist().cdf(((rate_high - rate_low) * math.sqrt(runs) - z * null_sd) / sd)
    xs, ys = _binomial(runs, rate_high), _binomial(runs, rate_low)
    critical: dict[int, int] = {}
    power = 0.0
    for x, px in xs.items():
        for y, py in ys.items():
            t = x + y
            if t not in critical:
                critical[t] = _critical(runs, t, level)
            if x >= critical[t]:
                power += px * py
    return min(1.0, power)


def runs_for_power(rate_low: float, rate_high: float, level: float, power: float,
                   limit: int = 10**8) -> int | None:
    """The fewest runs of each commit at which :func:`fisher_power` reaches ``power`` (the
    smallest found by doubling and then halving the step: Fisher's test is discrete, so a few
    more runs can lose a little power); None when even ``limit`` runs do not."""
    if not 0.0 <= rate_low < rate_high <= 1.0:
        return None
    hi = 1
    while fisher_power(hi, rate_low, rate_high, level) < power:
        if hi >= limit:
            return None
        hi = min(limit, hi * 2)
    lo = hi // 2  # below power (or 0)
    while hi - lo > max(1, hi // 200):
        mid = (lo + hi) // 2
        if fisher_power(mid, rate_low, rate_high, level) >= power:
            hi = mid
        else:
            lo = mid
    return hi


def gate_failures(counts: Mapping[str, HangCount], baseline: str) -> list[str]:
    """One message per candidate that hung at all (the gate rule: any candidate hang fails);
    the baseline's count is named beside it and never fails the gate by itself."""
    base = counts.get(baseline)
    out = []
    for name, count in counts.items():
        if name == baseline or count.hangs == 0:
            continue
        msg = f"{name}: {count.text}"
        if base is not None:
            cmp = compare_hangs(base, count)
            msg += f" (baseline {base.text}; Fisher p = {cmp.p_value:.3g})"
        out.append(msg)
    return out


__all__ = [
    "HANG_EXIT_CODE",
    "Evidence",
    "HangComparison",
    "HangCount",
    "ProcessInfo",
    "capture",
    "compare_hangs",
    "count_hangs",
    "describe",
    "fisher_power",
    "gate_failures",
    "load_evidence",
    "load_evidence_file",
    "runs_for_power",
    "signal_names",
]
