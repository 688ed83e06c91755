"""The files the lab puts into a container before it starts, as tars that end where their
end-of-archive marker ends.

testcontainers sends each file (``with_copy_into_container``) as a tar built by ``tarfile``,
which pads the archive to a 10 KiB record after the two zero blocks that end it. As
containers/buildah issue 6573 (open) traces the failure, podman hands the upload to a
subprocess that stops reading at those two blocks; when it has quit before podman has written
the padding into the pipe, the upload fails with "passing bulk input to subprocess: write |1:
broken pipe" and the container never starts (seen once here, in `make bench`'s 24-container
round). A tar without the padding gives that subprocess every byte it will read before it can
quit.

``new_container(image, **kw)`` is testcontainers' ``DockerContainer`` with that one difference.
"""

from __future__ import annotations

import io
import tarfile
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from testcontainers.core.container import DockerContainer

END_OF_ARCHIVE = 2 * tarfile.BLOCKSIZE  # the two zero blocks that end a tar


def trimmed(archive: bytes) -> bytes:
    """``archive`` (a whole tar) cut right after its end-of-archive marker: the same members,
    none of ``tarfile``'s record padding."""
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:") as tar:
        for _ in tar:  # read every header: ``offset`` is then the end of the last member
            pass
        end = tar.offset
    return archive[:end] + b"\0" * END_OF_ARCHIVE


_CLASS: type | None = None


def lab_container_class() -> type:
    """testcontainers' ``DockerContainer`` with trimmed tars for its file transfers."""
    global _CLASS
    if _CLASS is None:
        from testcontainers.core.container import DockerContainer
        from testcontainers.core.transferable import build_transfer_tar

        class LabContainer(DockerContainer):
            def _transfer_into_container(self, transferable: Any, destination_in_container: str,
                                         mode: int) -> None:
                data = trimmed(build_transfer_tar(transferable, destination_in_container, mode))
                if self._container is None or not self._container.put_archive(path="/",
                                                                              data=data):
                    raise OSError(f"Failed to put archive into container at "
                                  f"{destination_in_container}")

        _CLASS = LabContainer
    return _CLASS


def new_container(*args: Any, **kwargs: Any) -> DockerContainer:
    """A testcontainers ``DockerContainer`` whose file transfers send trimmed tars."""
    made: DockerContainer = lab_container_class()(*args, **kwargs)
    return made
