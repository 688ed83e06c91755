"""The settings the lab owns: one list, for the validator, the compiler and the runners.

A server setting named in an experiment (``config``, ``variant``, ``vary config``, ``start
... with``, ``set global``) is either in force on the server or refused by ``lab check``
with the reason; never dropped. Every setting the lab has an opinion about is here:

* ``SET_BY_LAB``: the lab gives every node its value (ports, ids, paths, the Galera wiring,
  roles); a file that sets one is refused, the hint says why. ``dsl.compile`` puts the lab's
  values into each node's effective config (``lab plan`` marks them ``lab``), except the
  few that depend on the machine or the run (``RUNTIME``: the OS user, where the server and
  the Galera provider are installed, generated credentials), which the runners add.
* ``OUTSIDE_RUN``: settings that make the server read, write or run something on the host
  (the server may run as root). Refused.
* ``FILE_NAMES``: settings that name a file the server writes or loads. Honoured when the
  value is a plain file name (no ``/``, no ``..``): the server places it in the node's data
  directory (plugins: in the plugin directory). ``log_bin`` is one: the lab's default
  ``mysql-bin`` where the topology needs binary logs, the file's name wins.
* ``wsrep_provider_options``: merged with the lab's Galera options (``PROVIDER_NEEDED``
  are the lab's and refused; ``PROVIDER_DEFAULTS`` are the lab's defaults, the file's wins).
* The lab's other defaults (``dsl.compile``: buffer pool size, ``skip_name_resolve`` on
  Galera and two-primary nodes, ``wsrep_cluster_name``, ...) are ordinary settings: a file
  overrides them.

``skip-``, ``enable-``, ``disable-``, ``maximum-`` and ``loose-`` prefixes name the same
option: a key is checked under every name the server reads it as. MariaDB would also read a
unique beginning of an option name as the option (``init-fil`` as ``init_file``): the lab
turns that off on every node (``getopt_prefix_matching``), so the server refuses such a name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache

# --- reasons (the hints of lab check) -------------------------------------------------------

_PORTS = (
    "every node listens on 127.0.0.1 on ports of the run's own block of 100 (see `lab plan`); "
    "another address or port could collide with another run or reach beyond this machine"
)
_ID = (
    "node i has server id 100*i (dbdeployer's numbering, see `lab plan`): replication needs "
    "them distinct"
)
_FILES = (
    "every node keeps its files in its own directory of the run; a path chosen by the file "
    "would let the server (which may run as root) read or write anywhere on the host"
)
_MACHINE = "the lab uses what it found on this machine (see `lab doctor`)"
_USER = "the lab runs the server as the OS user it chose (mysql when it runs as root)"
_RELAY = (
    "relay logs are kept under the lab's name (mysql-relay) in the node's data directory: "
    "renaming them on a replica breaks its replication"
)
_GALERA = (
    "the lab wires the Galera cluster (node names, addresses and ports of the run's block); "
    "the provider's other options are yours: "
    "wsrep_provider_options = \"gcache.size=128M; evs.suspect_timeout=PT5S\""
)
_READ_ONLY = (
    "the lab sets read_only by role (replicas ON, writers OFF; promote flips it); to change "
    "it in a run: before load { set global read_only = ON on NODE }"
)
_LOG_BASENAME = "it renames the files the lab keeps for every node (pid file, logs)"
_MONGO = "the lab sets where every member listens and keeps its files, and names the set"

SET_BY_LAB: dict[str, str] = {
    # where a node listens
    "port": _PORTS,
    "bind_address": _PORTS,
    "extra_port": _PORTS,
    "admin_port": _PORTS,
    "admin_address": _PORTS,
    "mysqlx_port": _PORTS,
    "mysqlx_bind_address": _PORTS,
    "mysqlx_socket": _FILES,
    "report_host": _PORTS,
    "report_port": _PORTS,
    # identity and role
    "server_id": _ID,
    "getopt_prefix_matching": (
        "the lab turns off abbreviated option names (init-fil read as init_file): every "
        "setting is read as written"
    ),
    "read_only": _READ_ONLY,
    # files of the node
    "datadir": _FILES,
    "socket": _FILES,
    "pid_file": _FILES,
    "log_error": _FILES,
    "tmpdir": _FILES,
    "slave_load_tmpdir": _FILES,
    "innodb_data_home_dir": _FILES,
    "innodb_log_group_home_dir": _FILES,
    "innodb_undo_directory": _FILES,
    "innodb_tmpdir": _FILES,
    "aria_log_dir_path": _FILES,
    "wsrep_data_home_dir": _FILES,
    "log_basename": _LOG_BASENAME,
    "log_bin_index": _FILES,
    "relay_log": _RELAY,
    "relay_log_index": _RELAY,
    "relay_log_info_file": _RELAY,
    "master_info_file": _RELAY,
    # what the lab found on this machine
    "basedir": _MACHINE,
    "plugin_dir": _MACHINE,
    "character_sets_dir": _MACHINE,
    "lc_messages_dir": _MACHINE,
    "language": _MACHINE,
    "user": _USER,
    # Galera wiring
    "wsrep_provider": _MACHINE,
    "wsrep_cluster_address": _GALERA,
    "wsrep_node_address": _GALERA,
    "wsrep_node_name": _GALERA,
    "wsrep_node_incoming_address": _GALERA,
    "wsrep_sst_receive_address": _GALERA,
    "wsrep_sst_auth": "the lab generates the state-transfer credentials of every run",
    # MongoDB (keys are compared in lower case)
    "net.port": _MONGO,
    "net.bindip": _MONGO,
    "net.bindipall": _MONGO,
    "storage.dbpath": _MONGO,
    "systemlog.path": _MONGO,
    "processmanagement.pidfilepath": _MONGO,
    "processmanagement.fork": _MONGO,
    "replication.replsetname": _MONGO,
}

_HOST_FILE = "the server (which may run as root) would read a file of the host"
_INSIDE_RUN = (
    "the server may run as root: everything a node reads and writes stays in its directory "
    "of the run"
)
_NO_TLS = "the lab's servers listen on 127.0.0.1 without TLS"
# key -> (why it is refused, hint or None)
OUTSIDE_RUN: dict[str, tuple[str, str | None]] = {
    "init_file": (
        _HOST_FILE,
        'to run SQL on a node, use a step: before load { execute "..." on NODE }',
    ),
    "secure_file_priv": (
        "it names a directory of the host that LOAD DATA and SELECT ... INTO OUTFILE use",
        None,
    ),
    "chroot": ("it moves the server to another root directory of the host", None),
    "ssl_ca": (_HOST_FILE, _NO_TLS),
    "ssl_capath": (_HOST_FILE, _NO_TLS),
    "ssl_cert": (_HOST_FILE, _NO_TLS),
    "ssl_key": (_HOST_FILE, _NO_TLS),
    "ssl_crl": (_HOST_FILE, _NO_TLS),
    "ssl_crlpath": (_HOST_FILE, _NO_TLS),
    "des_key_file": (_HOST_FILE, None),
    "ft_stopword_file": (_HOST_FILE, None),
    "file_key_management_filename": (_HOST_FILE, None),
    "gssapi_keytab_path": (_HOST_FILE, None),
    "debug": ("the server would write a debug trace to a file of the host", None),
    "wsrep_notify_cmd": ("it runs a program of the host at every cluster change", None),
}

# Honoured when the value is a plain file name: the server resolves it in the node's data
# directory (plugins in its plugin directory; wsrep_sst_method names a wsrep_sst_* script).
_IN_DATADIR = (
    "the server places it in the node's data directory in the run; absolute paths, '/' and "
    "'..' would reach outside the run"
)
_PLUGIN = (
    "the server loads plugins from its own plugin directory: give the library's name "
    "(server_audit.so), not a path"
)
FILE_NAMES: dict[str, tuple[str, str]] = {  # key -> (what it names, hint)
    "log_bin": ("the binary log's base name", _IN_DATADIR),
    "general_log_file": ("the general query log", _IN_DATADIR),
    "slow_query_log_file": ("the slow query log", _IN_DATADIR),
    "log_slow_query_file": ("the slow query log", _IN_DATADIR),
    "log_tc": ("the transaction coordinator log", _IN_DATADIR),
    "log_isam": ("the MyISAM log", _IN_DATADIR),
    "innodb_buffer_pool_filename": ("the buffer pool dump", _IN_DATADIR),
    "innodb_data_file_path": ("InnoDB's system tablespace", _IN_DATADIR),
    "innodb_temp_data_file_path": ("InnoDB's temporary tablespace", _IN_DATADIR),
    "server_audit_file_path": ("the audit log", _IN_DATADIR),
    "wsrep_status_file": ("Galera's status file", _IN_DATADIR),
    "plugin_load": ("plugin libraries", _PLUGIN),
    "plugin_load_add": ("plugin libraries", _PLUGIN),
    "early_plugin_load": ("plugin libraries", _PLUGIN),
    "wsrep_sst_method": (
        "a state-transfer method",
        "it names one of the server's wsrep_sst_* scripts: rsync, mariabackup or mysqldump",
    ),
}
_PLAIN = r"[A-Za-z0-9_][A-Za-z0-9_.\-]*"
FILE_PATTERNS: dict[str, re.Pattern[str]] = {
    "plugin_load": re.compile(rf"(?:[A-Za-z0-9_]+=)?{_PLAIN}"),
    "plugin_load_add": re.compile(rf"(?:[A-Za-z0-9_]+=)?{_PLAIN}"),
    "early_plugin_load": re.compile(rf"(?:[A-Za-z0-9_]+=)?{_PLAIN}"),
    "innodb_data_file_path": re.compile(rf"{_PLAIN}(?::[A-Za-z0-9]+)*"),
    "innodb_temp_data_file_path": re.compile(rf"{_PLAIN}(?::[A-Za-z0-9]+)*"),
    "wsrep_sst_method": re.compile(r"[A-Za-z0-9_]+"),
}
BOOLEAN_WORDS = frozenset({"on", "off", "0", "1", "true", "false", "yes", "no"})

NEGATING_PREFIXES = ("skip_", "disable_", "enable_", "maximum_")

# Galera provider options: the lab's own (where the node listens, its files) and its defaults.
PROVIDER_KEY = "wsrep_provider_options"
PROVIDER_NEEDED: dict[str, str] = {
    "gmcast.listen_addr": _GALERA,
    "gmcast.mcast_addr": _GALERA,
    "gmcast.segment": _GALERA,
    "ist.recv_addr": _GALERA,
    "ist.recv_bind": _GALERA,
    "base_host": _GALERA,
    "base_port": _GALERA,
    "base_dir": _FILES,
    "gcache.dir": _FILES,
    "socket.ssl_ca": _HOST_FILE,
    "socket.ssl_cert": _HOST_FILE,
    "socket.ssl_key": _HOST_FILE,
}
PROVIDER_FILE_NAMES = frozenset({"gcache.name"})
PROVIDER_DEFAULTS: dict[str, str] = {
    "evs.suspect_timeout": "PT3S",
    "evs.inactive_timeout": "PT6S",
    "gcache.size": "64M",
}
PROVIDER_OPTION = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
PROVIDER_VALUE = re.compile(r"[A-Za-z0-9_.:/+@%*~^,\-]+")

# Keys whose value depends on the machine or the run, added by the runners (never in a plan).
RUNTIME: dict[str, str] = {
    "user": "the OS user (mysql when the lab runs as root)",
    "basedir": "where the server is installed (dbdeployer writes it for its sandboxes)",
    "wsrep_provider": "the Galera provider found on the machine",
    "wsrep_sst_auth": "the state-transfer credentials generated for the run",
}
# Lab-owned paths in a plan are relative to the node's directory in the run; the runners
# make them absolute (for dbdeployer sandboxes, dbdeployer writes the same ones itself).
NODE_DIR_PATHS = frozenset({"datadir", "tmpdir", "socket", "pid_file", "log_error"})

Problem = tuple[str, str | None]  # (message, hint)


@lru_cache(maxsize=4096)
def normal_key(key: str) -> str:
    """``innodb-buffer-pool-size`` and ``loose_innodb_buffer_pool_size`` are the same option
    as ``innodb_buffer_pool_size`` for the server (MongoDB keys: compared in lower case)."""
    k = key.lower().replace("-", "_")
    return k[len("loose_") :] if k.startswith("loose_") else k


class ConfigKeys:
    """A copy of a config that only loses keys, with each option's spellings (keys of one
    ``normal_key``, in order) indexed once, for the compiler's lab settings: finding an
    option by any spelling no longer normalises every key of the config."""

    def __init__(self, config: Mapping[str, str], mysql: bool) -> None:
        self.config = dict(config)
        self.mysql = mysql
        self.spellings: dict[str, list[str]] = {}
        if mysql:
            for k in self.config:
                self.spellings.setdefault(normal_key(k), []).append(k)

    def find(self, key: str) -> str | None:
        """The config's first spelling of option ``key`` (MySQL family: any spelling;
        MongoDB: ``key`` itself), None when it has none (``dsl.compile._find``)."""
        if not self.mysql:
            return key if key in self.config else None
        found = self.spellings.get(normal_key(key))
        return found[0] if found else None

    def pop(self, key: str) -> str:
        if self.mysql:
            self.spellings[normal_key(key)].remove(key)
        return self.config.pop(key)


def server_names(key: str) -> list[str]:
    """Every owned option the server may read ``key`` as: itself, or without a ``skip-``,
    ``enable-``, ``disable-`` or ``maximum-`` prefix."""
    k = normal_key(key)
    names = [k]
    for prefix in NEGATING_PREFIXES:
        stem = k[len(prefix) :]
        if k.startswith(prefix) and (stem in SET_BY_LAB or stem in OUTSIDE_RUN):
            names.append(stem)
    return names


def is_plain_file_name(key: str, value: str) -> bool:
    pattern = FILE_PATTERNS.get(key, re.compile(_PLAIN))
    return pattern.fullmatch(value) is not None and ".." not in value


def parse_provider_options(value: str) -> list[tuple[str, str]]:
    """``"gcache.size=128M; evs.suspect_timeout=PT5S"`` -> [(key, value), ...]; ValueError
    when an item is not ``key=value``."""
    out: list[tuple[str, str]] = []
    for item in value.split(";"):
        item = item.strip()
        if not item:
            continue
        key, eq, val = item.partition("=")
        key, val = key.strip(), val.strip()
        if not eq or not key or not val:
            raise ValueError(f"'{item}' is not key=value")
        out.append((key, val))
    return out


def provider_problem(value: str, context: str) -> Problem | None:
    """What is wrong with a wsrep_provider_options value (None: fine)."""
    if context == "option":
        return (
            "wsrep_provider_options cannot be given when a node starts: it would replace the "
            "lab's Galera options",
            "set it in config { } (merged with the lab's), or change one option in a run: "
            'set global wsrep_provider_options = "gcache.size=128M"',
        )
    try:
        items = parse_provider_options(value)
    except ValueError as exc:
        return (
            f"wsrep_provider_options: {exc}",
            'Galera options are key=value separated by ";": "gcache.size=128M; evs.suspect_'
            'timeout=PT5S"',
        )
    seen: set[str] = set()
    for key, val in items:
        low = key.lower()
        if PROVIDER_OPTION.fullmatch(key) is None:
            return f"wsrep_provider_options: '{key}' is not a Galera option name", None
        if low in seen:
            return f"wsrep_provider_options: '{key}' is given twice", "keep one"
        seen.add(low)
        if low in PROVIDER_NEEDED:
            return (
                f"wsrep_provider_options: '{key}' is set by the lab and cannot be changed",
                PROVIDER_NEEDED[low],
            )
        if PROVIDER_VALUE.fullmatch(val) is None:
            return f"wsrep_provider_options: the value of '{key}' ('{val}') is not allowed", None
        if low in PROVIDER_FILE_NAMES and ("/" in val or ".." in val):
            return (
                f"wsrep_provider_options: '{key}' takes a plain file name, not '{val}'",
                "it is placed in the node's data directory; absolute paths, '/' and '..' "
                "would reach outside the run",
            )
    return None


def merge_provider_options(lab_needed: dict[str, str], file_value: str | None) -> str:
    """The Galera options a node runs with: the lab's defaults, the file's options over them,
    and the options the lab needs (which a valid file never sets) over everything."""
    merged: dict[str, str] = {}
    for key, val in PROVIDER_DEFAULTS.items():
        merged[key] = val
    for key, val in parse_provider_options(file_value or ""):
        old = next((k for k in merged if k.lower() == key.lower()), None)
        if old is not None:
            del merged[old]
        merged[key] = val
    for key, val in lab_needed.items():
        old = next((k for k in merged if k.lower() == key.lower()), None)
        if old is not None:
            del merged[old]
        merged[key] = val
    return "; ".join(f"{k}={v}" for k, v in merged.items())


def owned_problem(key: str, value: str, context: str) -> tuple[str, str, str | None] | None:
    """What is wrong with setting an owned option: ``(where, message, hint)`` with where
    ``"key"`` or ``"value"``, or None when the lab honours it. ``context`` is ``config``,
    ``option`` (``start ... with``), ``vary`` or ``set global``."""
    for name in server_names(key):
        if name == "read_only" and context in ("set global", "option"):
            continue  # changing a node's role during a run is a fault the file may cause
        what = f"'{key}'" if name == normal_key(key) else f"'{key}' sets '{name}', which"
        if name in SET_BY_LAB:
            return ("key", f"{what} is set by the lab and cannot be changed", SET_BY_LAB[name])
        if name in OUTSIDE_RUN:
            reason, hint = OUTSIDE_RUN[name]
            return ("key", f"{what} cannot be set: {reason}", hint or _INSIDE_RUN)
    name = normal_key(key)
    if name == PROVIDER_KEY:
        problem = provider_problem(value, context)
        return ("value", *problem) if problem else None
    if name in FILE_NAMES:
        if name == "log_bin" and value.lower() in BOOLEAN_WORDS:
            return (
                "value",
                f"log_bin names the binary log files, not '{value}'",
                "binary logs are on where the topology needs them (base name mysql-bin); to "
                "turn them on elsewhere give a base name: log_bin = mysql-bin",
            )
        if not is_plain_file_name(name, value):
            what, hint = FILE_NAMES[name]
            return ("value", f"'{key}' takes a plain name ({what}), not '{value}'", hint)
    return None
