"""Faults ("nemeses") and other actions, applied to a running topology.

Every action is recorded in the history as an ``invoke`` (start) and ``ok``/``fail`` (end) with
``process == NEMESIS``; what it changed is remembered so that ``heal_all`` can undo it when the
experiment ends (unless the file says ``leave faults``). Values from the experiment reach
servers only as SQL literals checked here or as argv elements, never through a shell.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dsl.models import (
    Action,
    ConvertStandalone,
    DropCaches,
    NetworkFault,
    NodeAction,
    Promote,
    ReplicationControl,
    RunSql,
    SetGlobal,
    Sleep,
    WaitUntil,
)
from runners import replication
from runners.errors import ComponentError
from runners.mysql import connect, execute_all, wait_until
from runners.node import Node
from runners.ops import NEMESIS, Op
from runners.topology import Topology

log = logging.getLogger(__name__)

NUMBER = re.compile(r"^-?\d+(\.\d+)?$")
WORD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
NAME = re.compile(r"^[A-Za-z0-9_]+$")
DROP_WAIT = 2.0  # seconds the timeline waits for the kernel to finish dropping the page cache
SIZE = re.compile(r"^(\d+)([KMG])$", re.I)


class ActionFailed(RuntimeError):
    """An action could not be carried out (a wait timed out, a node refused). The run fails
    clearly with this message."""


def sql_literal(value: str) -> str:
    """A value for SET GLOBAL: a number or a word as is, a size like 64M in bytes, else a
    quoted string."""
    if NUMBER.match(value) or WORD.match(value):
        return value
    m = SIZE.match(value)
    if m:
        return str(int(m.group(1)) * 1024 ** "KMG".index(m.group(2).upper()) * 1024)
    escaped = value.replace("\\", "\\\\").replace("'", "\\'")
    return f"'{escaped}'"


def describe(action: Action) -> tuple[str, str | None]:
    """(fault name for the history, node)"""
    node = getattr(action, "node", None)
    node_name = getattr(node, "name", None) if node is not None else None
    if isinstance(action, NodeAction):
        return action.verb, node_name
    if isinstance(action, ReplicationControl):
        return f"{action.verb}_replication", node_name
    if isinstance(action, NetworkFault):
        return action.verb, node_name
    if isinstance(action, WaitUntil):
        return f"wait_{action.condition}", node_name
    return action.action, node_name


@dataclass
class Nemesis:
    topo: Topology
    record: Callable[[Op], Op]
    facts: dict[str, Any] = field(default_factory=dict)
    down: set[str] = field(default_factory=set)  # killed or stopped nodes
    paused: set[str] = field(default_factory=set)
    replication_stopped: set[str] = field(default_factory=set)
    damaged_links: set[str] = field(default_factory=set)
    iptables_rules: list[list[str]] = field(default_factory=list)
    start_options: dict[str, dict[str, str]] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    former_primaries: set[str] = field(default_factory=set)

    # --- bookkeeping ---------------------------------------------------------------------------
    def apply(self, action: Action) -> dict[str, Any]:
        name, node = describe(action)
        t0 = time.monotonic_ns()
        self.record(Op("invoke", name, NEMESIS, t0, "nemesis", "", node))
        try:
            detail = self._dispatch(action) or {}
        except Exception as e:
            self.record(Op("fail", name, NEMESIS, time.monotonic_ns(), "nemesis", "", node,
                           error_msg=str(e)[:500]))
            self.events.append({"fault": name, "node": node, "start_ns": t0,
                                "end_ns": time.monotonic_ns(), "error": str(e)[:2000]})
            raise
        t1 = time.monotonic_ns()
        self.record(Op("ok", name, NEMESIS, t1, "nemesis", "", node, value=detail or None))
        self.events.append({"fault": name, "node": node, "start_ns": t0, "end_ns": t1,
                            "detail": detail})
        return detail

    def node(self, name: str) -> Node:
        return self.topo.nodes[name]

    def _dispatch(self, a: Action) -> dict[str, Any] | None:
        if isinstance(a, NodeAction):
            return self._node_action(a)
        if isinstance(a, DropCaches):
            return self._drop_caches(a)
        if isinstance(a, Promote):
            return self._promote(a.node.name)
        if isinstance(a, ReplicationControl):
            return self._replication(a)
        if isinstance(a, NetworkFault):
            return self._network(a)
        if isinstance(a, SetGlobal):
            return self._set_global(a)
        if isinstance(a, WaitUntil):
            return self._wait(a)
        if isinstance(a, Sleep):
            time.sleep(a.seconds)
            return None
        if isinstance(a, RunSql):
            return self._sql(a)
        if isinstance(a, ConvertStandalone):
            if self.topo.plan.topology != "mongodb_replset":
                raise ActionFailed("convert to standalone needs a MongoDB replica set")
            from fault.mongo_actions import convert_standalone

            # The removed members are not "down": healing must not restart them as members
            # of a set that no longer has them.
            return convert_standalone(self.topo, a.node.name)
        raise ActionFailed(f"unknown action {a!r}")

    # --- process -----------------------------------------------------------------------------
    def _node_action(self, a: NodeAction) -> dict[str, Any]:
        n = self.node(a.node.name)
        verb = a.verb
        opts = dict(a.options)
        if verb == "kill":
            n.kill()
            self.down.add(n.name)
        elif verb == "pause":
            n.pause()
            self.paused.add(n.name)
        elif verb == "resume":
            n.resume()
            self.paused.discard(n.name)
        elif verb == "stop":
            n.stop()
            self.down.add(n.name)
        elif verb in ("start", "restart"):
            t0 = time.monotonic()
            if verb == "start":
                n.start(opts)
            else:
                n.restart(opts)
            self.down.discard(n.name)
            out: dict[str, Any] = {"ready_seconds": round(time.monotonic() - t0, 3),
                                   "options": opts}
            if n.name in self.former_primaries:
                out["rejoined_as_replica_of"] = self.rejoin(n.name)
            return out
        elif verb == "cold_restart":
            # The buffer pool is not reloaded and the node's files are evicted from the cache.
            n.stop()
            evicted = evict_files(n.datadir)
            opts.setdefault("innodb_buffer_pool_load_at_startup", "OFF")
            t0 = time.monotonic()
            n.start(opts)
            return {"evicted_bytes": evicted, "ready_seconds": round(time.monotonic() - t0, 3)}
        return {"pid": n.pid()}

    # --- cache ---------------------------------------------------------------------------------
    def _drop_caches(self, a: DropCaches) -> dict[str, Any]:
        if a.node is None:
            if not os.access("/proc/sys/vm/drop_caches", os.W_OK):
                raise ActionFailed("dropping the whole OS page cache needs root "
                                   "(/proc/sys/vm/drop_caches is not writable); "
                                   "use `drop caches on NODE` to evict one node's files")
            before = cached_bytes_total()
            # 1: the page cache (what the write-ups drop). No sync first: under load a sync
            # can block for many seconds (measured: 11 s); the drop evicts clean pages.
            # Under a read load through the page cache the kernel's drop itself can take
            # until the load stops (measured: 30 s): the timeline does not wait more than
            # DROP_WAIT for it, and the detail says whether it had finished.
            done = threading.Event()

            def drop() -> None:
                with contextlib.suppress(OSError):
                    Path("/proc/sys/vm/drop_caches").write_text("1\n")
                done.set()

            t0 = time.monotonic()
            threading.Thread(target=drop, daemon=True, name="drop-caches").start()
            finished = done.wait(DROP_WAIT)
            return {"scope": "os", "cached_before": before, "cached_after": cached_bytes_total(),
                    "finished": finished, "seconds": round(time.monotonic() - t0, 3)}
        n = self.node(a.node.name)
        before = resident_bytes(n.datadir)
        evict_files(n.datadir)
        return {"scope": n.name, "resident_before": before,
                "resident_after": resident_bytes(n.datadir)}

    # --- replication ---------------------------------------------------------------------------
    def _replication(self, a: ReplicationControl) -> dict[str, Any]:
        n = self.node(a.node.name)
        thread = {"both": "", "io": " IO_THREAD", "sql": " SQL_THREAD"}[a.threads]
        execute_all(n.addr, n.admin, [f"{a.verb.upper()} SLAVE{thread}"])
        if a.verb == "stop":
            self.replication_stopped.add(n.name)
        elif a.threads == "both":
            self.replication_stopped.discard(n.name)
        return {"threads": a.threads}

    def _promote(self, name: str) -> dict[str, Any]:
        topo = self.topo
        t0 = time.monotonic()
        new = self.node(name)
        execute_all(new.addr, new.admin, list(replication.PROMOTE_STATEMENTS))
        t_promoted = time.monotonic()
        others = [n for n in topo.nodes.values()
                  if n.name not in (name, topo.primary) and n.name not in self.down]
        for other in others:
            port = new.port
            if topo.toxi and f"{other.name}.replication" in topo.toxi.links:
                topo.toxi.set_upstream(f"{other.name}.replication", new.port)
                port = topo.toxi.links[f"{other.name}.replication"].listen
            execute_all(other.addr, other.admin, replication.repoint(port, topo.repl))
        t_repointed = time.monotonic()
        switch = 0.0
        if topo.router is not None:
            switch = topo.router.move_writer(name)
        old = topo.primary
        if old is not None:
            self.former_primaries.add(old)
        self.former_primaries.discard(name)
        topo.primary = name
        # Workloads that target the old primary by name keep doing so; the router moved.
        return {"old_primary": old, "new_primary": name,
                "promote_seconds": round(t_promoted - t0, 4),
                "repoint_seconds": round(t_repointed - t_promoted, 4),
                "router_switch_seconds": round(switch, 4)}

    def rejoin(self, name: str) -> str:
        """A former primary that comes back joins the current primary as a read-only replica
        (GTID ``current_pos``: transactions only it has make replication stop, honestly)."""
        topo = self.topo
        assert topo.primary is not None
        n, primary = self.node(name), self.node(topo.primary)
        port = primary.port
        link = f"{name}.replication"
        if topo.toxi and link in topo.toxi.links:
            topo.toxi.set_upstream(link, primary.port)
            port = topo.toxi.links[link].listen
        execute_all(n.addr, n.admin, replication.repoint(port, topo.repl, "current_pos",
                                                          read_only=True))
        self.former_primaries.discard(name)
        return topo.primary

    # --- network -------------------------------------------------------------------------------
    def _network(self, a: NetworkFault) -> dict[str, Any]:
        topo = self.topo
        node = a.node.name if a.node else None
        if a.link == "group" or (topo.plan.topology == "galera" and a.verb == "partition"
                                 and a.link == "all"):
            return self._galera_partition(node, heal=a.verb == "heal")
        if topo.toxi is None:
            raise ActionFailed("network faults need toxiproxy links, which were not created")
        links = topo.toxi.links_of(node, "all" if a.link == "all" else a.link)
        if a.verb == "heal":
            for link in links:
                topo.toxi.heal(link)
                self.damaged_links.discard(link)
            if node is None or a.link in ("all", "group"):
                with contextlib.suppress(ActionFailed):
                    self._galera_partition(node, heal=True)
            return {"links": links}
        if not links:
            raise ActionFailed(f"no {a.link} link for {node}")
        for link in links:
            if a.verb == "latency":
                ms = int(round((a.latency or 0) * 1000))
                jitter = int(round((a.jitter or 0) * 1000))
                topo.toxi.add_toxic(link, f"latency_down_{len(self.events)}", "latency",
                                    {"latency": ms, "jitter": jitter})
            elif a.verb == "bandwidth":
                kbps = max(1, int((a.bandwidth or 0) / 1024))
                topo.toxi.add_toxic(link, f"bandwidth_{len(self.events)}", "bandwidth",
                                    {"rate": kbps})
            elif a.verb == "partition":
                topo.toxi.add_toxic(link, f"blackhole_down_{len(self.events)}", "timeout",
                                    {"timeout": 0})
                topo.toxi.add_toxic(link, f"blackhole_up_{len(self.events)}", "timeout",
                                    {"timeout": 0}, stream="upstream")
            elif a.verb == "link_down":
                topo.toxi.set_enabled(link, False)
            self.damaged_links.add(link)
        return {"links": links}

    def _galera_partition(self, node: str | None, heal: bool) -> dict[str, Any]:
        if heal:
            for rule in self.iptables_rules:
                subprocess.run(["iptables", "-D", *rule], capture_output=True)
            n = len(self.iptables_rules)
            self.iptables_rules = []
            return {"removed_rules": n}
        if os.geteuid() != 0:
            raise ActionFailed("partitioning Galera group traffic needs root (iptables)")
        if node is None:
            raise ActionFailed("partition needs a node")
        n = self.node(node)
        port = self.topo.run.ports.galera_group(n.index)
        rules = [["INPUT", "-i", "lo", "-p", "tcp", "--dport", str(port), "-j", "DROP"],
                 ["INPUT", "-i", "lo", "-p", "tcp", "--sport", str(port), "-j", "DROP"]]
        for rule in rules:
            out = subprocess.run(["iptables", "-I", *rule], capture_output=True, text=True)
            if out.returncode != 0:
                raise ActionFailed(f"iptables: {out.stderr.strip()}")
            self.iptables_rules.append(rule)
        return {"port": port}

    # --- config, sql, waits ----------------------------------------------------------------------
    def _set_global(self, a: SetGlobal) -> dict[str, Any]:
        if not NAME.match(a.name):
            raise ActionFailed(f"not a variable name: {a.name!r}")
        targets = [n.name for n in a.nodes] or [n for n in self.topo.nodes if n not in self.down]
        stmt = f"SET GLOBAL {a.name} = {sql_literal(a.value)}"
        for name in targets:
            n = self.node(name)
            execute_all(n.addr, n.admin, [stmt])
        return {"nodes": targets, "statement": stmt}

    def _sql(self, a: RunSql) -> dict[str, Any]:
        addr = self.topo.address(a.node.name)
        conn = connect(addr, self.topo.admin, timeout=3600)
        try:
            cur = conn.cursor()
            cur.execute(a.statement)
            cur.close()
        finally:
            conn.close()
        return {"statement": a.statement[:200]}

    def _wait(self, a: WaitUntil) -> dict[str, Any]:
        cond = a.condition
        name = a.node.name if a.node else None
        check: Callable[[], bool]
        if self.topo.plan.topology == "mongodb_replset":
            from fault import mongo_actions

            mongo_checks: dict[str, Callable[[], bool]] = {
                "primary_elected": lambda: mongo_actions.primary_elected(self.topo),
                "caught_up": lambda: all(mongo_actions.caught_up(self.topo, n) for n in (
                    [name] if name else list(self.topo.nodes))),
                "up": lambda: bool(name) and self._answers(name),  # type: ignore[arg-type]
                "down": lambda: bool(name) and not self._answers(name),  # type: ignore[arg-type]
            }
            if cond not in mongo_checks:
                raise ActionFailed(f"wait until {cond} does not apply to a MongoDB replica set")
            check = mongo_checks[cond]
        elif cond == "caught_up":
            names = [name] if name else [n for n in self.topo.nodes if n != self.topo.primary]
            check = lambda: all(self.caught_up(n) for n in names)  # noqa: E731
        elif cond == "downloaded":
            assert name is not None
            check = lambda: self.downloaded(name)  # noqa: E731
        elif cond == "synced":
            names = [name] if name else list(self.topo.nodes)
            check = lambda: all(replication.synced(self.node(n)) for n in names)  # noqa: E731
        elif cond == "primary_elected":
            check = self._primary_elected
        elif cond == "up":
            assert name is not None
            check = lambda: self.node(name).scalar("SELECT 1", timeout=1) == 1  # noqa: E731
        else:  # down
            assert name is not None
            check = lambda: not self._answers(name)  # noqa: E731
        try:
            waited = wait_until(check, a.timeout, cond.replace("_", " "),
                                f"wait until {name or 'all'} {cond}", interval=0.02)
        except ComponentError as e:
            raise ActionFailed(f"wait until {name or ''} {cond}: not reached within "
                               f"{a.timeout:g}s ({e.message})") from None
        return {"waited_seconds": round(waited, 3)}

    def _answers(self, name: str) -> bool:
        node = self.node(name)
        ping = getattr(node, "ping", None)
        try:
            if ping is not None:  # a MongoDB member
                return bool(ping())
            return node.scalar("SELECT 1", timeout=1) == 1
        except Exception:  # noqa: BLE001
            return False

    def _primary_elected(self) -> bool:
        if self.topo.router is not None:
            return bool(self.topo.router.up_servers("writer"))
        for n in self.topo.nodes.values():
            with contextlib.suppress(Exception):
                if int(n.scalar("SELECT @@read_only", timeout=1)) == 0:
                    return True
        return False

    def caught_up(self, name: str) -> bool:
        """The replica has applied everything of the running primary (or, with the primary
        down, everything it downloaded)."""
        primary = self.topo.primary
        up = None if primary is None or primary in self.down else self.node(primary)
        return replication.caught_up(self.node(name), up)

    def downloaded(self, name: str) -> bool:
        assert self.topo.primary is not None
        return replication.downloaded(self.node(name), self.node(self.topo.primary))

    # --- healing -----------------------------------------------------------------------------------
    def heal_all(self) -> list[str]:
        """Undo every fault still in force: resume, start, restart replication, heal links."""
        done: list[str] = []
        for name in sorted(self.paused):
            with contextlib.suppress(Exception):
                self.node(name).resume()
                done.append(f"resume {name}")
        self.paused.clear()
        if self.topo.toxi:
            for link in sorted(self.damaged_links):
                with contextlib.suppress(Exception):
                    self.topo.toxi.heal(link)
                    done.append(f"heal {link}")
        self.damaged_links.clear()
        if self.iptables_rules:
            self._galera_partition(None, heal=True)
            done.append("heal group partition")
        for name in sorted(self.down):
            try:
                self.node(name).start()
                done.append(f"start {name}")
                if name in self.former_primaries:
                    self.rejoin(name)
                    done.append(f"rejoin {name} as a replica")
            except Exception as e:  # noqa: BLE001
                log.warning("could not restart %s while healing: %s", name, e)
        self.down.clear()
        for name in sorted(self.replication_stopped):
            with contextlib.suppress(Exception):
                execute_all(self.node(name).addr, self.topo.admin, ["START SLAVE"])
                done.append(f"start replication {name}")
        self.replication_stopped.clear()
        return done


# --- page cache helpers ------------------------------------------------------------------------------

def _files(root: Path) -> list[Path]:
    out: list[Path] = []
    for dirpath, _, files in os.walk(root):
        for f in files:
            p = Path(dirpath) / f
            if p.is_file() and not p.is_symlink():
                out.append(p)
    return out


def evict_files(root: Path) -> int:
    """Evict a directory's files from the page cache (no privileges needed). Returns bytes."""
    total = 0
    for p in _files(root):
        try:
            fd = os.open(p, os.O_RDONLY)
        except OSError:
            continue
        try:
            os.fdatasync(fd)
            size = os.fstat(fd).st_size
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            total += size
        except OSError:
            pass
        finally:
            os.close(fd)
    return total


def resident_bytes(root: Path) -> int:
    """Bytes of a directory's files resident in the page cache (mmap + mincore)."""
    import ctypes
    import mmap

    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    page = mmap.PAGESIZE
    total = 0
    for p in _files(root):
        try:
            size = p.stat().st_size
            fd = os.open(p, os.O_RDONLY)
        except OSError:
            continue
        try:
            if size == 0:
                continue
            addr = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
            if addr in (None, ctypes.c_void_p(-1).value):
                continue
            try:
                pages = (size + page - 1) // page
                vec = (ctypes.c_ubyte * pages)()
                if libc.mincore(addr, size, vec) == 0:
                    total += sum(b & 1 for b in vec) * page
            finally:
                libc.munmap(addr, size)
        finally:
            os.close(fd)
    return total


def cached_bytes_total() -> int:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("Cached:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0
