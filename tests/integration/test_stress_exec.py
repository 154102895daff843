"""The stress kind's exec mode and signal check, end to end, without root: a small Python program
(fake_runtime.py) acts as the runtime. Its "containers" are files; `exec` runs a shell in the
foreground and forwards signals to it, never SIGWINCH (like runc), and for the candidate it drops
SIGUSR2 (a planted loss). The shell traps SIGUSR1, SIGUSR2 and SIGWINCH, prints each and first
"ready". The counts must show the planted loss for the candidate only, SIGWINCH as "by design"
for both, no leftover for the host container, and no host left after any round, also when a round
fails."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from patchbench import gate, results
from patchbench.errors import PatchbenchError
from tests import support
from tests.support import Project, assert_nothing_left

pytestmark = pytest.mark.integration


@pytest.fixture
def project(prebuilt_project: Project) -> Project:
    """The fixture project, its builds found cached after the first test (tests/conftest.py):
    these tests measure the builds and assert nothing about building them."""
    return prebuilt_project

CAND = "cand"
ROUNDS, INSTANCES = 2, 3
RT = [sys.executable, str(Path(__file__).with_name("fake_runtime.py")), "{work}/rt"]
# the shell waits up to 2 s (time for a forwarded signal on a slow CI) for SIGUSR1, then up to
# 0.5 s more for SIGUSR2 (patchbench sends them one right after the other), then 0.2 s (a SIGWINCH
# sent after them, if it were forwarded, is recorded), and exits 0: a build that forwards both
# ends its instances at once, one that drops SIGUSR2 after 0.5 s (the sleep starts before
# "ready": signals that come while it is forked are seen before the first wait)
SCRIPT = ("u1=; u2=; g=; trap 'echo USR1; u1=1' USR1; trap 'echo USR2; u2=1' USR2; "
          "trap 'echo WINCH' WINCH; sleep 2 & s=$!; echo ready; "
          'while [ "$u1$u2" != 11 ] && ! wait $s; do '
          'if [ -n "$u1" ] && [ -z "$g" ]; then g=1; kill $s; sleep 0.5 & s=$!; fi; done; '
          "kill $s 2>/dev/null; sleep 0.2; wait; exit 0")
EXEC: dict[str, Any] = {
    "kind": "stress", "mode": "exec", "rounds": ROUNDS, "runs": ROUNDS, "instances": INSTANCES,
    "delay": [0.0, 0.0], "timeout": 20, "actions": ["none"],
    "host": [[*RT, "start", "{host}"]], "host_teardown": [[*RT, "delete", "{host}"]],
    "launch": [*RT, "exec", "{host}", "--drop", f"{CAND}=SIGUSR2", "--variant", "{variant}", "--",
               "sh", "-c", SCRIPT],
    "list": [*RT, "list"],
    "fresh": [*RT, "exec", "{host}", "--variant", "{variant}", "--", "true"],
    "signals": {"send": ["SIGUSR1", "SIGUSR2", "SIGWINCH"], "not_forwarded": ["SIGWINCH"]},
}
SCENARIOS: list[dict[str, Any]] = [
    {"name": "signals", **EXEC},
    # action none in the usual run mode: the instances run to their end, nothing is killed
    {"name": "none", "kind": "stress", "rounds": ROUNDS, "runs": ROUNDS, "instances": INSTANCES,
     "delay": [0.0, 0.0], "timeout": 20, "actions": ["none"], "launch": ["sh", "-c", "exit 3"],
     "list": ["ls", "{work}"], "fresh": ["true"]},
]


def scenario(res: dict[str, Any], name: str) -> dict[str, Any]:
    return next(s for s in res["scenarios"] if s["name"] == name)


def test_exec_mode_counts_a_dropped_signal(project: Project) -> None:
    project.write(candidates={CAND: ["greet"]}, scenarios=SCENARIOS)
    res, run_dir = support.compare(project.load(), project.options(), "fx", seed=7)
    assert run_dir is not None
    sc = scenario(res, "signals")
    assert (sc["mode"], sc["not_forwarded"]) == ("exec", ["SIGWINCH"])
    n = ROUNDS * INSTANCES
    base, cand = sc["per_build"]["baseline"], sc["per_build"][CAND]
    both = {"sent": n, "forwarded": n, "lost": 0, "by_design": 0}
    winch = {"sent": n, "forwarded": 0, "lost": 0, "by_design": n}
    assert base["signals"] == {"SIGUSR1": both, "SIGUSR2": both, "SIGWINCH": winch}
    assert cand["signals"] == {"SIGUSR1": both, "SIGWINCH": winch,
                               "SIGUSR2": {"sent": n, "forwarded": 0, "lost": n, "by_design": 0}}
    for pb in (base, cand):
        # the host was listed during every round's check, and is not a leftover
        assert (pb["leftovers"], pb["hangs"], pb["fresh_failures"], pb["not_ready"]) == (0, 0, 0, 0)
        assert pb["outcomes"] == {"exit 0": n}
    for rd in sc["rounds_detail"]:
        assert rd["host"].endswith(f"+-h{rd['round']}") and f"-{rd['variant']}+-" in rd["host"]
        assert rd["leftovers"] == []
    assert f"signals {CAND}: lost SIGUSR2 {n} of {n} times" in res["warnings"]
    assert gate.failures(results.parse(res, "test")) == [
        f"signals {CAND}: lost SIGUSR2 {n} of {n} times (baseline: 0 of {n})"]
    # every round's host is gone
    (rt,) = project.builds.glob("runs/*/rt")  # {work}/rt
    assert list(rt.iterdir()) == []

    none = scenario(res, "none")
    for pb in none["per_build"].values():
        assert pb["outcomes"] == {"exit 3": n} and pb["hangs"] == 0 and pb["signals"] == {}

    md = (run_dir / "report.md").read_text()
    assert "| build " in md and "not forwarded (by design)" in md and f"{n} of {n}" in md
    assert_nothing_left(project.builds, project.cache)


def test_the_host_is_torn_down_when_a_round_fails(project: Project, tmp_path: Path) -> None:
    broken = {**EXEC, "name": "broken", "launch": ["/nonexistent/runtime", "exec", "{host}"]}
    project.write(candidates={CAND: ["greet"]}, scenarios=[broken])
    with pytest.raises(PatchbenchError):
        support.compare(project.load(), project.options(), "fx", seed=7)
    hosts = [p for d in project.builds.glob("runs/*/rt") for p in d.iterdir()]
    assert hosts == []
    started = list(project.builds.glob("runs/*/*.stress.log"))
    assert started and "start" in started[0].read_text()  # a host was started, then removed


def real_runc() -> str | None:
    """The host's runc, when the test can use it (root, runc, a static busybox)."""
    from patchbench.runtimes import runc

    found = shutil.which("runc")
    if os.geteuid() != 0 or found is None:
        return None
    try:
        busybox = runc.find_busybox()
    except PatchbenchError:
        return None
    return found if runc.is_static(busybox.resolve()) else None


