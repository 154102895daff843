"""The Linux mount syscalls through ctypes (open_tree, mount_setattr, move_mount, mount, umount2,
unshare), and two small programs run as a script (standard library only): ``probe-idmap DIR``
checks that idmapped mounts work as overlayfs lower directories on DIR's filesystem, printing
one JSON object, and ``exercise`` makes a known number of mount syscalls for the mount tracer's
tests. Linux only."""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import errno
import json
import os
import platform
import shutil
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
MS_RDONLY = 0x1
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 1 << 18
MNT_DETACH = 0x2
AT_FDCWD = -100
AT_EMPTY_PATH = 0x1000
AT_RECURSIVE = 0x8000
OPEN_TREE_CLONE = 1
OPEN_TREE_CLOEXEC = 0o2000000
MOVE_MOUNT_F_EMPTY_PATH = 0x4
MOUNT_ATTR_IDMAP = 0x00100000
MOUNT_ATTR_RDONLY = 0x1

# unified numbers since Linux 5.2 (open_tree, move_mount) and 5.12 (mount_setattr)
NR_OPEN_TREE = 428
NR_MOVE_MOUNT = 429
NR_MOUNT_SETATTR = 442
NR_UNSHARE = {"x86_64": 272, "aarch64": 97}

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong,
                        ctypes.c_char_p]
_libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]


class MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


def _check(ret: int, what: str) -> int:
    if ret < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return ret


def _b(path: str | os.PathLike[str]) -> bytes:
    return os.fsencode(path)


def unshare(flags: int) -> None:
    nr = NR_UNSHARE.get(platform.machine())
    if nr is None:
        raise OSError(errno.ENOSYS, f"unshare: unknown syscall number on {platform.machine()}")
    _check(_libc.syscall(ctypes.c_long(nr), ctypes.c_int(flags)), "unshare")


def mount(src: str | None, target: str | os.PathLike[str], fstype: str | None, flags: int,
          data: str | None = None) -> None:
    _check(_libc.mount(src.encode() if src else None, _b(target),
                       fstype.encode() if fstype else None, flags,
                       data.encode() if data else None), f"mount {target}")


def umount2(target: str | os.PathLike[str], flags: int = 0) -> None:
    _check(_libc.umount2(_b(target), flags), f"umount2 {target}")


def open_tree(path: str | os.PathLike[str], flags: int = OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC) -> int:
    return _check(_libc.syscall(ctypes.c_long(NR_OPEN_TREE), ctypes.c_int(AT_FDCWD),
                                ctypes.c_char_p(_b(path)), ctypes.c_uint(flags)), f"open_tree {path}")


def mount_setattr(fd: int, attr_set: int, userns_fd: int = 0) -> None:
    attr = MountAttr(attr_set, 0, 0, userns_fd)
    _check(_libc.syscall(ctypes.c_long(NR_MOUNT_SETATTR), ctypes.c_int(fd), ctypes.c_char_p(b""),
                         ctypes.c_uint(AT_EMPTY_PATH), ctypes.byref(attr),
                         ctypes.c_size_t(ctypes.sizeof(attr))), "mount_setattr")


def move_mount(fd: int, target: str | os.PathLike[str]) -> None:
    _check(_libc.syscall(ctypes.c_long(NR_MOVE_MOUNT), ctypes.c_int(fd), ctypes.c_char_p(b""),
                         ctypes.c_int(AT_FDCWD), ctypes.c_char_p(_b(target)),
                         ctypes.c_uint(MOVE_MOUNT_F_EMPTY_PATH)), f"move_mount {target}")


def private_mount_namespace() -> None:
    """This process into a new mount namespace whose mounts do not propagate back (2 syscalls:
    unshare and one mount)."""
    unshare(CLONE_NEWNS)
    mount(None, "/", None, MS_REC | MS_PRIVATE)


