"""A build's commands run in a sandbox made by bubblewrap (``bwrap``, Debian's ``bubblewrap``),
unprivileged, seeing only what they were given.

A build runs what a patch series brings (a Makefile, ``go generate``, a ``build.rs``). So each
command of a build (and each step that fetches its dependencies, the toolchain's fingerprint, the
built program's ``version``) runs under ``wrap``:

- its own PID, IPC, UTS and cgroup namespaces, and a network namespace of its own (a loopback,
  down) unless it is given the network; it dies with patchbench (``--die-with-parent``) and has
  no terminal of ours (``--new-session``);
- a root file system of its own: the system's folders read-only (``/usr``, ``/bin``, ``/sbin``,
  ``/lib*``, ``/opt``, ``/etc`` with every file only root may read, such as ``/etc/shadow``,
  masked), the toolchain's own folders outside them read-only at ``/patchbench/tool/N``, a fresh
  ``/proc`` and ``/dev``, an empty ``/tmp``, ``/var/tmp`` and ``/run``, and nothing else: no
  ``/root``, no ``/home``, not the host's ``/run``, not patchbench's package, builds/ or reports/;
  of those it sees only what the caller binds (its worktree and caches, read-only or not);
- as root (patchbench's usual case) bwrap makes those namespaces and mounts, and ``setpriv``
  (util-linux) then runs the command as ``BUILD_UID``:``BUILD_GID`` (not root, not root mapped
  through a user namespace: the kernel sees that uid), with no supplementary group, no
  capability (effective, permitted, inheritable, ambient and bounding sets empty) and
  ``no_new_privs``; a second, unprivileged bwrap inside then disables user namespaces
  (``--disable-userns``), where the installed bwrap and the kernel allow it. What it may write
  (its worktree, its caches) is given to that uid first (``give``);
- as another user, one bwrap with a user namespace of its own (``--unshare-user``: the user keeps
  its uid) does the same, with ``--disable-userns`` and ``--cap-drop ALL``.

It holds no capability, so it cannot unmount what hides the host (``umount /run`` is refused),
and the kernel keeps mounts made for it locked together anyway. Without bubblewrap a build stops
(exit 16, saying what to install) rather than run unconfined; ``PATCHBENCH_BUILD_SANDBOX=off`` is
the explicit way to build unconfined anyway, with a warning on every build. On other systems than
Linux (macOS: the Swift targets) there is no bubblewrap: builds run unconfined, and a warning says
so once per run. docs/security.md, "Builds".
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import stat
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from patchbench.errors import ConfigError, RequirementError
from patchbench.util import cmd, progress

SWITCH = "PATCHBENCH_BUILD_SANDBOX"  # "off": build unconfined, with a warning each time
UID_VARIABLE = "PATCHBENCH_BUILD_UID"  # UID or UID:GID the builds run as when patchbench is root
# in the range Debian's policy reserves (65000-65533, allocated to no account): it owns nothing
# but what patchbench hands its builds
BUILD_UID = BUILD_GID = 65533
# the system's folders, read-only (a link among them, /bin -> usr/bin, is made as that link)
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt")
TOOLS = Path("/patchbench/tool")  # where toolchain folders outside SYSTEM are shown
# files under /etc shown empty even where others may read them (where they exist)
SECRET = ("/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers",
          "/etc/sudoers.d", "/etc/ssl/private", "/etc/security/opasswd")
ETC_ENTRIES = 20_000  # bound of the walk over /etc for what only root may read
# variables holding one path or a list of paths (PATH-like) the command's tools read
PATH_LISTS = ("PATH", "PKG_CONFIG_PATH")
PATH_VALUES = ("RUSTUP_HOME", "GOENV", "GOROOT", "SSL_CERT_FILE", "SSL_CERT_DIR")
SETPRIV = ["--clear-groups", "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs"]


@dataclass(frozen=True)
class Bind:
    """A host path the command sees at ``inside`` (the same path by default); only a writable
    one can it change."""

    host: Path
    writable: bool = False
    inside: Path | None = None

    @property
    def at(self) -> Path:
        return self.inside if self.inside is not None else self.host


@dataclass
class Wrapped:
    """A command as the sandbox runs it: ``argv`` (bwrap's) and the environment it starts with;
    ``shown`` maps a path inside to the host path it is (``host_path``)."""

    argv: list[str]
    env: dict[str, str]
    shown: list[tuple[Path, Path]] = field(default_factory=list)  # (inside, host)

    def host_path(self, path: str | Path) -> Path:
        """The host path of ``path`` as the command sees it (itself when not under a bind)."""
        p = Path(path)
        for inside, host in sorted(self.shown, key=lambda s: -len(s[0].parts)):
            if p == inside or inside in p.parents:
                return host / p.relative_to(inside)
        return p


@dataclass(frozen=True)
class Mode:
    """How builds are confined on this machine, for this user (found once per process)."""

    kind: str  # "root" (bwrap, then setpriv), "user" (bwrap with a user namespace), "off"
    bwrap: str = ""  # its version line
    userns_disabled: bool = False
    why_off: str = ""  # for "off": why there is no sandbox

    def record(self, network: bool) -> dict[str, object]:
        """What a build's manifest says about where it ran."""
        if self.kind == "off":
            return {"sandbox": "none", "why": self.why_off}
        uid, gid = build_ids() if self.kind == "root" else (os.geteuid(), os.getegid())
        return {"sandbox": self.bwrap, "uid": uid, "gid": gid, "network": network,
                "user_namespaces": "disabled" if self.userns_disabled else "not disabled"}


def build_ids() -> tuple[int, int]:
    """The uid and gid builds run as when patchbench is root: ``PATCHBENCH_BUILD_UID`` (UID or
    UID:GID), else 65533:65533. Never 0, never the user who ran sudo (their files would be the
    build's)."""
    value = os.environ.get(UID_VARIABLE, "").strip()
    if not value:
        return BUILD_UID, BUILD_GID
    m = re.fullmatch(r"(\d+)(?::(\d+))?", value)
    if not m:
        raise RequirementError(f"{UID_VARIABLE}={value!r}: expected UID or UID:GID (numbers)")
    uid = int(m.group(1))
    gid = int(m.group(2)) if m.group(2) else uid
    sudo = os.environ.get("SUDO_UID", "")
    if uid == 0 or gid == 0 or (sudo.isdigit() and int(sudo) == uid) or uid > 2**32 - 2:
        raise RequirementError(f"{UID_VARIABLE}={value}: builds never run as root nor as the "
                               "user who ran patchbench", hint="choose a uid no account uses")
    return uid, gid


def build_user() -> tuple[int, int]:
    """The uid and gid a build runs as: ``build_ids`` when patchbench is root, else the user's
    own (the docker backend's containers run as this too)."""
    return build_ids() if os.geteuid() == 0 else (os.geteuid(), os.getegid())


def _missing(what: str) -> RequirementError:
    return RequirementError(
        f"builds run in a bubblewrap sandbox, and {what}",
        hint="install bubblewrap (Debian: apt-get install bubblewrap; it is in .ci/install), or "
        f"build unconfined knowingly: {SWITCH}=off (docs/security.md)")


@functools.cache
def mode() -> Mode:
    """How this process confines builds: checked once (a bwrap run of ``true``, about 20 ms);
    RequirementError (exit 16) when it cannot, unless ``PATCHBENCH_BUILD_SANDBOX=off``."""
    if os.environ.get(SWITCH, "").strip().lower() == "off":
        return Mode("off", why_off=f"{SWITCH}=off")
    if not sys.platform.startswith("linux"):
        return Mode("off", why_off=f"no bubblewrap on {sys.platform}")
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise _missing("bwrap is not on PATH")
    version = cmd.run([bwrap, "--version"], timeout=30, check=False).stdout.strip()
    helps = cmd.run([bwrap, "--help"], timeout=30, check=False).stdout
    can_disable = "--disable-userns" in helps
    kind = "root" if os.geteuid() == 0 else "user"
    if kind == "root" and shutil.which("setpriv") is None:
        raise _missing("setpriv (util-linux) is not on PATH")
    true = cmd.which("true")
    for disable in ([True, False] if can_disable else [False]):
        probe = Mode(kind, version or "bubblewrap", disable)
        res = cmd.run(_argv(probe, [true], cwd=None, binds=[], tools=[], network=False),
                          timeout=30, check=False)
        if res.returncode == 0:
            return probe
        reason = (res.stderr.strip().splitlines() or [f"exit {res.returncode}"])[-1]
    raise _missing(f"it does not work here: {reason}")


def _warn_unconfined(m: Mode) -> None:
    if m.why_off.startswith(SWITCH):
        progress.say(f"warning: this build runs unconfined ({m.why_off}): it can read and write "
                     "whatever this user can, and reach the network")
    else:
        _warn_once(m.why_off)


@functools.cache
def _warn_once(why: str) -> None:
    progress.say(f"warning: builds run unconfined here ({why}): they can read and write whatever "
                 "this user can, and reach the network")


def describe(network: bool) -> dict[str, object]:
    """The manifest's record of the sandbox a build ran in."""
    return mode().record(network)


def _visible(path: Path, binds: Sequence[Bind]) -> bool:
    """Whether ``path`` (a host path) is seen at the same path inside."""
    for top in SYSTEM:
        if path == Path(top) or Path(top) in path.parents:
            return True
    return any(path == b.at or b.at in path.parents for b in binds if b.inside is None)


@functools.cache
def _etc_masks() -> tuple[tuple[str, bool], ...]:
    """(path, is a folder) of what is shown empty under /etc: SECRET, and every file or folder
    only its owner or group may read (bounded walk, no link followed)."""
    out: dict[str, bool] = {}
    for p in SECRET:
        try:
            out[p] = stat.S_ISDIR(os.lstat(p).st_mode)
        except OSError:
            continue
    seen = 0
    for dirpath, dirnames, filenames in os.walk("/etc"):
        for name in [*dirnames, *filenames]:
            seen += 1
            path = os.path.join(dirpath, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if stat.S_ISLNK(st.st_mode):
                continue
            is_dir = stat.S_ISDIR(st.st_mode)
            need = stat.S_IROTH | (stat.S_IXOTH if is_dir else 0)
            if st.st_mode & need != need:
                out[path] = is_dir
        dirnames[:] = [d for d in dirnames if os.path.join(dirpath, d) not in out]
        if seen > ETC_ENTRIES:
            break
    return tuple(sorted(out.items()))


def _mkdirs(path: Path, made: set[Path], binds: Sequence[Bind]) -> list[str]:
    """bwrap ``--dir`` (mode 0755) for every folder above ``path`` that the sandbox's own root
    holds (bwrap would make them 0700: the build's uid could not pass through)."""
    out: list[str] = []
    for parent in reversed(path.parents):
        if parent == Path("/") or parent in made or _visible(parent, []):
            continue
        if any(parent == b.at or b.at in parent.parents for b in binds):
            continue  # inside another bind: the host's folder
        made.add(parent)
        out += ["--perms", "0755", "--dir", str(parent)]
    return out


def _argv(m: Mode, argv: Sequence[str], *, cwd: Path | None, binds: Sequence[Bind],
          tools: Sequence[tuple[Path, Path]], network: bool) -> list[str]:
    """bwrap's command line for ``argv`` (its program already found inside)."""
    out = [cmd.which("bwrap"), "--die-with-parent", "--new-session", "--unshare-ipc",
           "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try"]
    if not network:
        out.append("--unshare-net")
    if m.kind == "root":  # what setpriv needs to drop the rest; it keeps none of them
        out += ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID",
                "--cap-add", "CAP_SETPCAP"]
    else:
        out += ["--unshare-user", *(["--disable-userns"] if m.userns_disabled else []),
                "--cap-drop", "ALL"]
    for top in SYSTEM:
        try:
            st = os.lstat(top)
        except OSError:
            continue
        if stat.S_ISLNK(st.st_mode):
            out += ["--symlink", os.readlink(top), top]
        elif stat.S_ISDIR(st.st_mode):
            out += ["--ro-bind", top, top]
    for path, is_dir in _etc_masks():
        out += ["--tmpfs", path, "--remount-ro", path] if is_dir else ["--ro-bind", "/dev/null",
                                                                        path]
    out += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--tmpfs", "/tmp",
            "--perms", "0755", "--dir", "/var", "--perms", "1777", "--tmpfs", "/var/tmp",
            "--perms", "0755", "--tmpfs", "/run", "--symlink", "/run", "/var/run"]
    made = {Path(p) for p in ("/proc", "/dev", "/tmp", "/var", "/var/tmp", "/run")}
    for host, inside in tools:
        out += [*_mkdirs(inside, made, binds), "--ro-bind", str(host), str(inside),
                *_relinked(host, inside)]
    for b in sorted(binds, key=lambda b: len(b.at.parts)):  # parents before children
        out += [*_mkdirs(b.at, made, binds), "--bind" if b.writable else "--ro-bind",
                str(b.host), str(b.at)]
    if cwd is not None:
        out += ["--chdir", str(cwd)]
    out.append("--")
    if m.kind == "root":
        uid, gid = build_ids()
        out += [_system_tool("setpriv"), f"--reuid={uid}", f"--regid={gid}", *SETPRIV, "--"]
        if m.userns_disabled:  # an unprivileged bwrap of the build's uid, only to forbid them
            out += [_system_tool("bwrap"), "--unshare-user", "--disable-userns", "--dev-bind", "/",
                    "/", *(["--chdir", str(cwd)] if cwd is not None else []), "--"]
    return out + list(argv)


