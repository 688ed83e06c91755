"""Initialised data directories kept as templates in the lab's cache.

Initialising a server's data directory (``mariadb-install-db``, dbdeployer's ``init_db``) is
the same work for every node of every run with the same server and the same settings that
reach the initialisation. The lab does it once per ``TemplateKey`` and gives each node a copy
(``cp --reflink=auto``: a reflink where the filesystem has them, a sparse copy elsewhere).

Where: ``$LAB_HOME/templates/<key digest>/`` (``LAB_HOME`` defaults to
``~/.local/share/replica-chaos-lab``), one directory per key holding ``data/`` (the files),
``manifest.json`` (the key, and each file's size, mode, allocation and digest) and
``COMPLETE`` (the digest of the manifest). ``LAB_TEMPLATES=off`` initialises every node
again, as before templates (to compare, or to rule templates out).

Never used unless whole: an entry is built in a temporary directory, every file and directory
fsynced, ``COMPLETE`` written last, then renamed into place (atomic). Before each use the
manifest is checked against the files (sizes, modes, the digest of every file's data regions:
a truncated, edited, missing or extra file, a missing marker or a marker that does not match
the manifest all fail); a failing entry is moved aside and rebuilt. Two runs building the same
entry at once take turns on a lock file (``<digest>.lock``, ``fcntl.flock``): the second finds
the first's entry and uses it.

Never holds a run's credentials: a template is the initialisation's output only; the lab's
users and their per-run passwords are made on the running servers after the copy. Files that
identify one server (MySQL's ``auto.cnf`` server UUID, its generated TLS keys ``*.pem``) are
left out: the server makes its own at first start. A build whose files name the build
directory (an absolute path baked into a file) is refused: the copy would point elsewhere.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

FORMAT = 1  # of an entry's layout and manifest: a new format never reads an old entry
MARKER = "COMPLETE"
MANIFEST = "manifest.json"
DATA = "data"
# files that identify one server, never shared between nodes or runs (the server makes them)
LEFT_OUT = ("auto.cnf",)
LEFT_OUT_SUFFIXES = (".pem",)
_SCAN_LIMIT = 1 << 20  # files up to this size are searched for the build directory's path


class TemplateError(Exception):
    """A template could not be built or copied."""


def enabled() -> bool:
    """Templates are used unless ``LAB_TEMPLATES`` says off (0, off, no, false)."""
    return os.environ.get("LAB_TEMPLATES", "on").strip().lower() not in ("0", "off", "no",
                                                                         "false")


def cache_root() -> Path:
    home = os.environ.get("LAB_HOME") or str(Path.home() / ".local/share/replica-chaos-lab")
    return Path(home) / "templates"


def file_identity(path: str | Path) -> str:
    """What identifies an installed file: its real path, size and modification time (a
    package upgrade or a rebuilt binary changes one of them)."""
    real = os.path.realpath(path)
    st = os.stat(real)
    return f"{real}:{st.st_size}:{st.st_mtime_ns}"


@dataclass(frozen=True)
class TemplateKey:
    """Everything that changes the initialised files: ``kind`` names the initialisation
    (``dbdeployer``, ``mariadb-install-db``), ``fields`` the binaries' identities, the
    options the initialisation reads, the OS user that owns the files."""

    kind: str
    fields: Mapping[str, str] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {"format": FORMAT, "kind": self.kind, "fields": dict(sorted(self.fields.items()))}

    @property
    def digest(self) -> str:
        text = json.dumps(self.as_json(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:32]


@dataclass(frozen=True)
class Template:
    """A verified entry: ``data`` is the directory to copy."""

    path: Path
    manifest: dict[str, Any]

    @property
    def data(self) -> Path:
        return self.path / DATA

    def preallocated(self) -> list[tuple[str, int]]:
        """(relative path, size) of the files the initialisation had allocated in full: their
        copies get the same allocation (``fallocate``), as the server's own files had."""
        return [(f["path"], f["size"]) for f in self.manifest["files"]
                if f["type"] == "file" and f.get("allocated")]


