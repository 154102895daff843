"""A build runs what a patch series brings (its Makefile), so it is given its inputs, its worktree
and nothing else (util/sandbox.py, docs/security.md "Builds"). A fixture upstream whose recipe is
``make``, as runc's is, and a series such as a pull request brings: it patches the Makefile to run
a script that tries each attack that once succeeded, writes down what happened, and the build
still succeeds. Each attack must be refused or find nothing:

- it runs as uid 0, reads /etc/shadow, lists root's ~/.ssh;
- it creates files in root's home and /usr/local/bin;
- it writes into patchbench's own package and into reports/;
- it unmounts /run, which uncovered the host's, and connects to a host socket there;
- it plants a program under builds/tools/ with a stamp beside it.

The script runs inside the real sandbox (bubblewrap), so these need root, bubblewrap and go."""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from patchbench import config
from patchbench.build import Variant, toolchains
from tests import support
from tests.support import REPO_ROOT, TARGET, git, matrix_data, write_matrix

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(os.geteuid() != 0, reason="the attacks are those of a build run as root"),
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap (bwrap)"),
]

MAKEFILE = "hello:\n\tgo build -o hello .\n\ttouch attacks.txt\n"
PACKAGE = REPO_ROOT / "patchbench"
ROOT_HOME = Path(pwd.getpwuid(0).pw_dir)  # root's home, where a build as root would write

ATTACK = r"""#!/bin/sh
# what a hostile series runs in the build; each line: "attack: outcome"
T=@TOKEN@
say() { printf '%s: %s\n' "$1" "$2"; }
try() { name=$1; shift; if ( "$@" ) >/dev/null 2>&1; then say "$name" done; else say "$name" refused; fi; }
say uid "$(id -u)"
grep -E '^(CapEff|CapPrm|CapBnd|NoNewPrivs):' /proc/self/status | tr -d '\t' | sed 's/:/: /'
if head -c 200 /etc/shadow 2>/dev/null | grep -q '^root:'; then say shadow read; else say shadow refused; fi
if ls -a "@ROOTHOME@/.ssh" >/dev/null 2>&1; then say ssh listed; else say ssh refused; fi
try write-root touch "@ROOTHOME@/pwned-$T"
try write-usr-local-bin touch "/usr/local/bin/pwned-$T"
try write-package touch "@PACKAGE@/pwned-$T"
try write-reports sh -c 'mkdir -p "$0" && touch "$0/pwned-$1"' "@REPORTS@" "$T"
try plant-tool sh -c 'mkdir -p "$0" && printf "#!/bin/sh\ntouch /tmp/ran-$1\n" > "$0/burst-$1" \
    && chmod 755 "$0/burst-$1" && echo "{}" > "$0/burst-$1.sha256"' "@TOOLS@" "$T"
touch "$GOCACHE/pwned-$T" 2>/dev/null && say write-cache "done, in its own copy" || say write-cache refused
umount /run >/dev/null 2>&1 && say umount-run done || say umount-run refused
umount -l /run >/dev/null 2>&1
if python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])' \
    "@SOCKET@" 2>/dev/null; then say host-socket reached; else say host-socket unreachable; fi
"""




@pytest.fixture(scope="module")
def run_socket() -> Iterator[Path]:
    """A listening unix socket under the host's /run, where daemons keep theirs."""
    if not os.access("/run", os.W_OK):
        pytest.skip("/run is not writable here")
    path = Path("/run") / f"patchbench-test-{secrets.token_hex(6)}.sock"
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(str(path))
    srv.listen(4)
    try:
        yield path
    finally:
        srv.close()
        path.unlink(missing_ok=True)


