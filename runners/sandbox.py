"""Replication and single sandboxes through dbdeployer.

dbdeployer wants a "sandbox binary" directory holding unpacked server tarballs named by
version. For Debian's MariaDB the lab makes one out of symlinks (``debian_basedir``); users
with MySQL, Percona Server or MariaDB tarballs point ``LAB_SANDBOX_BINARY`` at their directory
and name the version in the experiment (``engine mysql 8.0.36``). dbdeployer's catalog lives
in the run's own HOME, never the user's.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import shlex
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from dsl.owned import normal_key
from dsl.plan import PlannedNode
from dsl.versions import mysql_unspoken, version_matches, version_numbers
from runners import templates
from runners.components import PROJECT_ROOT, require
from runners.errors import ComponentError
from runners.mysql import Credentials
from runners.node import SLEEP_TIME, START_POLLS, SandboxNode
from runners.runtime import Run

log = logging.getLogger(__name__)

DEBIAN_BIN_LINKS = ("mariadb", "mysql", "aria_", "myisam", "my_print_defaults", "resolveip",
                    "innochecksum", "perror", "replace", "msql2mysql")


def mariadb_version(mariadbd: str) -> str:
    return _mariadb_version(mariadbd, templates.file_identity(mariadbd))


@functools.lru_cache(maxsize=8)
def _mariadb_version(mariadbd: str, identity: str) -> str:
    out = subprocess.run([mariadbd, "--version"], capture_output=True, text=True, timeout=10)
    m = re.search(r"(\d+\.\d+\.\d+)", out.stdout)
    if not m:
        raise ComponentError("mariadbd", f"cannot read its version from {out.stdout!r}")
    return m.group(1)


def lab_home() -> Path:
    p = Path(os.environ.get("LAB_HOME") or Path.home() / ".local/share/replica-chaos-lab")
    p.mkdir(parents=True, exist_ok=True)
    return p


def debian_basedir() -> tuple[Path, str]:
    """A dbdeployer sandbox-binary directory of symlinks to Debian's MariaDB.
    Returns (sandbox_binary_dir, version). Idempotent and safe for concurrent runs."""
    mariadbd = require("mariadbd")
    version = mariadb_version(mariadbd)
    root = lab_home() / "sandbox-binary"
    base = root / version
    marker = base / ".complete"
    if marker.exists():
        return root, version
    tmp = root / f".{version}.{os.getpid()}"
    for sub in ("bin", "sbin", "scripts", "share", "lib/mysql"):
        (tmp / sub).mkdir(parents=True, exist_ok=True)
    for f in sorted(Path("/usr/bin").iterdir()):
        if f.name.startswith(DEBIAN_BIN_LINKS):
            (tmp / "bin" / f.name).symlink_to(f)
    for link in ("bin/mysqld", "bin/mariadbd", "sbin/mariadbd"):
        (tmp / link).symlink_to(mariadbd)
    (tmp / "scripts/mysql_install_db").symlink_to("/usr/bin/mariadb-install-db")
    (tmp / "share/mysql").symlink_to("/usr/share/mysql")
    (tmp / "lib/mysql/plugin").symlink_to("/usr/lib/mysql/plugin")
    for cand in ("/usr/lib/x86_64-linux-gnu/libmariadb.so.3",
                 "/usr/lib/aarch64-linux-gnu/libmariadb.so.3"):
        if Path(cand).exists():
            (tmp / "lib/libmariadbclient.so").symlink_to(cand)
            break
    (tmp / ".complete").write_text("made by replica-chaos-lab\n")
    try:
        tmp.rename(base)
    except OSError:  # another run made it first
        subprocess.run(["rm", "-rf", str(tmp)], check=False)
    return root, version


# What dbdeployer itself writes into every node's my.sandbox.cnf (its single/my_cnf and
# replication_options templates, with the options the lab passes: --socket-in-datadir,
# --bind-address, --skip-report-host). The plan holds the same values (dsl.compile.lab_config;
# a unit test compares them with ``dbdeployer_settings``): the lab does not pass them again.
DBDEPLOYER_WRITES = frozenset({"server_id", "port", "bind_address", "datadir", "tmpdir",
                               "socket", "pid_file", "log_error", "report_port", "relay_log",
                               "relay_log_index"})
# Settings applied only once dbdeployer has made its users (its grant script connects to
# 'localhost', which skip_name_resolve breaks): appended to my.sandbox.cnf, node restarted.
AFTER_GRANTS = frozenset({"skip_name_resolve"})


def dbdeployer_server_id(kind: str, index: int) -> int:
    """dbdeployer's server id for node ``index`` (1 = primary): ``setServerId`` with
    --base-server-id 0 gives 100, 200, ...; a single sandbox gets what --server-id says,
    and the lab passes the same numbering."""
    return 100 * index


def dbdeployer_settings(kind: str, base_port: int, index: int) -> dict[str, str]:
    """The settings dbdeployer writes for node ``index``, with paths relative to the
    sandbox directory."""
    port = base_port + index
    out = {"server_id": str(dbdeployer_server_id(kind, index)), "port": str(port),
           "bind_address": "127.0.0.1", "datadir": "data", "tmpdir": "tmp",
           "socket": f"data/mysql_sandbox{port}.sock",
           "pid_file": f"data/mysql_sandbox{port}.pid", "log_error": "data/msandbox.err",
           "report_port": str(port)}
    if kind == "replication":
        out.update({"log_bin": "mysql-bin", "relay_log": "mysql-relay",
                    "relay_log_index": "mysql-relay"})
    return out


def split_config(configs: dict[str, dict[str, str]], order: list[str]
                 ) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """The plan's node configs -> (settings passed to dbdeployer with -c, because every node
    has them; per-node settings appended to that node's my.sandbox.cnf after deploy). What
    dbdeployer writes itself is left out; AFTER_GRANTS settings are always per node."""
    own = {name: {k: v for k, v in cfg.items() if normal_key(k) not in DBDEPLOYER_WRITES}
           for name, cfg in configs.items()}
    first = own[order[0]]
    common = {k: v for k, v in first.items() if normal_key(k) not in AFTER_GRANTS
              and all(own[n].get(k) == v for n in order)}
    per_node = {n: {k: v for k, v in own[n].items() if common.get(k) != v} for n in order}
    return common, per_node


@dataclass
class SandboxRequest:
    kind: str  # "replication" or "single"
    replicas: int  # replication: number of replicas
    base_port: int  # dbdeployer gives base+1 (primary), base+2, ...
    common_config: dict[str, str]
    semi_sync: bool
    admin: Credentials
    repl: Credentials
    post_grants: list[str]


def unpacked_flavor(basedir: Path) -> str | None:
    """The flavor of an unpacked tarball: dbdeployer's ``FLAVOR`` file; without one, MariaDB
    by its files (``bin/mariadb``, ``bin/aria_chk``), else None (MySQL or Percona Server:
    the running server says which)."""
    marker = basedir / "FLAVOR"
    if marker.is_file():
        return marker.read_text().strip() or None
    if any((basedir / "bin" / f).exists() for f in ("mariadb", "mariadbd", "aria_chk")):
        return "mariadb"
    return None


def unpacked(root: Path, flavor: str, version: str | None) -> list[str]:
    """The versions unpacked under ``root`` (dbdeployer's sandbox-binary: one directory per
    version, with the ``FLAVOR`` file ``dbdeployer unpack`` writes) of ``flavor`` that begin
    with ``version`` (``8.0`` matches ``8.0.36``), newest first."""
    found: list[tuple[tuple[int, ...], str]] = []
    for d in root.iterdir() if root.is_dir() else []:
        numbers = version_numbers(d.name)
        if not d.is_dir() or not numbers:
            continue
        if unpacked_flavor(d) not in (flavor, None):
            continue
        if version and not version_matches(version, d.name):
            continue
        if flavor != "mariadb" and mysql_unspoken(d.name):
            continue  # the lab refuses it (server_identity): never pick it over an 8.0
        found.append((numbers, d.name))
    return [name for _, name in sorted(found, reverse=True)]


def sandbox_binary(engine_flavor: str, version: str | None) -> tuple[Path, str]:
    """(sandbox-binary directory, version) for ``engine FLAVOR [VERSION]``: under
    ``LAB_SANDBOX_BINARY`` the newest unpacked version of the flavor that begins with the
    one given; MariaDB without it, or without a match there, is this machine's."""
    custom = os.environ.get("LAB_SANDBOX_BINARY")
    if custom and (engine_flavor != "mariadb" or version):
        matches = unpacked(Path(custom), engine_flavor, version)
        if matches:
            return Path(custom), matches[0]
        if engine_flavor != "mariadb":
            have = ", ".join(unpacked(Path(custom), engine_flavor, None)) or "none"
            asked = f"{engine_flavor} {version}" if version else engine_flavor
            raise ComponentError("dbdeployer", f"no {asked} that the lab speaks (8.0) in "
                                 f"LAB_SANDBOX_BINARY={custom} ({engine_flavor} there: "
                                 f"{have}; unpack a tarball there: dbdeployer unpack TARBALL "
                                 "--sandbox-binary DIR)")
    if engine_flavor != "mariadb":
        raise ComponentError(
            "dbdeployer", f"engine {engine_flavor} needs its tarball unpacked under a directory "
            f"named by LAB_SANDBOX_BINARY (without it the lab runs the system's MariaDB only)")
    root, found = debian_basedir()
    if version and not version_matches(version, found):
        raise ComponentError("mariadbd", f"the experiment asks for MariaDB {version}, this "
                             f"machine has {found}; set LAB_SANDBOX_BINARY for other versions")
    return root, found