# --- digests -------------------------------------------------------------------------------------
def data_digest(path: Path) -> str:
    """sha256 of a file's data regions with their offsets (holes read as nothing: a sparse
    template's digest costs what its data does, not its apparent size)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        fd = f.fileno()
        size = os.fstat(fd).st_size
        h.update(size.to_bytes(8, "little"))
        pos = 0
        while pos < size:
            try:
                start = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError:  # no data after pos (ENXIO)
                break
            end = os.lseek(fd, start, os.SEEK_HOLE)
            h.update(start.to_bytes(8, "little"))
            f.seek(start)
            left = end - start
            while left > 0:
                chunk = f.read(min(left, 1 << 20))
                if not chunk:
                    break
                h.update(chunk)
                left -= len(chunk)
            pos = end
    return h.hexdigest()


def _walk(root: Path) -> Iterator[tuple[str, Path]]:
    """(relative path, path) of everything under ``root``, sorted, directories first."""
    for dirpath, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(dirs) + sorted(files):
            p = Path(dirpath) / name
            yield str(p.relative_to(root)), p


def describe(root: Path, allocated: Mapping[str, bool] | None = None) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for rel, p in _walk(root):
        st = p.lstat()
        if p.is_symlink():
            out.append({"path": rel, "type": "symlink", "target": os.readlink(p)})
        elif p.is_dir():
            out.append({"path": rel, "type": "dir", "mode": st.st_mode & 0o7777})
        else:
            out.append({"path": rel, "type": "file", "mode": st.st_mode & 0o7777,
                        "size": st.st_size, "digest": data_digest(p),
                        "allocated": bool((allocated or {}).get(rel))})
    return out


def _marker_text(manifest_bytes: bytes) -> str:
    return hashlib.sha256(manifest_bytes).hexdigest() + "\n"


_verified: dict[Path, tuple[tuple[Any, ...], ...]] = {}  # entry -> its files' stat, once whole


def _stat_signature(entry: Path) -> tuple[tuple[Any, ...], ...]:
    out = []
    for rel, p in [(MARKER, entry / MARKER), (MANIFEST, entry / MANIFEST), *_walk(entry / DATA)]:
        st = p.lstat()
        out.append((rel, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode))
    return tuple(out)


def problem(entry: Path, recheck: bool = False) -> str | None:
    """Why the entry at ``entry`` must not be used (None: it is whole). Once an entry was
    found whole in this process, its files are read again only when one of them changed
    (inode, size, modification or change time, mode) or ``recheck`` asks."""
    try:
        signature = _stat_signature(entry)
    except OSError:
        signature = ()
    if not recheck and signature and _verified.get(entry) == signature:
        return None
    why = _problem(entry)
    if why is None and signature:
        _verified[entry] = signature
    else:
        _verified.pop(entry, None)
    return why


def _problem(entry: Path) -> str | None:
    marker, manifest_path = entry / MARKER, entry / MANIFEST
    if not marker.is_file():
        return f"no {MARKER} marker (a build that did not finish)"
    try:
        raw = manifest_path.read_bytes()
        manifest = json.loads(raw)
    except (OSError, ValueError) as e:
        return f"unreadable {MANIFEST}: {e}"
    if marker.read_text() != _marker_text(raw):
        return f"{MARKER} does not match {MANIFEST}"
    if manifest.get("format") != FORMAT:
        return f"format {manifest.get('format')!r}, this lab reads {FORMAT}"
    data = entry / DATA
    if not data.is_dir():
        return f"no {DATA} directory"
    want = {f["path"]: f for f in manifest.get("files", [])}
    have = {rel: p for rel, p in _walk(data)}
    if set(have) - set(want):
        return f"files not in the manifest: {sorted(set(have) - set(want))[:3]}"
    for rel, f in want.items():
        p = have.get(rel)
        if p is None:
            return f"{rel} is missing"
        try:
            st = p.lstat()
            if f["type"] == "symlink":
                if not p.is_symlink() or os.readlink(p) != f["target"]:
                    return f"{rel}: not the symlink the manifest says"
                continue
            if (st.st_mode & 0o7777) != f["mode"]:
                return f"{rel}: mode {st.st_mode & 0o7777:o}, the manifest says {f['mode']:o}"
            if f["type"] == "dir":
                if not p.is_dir():
                    return f"{rel}: not a directory"
                continue
            if st.st_size != f["size"]:
                return f"{rel}: {st.st_size} bytes, the manifest says {f['size']}"
            if data_digest(p) != f["digest"]:
                return f"{rel}: its content differs from the manifest's digest"
        except OSError as e:
            return f"{rel}: {e}"
    return None


# --- building -------------------------------------------------------------------------------------
def _fsync_tree(root: Path) -> None:
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            p = os.path.join(dirpath, name)
            if os.path.islink(p):
                continue
            fd = os.open(p, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        _fsync_dir(Path(dirpath))


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _left_out(name: str) -> bool:
    return name in LEFT_OUT or name.endswith(LEFT_OUT_SUFFIXES)


def _names_build_dir(root: Path, build_dir: Path) -> str | None:
    needle = str(build_dir).encode()
    for rel, p in _walk(root):
        if p.is_file() and not p.is_symlink() and p.stat().st_size <= _SCAN_LIMIT:
            if needle in p.read_bytes():
                return rel
        elif p.is_symlink() and str(build_dir) in os.readlink(p):
            return rel
    return None


def _store(raw: Path, dest: Path) -> dict[str, bool]:
    """Copy the initialised ``raw`` directory to ``dest`` sparsely (zero runs become holes),
    leaving out ``LEFT_OUT``; return which files the initialisation had allocated in full."""
    allocated: dict[str, bool] = {}
    for rel, p in _walk(raw):
        if _left_out(p.name) and not p.is_dir():
            continue
        if p.is_file() and not p.is_symlink():
            st = p.stat()
            allocated[rel] = st.st_size > 0 and st.st_blocks * 512 >= st.st_size
    subprocess.run(["cp", "-a", "--sparse=always", f"{raw}/.", str(dest)], check=True,
                   capture_output=True, text=True, timeout=300)
    for _rel, p in list(_walk(dest)):
        if _left_out(p.name) and not p.is_dir() and p.exists():
            p.unlink()
    return allocated


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _discard(entry: Path, why: str) -> None:
    log.warning("template %s not used (%s): rebuilt", entry, why)
    aside = entry.with_name(f".broken-{entry.name}-{os.getpid()}-{time.monotonic_ns()}")
    with contextlib.suppress(FileNotFoundError):
        entry.rename(aside)
    shutil.rmtree(aside, ignore_errors=True)


def ensure(key: TemplateKey, build: Callable[[Path], Path | None], root: Path | None = None
           ) -> Template:
    """The verified entry of ``key``; built first when missing, partial or corrupt.
    ``build(datadir)`` initialises a data directory at ``datadir`` (which exists, empty) or
    elsewhere, and returns the directory holding the files then (None: ``datadir``). Only a
    sparse copy of them enters the cache: the initialisation's preallocated files (a 96 MB
    redo log) never take their full size there."""
    root = root or cache_root()
    root.mkdir(parents=True, exist_ok=True)
    entry = root / key.digest
    if problem(entry) is None:
        return _load(entry)
    with _locked(root / f"{key.digest}.lock"):
        why = problem(entry)
        if why is None:  # another run built it while this one waited
            return _load(entry)
        if entry.exists():
            _discard(entry, why)
        tmp = Path(tempfile.mkdtemp(prefix=f".{key.digest}.", dir=root))
        try:
            raw = tmp / "raw"
            raw.mkdir()
            t0 = time.monotonic()
            source = build(raw) or raw
            baked = _names_build_dir(source, tmp) or _names_build_dir(source, source)
            if baked:
                raise TemplateError(f"the initialised file {baked} names its directory: "
                                    "a copy would point at the template")
            (tmp / DATA).mkdir()
            allocated = _store(source, tmp / DATA)
            shutil.rmtree(raw)
            manifest = {"format": FORMAT, "key": key.as_json(),
                        "built_seconds": round(time.monotonic() - t0, 3),
                        "files": describe(tmp / DATA, allocated)}
            raw_manifest = json.dumps(manifest, indent=1, sort_keys=True).encode()
            (tmp / MANIFEST).write_bytes(raw_manifest)
            _fsync_tree(tmp)
            (tmp / MARKER).write_text(_marker_text(raw_manifest))
            _fsync_tree(tmp)
            os.chmod(tmp, 0o755)
            tmp.rename(entry)
            _fsync_dir(root)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        log.info("template %s built in %.2fs", entry, time.monotonic() - t0)
    return _load(entry)


def _load(entry: Path) -> Template:
    return Template(entry, json.loads((entry / MANIFEST).read_bytes()))


# --- copying --------------------------------------------------------------------------------------
# The allocation of every preallocated file in one process (its arguments: the directory, then
# relative path and size pairs). One ``fallocate`` process per file cost a sandbox 0.25 s for
# MariaDB's 197 such files, paid by each node of a deploy; this costs one interpreter start.
PREALLOCATE = (
    "import os, sys\n"
    "d, a = sys.argv[1], sys.argv[2:]\n"
    "for i in range(0, len(a), 2):\n"
    "    fd = os.open(os.path.join(d, a[i]), os.O_RDWR)\n"
    "    try:\n"
    "        os.posix_fallocate(fd, 0, int(a[i + 1]))\n"
    "    finally:\n"
    "        os.close(fd)\n")


def copy_commands(template: Template, dest: str) -> list[list[str]]:
    """The argv lists that give ``dest`` (a directory, empty or absent) the template's files:
    a copy (a reflink where the filesystem has them, holes kept), then the allocation the
    initialisation had given its preallocated files (``posix_fallocate`` keeps their content),
    all of them in one process: this interpreter, isolated (``-I -S``)."""
    cmds = [["cp", "--reflink=auto", "-a", "--sparse=auto", f"{template.data}/.", dest]]
    pairs = [w for rel, size in template.preallocated() for w in (rel, str(size))]
    if pairs:
        if not sys.executable or not os.access(sys.executable, os.X_OK):
            raise TemplateError(f"no interpreter to allocate the copies with ({sys.executable!r})")
        cmds.append([sys.executable, "-I", "-S", "-c", PREALLOCATE, dest, *pairs])
    return cmds


def copy_into(template: Template, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    if any(dest.iterdir()):
        raise TemplateError(f"{dest} is not empty: a template is copied into an empty directory")
    subprocess.run(copy_commands(template, str(dest))[0], check=True, capture_output=True,
                   text=True, timeout=300)
    for rel, size in template.preallocated():
        fd = os.open(dest / rel, os.O_RDWR)
        try:
            os.posix_fallocate(fd, 0, size)
        finally:
            os.close(fd)


def clean(root: Path | None = None, keep: Callable[[Path], bool] | None = None) -> list[Path]:
    """Remove the cache's entries (all, or those ``keep`` rejects), unfinished builds and
    lock files no one holds; the paths removed."""
    root = root or cache_root()
    removed: list[Path] = []
    if not root.is_dir():
        return removed
    for p in sorted(root.iterdir()):
        if p.suffix == ".lock":
            continue
        if keep is not None and keep(p):
            continue
        lock = root / f"{p.name}.lock"
        if p.name.startswith("."):  # a build under way or one that died: only if unlocked
            digest = p.name.split(".")[1] if p.name.count(".") >= 2 else ""
            lock = root / f"{digest}.lock"
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # being built now
            shutil.rmtree(p, ignore_errors=True)
            removed.append(p)
            lock.unlink(missing_ok=True)
        finally:
            os.close(fd)
    return removed
