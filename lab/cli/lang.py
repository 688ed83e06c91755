"""`lab check` and `lab plan`: the language at the command line.

Exit status: 0 when every file is valid (``check``) or the plan was printed (``plan``),
2 when there are language errors (each printed as ``path:line:col: error: ...`` with the
source line and a caret). Warnings (``path:line:col: warning: ...``, same layout, on stderr:
a fault that no workload measures) are printed for valid files and never change the exit
status. Bad input never produces a traceback.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from dsl.actions import describe, is_left, seconds, spread, undo
from dsl.api import check_file, format_errors, load_plan
from dsl.build_base import WORKLOAD_STATEMENTS
from dsl.compile_warnings import plan_warnings, root_notes
from dsl.errors import LanguageError, LanguageErrors
from dsl.models import Action, FaultSpace, NodeGroupAction, Span
from dsl.owned import RUNTIME
from dsl.plan import Cell, Plan, PlannedNode, PlannedWorkload
from lab.exits import EXIT_LANGUAGE, EXIT_OK
from runners.disk import binlog_nodes, disk_nodes

EXIT_LANGUAGE_ERROR = EXIT_LANGUAGE

log = logging.getLogger(__name__)


def _internal_error(path: str, exc: Exception) -> int:
    """A bug, not bad input: say so in one line instead of a traceback (logged at debug)."""
    log.debug("internal error on %s", path, exc_info=exc)
    print(
        f"{path}: internal error in the language tools: {type(exc).__name__}: {exc} "
        "(please report it with the file)",
        file=sys.stderr,
    )
    return EXIT_LANGUAGE_ERROR


# --- lab check ---------------------------------------------------------------------------------


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def is_root() -> bool:
    return os.geteuid() == 0


def engine_notes(plan: Plan, path: str) -> list[LanguageError]:
    """On containers with an engine on another machine (``DOCKER_HOST``/``LAB_DOCKER_HOST``,
    ``LAB_ENGINE_REMOTE``): one note per action that acts on the engine's machine from this
    one, which ``lab run`` refuses there (``dsl.backends.needs_local_engine``)."""
    from dsl.backends import needs_local_engine
    from runners.containers.engine import configured_host, is_local_url

    url = configured_host()
    if plan.backend != "containers" or url is None or is_local_url(url):
        return []
    return [LanguageError(path, a.span, f"`{describe(a)}` acts on the engine's machine from "
                          f"this one (its page cache, a tmpfs), and the engine ({url}) is "
                          "another: `lab run` refuses it there",
                          "run it with an engine on this machine, or leave the action out",
                          severity="note")
            for a in plan.actions() if needs_local_engine(a)]


def component_notes(plan: Plan, path: str) -> list[LanguageError]:
    """One note per program the experiment needs that this machine lacks (``lab check`` and
    ``lab plan``: ``lab run`` stops on the first with the same words, before starting
    anything). At the experiment's first line: the need is the whole file's."""
    from runners.components import MissingComponent, require
    from runners.topology import needed_components

    where = Span(line=1, column=1, end_line=1, end_column=1)
    with contextlib.suppress(OSError):  # at the experiment's own line, past any comments
        for i, line in enumerate(Path(path).read_text().splitlines(), 1):
            if line.lstrip().startswith("experiment"):
                col = len(line) - len(line.lstrip()) + 1
                where = Span(line=i, column=col, end_line=i, end_column=col + len("experiment"))
                break
    out = []
    for name in dict.fromkeys(needed_components(plan)):
        try:
            require(name)
        except MissingComponent as e:
            out.append(LanguageError(path, where, f"{e}: `lab run` stops before starting "
                                     "anything until it is", "`lab doctor` lists what this "
                                     "machine has", severity="note"))
        except KeyError:  # a name the lab does not know how to find: lab run says so
            continue
    return out


def print_warnings(plan: Plan, path: str, components: bool = False) -> int:
    """Print the plan's warnings to stderr, and, when the user is not root, a note for each
    action that needs root, with an engine on another machine, for each action that needs
    it here, and (``components``: lab check, lab plan) for each program this machine lacks
    (a blank line after them); return how many warnings."""
    warnings = plan_warnings(plan, path)
    notes = [] if is_root() else root_notes(plan, path)
    notes += engine_notes(plan, path)
    if components:
        notes += component_notes(plan, path)
    if warnings or notes:
        print(format_errors([*warnings, *notes]), file=sys.stderr)
        print(file=sys.stderr)
    return len(warnings)


def cmd_check(paths: list[str]) -> int:
    """Check every file; print each error and warning to stderr. 0 when all are valid (with
    or without warnings), else 2."""
    if not paths:
        print("lab check: no files given", file=sys.stderr)
        return EXIT_LANGUAGE_ERROR
    total, bad, warned, warned_files = 0, 0, 0, 0
    for path in paths:
        try:
            errors = check_file(path)
            warnings = 0 if errors else print_warnings(load_plan(path), path, components=True)
        except Exception as exc:  # noqa: BLE001 - never a traceback at the command line
            _internal_error(path, exc)
            total, bad = total + 1, bad + 1
            continue
        if errors:
            print(format_errors(errors), file=sys.stderr)
            print(file=sys.stderr)
            total += len(errors)
            bad += 1
        elif warnings:
            print(f"{path}: ok, with {_plural(warnings, 'warning')}")
            warned, warned_files = warned + warnings, warned_files + 1
        else:
            print(f"{path}: ok")
    if warned:
        print(f"{_plural(warned, 'warning')} in {_plural(warned_files, 'file')}", file=sys.stderr)
    if total:
        print(f"{_plural(total, 'error')} in {_plural(bad, 'file')}", file=sys.stderr)
        return EXIT_LANGUAGE_ERROR
    return EXIT_OK


# --- lab plan ----------------------------------------------------------------------------------


def cmd_plan(path: str, as_json: bool) -> int:
    """Print the compiled plan (a readable rendering, or JSON) and its warnings (stderr).
    0, or 2 on language errors."""
    try:
        plan = load_plan(path)
    except LanguageErrors as exc:
        errors: list[LanguageError] = exc.errors
        print(format_errors(errors), file=sys.stderr)
        return EXIT_LANGUAGE_ERROR
    except Exception as exc:  # noqa: BLE001 - never a traceback at the command line
        return _internal_error(path, exc)
    print_warnings(plan, path, components=True)
    space = _fault_space(path)
    if as_json:
        if space is None:
            print(plan.model_dump_json(indent=2))
        else:  # the fault space is the file's, not the plan's: lab explore draws from it
            import json

            doc = json.loads(plan.model_dump_json())
            doc["fault_space"] = space.model_dump(mode="json")
            print(json.dumps(doc, indent=2))
    else:
        console = Console(highlight=False)
        render_plan(plan, console)
        if space is not None:
            console.print(Text(_fault_space_text(path, space)))
    return EXIT_OK


def _fault_space(path: str) -> FaultSpace | None:
    """The file's ``faults { }`` block, or None (``lab plan`` shows it beside the plan)."""
    from dsl.api import load_experiment

    try:
        return load_experiment(path).faults
    except Exception:  # noqa: BLE001 - the plan was made: the block is extra
        return None


