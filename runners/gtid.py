"""How far each node is from the authoritative state, from the servers' GTID positions.

Pure functions over positions read from the servers (``@@gtid_binlog_pos``,
``@@gtid_current_pos``, ``wsrep_last_committed``), so that each topology's definition of a
missing transaction is in one place and testable without servers:

- **replication** (one primary): the primary's ``gtid_binlog_pos`` is the truth; a node misses,
  per domain, the primary's highest sequence number minus its own ``gtid_current_pos`` (which
  covers what it applied as a replica *and* what it wrote itself as a former primary, so a
  rejoined old primary is not counted as missing its own transactions);
- **primary_primary**: every primary writes its own GTID domain; the truth per domain is the
  highest sequence number any node binlogged; each node misses the difference to its own
  ``gtid_current_pos``;
- **galera**: every node applies the same ordered write sets; a node misses the highest
  ``wsrep_last_committed`` of the cluster minus its own.

The heartbeat domain (the lab's own writes) is never counted.
"""

from __future__ import annotations

from collections.abc import Mapping

HEARTBEAT_DOMAIN = 99  # the lab's heartbeat writes in its own GTID domain


def parse_gtid(pos: str) -> dict[int, int]:
    """``0-100-5010,99-100-30`` -> {0: 5010, 99: 30} (highest seq_no per domain)."""
    out: dict[int, int] = {}
    for part in pos.replace(" ", "").replace("\n", "").split(","):
        if not part:
            continue
        try:
            dom, _server, seq = part.split("-")
            out[int(dom)] = max(out.get(int(dom), 0), int(seq))
        except ValueError:
            continue
    return out


def behind(truth: Mapping[int, int], mine: Mapping[int, int]) -> int:
    """Transactions in ``truth`` that ``mine`` has not reached, over every domain but the
    heartbeat's."""
    return sum(max(0, seq - mine.get(dom, 0)) for dom, seq in truth.items()
               if dom != HEARTBEAT_DOMAIN)


def missing_replication(primary: Mapping[int, int], current: Mapping[str, Mapping[int, int]]
                        ) -> dict[str, int]:
    """One primary: each other node's distance from the primary's binlog position."""
    return {n: behind(primary, pos) for n, pos in current.items()}


def missing_multi_primary(binlog: Mapping[str, Mapping[int, int]],
                          current: Mapping[str, Mapping[int, int]]) -> dict[str, int]:
    """Several primaries: per domain the highest position any node binlogged is the truth."""
    truth: dict[int, int] = {}
    for pos in binlog.values():
        for dom, seq in pos.items():
            truth[dom] = max(truth.get(dom, 0), seq)
    return {n: behind(truth, pos) for n, pos in current.items()}


def missing_galera(last_committed: Mapping[str, int]) -> dict[str, int]:
    """Galera: the distance from the most advanced node's ``wsrep_last_committed``."""
    if not last_committed:
        return {}
    top = max(last_committed.values())
    return {n: top - v for n, v in last_committed.items()}


def rejoin_position(node_current: str, primary_binlog: str) -> str:
    """The position a former primary rejoins from: its own ``gtid_current_pos`` in every
    domain but the heartbeat's, where it takes the new primary's. The lab's beats on the old
    primary that the new one never received are the lab's, not the user's: left in, they
    stop the rejoin with error 1236 (``GTID 99-100-143 ... not in the master's binlog``,
    measured) where no write of the user's is errant. Its own writes in the other domains
    stay: those that only it has stop replication, honestly."""
    def entries(pos: str) -> dict[int, str]:
        out: dict[int, str] = {}
        for part in pos.replace(" ", "").replace("\n", "").split(","):
            bits = part.split("-")
            if len(bits) == 3 and all(b.isdigit() for b in bits):
                out[int(bits[0])] = part
        return out

    mine, theirs = entries(node_current), entries(primary_binlog)
    mine.pop(HEARTBEAT_DOMAIN, None)
    if HEARTBEAT_DOMAIN in theirs:
        mine[HEARTBEAT_DOMAIN] = theirs[HEARTBEAT_DOMAIN]
    return ",".join(mine[d] for d in sorted(mine))

