"""Builds reach no network unless the target asks for it (``build.network``): a recipe that
connects to a listener this test runs on the host's loopback is refused (it is in a network
namespace of its own), and reaches it with ``network: true``; a daemon's socket under /run (as
docker's is) is out of its reach either way. What a Go build needs from the
network is fetched before it (``go mod download``, here from a module proxy in a folder), and the
build itself runs with ``GOPROXY=off``."""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import REPO_ROOT, TARGET, Project, git, matrix_data, write_matrix

PROBE = """
import socket, sys
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5).close()
    print("reached")
except OSError as e:
    print("unreachable:", e.strerror or e)
"""


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP listener on the host's loopback that accepts whatever connects."""
    srv = socket.create_server(("127.0.0.1", 0))
    srv.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except (TimeoutError, OSError):
                continue
            conn.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    yield srv.getsockname()[1]
    stop.set()
    t.join(5)
    srv.close()


UNIX_PROBE = """
import socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1])
    print("reached")
except OSError as e:
    print("unreachable:", e.strerror or e)
"""


@pytest.fixture
def run_socket() -> Iterator[Path]:
    """A listening unix socket under /run, where the host's daemons keep theirs."""
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


@pytest.mark.parametrize("network", [False, True])
def test_a_build_cannot_reach_a_daemons_socket_under_run(
        project: Project, run_socket: Path, network: bool) -> None:
    probe = subprocess.run([sys.executable, "-c", UNIX_PROBE, str(run_socket)],
                           capture_output=True, text=True, timeout=30, check=True)
    assert probe.stdout.startswith("reached")  # from here (the host's /run) it answers
    data = matrix_data(project.upstream, project.go_version, commands=[
        ["sh", "-c", f'python3 -c "$0" {run_socket} > sock.txt', UNIX_PROBE],
        ["go", "build", "-o", "hello", "."]])
    data["targets"][TARGET]["build"]["artifacts"] = ["hello", "sock.txt"]
    data["targets"][TARGET]["build"]["network"] = network
    write_matrix(project.root, data)
    res = run_build(project.root, project.builds, project.reports)
    assert res.returncode == 0, res.stderr
    [got] = list(project.builds.glob("artifacts/*/*/bin/sock.txt"))
    assert got.read_text().startswith("unreachable"), got.read_text()


def run_build(root: Path, builds: Path, reports: Path, env: dict[str, str] | None = None
              ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "patchbench", "build", "--target", TARGET, "--project", str(root),
         "--builds", str(builds), "--reports", str(reports)],
        capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT), **(env or {})})


@pytest.mark.parametrize("network, expected", [(False, "unreachable"), (True, "reached")])
def test_a_build_reaches_the_network_only_when_its_target_asks(
        project: Project, listener: int, network: bool, expected: str) -> None:
    data = matrix_data(project.upstream, project.go_version, commands=[
        ["sh", "-c", f'python3 -c "$0" {listener} > net.txt; id -u > uid.txt', PROBE],
        ["go", "build", "-o", "hello", "."]])
    data["targets"][TARGET]["build"]["artifacts"] = ["hello", "net.txt", "uid.txt"]
    if network:
        data["targets"][TARGET]["build"]["network"] = True
    write_matrix(project.root, data)
    res = run_build(project.root, project.builds, project.reports)
    assert res.returncode == 0, res.stderr
    [net] = list(project.builds.glob("artifacts/*/*/bin/net.txt"))
    assert net.read_text().startswith(expected), net.read_text()
    if os.geteuid() == 0:  # with the network or without, never root (util/sandbox.py)
        assert net.with_name("uid.txt").read_text().strip() not in ("", "0")


def module_proxy(root: Path) -> Path:
    """A Go module proxy in a folder (GOPROXY=file://...) serving example.com/dep v1.0.0."""
    at = root / "example.com" / "dep" / "@v"
    at.mkdir(parents=True)
    (at / "list").write_text("v1.0.0\n")
    (at / "v1.0.0.info").write_text('{"Version":"v1.0.0","Time":"2026-01-01T00:00:00Z"}\n')
    mod = "module example.com/dep\n\ngo 1.21\n"
    (at / "v1.0.0.mod").write_text(mod)
    with zipfile.ZipFile(at / "v1.0.0.zip", "w") as z:
        z.writestr("example.com/dep@v1.0.0/go.mod", mod)
        z.writestr("example.com/dep@v1.0.0/dep.go",
                   'package dep\n\nfunc Word() string { return "from the module proxy" }\n')
    return root


def test_go_modules_are_fetched_before_an_offline_build(project: Project, tmp_path: Path) -> None:
    proxy = module_proxy(tmp_path / "proxy")
    repo = tmp_path / "withdep"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "go.mod").write_text("module hello\n\ngo 1.21\n\nrequire example.com/dep v1.0.0\n")
    (repo / "main.go").write_text('package main\n\nimport (\n\t"fmt"\n\n\t"example.com/dep"\n)\n\n'
                                  "func main() { fmt.Println(dep.Word()) }\n")
    goenv = {"GOPROXY": f"file://{proxy}", "GOSUMDB": "off", "GOTOOLCHAIN": "local",
             "GOFLAGS": "-mod=mod", "GOMODCACHE": str(tmp_path / "setup-modcache")}
    subprocess.run(["go", "mod", "tidy"], cwd=repo, env={**os.environ, **goenv}, check=True,
                   capture_output=True, timeout=120)
    assert "example.com/dep v1.0.0" in (repo / "go.sum").read_text()
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m",
        "hello with a dependency")
    git(repo, "tag", "v1")
    commit = git(repo, "rev-parse", "HEAD").strip()
    data = matrix_data(project.upstream, project.go_version, url=str(repo), commit=commit,
                       commands=[["sh", "-c", "go env GOPROXY > proxy.txt"],
                                                ["go", "build", "-o", "hello", "."]])
    data["targets"][TARGET]["build"]["artifacts"] = ["hello", "proxy.txt"]
    write_matrix(project.root, data)
    cache = tmp_path / "modcache"  # the user's: empty, the modules come from the proxy
    res = run_build(project.root, project.builds, project.reports,
                    {"GOPROXY": f"file://{proxy}", "GOSUMDB": "off", "GOMODCACHE": str(cache)})
    assert res.returncode == 0, res.stderr
    [bin_dir] = list(project.builds.glob("artifacts/*/*/bin"))
    assert (bin_dir / "proxy.txt").read_text().strip() == "off"
    # into patchbench's own module cache (the build's user writes it; never the user's)
    mine = project.builds / "sources" / "go" / "pkg" / "mod"
    assert (mine / "example.com" / "dep@v1.0.0" / "dep.go").is_file()
    assert not cache.exists()
    out = subprocess.run([str(bin_dir / "hello")], capture_output=True, text=True, timeout=30,
                         check=True)
    assert out.stdout.strip() == "from the module proxy"