def _fault_space_text(path: str, space: FaultSpace) -> str:
    lines = Path(path).read_text().splitlines()
    block = "\n".join(lines[space.span.line - 1:space.span.end_line])
    return ("Fault space (lab explore draws timelines from it; lab run runs the file's own "
            "timeline, if any, and draws nothing; lab explore FILE --dry-run shows the "
            "draws):\n" + block)


def describe_action(a: Action) -> str:
    """An action in the language's own words (``dsl.actions``), ``for good`` included."""
    return describe(a) + (" for good (never undone)" if is_left(a) else "")


def schedule_rows(plan: Plan) -> list[tuple[str, str]]:
    """The timeline as the plan shows it: each action at its time, and for a fault with
    ``for D`` the action that undoes it, D after the fault started."""
    rows: list[tuple[float, int, str, str]] = []
    for i, timed in enumerate(plan.timeline):
        words = describe_action(timed.action)
        if timed.lasts is not None:
            words += f" for {seconds(timed.lasts)}"
        a = timed.action
        if isinstance(a, NodeGroupAction) and a.verb == "kill" and a.within:
            words += " (" + ", ".join(  # the moments the run's seed gives each kill
                f"{n} at {seconds(round(timed.at + t, 3))}"
                for n, t in spread(plan.seed, [r.name for r in a.nodes], a.within)) + ")"
        rows.append((timed.at, i, f"at {seconds(timed.at)}", words))
        back = undo(timed.action)
        if timed.lasts is not None and back is not None:
            ends = timed.at + timed.lasts
            rows.append((ends, i, f"at {seconds(ends)}",
                         f"{describe(back)} (ends the fault of {seconds(timed.at)}: "
                         f"{seconds(timed.lasts)} after it took effect)"))
    return [(when, words) for _, _, when, words in sorted(rows, key=lambda r: (r[0], r[1]))]