def _relinked(host: Path, inside: Path) -> list[str]:
    """bwrap's arguments that make the absolute links one level down in a shown toolchain folder
    work inside (rustup's ``toolchains/1.95.0-… -> ~/.rustup/toolchains/stable-…``: the home is
    not there): such a folder becomes an empty tmpfs with each entry bound read-only, a link as
    the folder it resolves to."""
    out: list[str] = []
    if not host.is_dir():
        return out
    for child in sorted(host.iterdir())[:64]:
        if child.is_symlink() or not child.is_dir():
            continue
        try:
            entries = sorted(child.iterdir())[:256]
        except OSError:
            continue
        if not any(e.is_symlink() and os.path.isabs(os.readlink(e)) for e in entries):
            continue
        where = inside / child.name
        out += ["--perms", "0755", "--tmpfs", str(where)]
        for e in entries:
            real = e.resolve() if e.is_symlink() and os.path.isabs(os.readlink(e)) else e
            if real.exists():
                out += ["--ro-bind", str(real), str(where / e.name)]
    return out


def _system_tool(name: str) -> str:
    """The path of ``name`` (setpriv, bwrap), which must lie in a system folder (seen inside)."""
    found = cmd.which(name)
    if not _visible(Path(found), []):
        raise _missing(f"{name} is at {found}, outside the system's folders a build sees")
    return found


