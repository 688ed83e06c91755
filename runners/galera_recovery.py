"""A Galera cluster none of whose nodes runs, brought back the way a DBA does it.

1. **Recover positions**: each node's last committed write-set, read from its storage engine
   by ``mariadbd --wsrep-recover`` (the server recovers InnoDB, logs ``WSREP: Recovered
   position: UUID:SEQNO`` and exits: what ``mysqld_safe`` and ``galera_recovery`` do). After a
   crash ``grastate.dat`` says ``seqno: -1``; it is kept in the detail, never trusted.
2. **Bootstrap** from the most advanced node (highest seqno of the cluster's UUID; a tie goes
   to the first named): ``safe_to_bootstrap: 1`` in its ``grastate.dat``, its
   ``gvwstate.dat`` removed (``pc.recovery`` would otherwise wait for every member of the last
   primary component), started with ``--wsrep-new-cluster`` and its recovered position
   (``--wsrep_start_position``), until it is ready (``wsrep_ready = ON``, Primary): from here
   the cluster takes writes (``writable_after_seconds``, from the start of the recovery).
3. **Joins**: the others start with their own recovered positions and join it, by IST when
   the bootstrap node's gcache holds what they lack, else by SST (the join's ``transfer`` says
   which, from the node's error log), one at a time, each once the one before is Synced, as
   the lab's bring-up does and as a DBA is told to: two joiners started together kept
   dropping and re-making their group connections until one view took both (joins of 6 s
   and 9.5 s measured on an idle machine, against about 3 s for one joiner alone).

Every phase is in the history as a fault of its own (``recover_position``, ``bootstrap``,
``join``, on each node), so ``lab run`` and ``lab show`` list them with their times. Every
process started here is recorded with the run's processes first, so Ctrl-C, the run's teardown
and ``lab gc`` stop it (``runners.runtime``).

What differs between back-ends is the node's (``GaleraNode``): how the server runs once with
``--wsrep-recover`` (a process of this machine, or the node's container started with that
option), how a file of its data directory is read, and how it starts as a recovered member.
The steps and their order are this module's, the same on both.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from runners.errors import ComponentError
from runners.replication import SqlNode, galera_state, synced

RECOVERED = re.compile(r"WSREP: Recovered position:?\s+([0-9a-fA-F-]{36}):(-?\d+)")
GRASTATE_SEQNO = re.compile(r"^seqno:\s*(-?\d+)", re.M)
RECOVER_TIMEOUT = 180.0  # seconds: InnoDB's crash recovery of a busy redo log
READY_TIMEOUT = 120.0
JOIN_TIMEOUT = 300.0  # an SST of the data directory


@dataclass(frozen=True)
class Position:
    uuid: str
    seqno: int

    def __str__(self) -> str:
        return f"{self.uuid}:{self.seqno}"


def parse_recovered(log_text: str) -> Position | None:
    """The last ``WSREP: Recovered position: UUID:SEQNO`` of a ``--wsrep-recover`` log."""
    found = RECOVERED.findall(log_text)
    if not found:
        return None
    uuid, seqno = found[-1]
    return Position(uuid.lower(), int(seqno))


def grastate_seqno(text: str | None) -> int | None:
    """The ``seqno`` of a ``grastate.dat``'s text (None: no file, or no seqno in it)."""
    m = GRASTATE_SEQNO.search(text) if text is not None else None
    return int(m.group(1)) if m else None


class GaleraNode(SqlNode, Protocol):
    """What the recovery needs of a node, whatever runs it (``runners.node.ProcessNode``,
    ``runners.containers.node.ContainerNode``)."""

    error_log: Path

    @property
    def component(self) -> str: ...

    def save_log(self) -> Path: ...

    def data_file(self, name: str) -> str | None: ...

    def wsrep_recover(self, timeout: float) -> str: ...

    def start_recovered(self, position: str, bootstrap: bool) -> bool: ...


def set_safe_to_bootstrap(datadir: Path) -> None:
    """``safe_to_bootstrap: 1`` in the node's ``grastate.dat`` (the file keeps its owner)."""
    path = datadir / "grastate.dat"
    text = path.read_text()
    if re.search(r"^safe_to_bootstrap:", text, re.M):
        text = re.sub(r"^safe_to_bootstrap:\s*\d+", "safe_to_bootstrap: 1", text, flags=re.M)
    else:
        text = text.rstrip("\n") + "\nsafe_to_bootstrap: 1\n"
    path.write_text(text)


def most_advanced(positions: dict[str, Position]) -> str:
    """The node to bootstrap from: the highest seqno (first named on a tie). Nodes of another
    cluster UUID than the majority's lose (they would need a full SST anyway)."""
    uuids = [p.uuid for p in positions.values()]
    common = max(set(uuids), key=uuids.count)
    best = max((p.seqno, -i) for i, p in enumerate(positions.values()) if p.uuid == common)
    return list(positions)[-best[1]]


def recover_position(node: GaleraNode, timeout: float = RECOVER_TIMEOUT) -> Position:
    """``--wsrep-recover`` on the stopped node: its last committed position."""
    text = node.wsrep_recover(timeout)
    pos = parse_recovered(text)
    if pos is None:
        raise ComponentError(f"{node.component} --wsrep-recover",
                             "no 'Recovered position' in its log", node.save_log())
    return pos