def trigger_rows(plan: Plan) -> list[tuple[str, str, str, str]]:
    """Each ``when`` as the plan shows it: (condition as written, action, what undoes it and
    when, how long it may fire)."""
    rows = []
    for t in plan.triggers:
        then = "-"
        back = undo(t.action)
        if t.lasts is not None and back is not None:
            then = f"{describe(back)}, {seconds(t.lasts)} after it fired"
        window = (f"within {seconds(t.within)} of the load's start" if t.within is not None
                  else "until the load ends")
        rows.append((t.condition.text, describe_action(t.action), then, window))
    return rows


def trigger_caption(plan: Plan) -> str:
    poll = seconds(plan.trigger_poll)
    return (f"Each condition is looked at every {poll} from the load's start (its resolution: "
            f"the action fires at most {poll} plus one look after the state is reached); each "
            "fires once, and one that did not fire is in the run's notes.")


def faketime_line(plan: Plan) -> str | None:
    """The nodes whose server runs under libfaketime because the file skews their clock."""
    if not plan.faketime_nodes:
        return None
    return (f"Under libfaketime (clock skew): {', '.join(plan.faketime_nodes)}. Once the "
            "topology is up, the lab stops each and starts it again with libfaketime preloaded "
            "(its clock at +0 until the fault).")


def tmpfs_line(plan: Plan) -> str | None:
    """What the lab moves onto a tmpfs of its own because the file fills it (``disk full``)."""
    acts = plan.actions()
    parts = [f"{n} (data directory)" for n in disk_nodes(acts)]
    parts += [f"{n} (binary logs, at binlog beside its data directory)" for n in binlog_nodes(acts)]
    if not parts:
        return None
    return (f"On a tmpfs of its own (disk full): {', '.join(parts)}. Once the topology is up, "
            "the lab stops each node, moves the files there and starts it again (needs root).")


def iofs_line(plan: Plan) -> str | None:
    """The nodes whose data directory goes on lab-iofs because the file has io faults on them,
    and what that does to O_DIRECT."""
    if not plan.iofs_nodes:
        return None
    how = ("Before each node's container is made, the lab mounts lab-iofs (FUSE, on this "
           "machine) under the run's directory and bind-mounts it into the container as the "
           "node's data directory." if plan.backend == "containers" else
           "Once the topology is up, the lab stops each, mounts lab-iofs (FUSE) over its data "
           "directory and starts it again.")
    return (f"On lab-iofs (io delay, io fail): {', '.join(plan.iofs_nodes)}. {how} "
            "innodb_flush_method is unchanged: files opened with O_DIRECT "
            "bypass the kernel's page cache on the mount (FUSE direct_io) and lab-iofs writes "
            "them to the files underneath without O_DIRECT (through their page cache; fsync is "
            "passed on). InnoDB writes its redo log buffered there (innodb_log_file_buffering "
            "ON: no block device to ask for a block size), where a native disk gets O_DIRECT.")


