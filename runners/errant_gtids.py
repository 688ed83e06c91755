"""Errant GTIDs: transactions a node has in its binary log that the current primary lacks.

MariaDB's GTIDs are ``domain-server_id-seq_no``. A server's ``@@gtid_binlog_state`` keeps,
per (domain, server_id), the last GTID it binlogged; with ``log_slave_updates`` (the lab's
default) that covers what it applied as a replica too. Within one (domain, server_id) the
sequence numbers only grow, and a replica applies one source's transactions in order, so:

- the primary (the authority) **has** ``d-s-q`` when its state for (d, s) is at least ``q``;
- a node's transaction ``d-s-q`` is **errant** when the authority's state for (d, s) is below
  ``q`` (or has no (d, s) at all): written on a replica directly, or by a former primary
  after the replica that replaced it was promoted (the writes a failover lost);
- transactions the node had when the load started (``baseline``: its own state then, e.g.
  the setup's) are not counted;
- the heartbeat's domain (the lab's own writes) is never counted.

Positions alone say which (domain, server_id) pairs hold errant transactions, not how many
(sequence numbers of a domain are shared by every server that writes in it). The list and the
count come from the node's binary logs (``SHOW BINARY LOGS``, ``SHOW BINLOG EVENTS``: the
``Gtid`` events), read only when a pair is ahead. When the binary logs cannot be read (purged,
too long), the count is unknown and ``at_least`` (one per pair ahead) is all that is known.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from runners.gtid import HEARTBEAT_DOMAIN
from runners.replication import SqlNode

Pair = tuple[int, int]  # (domain, server_id)
Gtid = tuple[int, int, int]  # (domain, server_id, seq_no)
MAX_LISTED = 100
MAX_EVENTS = 2_000_000  # binlog events read per node at most; past that the count is unknown
_GTID_RE = re.compile(r"GTID\s+(\d+)-(\d+)-(\d+)")


def parse_state(text: str) -> dict[Pair, int]:
    """``0-100-5,0-200-7,99-100-3`` -> {(0, 100): 5, (0, 200): 7, (99, 100): 3}."""
    out: dict[Pair, int] = {}
    for part in text.replace(" ", "").replace("\n", "").split(","):
        if not part:
            continue
        try:
            d, s, q = (int(x) for x in part.split("-"))
        except ValueError:
            continue
        out[(d, s)] = max(out.get((d, s), 0), q)
    return out


def format_gtid(g: Gtid) -> str:
    return f"{g[0]}-{g[1]}-{g[2]}"


def gtids_of_events(rows: Iterable[Mapping[str, Any]]) -> list[Gtid]:
    """The GTIDs of ``SHOW BINLOG EVENTS`` rows: ``Event_type`` ``Gtid`` with ``Info`` ``BEGIN
    GTID 0-1-5`` (a transaction) or ``GTID 0-1-6`` (DDL)."""
    out: list[Gtid] = []
    for r in rows:
        if str(r.get("Event_type", "")) != "Gtid":
            continue
        m = _GTID_RE.search(str(r.get("Info", "")))
        if m:
            out.append((int(m.group(1)), int(m.group(2)), int(m.group(3))))
    return out


def _floor(pair: Pair, authority: Mapping[Pair, int], baseline: Mapping[Pair, int]) -> int:
    return max(authority.get(pair, 0), baseline.get(pair, 0))


def pairs_ahead(node: Mapping[Pair, int], authority: Mapping[Pair, int],
                baseline: Mapping[Pair, int]) -> dict[Pair, tuple[int, int]]:
    """(domain, server_id) -> (the authority's or the baseline's seq_no, the node's) for the
    pairs where the node is ahead of both: each holds at least one errant transaction."""
    return {p: (_floor(p, authority, baseline), q) for p, q in node.items()
            if p[0] != HEARTBEAT_DOMAIN and q > _floor(p, authority, baseline)}


def errant(gtids: Iterable[Gtid], authority: Mapping[Pair, int],
           baseline: Mapping[Pair, int]) -> list[Gtid]:
    """The node's binlogged GTIDs the authority lacks (not the heartbeat's, not the
    baseline's), in binlog order, each once."""
    seen: set[Gtid] = set()
    out: list[Gtid] = []
    for g in gtids:
        d, s, q = g
        if d == HEARTBEAT_DOMAIN or g in seen:
            continue
        if q > _floor((d, s), authority, baseline):
            seen.add(g)
            out.append(g)
    return out


@dataclass
class ErrantReport:
    """One node's errant transactions. ``count`` None: unknown (the binlogs could not be
    read); ``at_least``: pairs ahead (always known when the states were read)."""

    count: int | None
    at_least: int
    gtids: list[str] = field(default_factory=list)
    by_source: dict[str, int] = field(default_factory=dict)  # "domain-server_id" -> count
    ahead: dict[str, list[int]] = field(default_factory=dict)  # "d-s" -> [authority, node]
    error: str = ""

    def as_json(self) -> dict[str, Any]:
        return {"count": self.count, "at_least": self.at_least, "gtids": self.gtids,
                "listed_truncated": self.count is not None and self.count > len(self.gtids),
                "by_source": self.by_source, "ahead": self.ahead, "error": self.error}


def report(node_state: Mapping[Pair, int], authority: Mapping[Pair, int],
           baseline: Mapping[Pair, int], gtids: Iterable[Gtid] | None,
           error: str = "") -> ErrantReport:
    """The report from positions and, when there is something ahead, the binlog's GTIDs
    (None: they could not be read)."""
    ahead = pairs_ahead(node_state, authority, baseline)
    shown = {f"{d}-{s}": [lo, hi] for (d, s), (lo, hi) in sorted(ahead.items())}
    if not ahead:
        return ErrantReport(0, 0, ahead=shown)
    if gtids is None:
        return ErrantReport(None, len(ahead), ahead=shown, error=error)
    found = errant(gtids, authority, baseline)
    by_source: dict[str, int] = {}
    for d, s, _ in found:
        by_source[f"{d}-{s}"] = by_source.get(f"{d}-{s}", 0) + 1
    return ErrantReport(len(found), len(ahead), [format_gtid(g) for g in found[:MAX_LISTED]],
                        by_source, shown, error)


# --- reading the servers ---------------------------------------------------------------------


def binlog_state(node: SqlNode, timeout: float = 5.0) -> dict[Pair, int]:
    return parse_state(str(node.scalar("SELECT @@global.gtid_binlog_state", timeout=timeout)
                           or ""))


def binlog_gtids(node: SqlNode, timeout: float = 30.0, max_events: int = MAX_EVENTS
                 ) -> list[Gtid]:
    """Every GTID in the node's binary logs, oldest first. Raises ``ValueError`` past
    ``max_events`` events (the count would take too long to be worth it)."""
    files = [str(r.get("Log_name")) for r in node.sql("SHOW BINARY LOGS", timeout=timeout)]
    out: list[Gtid] = []
    read = 0
    for f in files:
        rows = node.sql(f"SHOW BINLOG EVENTS IN '{f.replace(chr(39), '')}'", timeout=timeout)
        read += len(rows)
        if read > max_events:
            raise ValueError(f"more than {max_events} binlog events")
        out.extend(gtids_of_events(rows))
    return out


def read_errant(node: SqlNode, authority: Mapping[Pair, int], baseline: Mapping[Pair, int]
                ) -> ErrantReport:
    """One node's errant transactions against the authority's ``gtid_binlog_state``."""
    state = binlog_state(node)
    if not pairs_ahead(state, authority, baseline):
        return report(state, authority, baseline, [])
    try:
        gtids: list[Gtid] | None = binlog_gtids(node)
        error = ""
    except Exception as e:  # noqa: BLE001 - the positions still give a lower bound
        gtids, error = None, f"binary logs not readable: {e}"
    return report(state, authority, baseline, gtids, error)
