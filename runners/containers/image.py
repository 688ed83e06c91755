"""The node image: Debian's MariaDB packages in a root file system made by ``mmdebstrap``.

No registry is needed: the root file system is built on this machine from its own apt sources
(``/etc/apt/sources.list`` and ``sources.list.d``; the lab never names a mirror) and handed to
the engine through its API (``images.import`` of the tar), so a remote engine needs no registry
either. The image is tagged by a hash of its inputs (the package list, the entrypoint, the
build hook, this module's build options): a second run, or another run at the same time, uses
the one already there. ``lab image build`` builds it ahead of time; ``lab doctor`` shows it.

Inside: mariadb-server, -client, -backup, galera-4, haproxy, iptables, iproute2, procps, rsync,
socat, libfaketime (``clock skew``); a data directory made ahead (``mariadb-install-db`` with
the lab's 48 MB redo log) so a node answers about half a second after its container starts;
``/usr/local/bin/lab-entrypoint SERVER_ID [MARIADBD ARGS...]`` (``assets/entrypoint.sh``).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runners.errors import ComponentError

log = logging.getLogger(__name__)

ASSETS = Path(__file__).with_name("assets")
ENTRYPOINT = ASSETS / "entrypoint.sh"
HOOK = ASSETS / "rootfs-hook.sh"
REPOSITORY = "rcl-node"
PACKAGES = (
    "mariadb-server", "mariadb-client", "mariadb-backup", "galera-4", "haproxy", "iptables",
    "iproute2", "procps", "rsync", "socat", "ca-certificates", "netcat-openbsd", "libfaketime",
)
# Left out of the image: documentation and translations (about 60 MB).
DPKG_EXCLUDES = (
    "path-exclude=/usr/share/man/*", "path-exclude=/usr/share/doc/*",
    "path-exclude=/usr/share/info/*", "path-exclude=/usr/share/locale/*",
    "path-include=/usr/share/locale/locale.alias",
)
BUILD_OPTIONS = ("--variant=apt", "--mode=root", "--format=tar")
SOURCES_LIST = Path("/etc/apt/sources.list")
SOURCES_DIR = Path("/etc/apt/sources.list.d")
BUILD_TIMEOUT = 1800


def inputs_hash() -> str:
    h = hashlib.sha256()
    for part in (" ".join(PACKAGES), " ".join(DPKG_EXCLUDES), " ".join(BUILD_OPTIONS),
                 ENTRYPOINT.read_text(), HOOK.read_text()):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:12]


def image_tag() -> str:
    """``rcl-node:<hash of the inputs>``: a change to any input is a new image."""
    return f"{REPOSITORY}:{inputs_hash()}"


# --- the machine's apt sources ----------------------------------------------------------------

def source_files(sources_list: Path = SOURCES_LIST, sources_dir: Path = SOURCES_DIR
                 ) -> list[Path]:
    """The apt source files in force on this machine (``.list`` and deb822 ``.sources``)."""
    files: list[Path] = []
    if sources_list.is_file() and _one_line_entries(sources_list.read_text()):
        files.append(sources_list)
    if sources_dir.is_dir():
        for p in sorted(sources_dir.iterdir()):
            if p.suffix in (".list", ".sources") and p.is_file():
                files.append(p)
    return files


def _one_line_entries(text: str) -> list[list[str]]:
    """``deb [opts] URI SUITE COMPONENTS...`` lines, split (options dropped)."""
    out = []
    for line in text.splitlines():
        line = re.sub(r"\[[^]]*\]", " ", line.split("#", 1)[0]).strip()
        parts = line.split()
        if len(parts) >= 3 and parts[0] == "deb":
            out.append(parts)
    return out


def suite_of(files: list[Path]) -> str:
    """The distribution of the first ``deb`` source (``bookworm``): the image's suite.
    ``LAB_IMAGE_SUITE`` overrides it."""
    env = os.environ.get("LAB_IMAGE_SUITE")
    if env:
        return env
    for p in files:
        text = p.read_text()
        if p.suffix == ".sources":
            for stanza in re.split(r"\n\s*\n", text):
                fields = dict(_deb822_fields(stanza))
                enabled = fields.get("enabled", "yes").lower() != "no"
                if enabled and "deb" in fields.get("types", "").split() and fields.get("suites"):
                    return fields["suites"].split()[0]
        else:
            for parts in _one_line_entries(text):
                return parts[2]
    raise ComponentError("node image", "no Debian apt source on this machine "
                         "(/etc/apt/sources.list or sources.list.d): mmdebstrap needs one; "
                         "set LAB_IMAGE_SUITE and add a source")


def _deb822_fields(stanza: str) -> Iterator[tuple[str, str]]:
    for line in stanza.splitlines():
        if line.startswith("#") or ":" not in line or line[:1].isspace():
            continue
        k, v = line.split(":", 1)
        yield k.strip().lower(), v.strip()


# --- building ---------------------------------------------------------------------------------

@dataclass
class ImageStatus:
    tag: str
    present: bool
    size: int | None = None  # bytes
    created: str | None = None


def status(client: Any, tag: str | None = None) -> ImageStatus:
    tag = tag or image_tag()
    img = find_image(client, tag)
    if img is None:
        return ImageStatus(tag, False)
    return ImageStatus(tag, True, int(img.attrs.get("Size") or 0) or None,
                       img.attrs.get("Created"))


def find_image(client: Any, tag: str) -> Any | None:
    import docker.errors

    # podman's compatible API keeps an imported image as docker.io/library/NAME
    for name in (tag, f"localhost/{tag}", f"docker.io/library/{tag}"):
        with contextlib.suppress(docker.errors.ImageNotFound, docker.errors.NotFound):
            return client.images.get(name)
    return None


def user_image(client: Any, ref: str) -> str:
    """An image the experiment names (``image "mariadb:11.4"``): the engine's own copy, else
    pulled by the engine from its registry. Returns the name the engine knows it by."""
    from docker.utils import parse_repository_tag

    found = find_image(client, ref)
    if found is not None:
        return str(found.tags[0]) if found.tags else ref
    t0 = time.monotonic()
    said: list[str] = []  # what the engine said while pulling (its errors are in the stream)
    try:
        repo, tag = parse_repository_tag(ref)
        for event in client.api.pull(repo, tag=tag, stream=True, decode=True):
            if isinstance(event, dict) and event.get("error"):
                said.append(str(event["error"]))
    except Exception as e:  # noqa: BLE001 - any failure: the image is not to be had
        said.append(str(e))
    found = find_image(client, ref)
    if found is None:
        why = said[-1] if said else "the engine answered, but holds no such image after it"
        raise ComponentError(f"image {ref}", "not on the container engine, and the engine "
                             f"could not pull it ({time.monotonic() - t0:.1f} s): "
                             f"{why[:300]}")
    return str(found.tags[0]) if found.tags else ref


@contextlib.contextmanager
def _build_lock(state_dir: Path) -> Iterator[None]:
    """One build at a time on this machine (two runs that both miss the image wait for the
    first one's)."""
    state_dir.mkdir(parents=True, exist_ok=True)
    with open(state_dir / "image-build.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def ensure(client: Any, state_dir: Path, log_path: Path | None = None) -> tuple[str, float]:
    """The node image on the engine: the one there (cached) or built now. Returns its tag and
    the seconds spent building (0 when cached)."""
    tag = image_tag()
    if find_image(client, tag) is not None:
        return tag, 0.0
    with _build_lock(state_dir):
        if find_image(client, tag) is not None:
            return tag, 0.0
        t0 = time.monotonic()
        build(client, tag, state_dir, log_path)
        return tag, time.monotonic() - t0


def mmdebstrap_command(target: Path, suite: str, files: list[Path]) -> list[str]:
    exe = shutil.which("mmdebstrap")
    if exe is None:
        raise ComponentError("mmdebstrap", "not installed: Debian's mmdebstrap package builds "
                             "the lab's node image (`make bootstrap`)")
    cmd = [exe, *BUILD_OPTIONS, f"--include={','.join(PACKAGES)}"]
    cmd += [f"--dpkgopt={o}" for o in DPKG_EXCLUDES]
    cmd += [f"--customize-hook=upload {ENTRYPOINT} /usr/local/bin/lab-entrypoint",
            '--customize-hook=chmod 755 "$1"/usr/local/bin/lab-entrypoint',
            f'--customize-hook=sh {HOOK} "$1"']
    return [*cmd, suite, str(target), *(str(f) for f in files)]


def build(client: Any, tag: str, state_dir: Path, log_path: Path | None = None) -> None:
    """Build the root file system with mmdebstrap and import it into the engine as ``tag``."""
    files = source_files()
    suite = suite_of(files)
    log_path = log_path or state_dir / "image-build.log"
    with tempfile.TemporaryDirectory(dir=state_dir, prefix="image-") as tmp:
        rootfs = Path(tmp) / "rootfs.tar"
        cmd = mmdebstrap_command(rootfs, suite, files)
        with open(log_path, "ab") as out:
            out.write(("$ " + " ".join(cmd) + "\n").encode())
            out.flush()
            proc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, timeout=BUILD_TIMEOUT)
        if proc.returncode != 0:
            raise ComponentError("node image", f"mmdebstrap failed ({proc.returncode})",
                                 log_path)
        import_rootfs(client, rootfs, tag)


def import_rootfs(client: Any, rootfs: Path, tag: str) -> None:
    """``images.import`` of the root file system tar, with the image's entrypoint and labels:
    through the API, so the engine may be anywhere."""
    repo, _, version = tag.partition(":")
    changes = [
        'ENTRYPOINT ["/usr/local/bin/lab-entrypoint"]',
        "EXPOSE 3306",
        f"LABEL lab.image.inputs={version}",
        'LABEL lab.image="replica-chaos-lab node (MariaDB, Galera, HAProxy)"',
    ]
    with open(rootfs, "rb") as f:
        answer = client.api.import_image_from_data(f, repository=tag, changes=changes)
    image_id = imported_id(str(answer))
    if image_id is not None:  # podman names it NAME:latest whatever the tag: tag it here
        client.images.get(image_id).tag(repo, version)
    if find_image(client, tag) is None:
        raise ComponentError("node image", f"the engine did not keep {tag} after the import "
                             f"(it answered: {str(answer)[:300]})")


def imported_id(answer: str) -> str | None:
    """The image id in an import's answer (JSON lines: ``{"status": "sha256:..."}``)."""
    import json

    for line in answer.splitlines():
        with contextlib.suppress(ValueError):
            doc = json.loads(line)
            for key in ("id", "status"):
                value = str(doc.get(key) or "")
                if value.startswith("sha256:"):
                    return value
    return None