def _inside_path(value: str, tools: list[tuple[Path, Path]], binds: Sequence[Bind],
                 auto: bool) -> str | None:
    """``value`` (a host path) as the command sees it: the same where it is visible, remapped
    under a toolchain folder, else (``auto``) a new read-only bind of it when it exists; None:
    not there inside."""
    p = Path(value)
    if not p.is_absolute():
        return value
    for host, inside in tools:
        if p == host or host in p.parents:
            return str(inside / p.relative_to(host))
    if _visible(p, binds):
        return value
    if auto and os.path.exists(p):
        inside = TOOLS / str(len(tools))
        tools.append((p, inside))
        return str(inside)
    return None


def view(env: Mapping[str, str], *, binds: Sequence[Bind] = (), tools: Sequence[Path] = ()
         ) -> tuple[dict[str, str], list[tuple[Path, Path]]]:
    """The environment as the command sees it, and the toolchain folders shown (host, inside).
    PATH-like lists keep what is visible inside (remapped under a toolchain folder); a path
    variable pointing elsewhere gets a read-only bind of its own. HOME and TMPDIR are /tmp (the
    command's own, empty); git trusts the worktree another uid made (safe.directory)."""
    hidden = [Path(t) for t in dict.fromkeys(tools) if not _visible(Path(t), binds)]
    # a folder inside another shown one is reached through it (one bind, one path)
    hidden = [t for t in hidden if not any(o in t.parents for o in hidden)]
    shown = [(t, TOOLS / str(i)) for i, t in enumerate(hidden)]
    out = dict(env)
    for key in PATH_LISTS:
        if key in out:
            parts = [_inside_path(p, shown, binds, auto=False) for p in out[key].split(":") if p]
            out[key] = ":".join(dict.fromkeys(p for p in parts if p))
    for key in PATH_VALUES:
        if key in out:
            inside = _inside_path(out[key], shown, binds, auto=True)
            if inside is None:
                del out[key]
            else:
                out[key] = inside
    out.update({"HOME": "/tmp", "TMPDIR": "/tmp"})
    n = int(out.get("GIT_CONFIG_COUNT", "0") or 0)
    out.update({"GIT_CONFIG_COUNT": str(n + 1), f"GIT_CONFIG_KEY_{n}": "safe.directory",
                f"GIT_CONFIG_VALUE_{n}": "*"})
    return out, shown


