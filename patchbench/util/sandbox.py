"""A build's commands run apart from patchbench's own process.

A build runs upstream code (a Makefile, ``go generate``, a ``build.rs``), as root on a measuring
machine. Its environment is an allowlist (build/toolchains), but a child can still read its
parent's whole environment, secrets included, through ``/proc/<parent>/environ``. So on the
host each recipe command runs under ``unshare --user --map-current-user --pid --fork --mount
--mount-proc --kill-child``: in its own PID namespace it sees only its own processes, and even
through the host's /proc (a new user namespace may unmount the new one) the kernel lets it read
no environment of a process outside its user namespace, patchbench's included. Unless the target
asks for the network (``build.network``), it also gets a network namespace of its own (``--net``:
a loopback device, down, and nothing else), so it reaches no other host; what it needs was
fetched before (git, ``cargo fetch``, ``go mod download``). Its /run is an empty tmpfs, so the
host's daemons' sockets there (docker, containerd, dbus) are out of its reach too. The user keeps
its uid (0 as root), files it writes are owned as before, and when the command ends or is killed,
everything it started ends with it.

Where user namespaces are not available (a container that forbids them, a kernel that disables
them for users), the command runs as before with its clean environment, and one warning says so.
Other systems than Linux have no such namespaces: there the command runs as before, silently.
"""

from __future__ import annotations

import functools
import shutil
import sys

from patchbench.util import cmd, progress

UNSHARE = ["unshare", "--user", "--map-current-user", "--pid", "--fork", "--mount",
           "--mount-proc", "--kill-child"]
NO_NETWORK = "--net"  # a network namespace of its own: no route to any other host
# In the command's own mount namespace, an empty /run (and /var/run where it is not a link to it)
# before its program starts: the host's daemons' sockets there (docker, containerd, dbus) are
# files, which a network namespace does not hide.
HIDE_RUN = ('mount -t tmpfs -o mode=0755,size=1m patchbench /run || exit 125; '
            'if [ -d /var/run ] && [ ! -L /var/run ]; then '
            'mount -t tmpfs -o mode=0755,size=1m patchbench /var/run || exit 125; fi; '
            'exec "$0" "$@"')


@functools.cache
def available() -> bool:
    """Whether ``UNSHARE`` works on this machine, for this user (tried once per process)."""
    if not sys.platform.startswith("linux"):
        return False
    if shutil.which("unshare") is None:
        progress.say("warning: builds run without namespaces of their own (no unshare on PATH): "
                     "a build can read patchbench's environment and reach the network")
        return False
    res = cmd.run([*UNSHARE, NO_NETWORK, "--", cmd.which("sh"), "-c", HIDE_RUN,
                       cmd.which("true")], timeout=30, check=False)
    if res.returncode != 0:
        reason = (res.stderr.strip().splitlines() or ["it failed"])[-1]
        progress.say(f"warning: builds run without namespaces of their own ({reason}): a build "
                     "can read patchbench's environment and reach the network")
        return False
    return True


def isolated(argv: list[str], *, network: bool = False) -> list[str]:
    """``argv`` run in namespaces of its own (without the network unless ``network``), where
    that works; else ``argv`` as it is. Its program is found here, so that a missing one is named
    as without namespaces."""
    program = cmd.which(argv[0])
    if not available():
        return [program, *argv[1:]]
    return [*UNSHARE, *([] if network else [NO_NETWORK]), "--", cmd.which("sh"), "-c",
            HIDE_RUN, program, *argv[1:]]
