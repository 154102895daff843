"""The image maker: deterministic archives and digests, valid OCI layout documents, the layers'
contents. A fake busybox (any bytes) stands in for the host's."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path
from typing import Any

import pytest

from patchbench.measure import oci_image


@pytest.fixture
def busybox(tmp_path: Path) -> Path:
    p = tmp_path / "busybox"
    p.write_bytes(b"\x7fELF fake busybox " * 100)
    return p


def blobs(archive: Path) -> dict[str, bytes]:
    with tarfile.open(archive) as tar:
        return {m.name: tar.extractfile(m).read()  # type: ignore[union-attr]
                for m in tar.getmembers() if m.isfile()}


def doc(files: dict[str, bytes], digest: str) -> Any:
    return json.loads(files[f"blobs/sha256/{digest.split(':', 1)[1]}"])


def test_same_digest_and_bytes_twice(tmp_path: Path, busybox: Path) -> None:
    a = oci_image.write_image(tmp_path / "a.tar", 16, busybox, arch="amd64")
    b = oci_image.write_image(tmp_path / "b.tar", 16, busybox, arch="amd64")
    assert a.manifest_digest == b.manifest_digest
    assert a.layer_digests == b.layer_digests
    assert (tmp_path / "a.tar").read_bytes() == (tmp_path / "b.tar").read_bytes()


def test_digest_changes_with_layers_and_busybox(tmp_path: Path, busybox: Path) -> None:
    digests = {n: oci_image.write_image(tmp_path / f"{n}.tar", n, busybox, arch="amd64")
               for n in (1, 2, 16, 64)}
    assert len({i.manifest_digest for i in digests.values()}) == 4
    assert [len(i.layer_digests) for i in digests.values()] == [1, 2, 16, 64]
    # the base layer is shared by every size; each added layer is new
    assert len({i.layer_digests[0] for i in digests.values()}) == 1
    assert len(set(digests[64].layer_digests)) == 64
    other = tmp_path / "other-busybox"
    other.write_bytes(busybox.read_bytes() + b"!")
    changed = oci_image.write_image(tmp_path / "o.tar", 16, other, arch="amd64")
    assert changed.manifest_digest != digests[16].manifest_digest


def test_layout_index_manifest_config(tmp_path: Path, busybox: Path) -> None:
    img = oci_image.write_image(tmp_path / "img.tar", 4, busybox, arch="arm64")
    files = blobs(img.path)
    assert json.loads(files["oci-layout"]) == {"imageLayoutVersion": "1.0.0"}
    for name, data in files.items():  # every blob is stored under its own digest
        if name.startswith("blobs/sha256/"):
            assert hashlib.sha256(data).hexdigest() == name.rsplit("/", 1)[1]
    index = json.loads(files["index.json"])
    assert index["schemaVersion"] == 2 and index["mediaType"] == oci_image.MEDIA_INDEX
    (desc,) = index["manifests"]
    assert desc["digest"] == img.manifest_digest
    assert desc["annotations"] == {"io.containerd.image.name": "patchbench.invalid/layers:4",
                                   "org.opencontainers.image.ref.name": "4"}
    assert desc["platform"] == {"architecture": "arm64", "os": "linux"}
    manifest = doc(files, img.manifest_digest)
    assert manifest["mediaType"] == oci_image.MEDIA_MANIFEST
    assert desc["size"] == len(files[f"blobs/sha256/{img.manifest_digest[7:]}"])
    assert manifest["config"]["digest"] == img.config_digest
    assert [layer["mediaType"] for layer in manifest["layers"]] == [oci_image.MEDIA_LAYER] * 4
    config = doc(files, img.config_digest)
    assert config["architecture"] == "arm64" and config["os"] == "linux"
    assert config["rootfs"] == {"type": "layers", "diff_ids": list(img.layer_digests)}
    assert len(config["history"]) == 4


def layer_members(files: dict[str, bytes], digest: str) -> list[tarfile.TarInfo]:
    data = files[f"blobs/sha256/{digest.split(':', 1)[1]}"]
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        return tar.getmembers()


def test_layer_contents(tmp_path: Path, busybox: Path) -> None:
    img = oci_image.write_image(tmp_path / "img.tar", 3, busybox, arch="amd64")
    files = blobs(img.path)
    base = {m.name: m for m in layer_members(files, img.layer_digests[0])}
    assert base["bin/busybox"].size == busybox.stat().st_size
    assert base["bin/true"].issym() and base["bin/true"].linkname == "busybox"
    assert base["etc/passwd"].isfile() and base["tmp"].mode == 0o1777
    for i, digest in enumerate(img.layer_digests[1:], start=2):
        (m,) = layer_members(files, digest)
        assert m.name == f"layers/{i:03d}"
    assert img.layer_files() == ["/layers/002", "/layers/003"]
    every = [m for d in img.layer_digests for m in layer_members(files, d)]
    assert {(m.uid, m.gid, m.mtime) for m in every} == {(0, 0, oci_image.MTIME)}


def test_rejects_zero_layers(tmp_path: Path, busybox: Path) -> None:
    with pytest.raises(ValueError):
        oci_image.write_image(tmp_path / "x.tar", 0, busybox)