def _find(program: str, path: str, shown: list[tuple[Path, Path]]) -> str:
    """``program`` as the command's PATH (inside paths) finds it, named inside."""
    if "/" in program:
        return program
    seen = Wrapped([], {}, [(i, h) for h, i in shown])
    for entry in path.split(":"):
        host = seen.host_path(entry) / program
        if os.access(host, os.X_OK) and host.is_file():
            return str(Path(entry) / program)
    raise RequirementError(f"{program!r} was not found on the build's PATH ({path})",
                           hint=cmd.INSTALL_HINTS.get(program, f"install {program}; a build "
                           "sees the system's folders and its toolchain's, not /root or /home"))


def wrap(argv: Sequence[str], *, env: Mapping[str, str], cwd: Path | None,
         binds: Sequence[Bind] = (), tools: Sequence[Path] = (), network: bool = False
         ) -> Wrapped:
    """``argv`` as it runs in the sandbox: seeing the system's folders, the toolchain folders
    ``tools`` (read-only) and ``binds``, in ``cwd``, with the network only when ``network``.
    Run the result's ``argv`` with its ``env`` (cmd.run). Unconfined (``PATCHBENCH_BUILD_SANDBOX
    =off``, not Linux): ``argv`` as it is, with a warning."""
    m = mode()
    if m.kind == "off":
        _warn_unconfined(m)
        return Wrapped([cmd.which(argv[0]), *argv[1:]], dict(env))
    inside_env, shown = view(env, binds=binds, tools=tools)
    program = _find(argv[0], inside_env.get("PATH", ""), shown)
    out = _argv(m, [program, *argv[1:]], cwd=cwd, binds=binds, tools=shown, network=network)
    return Wrapped(out, inside_env, [(i, h) for h, i in shown] + [(b.at, b.host) for b in binds])


