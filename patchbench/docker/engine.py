"""A Docker engine to talk to: the one ``DOCKER_HOST`` names, the system one, or patchbench's own
``dockerd`` under a directory it is given (its data kept between runs; no host network changes;
containerd namespaces of its own), started when first needed and stopped at the end with
whatever it left (shims, mounts), so that nothing outlives the context. Every Docker SDK
exception becomes a patchbench error (``sdk_errors``, ``classify``). docs/docker.md."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from patchbench.errors import BuildError, PatchbenchError, RequirementError
from patchbench.util import cmd, locks, progress

SYSTEM_SOCKET = "/var/run/docker.sock"
SOCKET_MAX = 100  # bytes; the kernel's limit is 108 including the NUL
READY_TIMEOUT = 60.0
STOP_TIMEOUT = 20.0
INSTALL_HINT = (
    "install Debian's docker.io (apt-get install -y docker.io) and run as root so patchbench can "
    "start its own dockerd, or start an engine and set DOCKER_HOST"
)


@dataclass
class Engine:
    """A connected engine. ``client`` is a ``docker.DockerClient``."""

    client: Any
    host: str  # the API address, e.g. unix:///...
    own: bool  # started by patchbench
    version: dict[str, str] = field(default_factory=dict)

    def describe(self) -> dict[str, str]:
        """What the manifest records: the engine's version and its containerd and runc."""
        return dict(self.version)


# --- SDK errors ----------------------------------------------------------------------------


def classify(exc: BaseException, what: str, default: type[PatchbenchError] = BuildError) -> PatchbenchError:
    """A patchbench error for any exception raised by the Docker SDK (or requests under it)."""
    if isinstance(exc, PatchbenchError):
        return exc
    import docker.errors
    import requests.exceptions

    text = _sdk_message(exc)
    if isinstance(exc, docker.errors.ImageNotFound):
        return RequirementError(
            f"{what}: image not present in the engine: {text}",
            hint="use an image recipe (image: {recipe: ...}) or a digest-pinned image that the engine "
            "holds or can pull",
        )
    if isinstance(exc, requests.exceptions.ConnectionError | docker.errors.TLSParameterError):
        return RequirementError(f"{what}: the Docker engine is unreachable: {text}", hint=INSTALL_HINT)
    if isinstance(exc, requests.exceptions.Timeout):
        return default(f"{what}: the Docker engine did not answer in time: {text}")
    if isinstance(exc, docker.errors.ContainerError):
        return default(f"{what}: the container exited with code {exc.exit_status}",
                       detail=cmd.tail(_decode(exc.stderr)))
    if isinstance(exc, docker.errors.APIError):
        status = exc.status_code or 0
        return default(f"{what}: the Docker engine refused (HTTP {status}): {text}")
    if isinstance(exc, docker.errors.DockerException):
        if "Error while fetching server API version" in text:
            return RequirementError(f"{what}: the Docker engine is unreachable: {text}",
                                    hint=INSTALL_HINT)
        return default(f"{what}: {exc.__class__.__name__}: {text}")
    if isinstance(exc, requests.exceptions.RequestException | OSError):
        return default(f"{what}: talking to the Docker engine failed: {exc.__class__.__name__}: {text}")
    return default(f"{what}: unexpected {exc.__class__.__name__} from the Docker SDK: {text}")


def _decode(data: Any) -> str:
    if isinstance(data, bytes):
        return data.decode(errors="replace")
    return str(data or "")


def _sdk_message(exc: BaseException) -> str:
    explanation = getattr(exc, "explanation", None)
    return str(explanation or exc).strip().splitlines()[0] if str(explanation or exc).strip() else ""


@contextlib.contextmanager
def sdk_errors(what: str, default: type[PatchbenchError] = BuildError) -> Iterator[None]:
    """Turn any SDK exception raised inside into a patchbench error (KeyboardInterrupt passes)."""
    try:
        yield
    except PatchbenchError:
        raise
    except Exception as exc:
        raise classify(exc, what, default) from None


# --- connecting ----------------------------------------------------------------------------