def _ready(node: GaleraNode) -> bool:
    st = galera_state(node)
    return st.get("ready", "").upper() == "ON" and st.get("cluster_status") == "Primary"


def _wait(node: GaleraNode, check: Callable[[GaleraNode], bool], timeout: float,
          what: str) -> float:
    t0 = time.monotonic()
    while True:
        with contextlib.suppress(Exception):
            if check(node):
                return time.monotonic() - t0
        if not node.is_running():
            raise ComponentError(node.component, f"exited while waiting until {what}",
                                 node.save_log())
        if time.monotonic() - t0 > timeout:
            raise ComponentError(node.component, f"not {what} after {timeout:.0f}s",
                                 node.save_log())
        time.sleep(0.1)


def _log_size(node: GaleraNode) -> int:
    log = node.save_log()
    return log.stat().st_size if log.exists() else 0


def _transfer(log: Path, since: int) -> str:
    """How a joiner got the state: ``IST``, ``SST`` or ``none`` (from its error log)."""
    try:
        with open(log, "rb") as f:
            f.seek(since)
            text = f.read().decode(errors="replace")
    except OSError:
        return "unknown"
    return transfer_kind(text)


# A full copy: rsync's joiner script says "rsync SST completed" (an IST passed through the same
# script says "rsync IST completed"), and a joiner from an undefined position prepares its IST
# receiver from a null UUID. An IST also logs "SST received" / "SST succeeded" (the script's
# bypass), so those count as SST only when no IST was received.
_FULL_SST = re.compile(r"\b(rsync|mariabackup|mysqldump) SST completed|Proceeding with SST|"
                       r"IST uuid:0{8}-0{4}-0{4}-0{4}-0{12}")


def transfer_kind(text: str) -> str:
    """``SST``, ``IST`` or ``none``: how a joiner got the state, from its error log's text."""
    if _FULL_SST.search(text):
        return "SST"
    if re.search(r"IST received|Receiving IST|IST completed", text):
        return "IST"
    if re.search(r"SST (succeeded|complete|received)|State transfer required", text):
        return "SST"
    return "none"


Phase = Callable[[str, str | None], "contextlib.AbstractContextManager[dict[str, Any]]"]


@contextlib.contextmanager
def _no_phase(name: str, node: str | None) -> Iterator[dict[str, Any]]:
    yield {}


def recover_cluster(nodes: Sequence[GaleraNode], phase: Phase = _no_phase) -> dict[str, Any]:
    """Recover positions, bootstrap the most advanced node, start the others (module doc).
    ``phase(name, node)`` records each phase (``fault.context.Context.fault``). Returns the
    detail: positions, the bootstrap node, ``writable_after_seconds``, the joins."""
    t0 = time.monotonic()
    positions: dict[str, Position] = {}
    grastate: dict[str, int | None] = {}
    for node in nodes:
        with phase("recover_position", node.name) as d:
            grastate[node.name] = grastate_seqno(node.data_file("grastate.dat"))
            pos = positions[node.name] = recover_position(node)
            d.update({"uuid": pos.uuid, "seqno": pos.seqno,
                      "grastate_seqno": grastate[node.name],
                      "note": f"seqno {pos.seqno}"})
    first_name = most_advanced(positions)
    first = next(n for n in nodes if n.name == first_name)
    removed: list[str] = []
    with phase("bootstrap", first.name) as d:
        # safe_to_bootstrap: 1 in its grastate.dat, its gvwstate.dat removed, started with
        # --wsrep-new-cluster from its recovered position
        if first.start_recovered(str(positions[first.name]), bootstrap=True):
            removed.append(first.name)
        _wait(first, _ready, READY_TIMEOUT, "ready in a new Primary component")
        writable = round(time.monotonic() - t0, 3)
        d.update({"seqno": positions[first.name].seqno, "writable_after_seconds": writable,
                  "note": f"seqno {positions[first.name].seqno}, most advanced"})
    joins: dict[str, dict[str, Any]] = {}
    for node in (n for n in nodes if n is not first):  # one at a time (module doc)
        with phase("join", node.name) as d:
            t1 = time.monotonic()
            mark = _log_size(node)
            if node.start_recovered(str(positions[node.name]), bootstrap=False):
                removed.append(node.name)
            _wait(node, lambda n: synced(n), JOIN_TIMEOUT, "synced with the cluster")
            transfer = _transfer(node.save_log(), mark)
            behind = positions[first.name].seqno - positions[node.name].seqno
            joins[node.name] = {"transfer": transfer, "behind": behind,
                                "seconds": round(time.monotonic() - t1, 3)}
            d.update({**joins[node.name], "note": f"{transfer}, {behind} behind"})
    return {
        "positions": {n: {"uuid": p.uuid, "seqno": p.seqno} for n, p in positions.items()},
        "grastate_seqno": grastate,
        "bootstrap": first.name,
        "gvwstate_removed": removed,
        "writable_after_seconds": writable,
        "joins": joins,
        "recovered_seconds": round(time.monotonic() - t0, 3),
        "note": f"bootstrap {first.name}, writable after {writable:.2f} s",
    }