# the user's own folders and caches: a build never writes them (a build cache it could write is
# one it could poison for the user's other builds), so none is ever given to the build uid; a
# folder of patchbench's own beside them (PATCHBENCH_GO_CACHE=~/.cache/pb-go) may be
USERS_CACHE_VARIABLES = ("GOCACHE", "GOMODCACHE", "CARGO_HOME", "RUSTUP_HOME", "CCACHE_DIR")
# a GOPATH's caches (a project may live in its src/, as Go projects long did)
GOPATH_CACHES = ("pkg", "bin")
USERS_HOME_FOLDERS = (*(f"go/{p}" for p in GOPATH_CACHES), ".cache/go-build", ".cache/ccache",
                      ".ccache", ".cargo", ".rustup", ".config", ".local/bin", ".local/lib",
                      ".ssh", ".gnupg", ".docker", ".kube")


def users_own() -> tuple[list[Path], list[Path]]:
    """The user's own folders: (each home, ``HOME`` and the account's: never given itself; a
    project under it is fine), (the caches under a home and every folder the caller's
    environment names as a cache: never given, nor anything in them)."""
    homes = {os.path.expanduser("~")}
    try:
        import pwd

        homes.add(pwd.getpwuid(os.geteuid()).pw_dir)
        if os.environ.get("SUDO_USER"):  # under sudo: the user who ran it, too
            homes.add(pwd.getpwnam(os.environ["SUDO_USER"]).pw_dir)
    except (ImportError, KeyError):
        pass
    homes = {h for h in homes if h and h != "/"}
    caches = {Path(h) / name for h in homes for name in USERS_HOME_FOLDERS}
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and os.path.isabs(xdg):  # where Go and ccache keep theirs by default
        caches |= {Path(xdg) / "go-build", Path(xdg) / "ccache"}
    for key in USERS_CACHE_VARIABLES:
        for entry in (os.environ.get(key) or "").split(os.pathsep):
            if entry and os.path.isabs(entry):
                caches.add(Path(entry))
    for entry in (os.environ.get("GOPATH") or "").split(os.pathsep):
        if entry and os.path.isabs(entry):
            caches |= {Path(entry) / p for p in GOPATH_CACHES}
    return ([Path(os.path.realpath(h)) for h in sorted(homes)],
            [Path(os.path.realpath(c)) for c in sorted(caches)])