def template_key(dbdeployer: str, binary_root: Path, version: str, flavor: str
                 ) -> templates.TemplateKey:
    """What changes the files dbdeployer's ``init_db`` writes: dbdeployer itself (its init
    command line: ``--no-defaults`` plus flags of its own by flavor and version, so no ``-c``
    setting reaches it), the server's binaries it runs, and the OS user owning the files.
    The lab passes no ``--init-options``."""
    base = binary_root / version
    fields = {"dbdeployer": templates.file_identity(dbdeployer), "flavor": flavor,
              "version": version, "basedir": os.path.realpath(base), "uid": str(os.getuid())}
    for rel in ("bin/mysqld", "bin/mariadbd", "scripts/mysql_install_db", "bin/mysql_install_db"):
        if (base / rel).exists():
            fields[rel] = templates.file_identity(base / rel)
    return templates.TemplateKey("dbdeployer", fields)


def _init_by_dbdeployer(dbdeployer: str, binary_root: Path, version: str, port: int,
                        work: Path, raw: Path) -> Path:
    """dbdeployer's own initialisation of one sandbox (``--skip-start``: ``init_db`` runs, no
    server starts, no grants are loaded) in the run; its data directory (``raw`` unused)."""
    work.mkdir(parents=True, exist_ok=True)
    home = work / "home"
    home.mkdir(exist_ok=True)
    env = dict(os.environ, HOME=str(home), TMPDIR=str(work))
    out = subprocess.run([dbdeployer, f"--sandbox-binary={binary_root}",
                          f"--sandbox-home={work / 'sb'}", "deploy", "single", version,
                          "--skip-start", f"--port={port}", "--sandbox-directory=s"],
                         capture_output=True, text=True, env=env, timeout=300)
    data = work / "sb" / "s" / "data"
    if out.returncode != 0 or not (data / "mysql").is_dir():
        raise ComponentError("dbdeployer", "initialising a data directory template failed: "
                             + (out.stdout + out.stderr).strip()[-400:])
    return data