def _table(title: str, *columns: str) -> Table:
    table = Table(title=title, title_justify="left", show_lines=False)
    for col in columns:
        table.add_column(col)
    return table


def _row(table: Table, *cells: object) -> None:
    table.add_row(*(Text(str(c)) for c in cells))


def _workload_bound(w: PlannedWorkload) -> str:
    parts = []
    if w.duration is not None:
        parts.append(f"duration {seconds(w.duration)}")
    if w.rows is not None:
        parts.append(f"rows {w.rows}")
    if w.ops is not None:
        parts.append(f"operations {w.ops}")
    return ", ".join(parts) or "-"


# the transactional workloads and the settings the language accepts on each
TXN_SETTINGS = {k: WORKLOAD_STATEMENTS[k] for k in ("list_append", "read_modify_write", "bank")}


def _workload_details(w: PlannedWorkload) -> str:
    parts = []
    if w.script:
        parts.append(f"script {w.script}")
    if w.kind == "sysbench":
        parts.append(f"threads {w.threads}, tables {w.tables}, table_size {w.table_size}")
    else:
        parts.append(f"clients {w.clients}")
    if w.kind == "probe":
        parts.append(f"operation {w.operation}")
    if w.kind == "unique_insert":
        parts.append(f"keys {w.keys}")
    if w.kind in TXN_SETTINGS:  # every setting of a transactional workload, defaults included
        allowed = TXN_SETTINGS[w.kind]
        parts.append(f"keys {w.key_count}")
        if "txn_length" in allowed:
            parts.append(f"txn_length {w.txn_length}")
        if "read_fraction" in allowed and w.read_fraction is not None:
            parts.append(f"read_fraction {w.read_fraction * 100:g}%")
        parts.append(f"distribution {w.distribution}")
        parts.append(f"isolation {w.isolation or 'the server default'}")
        if "for_update" in allowed:
            parts.append("for update" if w.for_update else "no for update")
    if w.rate is not None:
        parts.append(f"rate {w.rate:g}/s")
    if w.every is not None:
        parts.append(f"every {seconds(w.every)}")
    if w.kind != "sysbench":
        parts.append(f"timeout {seconds(w.timeout)}")
    return "\n".join(parts)


def _at_the_end(plan: Plan) -> str:
    """What becomes of the faults when the load ends: healed, all left (``leave faults``),
    or healed but those a ``for good`` leaves."""
    if plan.leave_faults:
        return "left in place"
    left = [describe(a) for a in plan.actions() if is_left(a)]
    if not left:
        return "healed"
    return f"healed, but {'; '.join(left)} (for good: never undone)"


BACKEND_WORDS = {
    "native": "native (processes on this machine)",
    "containers": "containers (one per node; DOCKER_HOST or a private podman)",
}


def backend_text(plan: Plan) -> str:
    """The backend line of ``lab plan``: on containers, which image each node runs (the lab's
    node image unless the file names one; a MongoDB member its engine's official image)."""
    text = BACKEND_WORDS[plan.backend]
    if plan.backend != "containers" or not plan.cells:
        return text
    images: dict[str, list[str]] = {}
    for n in plan.cells[0].nodes:
        ref = n.image
        if ref is None and plan.topology == "mongodb_replset":
            from runners.containers.mongo import default_image

            ref = default_image(plan.engine.flavor, plan.engine.version)
        images.setdefault(ref or "rcl-node (the lab's node image)", []).append(n.name)
    parts = [f"{', '.join(names)}: {ref}" for ref, names in images.items()]
    if plan.router is not None and plan.router.kind == "proxysql":
        from runners.components import which
        from runners.containers.proxysql import DEFAULT_IMAGE

        local = plan.router.image is None and which("proxysql") is not None
        parts.append("router: this machine's proxysql in the node image" if local
                     else f"router: {plan.router.image or DEFAULT_IMAGE}")
    return f"{text}; images: " + "; ".join(parts)