API_TIMEOUT = 600.0  # seconds for one API call (loading a large image takes a while)


def _connect(host: str, timeout: float = API_TIMEOUT) -> Any:
    import docker

    with sdk_errors(f"connect to the Docker engine at {host}", RequirementError):
        client = docker.DockerClient(base_url=host, version="auto", timeout=timeout)
        client.ping()
    return client


def _versions(client: Any) -> dict[str, str]:
    with sdk_errors("ask the Docker engine for its version", RequirementError):
        info = client.version()
    out = {"engine": str(info.get("Version", "")), "api": str(info.get("ApiVersion", ""))}
    for comp in info.get("Components") or []:
        name = str(comp.get("Name", "")).lower()
        if name in ("containerd", "runc"):
            out[name] = str(comp.get("Version", ""))
    return out


def run_dir_for(state: Path) -> Path:
    """The run directory (exec-root, socket, pid file): under ``state`` when the socket path fits,
    else a short directory in the temporary directory derived from ``state``."""
    preferred = state.resolve() / "run"
    # the longest socket under it: containerd's ttrpc socket in the exec-root
    if len(str(preferred / "x" / "containerd" / "containerd.sock.ttrpc")) <= SOCKET_MAX:
        return preferred
    digest = hashlib.sha256(str(state.resolve()).encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"pbe-{digest}"


def reachable(environ: Mapping[str, str] | None = None) -> str | None:
    """The address of an engine that answers (DOCKER_HOST, else the system socket), or None."""
    env = os.environ if environ is None else environ
    host = env.get("DOCKER_HOST")
    if host:
        try:
            _connect(host).close()
        except RequirementError:
            return None
        return host
    if os.path.exists(SYSTEM_SOCKET):
        try:
            _connect(f"unix://{SYSTEM_SOCKET}").close()
        except RequirementError:
            return None
        return f"unix://{SYSTEM_SOCKET}"
    return None


@contextlib.contextmanager
def engine(
    state: Path,
    *,
    extra_args: Sequence[str] = (),
    own: bool = False,
    environ: Mapping[str, str] | None = None,
    ready_timeout: float = READY_TIMEOUT,
) -> Iterator[Engine]:
    """An engine for the duration of the context.

    ``DOCKER_HOST`` (when set) is used and must answer; otherwise the system socket when it answers;
    otherwise (or with ``own`` or ``extra_args``, which only an engine of our own can take)
    patchbench starts ``dockerd`` with its state under ``state`` and stops it at the end.
    """
    env = os.environ if environ is None else environ
    if not own and not extra_args:
        # DOCKER_HOST, named on purpose, must answer (no silent fallback); else the system's
        address = env.get("DOCKER_HOST") or reachable({})
        if address:
            client = _connect(address)
            try:
                yield Engine(client, address, own=False, version=_versions(client))
            finally:
                client.close()
            return
    with own_dockerd(state, extra_args=extra_args, ready_timeout=ready_timeout) as eng:
        yield eng


def own_host(state: Path) -> str:
    """The API address of patchbench's own engine under ``state``."""
    return f"unix://{run_dir_for(state.resolve()) / 'docker.sock'}"


def dockerd_argv(dockerd: str, state: Path, extra_args: Sequence[str] = ()) -> list[str]:
    """How patchbench starts its own engine under ``state`` (also what --dry-run shows)."""
    state = state.resolve()
    run, data = run_dir_for(state), state / "data"
    ns = "pb-" + hashlib.sha256(str(data).encode()).hexdigest()[:10]
    return [
        dockerd,
        "--data-root", str(data),
        "--exec-root", str(run / "x"),
        "--pidfile", str(run / "dockerd.pid"),
        "--host", own_host(state),
        "--iptables=false", "--ip-masq=false", "--bridge=none",
        "--containerd-namespace", ns,
        "--containerd-plugins-namespace", f"{ns}-plugins",
        *extra_args,
    ]


def _require_dockerd() -> str:
    if os.geteuid() != 0:
        raise RequirementError(
            "no Docker engine is reachable, and patchbench can start its own dockerd only as root",
            hint=INSTALL_HINT,
        )
    if shutil.which("dockerd") is None:
        raise RequirementError("no Docker engine is reachable and dockerd is not installed",
                               hint=INSTALL_HINT)
    return cmd.which("dockerd")


@contextlib.contextmanager
def own_dockerd(
    state: Path, *, extra_args: Sequence[str] = (), ready_timeout: float = READY_TIMEOUT
) -> Iterator[Engine]:
    dockerd = _require_dockerd()
    state = state.resolve()
    state.mkdir(parents=True, exist_ok=True)
    busy = RequirementError(
        f"another patchbench process has run its Docker engine under {state} for 10 minutes",
        hint="wait for it to finish",
    )
    with locks.held(state / "engine.lock", 600, on_timeout=lambda: busy):
        run = run_dir_for(state)
        data = state / "data"
        _clean_stale(run, data)
        run.mkdir(parents=True, exist_ok=True)
        data.mkdir(parents=True, exist_ok=True)
        host = own_host(state)
        argv = dockerd_argv(dockerd, state, extra_args)
        log = state / "dockerd.log"
        with open(log, "ab") as f:
            f.write(f"+ {cmd.quote(argv)}\n".encode())
        progress.say(f"starting patchbench's own dockerd (state: {state}, log: {log})")
        bg = cmd.Background(argv, log=log)
        try:
            client = _wait_ready(bg, host, log, ready_timeout)
            try:
                yield Engine(client, host, own=True, version=_versions(client))
            finally:
                client.close()
        finally:
            _stop(bg)
            _clean_stale(run, data)


def _wait_ready(bg: cmd.Background, host: str, log: Path, timeout: float) -> Any:
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        code = bg.wait(0.25)
        if code is not None:
            raise RequirementError(
                f"dockerd exited with code {code} before it answered",
                hint="see its log; a second engine on the same data root, or a kernel without "
                "overlayfs, are the usual causes",
                detail=_log_tail(log),
            )
        if Path(host.removeprefix("unix://")).exists():
            try:
                _connect(host, timeout=5).close()
                return _connect(host)
            except RequirementError as exc:
                last = exc.message
    raise RequirementError(
        f"dockerd did not answer a ping within {timeout:g} s ({last or 'no socket yet'})",
        detail=_log_tail(log),
    )


def _log_tail(log: Path) -> str:
    try:
        return f"{cmd.tail(log.read_text(errors='replace'))}\n(full log: {log})"
    except OSError:
        return f"(log: {log})"


def _stop(bg: cmd.Background) -> None:
    """SIGTERM dockerd (it stops its containers and containerd), then the whole group."""
    if bg.proc.poll() is None:
        bg.signal(signal.SIGTERM)
        if bg.wait(STOP_TIMEOUT) is None:
            progress.say(f"dockerd did not stop within {STOP_TIMEOUT:g} s; killing it")
    bg.stop()  # SIGTERM/SIGKILL to whatever is left of its process group


def _processes_under(paths: Sequence[Path]) -> list[int]:
    """Processes whose command line names one of ``paths`` (dockerd, containerd, shims)."""
    marks = [str(p) for p in paths]
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if any(m in cmdline for m in marks):
            found.append(int(entry.name))
    return found


def _mounts_under(paths: Sequence[Path]) -> list[str]:
    marks = [str(p) for p in paths]
    out: list[str] = []
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        point = line.split()[4].replace("\\040", " ")
        if any(point == m or point.startswith(m + "/") for m in marks):
            out.append(point)
    return out


def leftovers(state: Path) -> tuple[list[int], list[str]]:
    """Processes and mounts left by an engine under ``state`` (both empty after a clean stop)."""
    state = state.resolve()
    paths = [run_dir_for(state), state / "data"]
    return _processes_under(paths), _mounts_under(paths)


def _clean_stale(run: Path, data: Path) -> None:
    """Kill what an earlier, interrupted engine left (we hold the lock, so it is no one's), unmount
    its mounts and remove the run directory."""
    for pid in _processes_under([run, data]):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while _processes_under([run, data]) and time.monotonic() < deadline:
        time.sleep(0.1)
    for point in sorted(_mounts_under([run, data]), key=len, reverse=True):
        cmd.run(["umount", "-l", point], check=False, timeout=30)
    shutil.rmtree(run, ignore_errors=True)


# --- running one command in a container -----------------------------------------------------


def run_container(
    client: Any,
    image: str,
    argv: Sequence[str],
    *,
    what: str,
    env: Mapping[str, str] | None = None,
    workdir: str | None = None,
    volumes: Mapping[str, Mapping[str, str]] | None = None,
    network: str = "none",
    timeout: float = 600.0,
    log: Path | None = None,
    check: bool = True,
    error: type[PatchbenchError] = BuildError,
    user: str | None = None,
    confined: bool = False,
) -> cmd.Result:
    """Run ``argv`` in a new container of ``image`` and return its result like ``cmd.run``.

    The container has a unique name and is killed and removed on every path: success, failure,
    timeout and Ctrl-C. With ``log``, the interleaved output is appended there. ``user``: the
    uid:gid it runs as; ``confined``: no capability (``--cap-drop ALL``), ``no-new-privileges``,
    a read-only root file system with an empty tmpfs /tmp (what a build runs in).
    """
    import uuid

    import requests.exceptions

    name = f"patchbench-{uuid.uuid4().hex[:12]}"
    shown = cmd.quote(["docker", "run", "--rm", image, *argv])
    if log is not None:
        with open(log, "a") as f:
            f.write(f"+ {shown}\n" + (f"  (in {workdir})\n" if workdir else ""))
    started = time.monotonic()
    container: Any = None
    try:
        with sdk_errors(what, error):
            hardening: dict[str, Any] = {"user": user} if user else {}
            if confined:
                hardening.update(cap_drop=["ALL"], security_opt=["no-new-privileges"],
                                 read_only=True, tmpfs={"/tmp": "rw,exec,mode=1777"})
            container = client.containers.create(
                image, list(argv), name=name, environment=dict(env or {}), working_dir=workdir,
                volumes={k: dict(v) for k, v in (volumes or {}).items()}, network_mode=network,
                labels={"org.patchbench.run": "1"}, detach=True, **hardening,
            )
            container.start()
        try:
            status = container.wait(timeout=timeout)
        except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError) as exc:
            if isinstance(exc, requests.exceptions.ConnectionError) and "timed out" not in str(exc).lower():
                raise classify(exc, what, error) from None
            raise error(
                f"{what}: timed out after {timeout:g} s; the container was killed and removed",
                hint="raise the timeout in matrix.yaml if this step is legitimately slow",
                detail=_log_tail(log) if log is not None else None,
            ) from None
        except Exception as exc:
            raise classify(exc, what, error) from None
        with sdk_errors(f"{what}: read the container's output", error):
            stdout = _decode(container.logs(stdout=True, stderr=False))
            stderr = _decode(container.logs(stdout=False, stderr=True))
            if log is not None:
                with open(log, "a") as f:
                    f.write(_decode(container.logs(stdout=True, stderr=True)))
    finally:
        _remove(client, container, name)
    code = int(status.get("StatusCode", 1))
    result = cmd.Result(tuple(argv), code, stdout, stderr, time.monotonic() - started)
    if check and code != 0:
        raise error(f"{what}: exited with code {code} in the container",
                    detail=_log_tail(log) if log is not None else cmd.tail(stdout + stderr))
    return result


def _remove(client: Any, container: Any, name: str) -> None:
    """Kill and remove a container; by name when creating it may have half-succeeded."""
    import docker.errors

    with contextlib.suppress(Exception):
        if container is None:
            container = client.containers.get(name)
    if container is None:
        return
    for _ in range(3):
        try:
            container.remove(force=True)
            return
        except docker.errors.NotFound:
            return
        except Exception:  # the engine is busy killing it; try again
            time.sleep(0.5)
    progress.say(f"warning: could not remove container {name}; remove it with docker rm -f {name}")