INIT_FROM_TEMPLATE = """#!{{{{.ShellPath}}}}
# Generated by replica-chaos-lab in place of dbdeployer's init_db ({{{{.TemplateName}}}}):
# the data directory is a copy of the one dbdeployer's init_db wrote, kept as a template at
# {entry}
export SBDIR="{{{{.SandboxDir}}}}"
export DATADIR=$SBDIR/data
cd "$SBDIR"
if [ -d "$DATADIR/mysql" ]
then
    echo "Initialization already done."
    echo "This script should run only once."
    exit 0
fi
mkdir -p "$DATADIR"
{copy}
echo "Database installed in $SBDIR (a copy of the template)"
{{{{.FixUuidFile1}}}}
{{{{.FixUuidFile2}}}}
"""


def init_script(template: templates.Template) -> str:
    """The ``init_db`` dbdeployer renders for each sandbox (``--use-template init_db:FILE``):
    the template's files copied into the sandbox's data directory, and dbdeployer's own fix
    of the server UUID file after it (MySQL), as its ``init_db`` does after initialising."""
    commands = templates.copy_commands(template, "@DEST@")
    for word in (w for argv in commands for w in argv):
        if "{{" in word or "}}" in word:  # dbdeployer renders the script as a Go template
            raise templates.TemplateError(f"{word[:200]}: braces in the path")
    lines = []
    for argv in commands:
        words = [shlex.quote(a).replace("@DEST@", '"$DATADIR"') for a in argv]
        lines.append(" ".join(words) + " || exit 1")
    return INIT_FROM_TEMPLATE.format(entry=template.path, copy="\n".join(lines))