class UserNamespace:
    """A child process parked in a new user namespace with ``mapping`` (container:host:size) for
    both uids and gids; ``fd`` is that namespace, for MOUNT_ATTR_IDMAP."""

    def __init__(self, mapping: tuple[int, int, int]):
        r, w = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # the child: new user namespace, then wait for the parent to close w
            try:
                os.close(w)
                unshare(CLONE_NEWUSER)
                os.read(r, 1)
            finally:
                os._exit(0)
        os.close(r)
        self._release = w
        line = "{} {} {}\n".format(*mapping)
        # the child may not have unshared yet: wait until its user namespace differs from ours
        ours = os.stat("/proc/self/ns/user").st_ino
        for _ in range(2000):
            if os.stat(f"/proc/{self.pid}/ns/user").st_ino != ours:
                break
            threading.Event().wait(0.001)
        else:
            self.close()
            raise OSError(errno.ETIMEDOUT, "the user-namespace child did not unshare")
        Path(f"/proc/{self.pid}/uid_map").write_text(line)
        Path(f"/proc/{self.pid}/setgroups").write_text("deny\n")
        Path(f"/proc/{self.pid}/gid_map").write_text(line)
        self.fd = os.open(f"/proc/{self.pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)

    def close(self) -> None:
        if getattr(self, "fd", None) is not None:
            os.close(self.fd)
        os.close(self._release)
        os.waitpid(self.pid, 0)


def idmapped_bind(src: Path, dest: Path, userns_fd: int) -> None:
    fd = open_tree(src)
    try:
        mount_setattr(fd, MOUNT_ATTR_IDMAP, userns_fd)
        move_mount(fd, dest)
    finally:
        os.close(fd)


def probe_idmap(base: Path, mapping: tuple[int, int, int] = (0, 100000, 65536)) -> dict[str, Any]:
    """The probe (in this process: call it in a child). Returns {"ok", "reason", "step", ...}."""
    result: dict[str, Any] = {"ok": False, "dir": str(base), "mapping": list(mapping)}
    step = "private mount namespace"
    tmp = Path(tempfile.mkdtemp(prefix="idmap-probe-", dir=base))
    ns: UserNamespace | None = None
    try:
        private_mount_namespace()
        step = "user namespace"
        ns = UserNamespace(mapping)
        dirs = {n: tmp / n for n in ("l1", "l2", "m1", "m2", "merged")}
        for d in dirs.values():
            d.mkdir()
        (dirs["l1"] / "lower1").write_text("1\n")
        (dirs["l2"] / "lower2").write_text("2\n")
        for f in ("l1/lower1", "l2/lower2"):
            os.chown(tmp / f, 0, 0)
        step = "idmapped bind mount (open_tree, mount_setattr MOUNT_ATTR_IDMAP, move_mount)"
        idmapped_bind(dirs["l1"], dirs["m1"], ns.fd)
        idmapped_bind(dirs["l2"], dirs["m2"], ns.fd)
        seen = os.stat(dirs["m1"] / "lower1").st_uid
        if seen != mapping[1]:
            result["reason"] = f"a uid-0 file shows uid {seen} through the idmapped mount, not {mapping[1]}"
            return result
        step = "overlayfs with idmapped lower directories"
        mount("overlay", dirs["merged"], "overlay", MS_RDONLY,
              f"lowerdir={dirs['m1']}:{dirs['m2']}")
        owners = {n: os.stat(dirs["merged"] / n).st_uid for n in ("lower1", "lower2")}
        result["overlay_uids"] = owners
        if set(owners.values()) != {mapping[1]}:
            result["reason"] = f"through overlayfs the files show uids {owners}, not {mapping[1]}"
            return result
        for name in ("merged", "m1", "m2"):
            umount2(dirs[name], MNT_DETACH)
        result.update(ok=True, reason="idmapped overlayfs lower directories work")
        return result
    except OSError as exc:
        result["reason"] = f"{step} failed: {exc.strerror or exc}"
        result["errno"] = errno.errorcode.get(exc.errno or 0, str(exc.errno))
        return result
    finally:
        result["step"] = step
        if ns is not None:
            ns.close()
        shutil.rmtree(tmp, ignore_errors=True)


def exercise(base: Path, mounts: int, forks: int, threads: int) -> dict[str, int]:
    """Known mount syscalls: a private mount namespace (1 unshare, 1 mount), then ``mounts``
    rounds of [open_tree, mount_setattr(RDONLY), move_mount, mount(tmpfs), umount2 x2]; the same in
    each of ``forks`` child processes and ``threads`` threads; one deliberate failing umount2 at the
    end. Returns the expected count per syscall."""
    private_mount_namespace()
    base.mkdir(parents=True, exist_ok=True)

    def rounds(tag: str) -> None:
        d = base / tag
        src, dst, tmp = d / "src", d / "dst", d / "tmp"
        for p in (src, dst, tmp):
            p.mkdir(parents=True, exist_ok=True)
        for _ in range(mounts):
            fd = open_tree(src)
            mount_setattr(fd, MOUNT_ATTR_RDONLY)
            move_mount(fd, dst)
            os.close(fd)
            mount("tmpfs", tmp, "tmpfs", 0, "size=64k")
            umount2(tmp)
            umount2(dst)

    rounds("main")
    pids = []
    for i in range(forks):
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                rounds(f"fork{i}")
            except BaseException:
                code = 1
            os._exit(code)
        pids.append(pid)
    for pid in pids:
        _, status = os.waitpid(pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise OSError(errno.EIO, f"child {pid} failed")
    errors: list[BaseException] = []

    def in_thread(i: int) -> None:
        try:
            rounds(f"thread{i}")
        except BaseException as exc:
            errors.append(exc)

    workers = [threading.Thread(target=in_thread, args=(i,)) for i in range(threads)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    if errors:
        raise errors[0]
    with contextlib.suppress(OSError):  # not a mount point: EINVAL, counted as an error
        umount2(base / "main" / "src")
    per = mounts * (1 + forks + threads)
    return {"open_tree": per, "mount_setattr": per, "move_mount": per, "mount": per + 1,
            "umount2": 2 * per + 1, "umount2_errors": 1}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="mountsys.py")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("probe-idmap")
    p.add_argument("dir", type=Path)
    e = sub.add_parser("exercise")
    e.add_argument("dir", type=Path)
    e.add_argument("--mounts", type=int, default=3)
    e.add_argument("--forks", type=int, default=0)
    e.add_argument("--threads", type=int, default=0)
    args = ap.parse_args(argv)
    if args.cmd == "probe-idmap":
        res = probe_idmap(args.dir)
        print(json.dumps(res, sort_keys=True))
        return 0 if res["ok"] else 1
    expected = exercise(args.dir, args.mounts, args.forks, args.threads)
    print(json.dumps(expected, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
