"""runc as a runtime, on fixtures: the bundle builder (rootfs from busybox, a directory or a
tarball; ``runc spec`` adjusted), teardown and stale-state cleanup against a fake runc and a fake
cgroup tree, and the requirement checks. No real runc and no root are needed."""

from __future__ import annotations

import io
import json
import os
import platform
import shutil
import struct
import tarfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from patchbench import runtimes
from patchbench.config import Comparison, Target
from patchbench.errors import BenchmarkError, PatchbenchError, RequirementError
from patchbench.runtimes import VariantBuild, runc
from patchbench.runtimes.runc import RuncRuntime

# What `runc spec` (1.2) writes, trimmed to the keys patchbench touches plus a few it keeps.
SPEC: dict[str, Any] = {
    "ociVersion": "1.2.0",
    "process": {
        "terminal": True,
        "user": {"uid": 0, "gid": 0},
        "args": ["sh"],
        "env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "TERM=xterm"],
        "cwd": "/",
    },
    "root": {"path": "rootfs", "readonly": True},
    "hostname": "runc",
    "linux": {"namespaces": [{"type": "pid"}, {"type": "mount"}]},
}

# A stand-in for runc: containers are files in the --root directory; every call is logged.
FAKE_RUNC = """#!/bin/sh
echo "$*" >> '{log}'
root=/run/runc
if [ "$1" = --root ]; then root=$2; shift 2; fi
case "$1" in
spec)
    if [ -e config.json ]; then echo "File config.json exists. Remove it first." >&2; exit 1; fi
    cat > config.json <<'EOF'
{spec}
EOF
    ;;
list)
    [ "$2" = -q ] || exit 3
    ls -1 "$root"
    ;;
kill)
    [ "$3" = KILL ] || exit 3
    [ -e "$root/$2" ] && echo stopped > "$root/$2"
    ;;
delete)
    [ "$2" = -f ] || exit 3
    rm -f "$root/$3"
    ;;
*)
    echo "fake runc: unsupported: $*" >&2
    exit 2
    ;;
esac
"""

# the run directory of a patchbench process that no longer runs (a pid above pid_max)
DEAD_RUN = f"demo-20261129T000000-{2**22 + 1}-00ff"


