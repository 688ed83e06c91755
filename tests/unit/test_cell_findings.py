"""CellFacts reads the findings: the glue between the servers and the pure comparisons, on
fake servers (which tables, which reference, what is unknown)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from test_divergence import FakeDb

import lab.run.cell_facts as cell_facts
from lab.run.cell_facts import CellFacts
from runners import divergence


class FakeConn:
    def __init__(self, db: FakeDb, tables: list[str]) -> None:
        self.db, self.tables, self.statements = db, tables, []  # type: ignore[var-annotated]

    def cursor(self) -> Any:
        conn = self

        class Cur:
            rows: list[tuple[Any, ...]] = []

            def execute(self, sql: str, args: Any = None) -> None:
                conn.statements.append(sql)
                if sql.startswith(("SET SESSION", "START TRANSACTION")):
                    self.rows = []
                elif "information_schema.TABLES" in sql:
                    self.rows = [(t,) for t in conn.tables]
                else:
                    self.rows = conn.db(sql, tuple(args or ()))

            def fetchall(self) -> list[tuple[Any, ...]]:
                return self.rows

            def close(self) -> None:
                pass

        return Cur()

    def close(self) -> None:
        pass


class Node:
    def __init__(self, name: str, state: str = "", running: bool = True) -> None:
        self.name, self.addr, self.state, self.running = name, name, state, running

    def is_running(self) -> bool:
        return self.running

    def scalar(self, statement: str, timeout: float = 5.0) -> Any:
        return self.state

    def sql(self, statement: str, timeout: float = 5.0) -> list[dict[str, Any]]:
        if statement == "SHOW BINARY LOGS":
            return [{"Log_name": "b.1"}]
        seqs = [int(p.split("-")[2]) for p in self.state.split(",") if p.startswith("0-300")]
        return [{"Event_type": "Gtid", "Info": f"BEGIN GTID 0-300-{q}"}
                for q in range(1, max(seqs, default=0) + 1)]


def facts_for(nodes: dict[str, Node], topology: str = "replication") -> CellFacts:
    plan = SimpleNamespace(topology=topology)
    f = CellFacts(plan)  # type: ignore[arg-type]
    f.topo = SimpleNamespace(nodes=nodes, primary="db1", admin=None)  # type: ignore[assignment]
    return f


def test_divergence_compares_the_workload_tables_and_the_schema_but_not_the_heartbeat(
        monkeypatch: pytest.MonkeyPatch) -> None:
    base = {k: (k, 1) for k in range(1, 50)}
    dbs = {"db1": FakeDb(base), "db2": FakeDb({k: v for k, v in base.items() if k > 7}),
           "db3": FakeDb(dict(base))}
    conns: dict[str, FakeConn] = {}

    def connect(addr: str, creds: Any, timeout: float) -> FakeConn:
        conns[addr] = FakeConn(dbs[addr], ["w_writes", "heartbeat"])
        return conns[addr]

    monkeypatch.setattr(divergence, "connect", connect)
    f = facts_for({n: Node(n) for n in ("db1", "db2", "db3")})
    f.facts["authority"] = "db1"
    spec = SimpleNamespace(name="writes", kind="unique_writes", tables=None, keys=None)
    monkeypatch.setattr(cell_facts, "table_ddl", lambda s: ["CREATE"])
    f.read_divergence([spec])  # type: ignore[list-item]
    d = f.facts["divergence"]
    assert d["reference"] == "db1" and list(d["tables"]) == ["lab.w_writes"]
    assert d["workloads"] == {"writes": ["lab.w_writes"]}
    t = d["tables"]["lab.w_writes"]
    assert t["rows"] == 7 and t["nodes"]["db2"]["missing"] == 7 and t["nodes"]["db3"]["rows"] == 0
    # every node read in one consistent snapshot
    assert all("START TRANSACTION WITH CONSISTENT SNAPSHOT" in c.statements for c in
               conns.values())


def test_errant_gtids_against_the_primary_with_the_baseline(monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    nodes = {"db1": Node("db1", "0-100-10"), "db2": Node("db2", "0-100-10"),
             "db3": Node("db3", "0-100-10,0-300-7")}
    f = facts_for(nodes)
    f.facts["authority"] = "db2"
    f.facts["gtid_baseline"] = {"db3": "0-300-2"}  # the setup's, before the load
    f.read_errant_gtids()
    got = f.facts["errant_gtids"]
    assert set(got) == {"db1", "db3"}  # not the authority
    assert got["db1"]["count"] == 0
    assert got["db3"]["count"] == 5 and got["db3"]["gtids"][0] == "0-300-3"


def test_errant_gtids_are_not_measured_without_a_running_primary_or_on_galera() -> None:
    f = facts_for({"db1": Node("db1", running=False), "db2": Node("db2")})
    f.facts["authority"] = None
    f.read_errant_gtids()
    assert "errant_gtids" not in f.facts and "not running" in f.facts["errant_gtids_why"]
    g = facts_for({"g1": Node("g1")}, topology="galera")
    g.read_errant_gtids()
    assert "galera" in g.facts["errant_gtids_why"]


def test_settle_with_the_primary_alone_running_is_settled_at_once() -> None:
    """A promoted replica whose old primary left for good runs alone: nothing to wait for
    (before, settle waited its whole timeout and said the positions could not be read)."""
    class Up:
        def __init__(self, running: bool) -> None:
            self.running = running

        def is_running(self) -> bool:
            return self.running

    plan = SimpleNamespace(topology="replication", engine=SimpleNamespace(flavor="mariadb"))
    f = CellFacts(plan)  # type: ignore[arg-type]
    f.topo = SimpleNamespace(nodes={"db1": Up(False), "db2": Up(True)},  # type: ignore[assignment]
                             primary="db2", admin=None)
    assert f.settle(timeout=5.0) == (True, "")
