"""ProxySQL on containers from this machine's binary: the image's tag and build context."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

from runners.containers.proxysql import BINARY_IN_IMAGE, DATADIR, build_context, local_image_tag


def test_the_tag_names_the_binary_and_the_node_image(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_bytes(b"proxysql 2.7.2")
    b.write_bytes(b"proxysql 2.7.3")
    base = "localhost/rcl-node:c23fdfa67ad7"
    assert local_image_tag(a, base).startswith("rcl-proxysql:")
    assert local_image_tag(a, base).endswith("-c23fdfa67ad7")
    assert local_image_tag(a, base) != local_image_tag(b, base)  # a new binary, a new image
    assert local_image_tag(a, base) != local_image_tag(a, "rcl-node:other")


def test_the_context_copies_the_binary_and_a_datadir_and_runs_nothing(tmp_path: Path) -> None:
    binary = tmp_path / "proxysql"
    binary.write_bytes(b"\x7fELF fake")
    binary.chmod(0o755)
    with tarfile.open(fileobj=io.BytesIO(build_context(binary, "rcl-node:x"))) as tar:
        names = {m.name: m for m in tar.getmembers()}
        dockerfile = tar.extractfile("Dockerfile").read().decode()  # type: ignore[union-attr]
        assert tar.extractfile("proxysql").read() == b"\x7fELF fake"  # type: ignore[union-attr]
    assert set(names) == {"Dockerfile", "proxysql", "datadir"}
    assert names["datadir"].isdir() and names["proxysql"].mode & 0o111
    lines = dockerfile.splitlines()
    assert lines[0] == "FROM rcl-node:x"
    assert f"COPY proxysql {BINARY_IN_IMAGE}" in lines and f"COPY datadir {DATADIR}" in lines
    assert not any(line.startswith("RUN") for line in lines)