def fake_runc(tmp_path: Path) -> tuple[Path, Path]:
    """bin/runc (the fake) and the file it logs its calls to."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    log = tmp_path / "runc-calls.log"
    log.write_text("")
    exe = bin_dir / "runc"
    exe.write_text(FAKE_RUNC.format(log=log, spec=json.dumps(SPEC, indent=2)))
    exe.chmod(0o755)
    return exe, log


def calls(log: Path) -> list[str]:
    return log.read_text().splitlines()


def comparison(**kw: Any) -> Comparison:
    data: dict[str, Any] = {"target": "runc", "candidates": {"fix": ["fix"]},
                            "scenarios": [{"name": "s", "command": ["true"], "runs": 1,
                                           "rounds": 1}]}
    data.update(kw)
    return Comparison.model_validate(data)


def target(**kw: Any) -> Target:
    data: dict[str, Any] = {"url": "https://example.invalid/t", "ref": "v1", "commit": "0" * 40,
                            "toolchain": {"kind": "go", "version": "1.23.6"},
                            "build": {"commands": [["true"]], "artifacts": ["t"]}}
    data.update(kw)
    return Target.model_validate(data)


def static_busybox() -> Path | None:
    found = shutil.which("busybox")
    if found is None or not runc.is_static(Path(found).resolve()):
        return None
    return Path(found)


def elf(*, is64: bool, types: list[int]) -> bytes:
    """A minimal ELF header with program headers of the given types."""
    if is64:
        head = bytearray(64)
        head[:5] = b"\x7fELF\x02"
        struct.pack_into("<Q", head, 0x20, 64)
        struct.pack_into("<HH", head, 0x36, 56, len(types))
        phdrs = b"".join(struct.pack("<I", t) + bytes(52) for t in types)
    else:
        head = bytearray(52)
        head[:5] = b"\x7fELF\x01"
        struct.pack_into("<I", head, 0x1C, 52)
        struct.pack_into("<HH", head, 0x2A, 32, len(types))
        phdrs = b"".join(struct.pack("<I", t) + bytes(28) for t in types)
    return bytes(head) + phdrs


# --- is_static ------------------------------------------------------------------------------

PT_LOAD, PT_INTERP, PT_NOTE = 1, 3, 4


@pytest.mark.parametrize("is64", [True, False])
def test_is_static_reads_the_program_headers(tmp_path: Path, is64: bool) -> None:
    static, dynamic = tmp_path / "static", tmp_path / "dynamic"
    static.write_bytes(elf(is64=is64, types=[PT_LOAD, PT_NOTE, PT_LOAD]))
    dynamic.write_bytes(elf(is64=is64, types=[PT_LOAD, PT_INTERP, PT_LOAD]))
    assert runc.is_static(static) is True
    assert runc.is_static(dynamic) is False


def test_a_script_is_not_a_static_binary(tmp_path: Path) -> None:
    script = tmp_path / "busybox"
    script.write_text("#!/bin/sh\necho not busybox\n")
    assert runc.is_static(script) is False


def test_is_static_on_real_binaries() -> None:
    ls = Path("/bin/ls").resolve()
    if not ls.is_file():
        pytest.skip("no /bin/ls")
    assert runc.is_static(ls) is False  # dynamically linked on every distribution we run on
    busybox = static_busybox()
    if busybox is None:
        pytest.skip("no static busybox on PATH")
    assert runc.is_static(busybox.resolve()) is True


# --- make_rootfs ----------------------------------------------------------------------------


def test_the_default_rootfs_is_made_from_the_static_busybox(tmp_path: Path) -> None:
    busybox = static_busybox()
    if busybox is None:
        pytest.skip("no static busybox on PATH")
    dest = tmp_path / "rootfs"
    origin = runc.make_rootfs(dest, None, tmp_path)
    assert origin == "busybox (static, from the host)"
    binary = dest / "bin" / "busybox"
    assert binary.is_file() and not binary.is_symlink()
    assert binary.read_bytes() == busybox.resolve().read_bytes()
    assert os.access(binary, os.X_OK)
    for applet in runc.BUSYBOX_APPLETS:
        link = dest / "bin" / applet
        assert link.is_symlink() and os.readlink(link) == "busybox", applet
    for d in ("proc", "sys", "dev", "tmp", "etc"):
        assert (dest / d).is_dir(), d


def test_a_dynamic_busybox_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "busybox"
    fake.write_bytes(elf(is64=True, types=[PT_LOAD, PT_INTERP]))
    monkeypatch.setattr(runc, "find_busybox", lambda: fake)
    with pytest.raises(RequirementError) as info:
        runc.make_rootfs(tmp_path / "rootfs", None, tmp_path)
    assert "dynamically linked" in info.value.message
    assert info.value.hint == "apt-get install busybox-static"
    assert not (tmp_path / "rootfs").exists()


def make_tree(root: Path) -> None:
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "hello").write_text("#!/bin/sh\necho hi\n")
    (root / "etc").mkdir()
    (root / "etc" / "hostname").write_text("fixture\n")
    os.symlink("hello", root / "bin" / "sh")


def test_a_rootfs_from_a_directory(tmp_path: Path) -> None:
    project = tmp_path / "project"
    make_tree(project / "rootfs-src")
    dest = tmp_path / "work" / "rootfs"
    dest.mkdir(parents=True)
    (dest / "stale").write_text("left by an earlier run")
    # relative to the project root
    assert runc.make_rootfs(dest, "rootfs-src", project) == "directory rootfs-src"
    assert (dest / "etc" / "hostname").read_text() == "fixture\n"
    assert (dest / "bin" / "sh").is_symlink() and os.readlink(dest / "bin" / "sh") == "hello"
    assert not (dest / "stale").exists()
    # and absolute
    absolute = str(project / "rootfs-src")
    assert runc.make_rootfs(dest, absolute, tmp_path / "elsewhere") == f"directory {absolute}"
    assert (dest / "bin" / "hello").read_text() == "#!/bin/sh\necho hi\n"


def test_a_rootfs_from_a_tarball(tmp_path: Path) -> None:
    src = tmp_path / "src"
    make_tree(src)
    tarball = tmp_path / "project" / "rootfs.tar.gz"
    tarball.parent.mkdir()
    with tarfile.open(tarball, "w:gz") as tar:
        tar.add(src, arcname=".")
    dest = tmp_path / "rootfs"
    assert runc.make_rootfs(dest, "rootfs.tar.gz", tarball.parent) == "tarball rootfs.tar.gz"
    assert (dest / "etc" / "hostname").read_text() == "fixture\n"
    assert os.readlink(dest / "bin" / "sh") == "hello"
    assert os.access(dest / "bin" / "hello", os.X_OK) == os.access(src / "bin" / "hello", os.X_OK)


def test_a_tarball_member_leaving_the_rootfs_is_refused(tmp_path: Path) -> None:
    tarball = tmp_path / "evil.tar"
    with tarfile.open(tarball, "w") as tar:
        data = b"escaped\n"
        info = tarfile.TarInfo("../escaped")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    dest = tmp_path / "work" / "rootfs"
    with pytest.raises((tarfile.TarError, PatchbenchError)):
        runc.make_rootfs(dest, str(tarball), tmp_path)
    assert not (tmp_path / "work" / "escaped").exists()


def test_a_rootfs_that_is_neither_directory_nor_tarball(tmp_path: Path) -> None:
    with pytest.raises(RequirementError, match="'missing' is neither a directory nor a tarball"):
        runc.make_rootfs(tmp_path / "rootfs", "missing", tmp_path)


# --- runc spec, adjusted ----------------------------------------------------------------------


def test_make_bundles_adjusts_runc_spec(tmp_path: Path) -> None:
    exe, log = fake_runc(tmp_path)
    make_tree(tmp_path / "project" / "rootfs-src")
    work = tmp_path / "work"
    origin = runc.make_bundles(work, exe, "rootfs-src", tmp_path / "project")
    assert origin == "directory rootfs-src"
    assert sorted(p.name for p in work.iterdir()) == sorted([*runc.BUNDLES, "rootfs"])
    for name, args in runc.BUNDLES.items():
        cfg = json.loads((work / name / "config.json").read_text())
        assert cfg["process"]["terminal"] is False
        assert cfg["process"]["args"] == args
        assert cfg["root"] == {"path": str((work / "rootfs").resolve()), "readonly": True}
        assert Path(cfg["root"]["path"]).is_absolute()
        assert cfg["hostname"] == "patchbench"
        # the rest of what runc spec wrote is kept
        assert cfg["ociVersion"] == SPEC["ociVersion"]
        assert cfg["linux"] == SPEC["linux"]
        assert cfg["process"]["env"] == SPEC["process"]["env"]
    assert calls(log) == ["spec"] * len(runc.BUNDLES)
    # again: `runc spec` refuses an existing config.json, so it must be replaced, not kept
    runc.make_bundles(work, exe, "rootfs-src", tmp_path / "project")
    assert calls(log) == ["spec"] * (2 * len(runc.BUNDLES))
    cfg = json.loads((work / "bundle_trap" / "config.json").read_text())
    assert cfg["process"]["args"] == runc.BUNDLES["bundle_trap"]


def test_make_bundles_from_the_default_busybox(tmp_path: Path) -> None:
    if static_busybox() is None:
        pytest.skip("no static busybox on PATH")
    exe, _ = fake_runc(tmp_path)
    work = tmp_path / "work"
    assert runc.make_bundles(work, exe, None, tmp_path) == "busybox (static, from the host)"
    cfg = json.loads((work / "bundle_sleep" / "config.json").read_text())
    assert cfg["process"]["args"] == ["sleep", "1000000"]
    assert cfg["root"]["path"] == str((work / "rootfs").resolve())
    # every command a bundle runs exists in the rootfs
    for args in runc.BUNDLES.values():
        assert (work / "rootfs" / "bin" / args[0]).is_symlink(), args[0]


def test_a_failing_runc_spec_is_a_benchmark_error(tmp_path: Path) -> None:
    exe = tmp_path / "runc"
    exe.write_text("#!/bin/sh\necho 'spec: permission denied' >&2\nexit 1\n")
    exe.chmod(0o755)
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    with pytest.raises(BenchmarkError, match="runc spec: exited with code 1"):
        runc.write_config(exe, bundle, ["true"], tmp_path / "rootfs")


# --- teardown and stale state -----------------------------------------------------------------


def plant(root: Path, *names: str) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for n in names:
        (root / n).write_text("running\n")


def runtime_with_run(tmp_path: Path) -> RuncRuntime:
    rt = RuncRuntime(cgroup_base=tmp_path / "cgroup")
    rt.workdir = tmp_path / "builds" / "runs" / "current-run"
    rt.workdir.mkdir(parents=True)
    return rt


def test_cgroups_of_finds_nested_v1_and_v2_paths(tmp_path: Path) -> None:
    base = tmp_path / "cgroup"
    nested = base / "memory" / "process_api" / "abc" / "pb-123456-baseline-run"  # depth 4
    flat = base / "unified" / "pb-123456-baseline-exec"
    other = base / "cpu" / "pb-654321-baseline-run"
    for d in (nested / "child", flat, other, base / "memory" / "user.slice"):
        d.mkdir(parents=True)
    assert runc.cgroups_of("pb-123456-baseline", base) == sorted([nested, flat])
    # a match is not descended into: its children are removed with it
    assert runc.cgroups_of("pb-", base) == sorted([nested, flat, other])
    assert runc.cgroups_of("pb-999999", base) == []
    assert runc.cgroups_of("pb-", tmp_path / "no-such-dir") == []


def test_cgroups_deeper_than_the_limit_are_not_searched(tmp_path: Path) -> None:
    base = tmp_path / "cgroup"
    deep = base.joinpath(*[f"d{i}" for i in range(runc.MAX_CGROUP_DEPTH + 1)], "pb-1-x")
    deep.mkdir(parents=True)
    assert runc.cgroups_of("pb-", base) == []


def test_cleanup_removes_every_container_and_cgroup(tmp_path: Path) -> None:
    exe, log = fake_runc(tmp_path)
    rt = runtime_with_run(tmp_path)
    mine = f"{rt.prefix}-baseline+"
    root = rt.state_root("baseline")
    plant(root, f"{mine}-run", f"{mine}-exec")
    cg = tmp_path / "cgroup"
    nested = cg / "memory" / "process_api" / "abc" / f"{mine}-run"
    flat = cg / "unified" / f"{mine}-exec"
    candidate = cg / "unified" / f"{rt.prefix}-fix+-run"
    # a variant whose name extends this one's ("baseline-v1") is not this variant's
    longer = cg / "unified" / f"{rt.prefix}-baseline-v1+-run"
    unrelated = cg / "memory" / "user.slice"
    for d in (nested / "sub" / "subsub", flat, candidate, unrelated, longer):
        d.mkdir(parents=True)
    # one entry per container, saying what is left of it
    assert rt.leftovers("baseline", exe.parent) == [
        f"{mine}-exec (state, 1 cgroup)", f"{mine}-run (state, 1 cgroup)"]
    log.write_text("")

    removed = rt.cleanup("baseline", exe.parent)
    made = calls(log)

    assert sorted(removed) == sorted([f"container {mine}-run", f"container {mine}-exec",
                                      f"cgroup {nested}", f"cgroup {flat}"])
    assert rt.leftovers("baseline", exe.parent) == []
    assert list(root.iterdir()) == []
    assert not nested.exists() and not flat.exists()
    assert nested.parent.is_dir()  # only the run's own cgroup goes, not its parent
    assert candidate.is_dir() and unrelated.is_dir() and longer.is_dir()  # not this variant's
    for cid in (f"{mine}-run", f"{mine}-exec"):
        assert f"--root {root} kill {cid} KILL" in made
        assert f"--root {root} delete -f {cid}" in made
    assert made.count(f"--root {root} list -q") == 1  # purge; the caller checks leftovers


def test_cleanup_of_a_clean_variant_removes_nothing(tmp_path: Path) -> None:
    exe, log = fake_runc(tmp_path)
    rt = runtime_with_run(tmp_path)
    rt.state_root("fix").mkdir(parents=True)
    assert rt.cleanup("fix", exe.parent) == []
    assert [c for c in calls(log) if " kill " in c or " delete " in c] == []


def test_cleanup_reports_what_it_could_not_remove(tmp_path: Path) -> None:
    exe, _ = fake_runc(tmp_path)
    rt = runtime_with_run(tmp_path)
    stuck = tmp_path / "cgroup" / "pids" / f"{rt.prefix}-baseline+-run"
    stuck.mkdir(parents=True)
    (stuck / "cgroup.procs").write_text("4242\n")  # a busy cgroup: rmdir fails
    # cleanup never raises (the run's results must still be saved); what stays is a leftover
    rt.cleanup("baseline", exe.parent)
    assert rt.leftovers("baseline", exe.parent) == [f"{stuck.name} (1 cgroup)"]


def test_clean_stale_removes_what_an_earlier_run_left(tmp_path: Path) -> None:
    exe, log = fake_runc(tmp_path)
    rt = runtime_with_run(tmp_path)
    runs = rt.workdir.parent  # type: ignore[union-attr]
    # named after a pid that does not exist: the run that owned it is gone
    old_base = runs / "runc-signal-20250101T000000-999999999" / runc.STATE_DIRNAME / "baseline"
    old_fix = runs / "runc-signal-20250101T000000-999999999" / runc.STATE_DIRNAME / "fix"
    plant(old_base, "pb-aaaaaa-baseline-run")
    plant(old_fix, "pb-aaaaaa-fix-exec", "pb-aaaaaa-fix-execd")
    current = rt.state_root("baseline")
    plant(current, f"{rt.prefix}-baseline-run")
    cg = tmp_path / "cgroup"
    stale_nested = cg / "memory" / "process_api" / "abc" / "pb-aaaaaa-baseline-run"
    stale_flat = cg / "unified" / "pb-aaaaaa-fix-exec"
    # a token with no state of a dead run here: maybe a run going on now, so it stays
    unknown = cg / "unified" / "pb-bbbbbb-fix-exec"
    own = cg / "unified" / f"{rt.prefix}-baseline-run"
    unrelated = cg / "memory" / "process_api" / "abc" / "other"
    for d in (stale_nested / "child", stale_flat, own, unrelated, unknown):
        d.mkdir(parents=True)

    removed = rt.clean_stale(runs, exe)

    assert sorted(removed) == sorted([
        "container pb-aaaaaa-baseline-run", "container pb-aaaaaa-fix-exec",
        "container pb-aaaaaa-fix-execd", f"cgroup {stale_nested}", f"cgroup {stale_flat}"])
    assert not old_base.exists() and not old_fix.exists()
    assert not stale_nested.exists() and not stale_flat.exists()
    # the current run's state and cgroups are untouched, and runc was never asked about them
    assert (current / f"{rt.prefix}-baseline-run").read_text() == "running\n"
    assert own.is_dir() and unrelated.is_dir() and unknown.is_dir()
    assert [c for c in calls(log) if str(current) in c] == []
    assert f"--root {old_fix} delete -f pb-aaaaaa-fix-execd" in calls(log)
    # nothing stale is left: a second pass finds nothing
    assert rt.clean_stale(runs, exe) == []


def test_prepare_cleans_stale_state_then_makes_the_bundles(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    exe, _ = fake_runc(tmp_path)
    make_tree(tmp_path / "project" / "rootfs-src")
    runs = tmp_path / "builds" / "runs"
    old = runs / DEAD_RUN / runc.STATE_DIRNAME / "baseline"
    plant(old, "pb-aaaaaa-baseline-run")
    rt = RuncRuntime(cgroup_base=tmp_path / "cgroup")
    (tmp_path / "cgroup").mkdir()
    workdir = runs / "new-run"
    project = SimpleNamespace(root=tmp_path / "project")
    rt.prepare(workdir, project, comparison(rootfs="rootfs-src"),  # type: ignore[arg-type]
               dry_run=False, bin_dir=exe.parent)
    assert rt.workdir == workdir
    assert rt.rootfs_origin == "directory rootfs-src"
    assert not old.exists()
    out = capsys.readouterr()
    assert "removed what a killed earlier run left: container pb-aaaaaa-baseline-run" in out.err
    assert out.out == ""  # progress goes to stderr; stdout is for results
    for name in runc.BUNDLES:
        assert (workdir / name / "config.json").is_file()


def test_a_dry_run_prepare_touches_nothing(tmp_path: Path) -> None:
    rt = RuncRuntime(cgroup_base=tmp_path / "cgroup")
    workdir = tmp_path / "runs" / "x-DRYRUN"
    project = SimpleNamespace(root=tmp_path)
    rt.prepare(workdir, project, comparison(target="fx"),  # type: ignore[arg-type]
               dry_run=True, bin_dir=tmp_path / "bin",
               variants=[VariantBuild("baseline", tmp_path / "bin", {"crun": {}})])
    assert rt.workdir == workdir
    assert not workdir.exists()
    assert rt.cli == "crun"  # the plan names the target's CLI, not runc
    assert "crun spec" in " ".join(rt.plan_notes())


def test_placeholders_name_the_run_and_the_variant(tmp_path: Path) -> None:
    rt = runtime_with_run(tmp_path)
    ph = rt.placeholders("fix", tmp_path / "bin")
    assert rt.prefix.startswith(f"{runc.ID_PREFIX}-") and len(rt.prefix) == len("pb-") + 6
    assert ph["id"] == f"{rt.prefix}-fix+"
    assert rt.variant_prefix("fix") == f"{rt.prefix}-fix+-"
    assert ph["runc"] == str(tmp_path / "bin" / "runc")
    assert ph["root"] == str(rt.workdir / runc.STATE_DIRNAME / "fix")  # type: ignore[operator]
    for name in runc.BUNDLES:
        assert ph[name] == str(rt.workdir / name)  # type: ignore[operator]
    assert RuncRuntime().token != RuncRuntime().token  # every run has its own prefix


# --- requirements -----------------------------------------------------------------------------


@pytest.fixture
def linux_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A Linux machine as root with a (fake) cgroup mount and busybox on PATH; tests take away
    one thing at a time."""
    monkeypatch.setattr(platform, "system", lambda: "Linux")
    monkeypatch.setattr(platform, "machine", lambda: "x86_64")
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    real_which = shutil.which
    monkeypatch.setattr(shutil, "which",
                        lambda name, *a, **k: "/usr/bin/busybox" if name == "busybox"
                        else real_which(name, *a, **k))
    cgroup = tmp_path / "cgroup"
    (cgroup / "memory").mkdir(parents=True)
    return cgroup


