"""Deterministic OCI image archives with L layers, made locally (no registry).
Details: docs/internals.md."""

from __future__ import annotations

import hashlib
import io
import json
import platform
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patchbench.errors import RequirementError

MEDIA_INDEX = "application/vnd.oci.image.index.v1+json"
MEDIA_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MEDIA_CONFIG = "application/vnd.oci.image.config.v1+json"
MEDIA_LAYER = "application/vnd.oci.image.layer.v1.tar"
MTIME = 946684800  # 2000-01-01T00:00:00Z, for every tar entry
REPOSITORY = "patchbench.invalid/layers"
APPLETS = ("sh", "true", "false", "sleep", "echo", "cat", "ls", "id", "stat", "find", "wc", "test")
PASSWD = "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n"
GROUP = "root:x:0:\nnogroup:x:65534:\n"
GOARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}


@dataclass(frozen=True)
class OciImage:
    path: Path  # the archive
    name: str  # the reference it is imported as, e.g. patchbench.invalid/layers:16
    layers: int
    manifest_digest: str  # "sha256:..."; what `ctr images ls` shows as the image's digest
    config_digest: str
    layer_digests: tuple[str, ...]  # uncompressed, so also the config's diff_ids
    size: int  # bytes of all blobs

    def layer_files(self) -> list[str]:
        """The paths (inside the container) of the files layers 2..L add."""
        return [layer_file(i) for i in range(2, self.layers + 1)]


def layer_file(index: int) -> str:
    return f"/layers/{index:03d}"


def image_name(layers: int) -> str:
    return f"{REPOSITORY}:{layers}"


def goarch() -> str:
    machine = platform.machine()
    try:
        return GOARCH[machine]
    except KeyError:
        raise RequirementError(f"no OCI architecture known for this machine ({machine})") from None


def _info(name: str, kind: bytes, *, size: int = 0, mode: int = 0o755, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.size = size
    info.mode = mode
    info.mtime = MTIME
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    info.linkname = link
    return info


def _tar(entries: list[tuple[tarfile.TarInfo, bytes]]) -> bytes:
    """An uncompressed ustar archive of ``entries`` in name order (directories first by name)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for info, data in sorted(entries, key=lambda e: e[0].name):
            tar.addfile(info, io.BytesIO(data) if info.type == tarfile.REGTYPE else None)
    return buf.getvalue()


def base_layer(busybox: bytes) -> bytes:
    entries: list[tuple[tarfile.TarInfo, bytes]] = []
    for d in ("bin", "dev", "etc", "layers", "proc", "root", "sys", "tmp"):
        entries.append((_info(d + "/", tarfile.DIRTYPE, mode=0o1777 if d == "tmp" else 0o755), b""))
    entries.append((_info("bin/busybox", tarfile.REGTYPE, size=len(busybox)), busybox))
    for applet in APPLETS:
        entries.append((_info(f"bin/{applet}", tarfile.SYMTYPE, mode=0o777, link="busybox"), b""))
    for name, text in (("etc/passwd", PASSWD), ("etc/group", GROUP)):
        data = text.encode()
        entries.append((_info(name, tarfile.REGTYPE, size=len(data), mode=0o644), data))
    return _tar(entries)


def file_layer(index: int) -> bytes:
    """Layer ``index`` (2..L): the file /layers/NNN, root-owned, mode 0644."""
    data = f"layer {index}\n".encode()
    name = layer_file(index).lstrip("/")
    return _tar([(_info(name, tarfile.REGTYPE, size=len(data), mode=0o644), data)])


def _json(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _descriptor(media_type: str, data: bytes, **extra: Any) -> dict[str, Any]:
    return {"mediaType": media_type, "digest": _digest(data), "size": len(data), **extra}


def write_image(
    dest: Path, layers: int, busybox: Path, *, name: str | None = None, arch: str | None = None
) -> OciImage:
    """Write the L-layer image archive to ``dest`` (atomically) and describe it."""
    if layers < 1:
        raise ValueError("an image needs at least one layer")
    name = name or image_name(layers)
    arch = arch or goarch()
    blobs: list[bytes] = [base_layer(busybox.read_bytes())]
    blobs += [file_layer(i) for i in range(2, layers + 1)]
    layer_descs = [_descriptor(MEDIA_LAYER, b) for b in blobs]
    config = _json({
        "architecture": arch,
        "os": "linux",
        "config": {"Cmd": ["/bin/sh"], "Env": ["PATH=/bin"], "WorkingDir": "/"},
        "rootfs": {"type": "layers", "diff_ids": [d["digest"] for d in layer_descs]},
        "history": [{"created_by": "patchbench: busybox"}]
        + [{"created_by": f"patchbench: add {layer_file(i)}"} for i in range(2, layers + 1)],
    })
    manifest = _json({
        "schemaVersion": 2,
        "mediaType": MEDIA_MANIFEST,
        "config": _descriptor(MEDIA_CONFIG, config),
        "layers": layer_descs,
    })
    tag = name.rsplit(":", 1)[1] if ":" in name.rsplit("/", 1)[-1] else "latest"
    index = _json({
        "schemaVersion": 2,
        "mediaType": MEDIA_INDEX,
        "manifests": [_descriptor(
            MEDIA_MANIFEST, manifest,
            annotations={"io.containerd.image.name": name, "org.opencontainers.image.ref.name": tag},
            platform={"architecture": arch, "os": "linux"},
        )],
    })
    entries: dict[str, bytes] = {}
    for blob in [*blobs, config, manifest]:
        entries[f"blobs/sha256/{_digest(blob).split(':', 1)[1]}"] = blob
    entries["index.json"] = index
    entries["oci-layout"] = _json({"imageLayoutVersion": "1.0.0"})
    tar_entries = [(_info(d, tarfile.DIRTYPE), b"") for d in ("blobs/", "blobs/sha256/")]
    tar_entries += [(_info(p, tarfile.REGTYPE, size=len(b), mode=0o644), b) for p, b in entries.items()]
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".tmp")
    tmp.write_bytes(_tar(tar_entries))
    tmp.replace(dest)
    return OciImage(
        path=dest,
        name=name,
        layers=layers,
        manifest_digest=_digest(manifest),
        config_digest=_digest(config),
        layer_digests=tuple(d["digest"] for d in layer_descs),
        size=sum(len(b) for b in entries.values()),
    )