def _summary(plan: Plan) -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column()
    engine = plan.engine.flavor + (
        f" {plan.engine.version}" if plan.engine.version else " (any version found)"
    )
    topology: str = plan.topology
    if plan.replication_mode:
        topology += f", {plan.replication_mode} replication"
    flags = [
        name for name, on in (("semi_sync", plan.semi_sync), ("crash_safe", plan.crash_safe)) if on
    ]
    if plan.auto_increment_offsets is not None:
        flags.append(f"auto_increment_offsets {'on' if plan.auto_increment_offsets else 'off'}")
    rows = [
        ("experiment", plan.name),
        ("title", plan.title or "-"),
        ("description", plan.description or "-"),
        ("source", plan.source or "-"),
        ("tags", ", ".join(plan.tags) or "-"),
        ("seed", str(plan.seed)),
        ("duration", seconds(plan.duration)),
        ("topology", topology + (f" ({', '.join(flags)})" if flags else "")),
        ("engine", engine),
        ("backend", backend_text(plan)),
        ("base port", f"{plan.base_port} (the runtime picks a free base per run)"),
        ("faults at the end", _at_the_end(plan)),
        ("runs", _plural(len(plan.cells), "cell") + " (see the matrix)"),
    ]
    for key, value in rows:
        table.add_row(Text(key), Text(value))
    return table


def _node_table(nodes: list[PlannedNode]) -> Table:
    table = _table("Nodes", "node", "role", "server id", "client port", "replicates from")
    for n in nodes:
        upstream = ", ".join(n.replicates_from) or "-"
        if n.delay is not None:
            upstream += f" (delayed by {seconds(n.delay)})"
        _row(table, n.name, n.role, n.server_id, f"{n.port} (base +{n.port_offset})", upstream)
    return table


ORIGIN_LABELS = {"lab": "lab", "default": "lab default", "lab+file": "file + lab"}
CONFIG_CAPTION = (
    "lab: set by the lab, a file cannot change it; lab default: a file may override it; "
    "file + lab: the file's merged with the lab's. Paths are inside the node's directory of "
    "the run, ports use the base port above. Added when the node starts: {runtime}."
)


def _origin(key: str, nodes: list[PlannedNode]) -> str:
    """Where a setting's value comes from, e.g. ``lab default`` or
    ``lab default; file on db2``."""
    groups: dict[str, list[str]] = {}
    for n in nodes:
        if key in n.config:
            label = ORIGIN_LABELS.get(n.origins.get(key, ""), "file")
            groups.setdefault(label, []).append(n.name)
    if len(groups) == 1:
        return next(iter(groups))
    return "; ".join(f"{label} on {', '.join(names)}" for label, names in groups.items())


def _config_table(nodes: list[PlannedNode], title: str) -> Table:
    """One row per setting, one column per node: the effective server config, and where each
    value comes from."""
    table = _table(title, "setting", "from", *(n.name for n in nodes))
    for column in table.columns:
        column.overflow = "fold"  # a narrow terminal wraps values, never cuts them
    table.columns[0].no_wrap = True  # setting names stay whole
    table.caption = CONFIG_CAPTION.format(runtime=", ".join(sorted(RUNTIME)))
    table.caption_justify = "left"
    keys: dict[str, None] = {}
    for n in nodes:
        keys.update(dict.fromkeys(n.config))
    for key in keys:
        # "-": not in that node's option file, so the server's default (a primary's read_only:
        # OFF)
        values = (n.config.get(key, "-").replace("; ", ";\n") for n in nodes)  # Galera's
        _row(table, key, _origin(key, nodes), *values)
    return table


# Options the lab passes on the server's command line, not in its option file (runners.bare)
ARGV_OPTIONS = {
    "primary_primary": "--skip-slave-start (the lab wires replication itself once both run)",
}
SERVER_DEFAULTS_NOTE = (
    "Every setting not listed, and every '-' in a node's column, is the server's own default: "
    "for example innodb_flush_method (O_DIRECT on MariaDB since 10.6), innodb_doublewrite, "
    "sync_binlog on a single server, a primary's read_only (OFF)."
)


