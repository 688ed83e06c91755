"""Finding the real programs the lab drives, and saying how to get the missing ones.

Programs are looked up in, in order: directories in ``$LAB_BIN_PATH`` (colon-separated: where a
user keeps proxysql, mongod or unpacked server tarballs), the project's ``.tools/bin`` (built by
``make bootstrap``), ``$PATH``, then ``/usr/sbin`` and ``/usr/bin``. A component that is missing
is never replaced by another: the lab stops before starting anything and says how to get it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
GALERA_PROVIDERS = (
    "/usr/lib/galera/libgalera_smm.so",
    "/usr/lib/libgalera_smm.so",
    "/usr/lib64/galera-4/libgalera_smm.so",
    "/usr/lib64/galera/libgalera_smm.so",
)


class MissingComponent(RuntimeError):
    """A program the experiment needs is not installed. The message says how to get it."""

    def __init__(self, component: str, how: str) -> None:
        super().__init__(f"{component} is not installed: {how}")
        self.component = component
        self.how = how


@dataclass(frozen=True)
class ComponentSpec:
    name: str
    binaries: tuple[str, ...]
    version_args: tuple[str, ...]
    how_to_get: str
    needed_by_default: bool
    purpose: str
    exercised_here: bool = True  # False: supported, but never run against the real binary here


SPECS: tuple[ComponentSpec, ...] = (
    ComponentSpec("mariadbd", ("mariadbd", "mysqld"), ("--version",),
                  "apt-get install -y mariadb-server (or `make bootstrap`)", True,
                  "database server for every MySQL-family topology"),
    ComponentSpec("galera", (), (), "apt-get install -y galera-4 (or `make bootstrap`)", True,
                  "Galera provider for `topology galera`"),
    ComponentSpec("haproxy", ("haproxy",), ("-v",),
                  "apt-get install -y haproxy (or `make bootstrap`)", True, "router haproxy"),
    ComponentSpec("toxiproxy", ("toxiproxy-server",), ("-version",),
                  "`make bootstrap` builds toxiproxy v2.12.0 into .tools/bin", True,
                  "network faults: latency, bandwidth, partition, link down"),
    ComponentSpec("dbdeployer", ("dbdeployer",), ("--version",),
                  "`make bootstrap` builds dbdeployer v1.73.0 into .tools/bin", True,
                  "replication and single sandboxes"),
    ComponentSpec("sysbench", ("sysbench",), ("--version",),
                  "apt-get install -y sysbench (or `make bootstrap`)", True,
                  "workload sysbench (steady load)"),
    ComponentSpec("percona-toolkit", ("pt-heartbeat",), ("--version",),
                  "apt-get install -y percona-toolkit (or `make bootstrap`)", False,
                  "optional helpers (pt-heartbeat, pt-table-checksum)"),
    ComponentSpec("rsync", ("rsync",), ("--version",),
                  "apt-get install -y rsync (or `make bootstrap`)", True,
                  "Galera state transfer"),
    ComponentSpec("socat", ("socat",), ("-V",),
                  "apt-get install -y socat (or `make bootstrap`)", False,
                  "talking to haproxy's admin socket by hand"),
    ComponentSpec("iptables", ("iptables",), ("--version",),
                  "apt-get install -y iptables (or `make bootstrap`)", False,
                  "partitioning Galera group traffic (needs root)"),
    ComponentSpec("proxysql", ("proxysql",), ("--version",),
                  "no package registry here ships it: install ProxySQL 2.x from proxysql.com "
                  "and put its directory in LAB_BIN_PATH", False, "router proxysql",
                  exercised_here=False),
    ComponentSpec("mongod", ("mongod",), ("--version",),
                  "no package registry here ships it: install Percona Server for MongoDB or "
                  "MongoDB and put its bin directory in LAB_BIN_PATH", False,
                  "topology mongodb_replset", exercised_here=False),
)
SPEC_BY_NAME = {s.name: s for s in SPECS}


def search_dirs() -> list[Path]:
    dirs: list[Path] = []
    for d in os.environ.get("LAB_BIN_PATH", "").split(os.pathsep):
        if d:
            dirs.append(Path(d).expanduser())
    dirs.append(Path(os.environ.get("LAB_TOOLS", str(PROJECT_ROOT / ".tools" / "bin"))))
    for d in os.environ.get("PATH", "").split(os.pathsep):
        if d:
            dirs.append(Path(d))
    dirs += [Path("/usr/sbin"), Path("/usr/bin"), Path("/sbin")]
    return dirs


def which(binary: str) -> str | None:
    for d in search_dirs():
        p = d / binary
        if p.is_file() and os.access(p, os.X_OK):
            return str(p)
    return shutil.which(binary)


@dataclass(frozen=True)
class Found:
    name: str
    path: str | None
    version: str | None
    spec: ComponentSpec

    @property
    def ok(self) -> bool:
        return self.path is not None

    @property
    def status(self) -> str:
        if not self.ok:
            return "missing"
        if not self.spec.exercised_here:
            return "found (not exercised here)"
        return "ok"


def _version(path: str, args: tuple[str, ...]) -> str | None:
    try:
        out = subprocess.run([path, *args], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (out.stdout or "") + (out.stderr or "")
    m = re.search(r"\d+\.\d+(?:\.\d+)?(?:-[A-Za-z0-9.]+)?", text)
    return m.group(0) if m else (text.strip().splitlines() or [None])[0]


def galera_provider() -> str | None:
    env = os.environ.get("LAB_GALERA_PROVIDER")
    if env:
        return env if Path(env).is_file() else None
    for p in GALERA_PROVIDERS:
        if Path(p).is_file():
            return p
    return None


def _galera_version() -> str | None:
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "galera-4"],
                             capture_output=True, text=True, timeout=10)
    except OSError:
        return None
    return out.stdout.strip() or None


def find(name: str) -> Found:
    spec = SPEC_BY_NAME[name]
    if name == "galera":
        path = galera_provider()
        return Found(name, path, _galera_version() if path else None, spec)
    for b in spec.binaries:
        path = which(b)
        if path:
            version = _version(path, spec.version_args)
            if name == "toxiproxy":  # built from the module proxy: the version is in a stamp
                stamp = Path(path).parent / ".toxiproxy-version"
                if stamp.is_file():
                    version = stamp.read_text().strip().lstrip("v")
            return Found(name, path, version, spec)
    return Found(name, None, None, spec)


def require(name: str) -> str:
    """The path of a component, or MissingComponent saying how to get it."""
    f = find(name)
    if f.path is None:
        raise MissingComponent(name, f.spec.how_to_get)
    return f.path


def survey() -> list[Found]:
    return [find(s.name) for s in SPECS]