def _never_the_users(top: Path) -> None:
    """Stop before ``give`` hands the build uid a home, a user's cache, anything in such a cache
    or a folder holding one (``give`` walks it)."""
    here = Path(os.path.realpath(top))
    homes, caches = users_own()
    for own in [*homes, *caches]:
        inside = own in caches and here.is_relative_to(own)
        if here == own or inside or own.is_relative_to(here):
            raise ConfigError(f"a build was to be given {top}, which is or holds the user's "
                              f"own {own}; a build writes only patchbench's folders",
                              hint="keep builds/ (--builds, PATCHBENCH_BUILDS) and the cache "
                              "variables (a target's build.env, PATCHBENCH_GO_CACHE) out of your "
                              "own caches and home")


def give(paths: Sequence[Path], *, walk: bool = True) -> None:
    """What a build may write (its worktree, its caches) made the build uid's, as root: every
    entry under each path that is not yet, without following a link (``walk`` False: a folder
    that is already the build uid's is taken to hold only what builds wrote: a large cache is
    not walked on every build). Nothing to do as another user (the build keeps that user's
    uid)."""
    if os.geteuid() != 0:
        return
    for top in paths:
        _never_the_users(top)
    uid, gid = build_ids()
    for top in paths:
        try:
            st = os.lstat(top)
        except FileNotFoundError:
            continue
        if not walk and (st.st_uid, st.st_gid) == (uid, gid):
            continue
        for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
            for name in [".", *dirnames, *filenames]:
                p = os.path.join(dirpath, name) if name != "." else dirpath
                try:
                    st = os.lstat(p)
                    if (st.st_uid, st.st_gid) != (uid, gid):
                        os.lchown(p, uid, gid)
                except FileNotFoundError:
                    continue