def links_rows(plan: Plan) -> list[tuple[str, str, str, str]]:
    """The toxiproxy links a run creates (``dsl.backends.uses_links``; ``dsl.ports``):
    (link, listens on, forwards to, what goes through it). On containers toxiproxy is a
    container on the run's network: a client link is published on 127.0.0.1, a replication
    link listens in that container and leads to the node by name."""
    from dsl.backends import uses_links
    from dsl.ports import CLIENT_PROXY_OFFSET, REPLICATION_PROXY_OFFSET, TOXIPROXY_API_OFFSET

    if not plan.cells or not uses_links(plan.actions(), plan.backend):
        return []
    ctr = plan.backend == "containers"
    base = plan.base_port
    nodes = plan.cells[0].nodes
    by_name = {n.name: n for n in nodes}
    rows = [("toxiproxy API", f"{base + TOXIPROXY_API_OFFSET}", "-",
             "the lab's own" + (" (toxiproxy's container, published)" if ctr else ""))]
    for n in nodes:
        via = "clients that name the node, and the router" if plan.router else \
            "clients that name the node"
        rows.append((f"{n.name}.clients", f"{base + CLIENT_PROXY_OFFSET + n.index}",
                     f"{n.name}:3306" if ctr else f"{n.name} ({n.port})", via))
    for n in nodes:
        for up in n.replicates_from:
            port = base + REPLICATION_PROXY_OFFSET + n.index
            rows.append((f"{n.name}.replication", f"toxiproxy:{port}" if ctr else f"{port}",
                         f"{up}:3306" if ctr else f"{up} ({by_name[up].port})",
                         f"{n.name}'s replication from {up}"
                         + (" (follows a promote)" if plan.topology == "replication" else "")))
    if plan.topology in ("galera", "mongodb_replset"):
        rows.append(("group", "-", "-", "not a proxy: `on group` cuts the group port with "
                     "iptables (root)" if not ctr else "not a proxy: `on group` cuts the "
                     "node from its peers with iptables inside its container"))
    if ctr:
        rows.append(("partitions", "-", "-", "a partition or link_down of a node on group or "
                     "all is a cut inside its container (iptables), not a proxy"))
    return rows


def _matrix_table(plan: Plan) -> Table:
    base = {n.name: n.config for n in plan.cells[0].nodes} if plan.cells else {}
    table = _table(
        "Matrix: variants x vary values x repeats",
        "#",
        "label",
        "variant",
        "values",
        "repeat",
        "config changes vs cell 1",
    )
    for cell in plan.cells:
        _row(
            table,
            cell.index,
            cell.label,
            cell.variant or "-",
            ", ".join(f"{k}={v}" for k, v in cell.sweep.items()) or "-",
            cell.repeat,
            _changes(plan, cell, base),
        )
    return table


def _changes(plan: Plan, cell: Cell, base: dict[str, dict[str, str]]) -> str:
    """What differs from cell 1: each server setting, with the nodes it changed on when not
    all of them, and the router's own variables (a sweep's ``set ... = $x``)."""
    from dsl.router_settings import resolve

    changed: dict[tuple[str, str], list[str]] = {}
    for n in cell.nodes:
        for k, v in n.config.items():
            if base.get(n.name, {}).get(k) != v:
                changed.setdefault((k, v), []).append(n.name)
    everyone = [n.name for n in cell.nodes]
    lines = [f"{k} = {v}" + ("" if nodes == everyone else f" ({', '.join(nodes)})")
             for (k, v), nodes in changed.items()]
    if plan.router is not None and plan.router.settings and plan.cells:
        first = resolve(plan.router.settings, plan.cells[0].sweep)
        mine = resolve(plan.router.settings, cell.sweep)
        lines += [f"{plan.router.kind}: {k} = {v}" for k, v in mine.items() if first.get(k) != v]
    return "\n".join(lines) or "-"