def sandbox_template(run: Run, dbdeployer: str, binary_root: Path, version: str,
                     flavor: str, port: int) -> Path | None:
    """The ``init_db`` script (a file in the run) that copies the template of this server
    into each sandbox, the template built first when missing or broken; None when templates
    are off (``LAB_TEMPLATES=off``): dbdeployer initialises every sandbox itself."""
    if not templates.enabled():
        return None
    key = template_key(dbdeployer, binary_root, version, flavor)
    try:
        template = templates.ensure(key, lambda raw: _init_by_dbdeployer(
            dbdeployer, binary_root, version, port, run.dir / "template-build", raw))
        text = init_script(template)
    except (OSError, subprocess.SubprocessError, templates.TemplateError, ComponentError) as e:
        # the cache saves time, it never stops a run: dbdeployer initialises as without it
        log.warning("no data directory template (%s): dbdeployer initialises each sandbox", e)
        return None
    path = run.dir / "init_db.template"
    path.write_text(text)
    return path


def start_script(run: Run, dbdeployer: str) -> Path | None:
    """dbdeployer's own ``start`` template with its ``TIMEOUT`` in polls raised to keep 180 s
    at the lab's ``SLEEP_TIME`` (``runners.node.keep_start_timeout``), so the deploy's starts
    poll every 0.1 s, not every second; None when its template has no ``TIMEOUT=180``."""
    text = _start_template(dbdeployer, templates.file_identity(dbdeployer))
    if text is None or "\nTIMEOUT=180\n" not in text:
        return None
    path = run.dir / "start.template"
    path.write_text(text.replace("\nTIMEOUT=180\n", f"\nTIMEOUT={START_POLLS}\n", 1))
    return path


@functools.lru_cache(maxsize=4)
def _start_template(dbdeployer: str, identity: str) -> str | None:
    """dbdeployer's built-in ``start`` template (an empty HOME: none of the user's)."""
    with tempfile.TemporaryDirectory() as home:
        out = subprocess.run([dbdeployer, "defaults", "templates", "show", "start"],
                             capture_output=True, text=True, env=dict(os.environ, HOME=home),
                             timeout=30)
    return out.stdout if out.returncode == 0 else None