@pytest.mark.skipif(real_runc() is None, reason="needs root, runc and a static busybox")
def test_exec_mode_with_the_real_runc(project: Project, tmp_path: Path) -> None:
    """The host's runc for both variants: a host container per round, `runc exec` instances into
    it; SIGUSR1 and SIGUSR2 are forwarded every time, SIGWINCH never (by design), no leftover,
    and no container or cgroup is left."""
    from patchbench.runtimes import runc

    binary = real_runc()
    assert binary is not None
    bundles = tmp_path / "bundles"
    runc.make_bundles(bundles, Path(binary), None, tmp_path)
    root = str(tmp_path / "runc-root")
    cmd = [binary, "--root", root]
    real = {
        **EXEC, "name": "runc",
        "host": [[*cmd, "run", "-d", "-b", str(bundles / "bundle_sleep"), "{host}"]],
        "host_teardown": [[*cmd, "delete", "-f", "{host}"]],
        "launch": [*cmd, "exec", "{host}", "sh", "-c", SCRIPT],
        "list": [*cmd, "list", "-q"],
        "fresh": [*cmd, "exec", "{host}", "true"],
    }
    project.write(candidates={CAND: ["greet"]}, scenarios=[real])
    res, _ = support.compare(project.load(), project.options(), "fx", seed=7)
    n = ROUNDS * INSTANCES
    sent = {"sent": n, "forwarded": n, "lost": 0, "by_design": 0}
    for pb in scenario(res, "runc")["per_build"].values():
        assert pb["signals"] == {"SIGUSR1": sent, "SIGUSR2": sent, "SIGWINCH": {
            "sent": n, "forwarded": 0, "lost": 0, "by_design": n}}
        assert (pb["leftovers"], pb["hangs"], pb["fresh_failures"]) == (0, 0, 0)
    assert runc.list_containers(Path(binary), Path(root)) == []
    token = res["scenarios"][0]["rounds_detail"][0]["host"].split("-")[1]
    assert runc.cgroups_of(f"pb-{token}-") == []