def render_plan(plan: Plan, console: Console) -> None:
    console.print(_summary(plan))
    first = plan.cells[0] if plan.cells else None
    if first is not None:
        console.print(_node_table(first.nodes))
        for line in (faketime_line(plan), tmpfs_line(plan), iofs_line(plan)):
            if line:
                console.print(Text(line))
        title = "Effective server config" + (
            " (cell 1; other cells in the matrix below)" if len(plan.cells) > 1 else ""
        )
        console.print(_config_table(first.nodes, title))
        extra = ARGV_OPTIONS.get(plan.topology)
        if extra:
            console.print(Text(f"Also on every server's command line: {extra}."))
        console.print(Text(SERVER_DEFAULTS_NOTE))
    links = links_rows(plan)
    if links:
        table = _table("Network links (toxiproxy)", "link", "listens on", "forwards to",
                       "carries")
        for row in links:
            _row(table, *row)
        console.print(table)
    if plan.router is not None:
        r = plan.router
        table = _table(
            "Router", "kind", "writers", "readers", "check every", "router.writer", "router.reader"
        )
        _row(
            table,
            r.kind,
            ", ".join(r.writers),
            ", ".join(r.readers) or "-",
            seconds(r.check_interval),
            f"{r.writer_port} (+{r.writer_port_offset})",
            f"{r.reader_port} (+{r.reader_port_offset})" if r.readers else "-",
        )
        console.print(table)
        if r.kind == "proxysql":  # the monitor's variables the lab derives from check every
            from runners.proxysql import mode_for
            from runners.proxysql_config import interval_ms, monitor_variables

            for key, value in monitor_variables(mode_for(plan.topology),
                                                interval_ms(r.check_interval)):
                if key not in r.settings:
                    why = "from check every" if isinstance(value, int) else "the lab's"
                    console.print(Text(f"  proxysql: {key} = {value} ({why})"))
            console.print(Text("  proxysql: every other mysql-* variable is ProxySQL's own "
                               "default unless set below"))
        for key, value in r.settings.items():  # proxysql's own variables, set by the file
            console.print(Text(f"  {r.kind}: {key} = {value}"
                               + (" (per cell: the sweep's value)" if value.startswith("$")
                                  else "")))
    if first is not None and first.workloads:
        table = _table(
            "Workloads" + (" (cell 1)" if len(plan.cells) > 1 else ""),
            "workload",
            "kind",
            "target",
            "runs",
            "settings",
        )
        for w in first.workloads:
            target = ", ".join(w.targets)
            if w.reads:
                target = f"write {target}\nread {', '.join(w.reads)}"
            runs = _workload_bound(w) + (f"\nstarts after {w.start_after}" if w.start_after else "")
            _row(table, w.name, w.kind, target, runs, _workload_details(w))
        console.print(table)
    if plan.steps or plan.timeline:
        table = _table("Fault schedule", "when", "action")
        for step in plan.steps:
            when = "before load" if step.when == "before_load" else f"after {step.workload}"
            for i, action in enumerate(step.actions):
                _row(table, when if i == 0 else "", describe_action(action))
        for when, words in schedule_rows(plan):
            _row(table, when, words)
        console.print(table)
    if plan.triggers:
        table = _table("Triggers (when)", "condition", "action", "then", "may fire")
        table.columns[0].overflow = "fold"  # the condition as written, never cut
        table.caption = trigger_caption(plan)
        table.caption_justify = "left"
        for row in trigger_rows(plan):
            _row(table, *row)
        console.print(table)
    if plan.expectations or plan.reports:
        table = _table("Measurements", "line", "statistic")
        for e in plan.expectations:
            _row(table, e.text, e.metric.stat or "-")
        for rep in plan.reports:
            _row(table, rep.text, rep.metric.stat or "-")
        console.print(table)
    console.print(_matrix_table(plan))
