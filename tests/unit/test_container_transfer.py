"""The files put into a container before it starts go as tars without tarfile's record padding
(runners/containers/transfer.py: podman's upload subprocess stops at the end-of-archive marker,
and padding still unwritten then fails the upload with a broken pipe)."""

from __future__ import annotations

import inspect
import io
import tarfile
from typing import Any

import pytest
from testcontainers.core.transferable import build_transfer_tar

from runners.containers.transfer import END_OF_ARCHIVE, lab_container_class, trimmed


@pytest.mark.parametrize("data", [b"", b"x" * 10, b"y" * 5000, bytes(range(256)) * 40],
                         ids=["empty", "10 B", "5000 B", "10 KiB"])
def test_a_trimmed_tar_has_the_same_member_and_ends_at_its_marker(data: bytes) -> None:
    padded = build_transfer_tar(data, "/etc/lab/a.cnf", 0o755)
    assert len(padded) % tarfile.RECORDSIZE == 0  # what testcontainers sends: padded
    out = trimmed(padded)
    blocks = -(-len(data) // tarfile.BLOCKSIZE)  # the data, in whole blocks
    assert len(out) == tarfile.BLOCKSIZE * (1 + blocks) + END_OF_ARCHIVE
    assert out.endswith(b"\0" * END_OF_ARCHIVE)
    with tarfile.open(fileobj=io.BytesIO(out)) as tar:
        (member,) = tar.getmembers()
        got = tar.extractfile(member)
        assert got is not None and got.read() == data
        assert member.name == "/etc/lab/a.cnf" and member.mode == 0o755


class _Engine:
    def __init__(self) -> None:
        self.sent: list[bytes] = []

    def put_archive(self, path: str, data: bytes) -> bool:
        assert path == "/"
        self.sent.append(data)
        return True


def test_the_lab_s_containers_send_the_trimmed_tar() -> None:
    cls: Any = lab_container_class()
    box = cls.__new__(cls)  # no engine: only the transfer is exercised
    box._container = _Engine()
    cls._transfer_into_container(box, b"[mysqld]\n", "/etc/my.cnf", 0o644)
    (sent,) = box._container.sent
    assert sent == trimmed(build_transfer_tar(b"[mysqld]\n", "/etc/my.cnf", 0o644))
    assert len(sent) < tarfile.RECORDSIZE


def test_a_file_put_into_a_node_s_container_goes_as_a_trimmed_tar() -> None:
    """``ContainerNode.put_file`` (start options, faketime, a mongod's arguments: written into
    a stopped container before it starts) sends the same trimmed tar."""
    from runners.containers.node import ContainerNode

    node: Any = ContainerNode.__new__(ContainerNode)  # no engine: only the upload is exercised
    node.container = _Engine()
    ContainerNode.put_file(node, "/etc/lab/start-options", b"--gtid-domain-id=2\n", 0o600)
    (sent,) = node.container.sent
    assert len(sent) < tarfile.RECORDSIZE and sent.endswith(b"\0" * END_OF_ARCHIVE)
    assert sent == trimmed(sent + b"\0" * (tarfile.RECORDSIZE - len(sent)))
    with tarfile.open(fileobj=io.BytesIO(sent)) as tar:
        (member,) = tar.getmembers()
        got = tar.extractfile(member)
        assert got is not None and got.read() == b"--gtid-domain-id=2\n"
        assert member.name == "etc/lab/start-options" and member.mode == 0o600


def test_testcontainers_still_sends_its_files_through_the_method_the_lab_replaces() -> None:
    """The override is of a private method: a testcontainers that stopped calling it would
    send padded tars again without a word."""
    from testcontainers.core.container import DockerContainer

    assert "self._transfer_into_container(" in inspect.getsource(DockerContainer.start)
    assert list(inspect.signature(DockerContainer._transfer_into_container).parameters) == [
        "self", "transferable", "destination_in_container", "mode"]
