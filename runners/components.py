"""Finding the real programs the lab drives, and saying how to get the missing ones: from the
package manager found on the machine when it has them, and where their vendors ship them.

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


class NeedsRoot(MissingComponent):
    """An action of the experiment needs root and the lab does not run as root. Raised before
    any server starts (``runners.topology.check_components``); the reason is the action
    table's (``dsl.actions``), the same words ``lab check`` notes."""

    def __init__(self, what: str, reason: str) -> None:
        RuntimeError.__init__(self, f"{what} needs root: {reason} (run the experiment as root, "
                                    "or leave the action out)")
        self.component = what
        self.how = reason


class NeedsCgroupV2(MissingComponent):
    """A Galera group partition on a machine without a cgroup v2 hierarchy (its rule tells
    the connections a node opened itself by the server's cgroup v2 group). Raised before any
    server starts (``runners.topology.check_network_groups``)."""

    def __init__(self, what: str, how: str) -> None:
        RuntimeError.__init__(self, f"{what} needs a cgroup v2 hierarchy, which is not "
                                    f"mounted: {how}")
        self.component = what
        self.how = how


@dataclass(frozen=True)
class ComponentSpec:
    name: str
    binaries: tuple[str, ...]
    version_args: tuple[str, ...]
    vendor: str  # where its makers ship it (one line)
    needed_by_default: bool
    purpose: str
    packages: tuple[tuple[str, str], ...] = ()  # (package manager, package name)

    @property
    def how_to_get(self) -> str:
        """One line: the package for the package manager found on this machine, if there is
        one, and where the vendor ships it."""
        manager = package_manager()
        pkg = dict(self.packages).get(manager[0]) if manager else None
        if manager and pkg:
            return f"{manager[1]} {pkg} ({self.vendor})"
        return self.vendor


# Package managers the lab knows how to name a package for: (program, install command).
PACKAGE_MANAGERS = (("apt-get", "apt-get install -y"), ("dnf", "dnf install -y"),
                    ("yum", "yum install -y"), ("zypper", "zypper install -y"),
                    ("brew", "brew install"))


def package_manager() -> tuple[str, str] | None:
    for program, install in PACKAGE_MANAGERS:
        if shutil.which(program):
            return program, install
    return None


def _same(name: str) -> tuple[tuple[str, str], ...]:
    """The same package name for every package manager."""
    return tuple((m, name) for m, _ in PACKAGE_MANAGERS)