@pytest.fixture(scope="module")
def attacked(tmp_path_factory: pytest.TempPathFactory, go_version: str, run_socket: Path
             ) -> Iterator[dict[str, str]]:
    """Build the hostile series (once for the module); yield what its script wrote, attack by
    attack (and remove whatever an attack that was not refused left on this machine)."""
    tmp_path = tmp_path_factory.mktemp("attacked")
    token = secrets.token_hex(6)
    repo = tmp_path / "upstream"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "go.mod").write_text(support.GO_MOD)
    (repo / "main.go").write_text(support.MAIN_GO)
    (repo / "Makefile").write_text(MAKEFILE)
    base = support._commit_all(repo, "hello with a Makefile").strip()
    git(repo, "tag", "v1")
    root, builds, reports = tmp_path / "project", tmp_path / "builds", tmp_path / "reports"
    script = (ATTACK.replace("@TOKEN@", token).replace("@PACKAGE@", str(PACKAGE))
              .replace("@REPORTS@", str(reports)).replace("@TOOLS@", str(builds / "tools"))
              .replace("@SOCKET@", str(run_socket)).replace("@ROOTHOME@", str(ROOT_HOME)))
    (repo / "attack.sh").write_text(script)
    (repo / "Makefile").write_text("hello:\n\tgo build -o hello .\n\tsh ./attack.sh > attacks.txt\n")
    hostile = support._commit_all(repo, "build: faster", "a pull request's series").strip()
    patch = support._format_patch(repo, hostile)
    git(repo, "checkout", "-q", base)
    support.write_series(root, "hostile", [("0001-hostile.patch", patch)])
    data = matrix_data(support.Upstream(repo, base, base), go_version, commands=[["make"]],
                       candidates={"hostile": ["hostile"]})
    data["targets"][TARGET]["build"]["artifacts"] = ["hello", "attacks.txt"]
    write_matrix(root, data)
    go_cache = Path(toolchains.cache_env(config.load(root / "matrix.yaml").target(TARGET), {},
                                         builds)["GOCACHE"])
    planted = [ROOT_HOME / f"pwned-{token}", Path(f"/usr/local/bin/pwned-{token}"),
               PACKAGE / f"pwned-{token}", reports / f"pwned-{token}",
               builds / "tools" / f"burst-{token}", builds / "tools" / f"burst-{token}.sha256",
               go_cache / f"pwned-{token}"]
    try:
        ws = support.Project(root, support.Upstream(repo, base, base), go_version, builds,
                             reports).options()
        [built] = support.build(config.load(root / "matrix.yaml"), ws, TARGET,
                                [Variant("hostile", ("hostile",))])
        text = (built.bin / "attacks.txt").read_text()
        found = dict(line.split(": ", 1) for line in text.splitlines() if ": " in line)
        found["planted on this machine"] = " ".join(str(p) for p in planted if p.exists())
        yield found
    finally:
        for p in planted:
            p.unlink(missing_ok=True)


def test_the_build_runs_unprivileged(attacked: dict[str, str]) -> None:
    assert attacked["uid"] != "0", attacked
    for cap in ("CapEff", "CapPrm", "CapBnd"):
        assert attacked[cap] == "0000000000000000", attacked
    assert attacked["NoNewPrivs"] == "1", attacked


def test_the_build_cannot_read_shadow_or_list_roots_ssh(attacked: dict[str, str]) -> None:
    assert attacked["shadow"] == "refused", attacked
    assert attacked["ssh"] == "refused", attacked


@pytest.mark.parametrize("attack", ["write-root", "write-usr-local-bin"])
def test_the_build_cannot_write_roots_folders(attacked: dict[str, str], attack: str) -> None:
    assert attacked[attack] == "refused", attacked
    assert attacked["planted on this machine"] == "", attacked


@pytest.mark.parametrize("attack", ["write-package", "write-reports"])
def test_the_build_cannot_write_patchbench_or_its_reports(attacked: dict[str, str],
                                                           attack: str) -> None:
    assert attacked[attack] == "refused", attacked
    assert attacked["planted on this machine"] == "", attacked


def test_the_build_cannot_uncover_the_hosts_run(attacked: dict[str, str]) -> None:
    assert attacked["umount-run"] == "refused", attacked
    assert attacked["host-socket"] == "unreachable", attacked


def test_the_build_cannot_plant_a_tool(attacked: dict[str, str]) -> None:
    assert attacked["plant-tool"] == "refused", attacked
    assert attacked["planted on this machine"] == "", attacked


def test_a_patched_build_writes_only_its_own_copy_of_the_compile_cache(
        attacked: dict[str, str]) -> None:
    """Go's build cache of upstream builds is shared; a build with a series writes a private
    copy of it, so nothing it writes there reaches the next build."""
    assert attacked["write-cache"] == "done, in its own copy", attacked
    assert attacked["planted on this machine"] == "", attacked


def test_the_sandbox_is_required_not_skipped(tmp_path: Path) -> None:
    """Without bubblewrap on PATH a host build stops with one clear line (exit 16), never runs
    unconfined (PATCHBENCH_BUILD_SANDBOX=off is the documented, explicit way to do that)."""
    empty = tmp_path / "bin"
    empty.mkdir()
    for tool in ("sh", "true"):
        (empty / tool).symlink_to(shutil.which(tool) or f"/bin/{tool}")
    code = ("from patchbench.util import sandbox\n"
            "from patchbench.cli.commands import guarded\n"
            "guarded(lambda: print(sandbox.wrap(['true'], env={}, cwd=None).argv))\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, env={"PATH": str(empty), "PYTHONPATH": str(REPO_ROOT)},
                         check=False)
    assert res.returncode == 16, res.stdout + res.stderr
    assert "bubblewrap" in res.stderr and "Traceback" not in res.stderr
