"""Experiment -> Plan, with every default made explicit.

Ports (offsets from the plan's ``base_port``; the runtime picks a free base per run)::

    base + i          client port of node i (i = 1, 2, ... in topology order)
    base + 90         router writer endpoint
    base + 91         router reader endpoint
    (the rest of the block of 100: toxiproxy links, Galera ports, role agents, toxiproxy
    API: ``dsl.ports``, which runners.runtime.PortLayout reads too)

Server ids are 100 x the node's index (100, 200, ...: dbdeployer's numbering, which every
topology uses). Effective server config of a node, each layer overriding the one before::

    the lab's defaults (small footprint + what the role needs)
    < experiment ``config { }``  < topology ``config { }``
    < per-node ``config NODE { }`` (experiment, then topology)
    < the cell's ``variant``  < the cell's ``vary config`` values
    < the lab's own settings (``dsl.owned``: ids, ports, paths, Galera wiring; a valid file
      never sets them; ``wsrep_provider_options`` is merged)

The last layer and the defaults are merged in one place, ``for_base_port``, which the runtime
calls again with the run's base port: the runners start what the plan says. Each value's
origin (lab, default, file) is kept in ``PlannedNode.origins``.

The matrix is variants x sweep values x repeats, in that nesting order (repeats innermost);
a cell's label reads like ``a2 threads=4 #2``.

``dsl.compile_warnings.plan_warnings(plan)`` finds what is valid but probably vacuous: a fault
on the timeline that no workload is running to observe, one within a second of the end of every
workload that runs then, or one at the very end of the load (see "Warnings" in
docs/language.md); ``root_needs`` and ``root_notes`` there say which actions need root.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping

from dsl.errors import LanguageErrors
from dsl.metrics import resolve_stat
from dsl.models import (
    ConfigBlock,
    Expectation,
    Experiment,
    IntOrParam,
    ParamRef,
    PrimaryPrimaryTopology,
    ReplicationTopology,
    Report,
    Variant,
    Workload,
)
from dsl.owned import PROVIDER_KEY, ConfigKeys, merge_provider_options, normal_key
from dsl.plan import (
    DEFAULT_BASE_PORT,
    Cell,
    Origin,
    Plan,
    PlannedNode,
    PlannedRouter,
    PlannedWorkload,
    faketime_nodes,
    iofs_nodes,
)
from dsl.ports import (  # the port layout of a run's block
    GALERA_GROUP_OFFSET,
    GALERA_IST_OFFSET,
    GALERA_SST_OFFSET,
    ROUTER_READER_OFFSET,
    ROUTER_WRITER_OFFSET,
)
from dsl.validate import validate
from dsl.validate_base import NodeInfo, topology_nodes

NODE_PORT_STRIDE = 1

DEFAULT_PROBE_EVERY = 0.01  # seconds between two operations of one probe client
# transactional workloads (docs/language.md, "Transactional workloads"): keys, micro-operations
# per transaction (1 to N), share of reads
TXN_DEFAULTS: dict[str, tuple[int, int | None, float | None]] = {
    "list_append": (10, 4, 0.5),
    "read_modify_write": (4, None, None),
    "bank": (5, None, 0.5),
}
DEFAULT_SYSBENCH_THREADS = 1
DEFAULT_SYSBENCH_TABLES = 1
DEFAULT_SYSBENCH_TABLE_SIZE = 10000

SERVER_ID_STEP = 100  # node i has server id 100*i: dbdeployer's numbering (runners.sandbox)
LOOPBACK = "127.0.0.1"
BINLOG_BASENAME = "mysql-bin"
RELAY_BASENAME = "mysql-relay"  # dbdeployer's name; the lab's two primaries use it too

MYSQL_DEFAULTS: dict[str, str] = {
    "innodb_buffer_pool_size": "64M",
    "innodb_log_file_size": "48M",
    "innodb_flush_log_at_trx_commit": "1",
    "max_connections": "200",
    "performance_schema": "OFF",
}
MONGO_DEFAULTS: dict[str, str] = {
    "storage.wiredTiger.engineConfig.cacheSizeGB": "0.25",
}
BINLOG_DEFAULTS: dict[str, str] = {
    "log_bin": BINLOG_BASENAME,
    "binlog_format": "ROW",
    "log_slave_updates": "ON",
    "sync_binlog": "1",
}
GALERA_DEFAULTS: dict[str, str] = {
    "wsrep_on": "ON",
    "log_bin": BINLOG_BASENAME,
    "binlog_format": "ROW",
    "log_slave_updates": "ON",
    "innodb_autoinc_lock_mode": "2",
    "default_storage_engine": "InnoDB",
    "wsrep_sst_method": "rsync",
    "gtid_domain_id": "1",
    "skip_name_resolve": "ON",
}
SANDBOX_KINDS = ("replication", "single")  # made by dbdeployer; the others by the lab


def server_id(index: int) -> int:
    return SERVER_ID_STEP * index


def _version_tuple(version: str | None) -> tuple[int, ...]:
    if not version:
        return (99,)
    return tuple(int(p) for p in version.split(".") if p.isdigit())


def builtin_config(plan: Plan, node: PlannedNode, count: int) -> dict[str, str]:
    """The lab's defaults for one node (a file overrides them): small, and what its role
    needs."""
    flavor, version = plan.engine.flavor, _version_tuple(plan.engine.version)
    if plan.topology == "mongodb_replset":
        return dict(MONGO_DEFAULTS)
    config = dict(MYSQL_DEFAULTS)
    mysql_like = flavor in ("mysql", "percona")
    if plan.topology in ("replication", "primary_primary"):
        config.update(BINLOG_DEFAULTS)
        if mysql_like and plan.replication_mode == "gtid":
            config.update({"gtid_mode": "ON", "enforce_gtid_consistency": "ON"})
    if plan.topology == "primary_primary":
        config["skip_name_resolve"] = "ON"
        if flavor == "mariadb":
            config["gtid_domain_id"] = str(node.index)  # one GTID domain per writer
        if plan.auto_increment_offsets:
            config["auto_increment_increment"] = str(count)
            config["auto_increment_offset"] = str(node.index)
    if plan.topology == "replication":
        if plan.crash_safe:
            config["relay_log_recovery"] = "ON"
            if mysql_like and version < (8, 0, 23):
                config["master_info_repository"] = "TABLE"
                config["relay_log_info_repository"] = "TABLE"
        if plan.semi_sync:
            config.update(_semi_sync(flavor, version, node.role))
    if plan.topology == "galera":
        config.update(GALERA_DEFAULTS)
        config["wsrep_cluster_name"] = plan.name
    return config


def lab_config(plan: Plan, node: PlannedNode, nodes: list[PlannedNode]) -> dict[str, str]:
    """What the lab sets and a file cannot (``dsl.owned.SET_BY_LAB``), for the plan's base
    port. Paths are relative to the node's directory in the run; the keys of
    ``dsl.owned.RUNTIME`` (machine and run) are added by the runners."""
    if plan.topology == "mongodb_replset":
        return {}  # runners.mongo sets where members listen and keep their files (argv)
    port = plan.base_port + node.port_offset
    config = {
        "server_id": str(server_id(node.index)),
        "port": str(port),
        "bind_address": LOOPBACK,
        "loose_getopt_prefix_matching": "OFF",
    }
    if plan.topology in SANDBOX_KINDS:  # what dbdeployer writes into my.sandbox.cnf
        config.update(
            {
                "datadir": "data",
                "tmpdir": "tmp",
                "socket": f"data/mysql_sandbox{port}.sock",
                "pid_file": f"data/mysql_sandbox{port}.pid",
                "log_error": "data/msandbox.err",
                "report_port": str(port),
            }
        )
    else:
        config.update(
            {
                "datadir": "data",
                "tmpdir": "tmp",
                "socket": "mysqld.sock",
                "pid_file": "mysqld.pid",
                "log_error": "error.log",
            }
        )
    if plan.topology in ("replication", "primary_primary"):
        config["relay_log"] = RELAY_BASENAME
        config["relay_log_index"] = RELAY_BASENAME
    if plan.topology == "replication" and node.role == "replica":
        config["read_only"] = "ON"
    if plan.topology == "galera":
        group = [f"{LOOPBACK}:{_galera_port(plan, GALERA_GROUP_OFFSET, n)}" for n in nodes]
        config.update(
            {
                "wsrep_cluster_address": "gcomm://" + ",".join(group),
                "wsrep_node_name": node.name,
                "wsrep_node_address": f"{LOOPBACK}:{_galera_port(plan, GALERA_GROUP_OFFSET, node)}",
                # what wsrep_incoming_addresses lists for the node ("AUTO" when unset): the
                # split-brain checker reads the component's members from it (galera_watch)
                "wsrep_node_incoming_address": f"{LOOPBACK}:{port}",
                "wsrep_sst_receive_address": (
                    f"{LOOPBACK}:{_galera_port(plan, GALERA_SST_OFFSET, node)}"
                ),
            }
        )
    return config


def _galera_port(plan: Plan, offset: int, node: PlannedNode) -> int:
    return plan.base_port + offset + node.index


def provider_needed(plan: Plan, node: PlannedNode) -> dict[str, str]:
    """The Galera provider options the lab needs (``dsl.owned.PROVIDER_NEEDED``)."""
    if plan.topology != "galera":
        return {}
    return {
        "gmcast.listen_addr": f"tcp://{LOOPBACK}:{_galera_port(plan, GALERA_GROUP_OFFSET, node)}",
        "ist.recv_addr": f"{LOOPBACK}:{_galera_port(plan, GALERA_IST_OFFSET, node)}",
    }


def _find(config: Mapping[str, str], key: str, mysql: bool) -> str | None:
    if not mysql:
        return key if key in config else None
    wanted = normal_key(key)
    return next((k for k in config if normal_key(k) == wanted), None)


def _with_lab_settings(plan: Plan, node: PlannedNode, nodes: list[PlannedNode]) -> PlannedNode:
    mysql = plan.topology != "mongodb_replset"
    keys = ConfigKeys(node.config, mysql)  # the file's settings, and the lab's from an earlier pass
    own = keys.config
    origins: dict[str, Origin] = {}
    out: dict[str, str] = {}
    for key, value in lab_config(plan, node, nodes).items():
        old = keys.find(key)
        if old is not None:
            keys.pop(old)
        out[key] = value
        origins[key] = "lab"
    for key, value in builtin_config(plan, node, len(nodes)).items():
        old = keys.find(key)
        if old is None:
            out[key] = value
            origins[key] = "default"
        else:
            out[old] = keys.pop(old)
            if node.origins.get(old) == "default":
                origins[old] = "default"
    needed = provider_needed(plan, node)
    for key, value in own.items():
        if needed and normal_key(key) == PROVIDER_KEY:
            continue
        out[key] = value
        if key in node.origins and node.origins[key] != "lab+file":
            origins[key] = node.origins[key]
    if needed:
        old = _find(node.config, PROVIDER_KEY, mysql)
        from_file = old is not None and node.origins.get(old) in (None, "lab+file")
        value = merge_provider_options(needed, node.config[old] if from_file and old else None)
        out[PROVIDER_KEY] = value
        origins[PROVIDER_KEY] = "lab+file" if from_file else "lab"
    return node.model_copy(
        update={
            "server_id": server_id(node.index),
            "port": plan.base_port + node.port_offset,
            "config": out,
            "origins": origins,
        }
    )


def for_base_port(plan: Plan, base_port: int | None = None) -> Plan:
    """The plan with the lab's own settings merged into every node's config, for a base port
    (default: the plan's). The one place where the lab's settings meet the file's: the
    compiler calls it, and the runtime calls it again with the run's base port, so that the
    runners start exactly what the returned plan says. Applying it twice changes nothing; a
    plan built by hand (tests, benchmarks) gets the same settings as a compiled one."""
    base = plan.base_port if base_port is None else base_port
    plan = plan.model_copy(update={"base_port": base})
    cells = []
    for cell in plan.cells:
        nodes = [_with_lab_settings(plan, n, list(cell.nodes)) for n in cell.nodes]
        cells.append(cell.model_copy(update={"nodes": nodes}))
    router = plan.router
    if router is not None:
        router = router.model_copy(
            update={
                "writer_port": base + router.writer_port_offset,
                "reader_port": base + router.reader_port_offset,
            }
        )
    return plan.model_copy(update={"cells": cells, "router": router,
                                   "faketime_nodes": faketime_nodes(plan.actions()),
                                   "iofs_nodes": iofs_nodes(plan.actions())})


def _semi_sync(flavor: str, version: tuple[int, ...], role: str) -> dict[str, str]:
    primary = role == "primary"
    if flavor == "mariadb":  # built in since 10.3
        return (
            {"rpl_semi_sync_master_enabled": "ON"}
            if primary
            else {"rpl_semi_sync_slave_enabled": "ON"}
        )
    if version >= (8, 0, 26):
        side = "source" if primary else "replica"
    else:
        side = "master" if primary else "slave"
    return {"plugin_load_add": f"semisync_{side}.so", f"rpl_semi_sync_{side}_enabled": "ON"}


def _merge(config: dict[str, str], settings: Mapping[str, str], mysql: bool) -> None:
    """Apply ``settings`` over ``config``; for MySQL-family servers ``a-b`` and ``a_b`` are
    one option, so the later spelling replaces the earlier one."""
    for key, value in settings.items():
        old = _find(config, key, mysql)
        if old is None or old == key:
            config[key] = value
        else:  # same option, another spelling: take the new one, keep the position
            items = [(key, value) if k == old else (k, v) for k, v in config.items()]
            config.clear()
            config.update(items)


def _blocks(exp: Experiment) -> list[ConfigBlock]:
    """Config blocks in precedence order (lowest first)."""
    everyone = [b for b in exp.configs if b.node is None]
    everyone += [b for b in exp.topology.configs if b.node is None]
    per_node = [b for b in exp.configs if b.node is not None]
    per_node += [b for b in exp.topology.configs if b.node is not None]
    return everyone + per_node


def _node_configs(exp: Experiment, infos: list[NodeInfo]) -> dict[str, dict[str, str]]:
    """The file's settings of every node (the lab's are merged in by ``for_base_port``)."""
    mysql = exp.topology.kind != "mongodb_replset"
    blocks = _blocks(exp)
    out: dict[str, dict[str, str]] = {}
    for info in infos:
        config: dict[str, str] = {}
        for block in blocks:
            if block.node is None or block.node.name == info.name:
                _merge(config, block.settings, mysql)
        out[info.name] = config
    return out


def _planned_nodes(exp: Experiment, base_port: int) -> list[PlannedNode]:
    infos = topology_nodes(exp)
    configs = _node_configs(exp, infos)
    t = exp.topology
    images = {s.node.name if s.node is not None else "": s.ref for s in t.images}
    delays: dict[str, float] = {}
    if isinstance(t, ReplicationTopology):
        delays = {d.node.name: d.seconds for d in t.delays}
    nodes: list[PlannedNode] = []
    for index, info in enumerate(infos, start=1):
        upstream: list[str] = []
        if info.role == "replica" and isinstance(t, ReplicationTopology):
            upstream = [t.primary.name]
        elif info.role == "primary_primary":
            upstream = [o.name for o in infos if o.name != info.name]
        offset = NODE_PORT_STRIDE * index
        nodes.append(
            PlannedNode(
                name=info.name,
                role=info.role,
                index=index,
                server_id=server_id(index),
                port_offset=offset,
                port=base_port + offset,
                replicates_from=upstream,
                delay=delays.get(info.name),
                image=images.get(info.name, images.get("")),
                config=configs[info.name],
            )
        )
    return nodes


def _resolve(value: IntOrParam | None, params: Mapping[str, str]) -> int | None:
    if isinstance(value, ParamRef):
        return int(params[value.name])
    return value


def _planned_workload(w: Workload, params: Mapping[str, str], duration: float) -> PlannedWorkload:
    threads, tables, table_size = (
        _resolve(w.threads, params),
        _resolve(w.tables, params),
        _resolve(w.table_size, params),
    )
    clients = _resolve(w.clients, params) or 1
    every = w.every
    if w.kind == "sysbench":
        threads = threads or DEFAULT_SYSBENCH_THREADS
        tables = tables or DEFAULT_SYSBENCH_TABLES
        table_size = table_size or DEFAULT_SYSBENCH_TABLE_SIZE
        clients = threads
    if w.kind == "probe" and every is None:
        every = DEFAULT_PROBE_EVERY
    rows, ops = _resolve(w.rows, params), _resolve(w.ops, params)
    bounded = rows is not None or ops is not None or w.duration is not None
    key_count, txn_length, read_fraction = (
        _resolve(w.key_count, params), _resolve(w.txn_length, params), w.read_fraction)
    if w.kind in TXN_DEFAULTS:
        dk, dl, dr = TXN_DEFAULTS[w.kind]
        key_count = key_count or dk
        txn_length = txn_length or dl
        read_fraction = dr if read_fraction is None and dr is not None else read_fraction
    return PlannedWorkload(
        name=w.name,
        kind=w.kind,
        script=w.script,
        targets=[e.name for e in w.targets],
        reads=[e.name for e in w.reads],
        clients=clients,
        threads=threads,
        tables=tables,
        table_size=table_size,
        rate=w.rate,
        every=every,
        operation=w.operation,
        keys=w.keys,
        duration=w.duration if bounded else duration,
        rows=rows,
        ops=ops,
        timeout=w.timeout,
        start_after=w.start_after,
        key_count=key_count,
        txn_length=txn_length,
        read_fraction=read_fraction,
        distribution=w.distribution,
        span=w.span,
        isolation=w.isolation,
        for_update=w.for_update,
    )


def _label(variant: str | None, sweep: Mapping[str, str], repeat: int, repeats: int) -> str:
    parts = [variant] if variant else []
    parts += [f"{k}={v}" for k, v in sweep.items()]
    if repeats > 1 or not parts:
        parts.append(f"#{repeat}")
    return " ".join(parts)


def _cells(exp: Experiment, nodes: list[PlannedNode]) -> list[Cell]:
    variants: list[Variant | None] = list(exp.variants) or [None]
    sweeps = list(exp.sweeps)
    mysql = exp.topology.kind != "mongodb_replset"
    combos: Iterable[tuple[str, ...]] = itertools.product(*(s.values for s in sweeps))
    combos = list(combos)
    cells: list[Cell] = []
    # each workload with the $params its fields name
    refs = [(w, [v.name for v in w.__dict__.values() if isinstance(v, ParamRef)])
            for w in exp.workloads]
    planned: dict[tuple[int, tuple[str, ...]], PlannedWorkload] = {}
    for variant in variants:
        for combo in combos:
            sweep = {s.name: v for s, v in zip(sweeps, combo, strict=True)}
            params = {s.name: v for s, v in zip(sweeps, combo, strict=True) if s.target == "param"}
            server = {s.name: v for s, v in zip(sweeps, combo, strict=True) if s.target == "config"}
            cell_nodes = []
            for node in nodes:
                config = dict(node.config)
                if variant is not None:
                    _merge(config, variant.settings, mysql)
                _merge(config, server, mysql)
                cell_nodes.append(node.model_copy(update={"config": config}))
            workloads = []
            for i, (w, names) in enumerate(refs):
                # a workload's plan depends on the cell only through the $params it names:
                # one (frozen) PlannedWorkload for the cells that give them the same values
                key = (i, tuple(params[name] for name in names))
                if key not in planned:
                    planned[key] = _planned_workload(w, params, exp.duration)
                workloads.append(planned[key])
            for repeat in range(1, exp.repeat + 1):
                cells.append(
                    Cell(
                        index=len(cells) + 1,
                        label=_label(variant.name if variant else None, sweep, repeat, exp.repeat),
                        variant=variant.name if variant else None,
                        sweep=sweep,
                        repeat=repeat,
                        nodes=cell_nodes,
                        workloads=workloads,
                    )
                )
    return cells


def _explicit_expectation(e: Expectation) -> Expectation:
    stat = resolve_stat(e.metric.name, e.metric.stat, e.value.kind)
    return e.model_copy(update={"metric": e.metric.model_copy(update={"stat": stat})})


def _explicit_report(r: Report) -> Report:
    stat = resolve_stat(r.metric.name, r.metric.stat)
    return r.model_copy(update={"metric": r.metric.model_copy(update={"stat": stat})})


def _router(exp: Experiment, base_port: int) -> PlannedRouter | None:
    r = exp.router
    if r is None:
        return None
    return PlannedRouter(
        kind=r.kind,
        writers=[n.name for n in r.writers],
        readers=[n.name for n in r.readers],
        check_interval=r.check_interval,
        writer_port_offset=ROUTER_WRITER_OFFSET,
        reader_port_offset=ROUTER_READER_OFFSET,
        writer_port=base_port + ROUTER_WRITER_OFFSET,
        reader_port=base_port + ROUTER_READER_OFFSET,
        image=r.image.ref if r.image is not None else None,
        settings=dict(r.settings),
    )


def compile_experiment(exp: Experiment, base_port: int = DEFAULT_BASE_PORT, *,
                       validated: bool = False) -> Plan:
    """The plan of a valid experiment. An invalid one (only possible when the experiment
    was not built by the parser) raises ``LanguageErrors``: nothing unsafe reaches a plan.
    ``validated``: ``exp`` is the very object ``dsl.api`` parsed and validated (its loaders
    say so), so it is not validated again."""
    errors = [] if validated else validate(exp)
    if errors:
        raise LanguageErrors(errors)
    t = exp.topology
    nodes = _planned_nodes(exp, base_port)
    mode = (
        t.mode
        if isinstance(t, ReplicationTopology)
        else ("gtid" if isinstance(t, PrimaryPrimaryTopology) else None)
    )
    plan = Plan(
        name=exp.name,
        title=exp.title,
        description=exp.description,
        tags=list(exp.tags),
        seed=exp.seed,
        duration=exp.duration,
        source=exp.source,
        topology=t.kind,
        engine=t.engine,
        replication_mode=mode,
        semi_sync=isinstance(t, ReplicationTopology) and t.semi_sync,
        crash_safe=isinstance(t, ReplicationTopology) and t.crash_safe,
        auto_increment_offsets=(
            t.auto_increment_offsets if isinstance(t, PrimaryPrimaryTopology) else None
        ),
        router=_router(exp, base_port),
        base_port=base_port,
        steps=list(exp.steps),
        timeline=sorted(exp.timeline, key=lambda ta: ta.at),
        triggers=list(exp.triggers),
        expectations=[_explicit_expectation(e) for e in exp.expectations],
        reports=[_explicit_report(r) for r in exp.reports],
        leave_faults=exp.leave_faults,
        backend=exp.backend,
        cells=_cells(exp, nodes),
    )
    return for_base_port(plan)