def deploy(run: Run, req: SandboxRequest, names: Sequence[str], roles: Sequence[str],
           engine_flavor: str = "mariadb", version: str | None = None) -> list[SandboxNode]:
    dbdeployer = require("dbdeployer")
    binary_root, ver = sandbox_binary(engine_flavor, version)
    home = run.dir / "home"
    home.mkdir(exist_ok=True)
    env = dict(os.environ, HOME=str(home), TMPDIR=str(run.dir))
    env["PATH"] = f"{PROJECT_ROOT / '.tools/bin'}:{env.get('PATH', '')}"
    sandbox_home = run.dir / "sb"
    cmd = [dbdeployer, f"--sandbox-binary={binary_root}", f"--sandbox-home={sandbox_home}",
           "deploy", req.kind, ver, f"--base-port={req.base_port}", "--sandbox-directory=s",
           "--socket-in-datadir", f"--db-user={req.admin.user}",
           f"--db-password={req.admin.password}", "--remote-access=127.%",
           "--bind-address=127.0.0.1", "--skip-report-host"]
    if binary_root == lab_home() / "sandbox-binary":
        # Debian's packaged server: its libraries are its package's dependencies, and the ldd
        # runs of dbdeployer's check cost each deploy about 0.07 s. A tarball's are still
        # checked.
        cmd.append("--skip-library-check")
    if req.kind == "replication":
        cmd += ["--concurrent", f"--nodes={req.replicas + 1}",
                f"--rpl-user={req.repl.user}", f"--rpl-password={req.repl.password}"]
        if req.semi_sync:
            cmd.append("--semi-sync")
    else:
        cmd += [f"--port={req.base_port + 1}",
                f"--server-id={dbdeployer_server_id(req.kind, 1)}"]
    for k, v in req.common_config.items():
        cmd += ["-c", f"{k}={v}"]
    for stmt in req.post_grants:
        cmd.append(f"--post-grants-sql={stmt}")
    init_db = sandbox_template(run, dbdeployer, binary_root, ver, engine_flavor,
                               req.base_port + 1)
    if init_db is not None:
        cmd += ["--use-template", f"init_db:{init_db}"]
    start = start_script(run, dbdeployer)
    if start is not None:  # the sandboxes' scripts poll every SLEEP_TIME, from the deploy on
        cmd += ["--use-template", f"start:{start}"]
        env["SLEEP_TIME"] = SLEEP_TIME
    log_path = run.dir / "dbdeployer.log"
    t0 = time.monotonic()
    with open(log_path, "w") as logf:
        logf.write(" ".join(c if "password" not in c else c.split("=")[0] + "=***"
                            for c in cmd) + "\n")
        logf.flush()
        proc = subprocess.run(cmd, stdout=logf, stderr=subprocess.STDOUT, env=env,
                              timeout=300)
    sdir = sandbox_home / "s"
    nodes: list[SandboxNode] = []
    if req.kind == "replication":
        dirs = [sdir / "master"] + [sdir / f"node{i}" for i in range(1, req.replicas + 1)]
    else:
        dirs = [sdir]
    for i, (d, name, role) in enumerate(zip(dirs, names, roles, strict=True), start=1):
        node = SandboxNode(run, name, role, i, req.base_port + i, d, req.admin, env)
        node.record_processes()
        nodes.append(node)
    if proc.returncode != 0:
        failed = next((n for n in nodes if not n.is_running()), nodes[0] if nodes else None)
        raise ComponentError(
            "dbdeployer", f"deploy {req.kind} failed (exit {proc.returncode}, see {log_path})",
            failed.error_log if failed and failed.error_log.exists() else log_path)
    for n in nodes:
        n.wait_ready()
    run.set_state("deployed", deploy_seconds=time.monotonic() - t0)
    return nodes


def check_identity(nodes: list[SandboxNode], planned: dict[str, PlannedNode]) -> None:
    """The sandboxes run with the plan's server ids and ports (dbdeployer chose them: a
    dbdeployer that numbers otherwise must not make the plan a lie)."""
    for node in nodes:
        row = node.sql("SELECT @@server_id AS id, @@port AS port")[0]
        want = planned[node.name]
        if (int(row["id"]), int(row["port"])) != (want.server_id, want.port):
            raise ComponentError(
                "dbdeployer", f"{node.name} runs with server id {row['id']} on port "
                f"{row['port']}, the plan says {want.server_id} on {want.port}",
                node.error_log)