def no_busybox(monkeypatch: pytest.MonkeyPatch) -> None:
    real_which = shutil.which
    monkeypatch.setattr(shutil, "which",
                        lambda name, *a, **k: None if name == "busybox"
                        else real_which(name, *a, **k))


def test_runc_check_passes_on_a_capable_machine(linux_root: Path) -> None:
    RuncRuntime(cgroup_base=linux_root).check(None, comparison(), target())  # type: ignore[arg-type]


def test_runc_check_needs_root(linux_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(RequirementError) as info:
        RuncRuntime(cgroup_base=linux_root).check(None, comparison(), target())  # type: ignore[arg-type]
    err = info.value
    assert err.message == "runc comparisons need root"
    assert err.hint == "run as root: sudo -E invoke compare ..."
    assert err.exit_code == 16


def test_runc_check_needs_busybox_without_a_rootfs(linux_root: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    no_busybox(monkeypatch)
    with pytest.raises(RequirementError) as info:
        RuncRuntime(cgroup_base=linux_root).check(None, comparison(), target())  # type: ignore[arg-type]
    assert info.value.message == "runc comparisons need busybox"
    assert "apt-get install busybox-static" in (info.value.hint or "")
    # a configured rootfs needs no busybox
    RuncRuntime(cgroup_base=linux_root).check(
        None, comparison(rootfs="/srv/rootfs"), target())  # type: ignore[arg-type]


def test_runc_check_lists_every_missing_thing(tmp_path: Path, linux_root: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setattr(platform, "system", lambda: "Darwin")
    no_busybox(monkeypatch)
    empty = tmp_path / "empty-cgroup"
    empty.mkdir()
    with pytest.raises(RequirementError) as info:
        RuncRuntime(cgroup_base=empty).check(None, comparison(), target())  # type: ignore[arg-type]
    assert info.value.message == ("runc comparisons need Linux, root, cgroups mounted at "
                                  "/sys/fs/cgroup, busybox")
    assert info.value.hint == ("run as root: sudo -E invoke compare ...; "
                               "apt-get install busybox-static, or set 'rootfs:' in the "
                               "comparison to a directory or tarball")


def test_check_requirements_names_macos_and_apple_silicon_on_linux(
    linux_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(RequirementError) as info:
        runtimes.check_requirements(target(requires=["macos", "apple-silicon"]))
    err = info.value
    assert err.message == ("this comparison needs macOS, Apple silicon; this machine is "
                           "Linux x86_64 as root")
    assert err.hint == "run it on a Mac (macOS 15 or newer)"
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(RequirementError, match=r"; this machine is Linux x86_64$"):
        runtimes.check_requirements(target(requires=["macos", "apple-silicon"]))


def test_check_requirements_on_a_mac(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(platform, "system", lambda: "Darwin")
    monkeypatch.setattr(platform, "machine", lambda: "arm64")
    runtimes.check_requirements(target(requires=["macos", "apple-silicon"]))
    monkeypatch.setattr(platform, "machine", lambda: "x86_64")  # an Intel Mac
    with pytest.raises(RequirementError, match=r"^this comparison needs Apple silicon; "):
        runtimes.check_requirements(target(requires=["macos", "apple-silicon"]))


def test_check_requirements_root(linux_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runtimes.check_requirements(target(requires=["linux", "root"]))
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(RequirementError) as info:
        runtimes.check_requirements(target(requires=["linux", "root"]))
    assert info.value.message.startswith("this comparison needs root; ")
    assert info.value.hint == "run it as root, e.g. sudo -E invoke compare ..."


def test_missing_tools_get_the_install_hint(linux_root: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    real_which = shutil.which
    gone = {"busybox", "pkg-config", "not-a-real-tool-xyz"}
    monkeypatch.setattr(shutil, "which",
                        lambda name, *a, **k: None if name in gone else real_which(name, *a, **k))
    with pytest.raises(RequirementError) as info:
        runtimes.check_requirements(target(tools=["sh", "busybox", "pkg-config",
                                                  "not-a-real-tool-xyz"]))
    err = info.value
    assert err.message.startswith("this comparison needs busybox, pkg-config, "
                                  "not-a-real-tool-xyz; this machine is Linux x86_64")
    assert err.hint == ("apt-get install busybox-static; apt-get install pkg-config; "
                        "install not-a-real-tool-xyz and make sure it is on PATH")


def test_runtimes_get() -> None:
    assert runtimes.get(None) is None
    assert isinstance(runtimes.get("runc"), RuncRuntime)
    with pytest.raises(RequirementError, match="unknown runtime 'podman'"):
        runtimes.get("podman")


def test_a_run_directory_names_its_owner_in_both_name_forms() -> None:
    me = os.getpid()
    assert runc._alive(Path(f"/r/demo-20261130T033049-{me}-00ff"))
    assert runc._alive(Path(f"/r/demo-20261130T033049-{me}-1234"))  # an all-digit suffix
    assert runc._alive(Path(f"/r/demo-20261130T033049-{me}"))  # before the suffix existed
    dead = 2**22 + 1  # above the kernel's pid_max default range
    assert not runc._alive(Path(f"/r/demo-20261130T033049-{dead}-1234"))
    assert not runc._alive(Path(f"/r/demo-20261130T033049-{dead}"))
    assert runc._alive(Path("/r/some-directory"))  # no pid: never taken for a dead run's