SPECS: tuple[ComponentSpec, ...] = (
    ComponentSpec("mariadbd", ("mariadbd", "mysqld"), ("--version",),
                  "MariaDB's packages: mariadb.org/download; Debian: `make bootstrap`", True,
                  "database server for every MySQL-family topology",
                  (("apt-get", "mariadb-server"), ("dnf", "mariadb-server"),
                   ("yum", "mariadb-server"), ("zypper", "mariadb"), ("brew", "mariadb"))),
    ComponentSpec("galera", (), (),
                  "Galera 4 from MariaDB's packages (mariadb.org/download), or set "
                  "LAB_GALERA_PROVIDER to its libgalera_smm.so", True,
                  "Galera provider for `topology galera`",
                  tuple((m, "galera-4") for m, _ in PACKAGE_MANAGERS if m != "brew")),
    ComponentSpec("haproxy", ("haproxy",), ("-v",), "HAProxy's packages: haproxy.org", True,
                  "router haproxy", _same("haproxy")),
    ComponentSpec("toxiproxy", ("toxiproxy-server",), ("-version",),
                  "`make bootstrap` builds toxiproxy v2.12.0 into .tools/bin, or put a release "
                  "of github.com/Shopify/toxiproxy in LAB_BIN_PATH", True,
                  "network faults: latency, bandwidth, partition, link down"),
    ComponentSpec("dbdeployer", ("dbdeployer",), ("--version",),
                  "`make bootstrap` builds dbdeployer v1.73.0 into .tools/bin, or put a release "
                  "of github.com/datacharmer/dbdeployer in LAB_BIN_PATH", True,
                  "replication and single sandboxes"),
    ComponentSpec("sysbench", ("sysbench",), ("--version",),
                  "sysbench's packages: github.com/akopytov/sysbench", True,
                  "workload sysbench (steady load)",
                  _same("sysbench")),
    ComponentSpec("percona-toolkit", ("pt-heartbeat",), ("--version",),
                  "Percona's packages: percona.com/downloads", False,
                  "optional helpers (pt-heartbeat, pt-table-checksum)",
                  _same("percona-toolkit")),
    ComponentSpec("rsync", ("rsync",), ("--version",), "the system's rsync package", True,
                  "Galera state transfer", _same("rsync")),
    ComponentSpec("socat", ("socat",), ("-V",), "the system's socat package", False,
                  "talking to haproxy's admin socket by hand",
                  _same("socat")),
    ComponentSpec("iptables", ("iptables",), ("--version",), "the system's iptables package",
                  False, "partitioning Galera group traffic (needs root)",
                  tuple((m, "iptables") for m, _ in PACKAGE_MANAGERS if m != "brew")),
    ComponentSpec("faketime", ("faketime",), ("--version",), "Debian's faketime package "
                  "(libfaketime; `make bootstrap`), or set LAB_LIBFAKETIME to libfaketime.so.1",
                  False, "clock skew (libfaketime preloaded into a node's server)",
                  _same("faketime")),
    ComponentSpec("podman", ("podman",), ("--version",),
                  "Debian's podman and runc packages (`make bootstrap`), or set DOCKER_HOST to "
                  "a Docker engine", False,
                  "backend containers: the lab's private container engine (unless DOCKER_HOST)",
                  tuple((m, "podman") for m, _ in PACKAGE_MANAGERS if m != "brew")),
    ComponentSpec("runc", ("runc",), ("--version",), "the system's runc package", False,
                  "backend containers: the container runtime podman is given",
                  tuple((m, "runc") for m, _ in PACKAGE_MANAGERS if m != "brew")),
    ComponentSpec("mmdebstrap", ("mmdebstrap",), ("--version",),
                  "Debian's mmdebstrap package (`make bootstrap`)", False,
                  "backend containers: builds the node image from the apt sources",
                  (("apt-get", "mmdebstrap"),)),
    ComponentSpec("lab-iofs", ("lab-iofs",), ("--version",),
                  "`make bootstrap` compiles runners/iofs/lab_iofs.c into .tools/bin/lab-iofs "
                  "(it needs libfuse3: apt-get install -y fuse3 libfuse3-dev)", False,
                  "io delay, io fail (a FUSE filesystem under a node's data directory)"),
    ComponentSpec("proxysql", ("proxysql",), ("--version",),
                  "ProxySQL 2.x from ProxySQL's packages (repo.proxysql.com, or releases at "
                  "github.com/sysown/proxysql); put its directory in LAB_BIN_PATH if it is not "
                  "on PATH", False, "router proxysql"),
    ComponentSpec("mongod", ("mongod",), ("--version",),
                  "MongoDB's packages (mongodb.com/try/download) or Percona Server for MongoDB "
                  "(percona.com/downloads); put its bin directory in LAB_BIN_PATH if it is not "
                  "on PATH", False, "topology mongodb_replset"),
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
        try:
            if p.is_file() and os.access(p, os.X_OK):
                return str(p)
        except OSError:  # a directory on PATH this user may not enter (/root/go/bin)
            continue
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
        return "ok" if self.ok else "missing"


def _version(path: str, args: tuple[str, ...]) -> str | None:
    try:
        out = subprocess.run([path, *args], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (out.stdout or "") + (out.stderr or "")
    m = re.search(r"\d+\.\d+(?:\.\d+)?(?:-[A-Za-z0-9.]+)?", text)
    if m:
        return m.group(0)
    lines = text.strip().splitlines()
    return lines[0] if lines else None


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
    """The path of a component, or MissingComponent saying how to get it. Its version is not
    asked (``find`` runs the binary for it, ``lab doctor``'s): a deploy calls this several
    times per node."""
    spec = SPEC_BY_NAME[name]
    if name == "galera":
        path = galera_provider()
    else:
        path = next((p for p in map(which, spec.binaries) if p), None)
    if path is None:
        raise MissingComponent(name, spec.how_to_get)
    return path


def is_root() -> bool:
    """The lab runs as root (a few faults need it: ``dsl.actions.root_faults``)."""
    return os.geteuid() == 0


def survey() -> list[Found]:
    return [find(s.name) for s in SPECS]
