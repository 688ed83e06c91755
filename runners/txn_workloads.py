"""Transactional workloads: several statements in one transaction, recorded as one operation.

Each transaction is ``START TRANSACTION`` … ``COMMIT`` on one connection, recorded ``invoke``
then ``ok`` (committed), ``fail`` (definitely not committed: an error before ``COMMIT``, or a
server error answering it such as a Galera certification failure) or ``info`` (the connection
was lost or the timeout passed after ``COMMIT`` was sent: it may have committed). See
``runners.workloads.Client.txn``. The isolation level, when the file sets one, is set on every
new connection (``SET SESSION TRANSACTION ISOLATION LEVEL …``).

- ``list_append`` (Elle's list-append model, as Jepsen runs it on MariaDB): a transaction is 1
  to ``txn_length`` micro-operations over ``keys`` active keys, each a read of a key's list or
  an append of a value unique in the run (``f = "txn"``, ``value = [[f, key, v], …]``, ``f`` is
  ``"r"`` or ``"append"``; a committed read's ``v`` is the list read). A key takes at most
  ``MAX_WRITES_PER_KEY`` appends, then a fresh key replaces it, so lists stay short.
  Lists are stored as text, comma-separated: ``INSERT … ON DUPLICATE KEY UPDATE v =
  CONCAT(v, ',', …)``.
- ``read_modify_write``: ``SELECT v`` (``FOR UPDATE`` when asked) of one of ``keys`` counters,
  then ``UPDATE … SET v = <read + 1>`` (``f = "rmw"``, ``key``, ``value = [read, written]``).
- ``bank``: ``keys`` accounts of ``BALANCE`` each. A transfer (``f = "transfer"``, ``value =
  [from, to, amount]``) reads both balances (``FOR UPDATE`` when asked) and writes the new ones
  computed by the client; a read (``f = "balances"``, value ``[[account, balance], …]``) reads
  every account in one transaction. A correct system keeps every read's total at
  ``keys × BALANCE``.
"""

from __future__ import annotations

import math
import random
import threading
from collections.abc import Callable
from typing import Any

from dsl.plan import PlannedWorkload
from runners.workloads import Client, ClientEnv, Txn, Workload, table_name

MAX_WRITES_PER_KEY = 32  # list_append: appends a key takes before a fresh key replaces it
BALANCE = 100  # bank: every account's opening balance
MAX_TRANSFER = 5  # bank: a transfer moves 1..MAX_TRANSFER


def isolation_sql(spec: PlannedWorkload) -> tuple[str, ...]:
    """The statement that sets the workload's isolation level on a new connection."""
    if not spec.isolation:
        return ()
    return (f"SET SESSION TRANSACTION ISOLATION LEVEL {spec.isolation.upper()}",)


def txn_table_ddl(spec: PlannedWorkload) -> list[str]:
    """The table of a transactional workload and its first rows (counters, accounts)."""
    t = table_name(spec.name)
    if spec.kind == "list_append":
        return [f"CREATE TABLE IF NOT EXISTS {t} (k BIGINT PRIMARY KEY, v TEXT NOT NULL) "
                "ENGINE=InnoDB"]
    if spec.kind in ("read_modify_write", "bank"):
        start = BALANCE if spec.kind == "bank" else 0
        n = spec.key_count or 1
        rows = ", ".join(f"({k}, {start}, 0)" for k in range(n))
        return [f"CREATE TABLE IF NOT EXISTS {t} (k BIGINT PRIMARY KEY, v BIGINT NOT NULL, "
                "c INT NOT NULL) ENGINE=InnoDB",
                f"INSERT IGNORE INTO {t} (k, v, c) VALUES {rows}"]
    return []


def parse_list(raw: Any) -> list[int]:
    """A list_append row's text (``"3,7,12"``) as its values; absent or empty: []."""
    if raw is None:
        return []
    text = raw.decode() if isinstance(raw, bytes | bytearray) else str(raw)
    return [int(x) for x in text.split(",") if x != ""]


def final_value(kind: str, raw: Any) -> Any:
    """A workload row's value as the checkers read it: a list_append row's list, else an int."""
    return parse_list(raw) if kind == "list_append" else int(raw)


class _Keys:
    """Draws keys for a transaction: uniform or exponential over the active keys."""

    def __init__(self, spec: PlannedWorkload, seed: int) -> None:
        self.n = spec.key_count or 1
        self.exponential = spec.distribution == "exponential"
        self.rng = random.Random(seed)
        self.lock = threading.Lock()

    def index(self) -> int:
        """An index into the active keys (0 the hottest with ``exponential``)."""
        if not self.exponential or self.n == 1:
            return self.rng.randrange(self.n)
        # P(i) ∝ 2^-i·k, k chosen so the last key is drawn about 1/n as often as the first
        lam = math.log(self.n) / self.n if self.n > 1 else 1.0
        return min(self.n - 1, int(self.rng.expovariate(lam)))


class _TxnWorkload(Workload):
    """What the transactional workloads share: the key draws, each connection's isolation
    level, the table and the locking clause of their reads."""

    def __init__(self, spec: PlannedWorkload, env: ClientEnv, first_process: int,
                 default_duration: float) -> None:
        super().__init__(spec, env, first_process, default_duration)
        self.keys = _Keys(spec, env.seed)

    def _prepare(self, client: Client) -> tuple[str, str]:
        """(table, `` FOR UPDATE`` or ``""``), the client's isolation level set."""
        client.session_sql = isolation_sql(self.spec)
        return table_name(self.name), " FOR UPDATE" if self.spec.for_update else ""


class ListAppendWorkload(_TxnWorkload):
    """Elle's list-append transactions (see the module docstring)."""

    def __init__(self, spec: PlannedWorkload, env: ClientEnv, first_process: int,
                 default_duration: float) -> None:
        super().__init__(spec, env, first_process, default_duration)
        self.active = list(range(self.keys.n))  # the keys in play, slot by slot
        self.writes: dict[int, int] = {}  # key -> appends handed out
        self.next_key = self.keys.n
        self.next_value = 1

    def _plan(self) -> list[list[Any]]:
        """One transaction's micro-operations, appends with fresh values."""
        spec = self.spec
        with self.keys.lock:
            rng = self.keys.rng
            n = rng.randint(1, spec.txn_length or 1)
            ops: list[list[Any]] = []
            for _ in range(n):
                slot = self.keys.index()
                k = self.active[slot]
                if rng.random() < (spec.read_fraction if spec.read_fraction is not None
                                   else 0.5):
                    ops.append(["r", k, None])
                    continue
                ops.append(["append", k, self.next_value])
                self.next_value += 1
                self.writes[k] = self.writes.get(k, 0) + 1
                if self.writes[k] >= MAX_WRITES_PER_KEY:  # retire it after this transaction
                    self.active[slot] = self.next_key
                    self.next_key += 1
            return ops

    def run_client(self, i: int, client: Client, pace: Callable[[], None]) -> None:
        t, _ = self._prepare(client)
        while not self._should_stop() and self._take():
            planned = self._plan()

            def body(txn: Txn, planned: list[list[Any]] = planned) -> list[list[Any]]:
                done: list[list[Any]] = []
                for f, k, v in planned:
                    if f == "r":
                        rows = txn.run(f"SELECT v FROM {t} WHERE k = %s", (k,))
                        done.append(["r", k, parse_list(rows[0][0] if rows else None)])
                    else:
                        txn.run(f"INSERT INTO {t} (k, v) VALUES (%s, %s) ON DUPLICATE KEY "
                                "UPDATE v = CONCAT(v, ',', %s)", (k, str(v), str(v)))
                        done.append(["append", k, v])
                return done

            client.txn("txn", body, value=planned)
            pace()


class ReadModifyWriteWorkload(_TxnWorkload):
    """Counters incremented by read-modify-write transactions (see the module docstring)."""

    def run_client(self, i: int, client: Client, pace: Callable[[], None]) -> None:
        t, lock = self._prepare(client)
        while not self._should_stop() and self._take():
            with self.keys.lock:
                k = self.keys.index()

            def body(txn: Txn, k: int = k) -> list[int]:
                rows = txn.run(f"SELECT v FROM {t} WHERE k = %s{lock}", (k,))
                read = int(rows[0][0]) if rows else 0
                txn.run(f"UPDATE {t} SET v = %s, c = %s WHERE k = %s",
                        (read + 1, client.process, k))
                return [read, read + 1]

            client.txn("rmw", body, key=k)
            pace()


class BankWorkload(_TxnWorkload):
    """Transfers between accounts and reads of every balance (see the module docstring)."""

    def run_client(self, i: int, client: Client, pace: Callable[[], None]) -> None:
        t, lock = self._prepare(client)
        n = self.keys.n
        reads = self.spec.read_fraction if self.spec.read_fraction is not None else 0.5
        while not self._should_stop() and self._take():
            with self.keys.lock:
                rng = self.keys.rng
                is_read = n < 2 or rng.random() < reads
                a = self.keys.index()
                b = (a + 1 + rng.randrange(n - 1)) % n if n > 1 else a
                amount = rng.randint(1, MAX_TRANSFER)
            if is_read:
                def read_all(txn: Txn) -> list[list[int]]:
                    rows = txn.run(f"SELECT k, v FROM {t} ORDER BY k")
                    return [[int(k), int(v)] for k, v in rows or ()]

                client.txn("balances", read_all)
            else:
                def transfer(txn: Txn, a: int = a, b: int = b, amount: int = amount) -> Any:
                    rows = txn.run(f"SELECT k, v FROM {t} WHERE k IN (%s, %s){lock}", (a, b))
                    got = {int(k): int(v) for k, v in rows or ()}
                    if got.get(a, 0) < amount:  # no overdraft: nothing to write
                        return [a, b, 0]
                    txn.run(f"UPDATE {t} SET v = %s WHERE k = %s", (got[a] - amount, a))
                    txn.run(f"UPDATE {t} SET v = %s WHERE k = %s", (got.get(b, 0) + amount, b))
                    return [a, b, amount]

                client.txn("transfer", transfer, value=[a, b, amount])
            pace()


TXN_KINDS: dict[str, type[Workload]] = {
    "list_append": ListAppendWorkload,
    "read_modify_write": ReadModifyWriteWorkload,
    "bank": BankWorkload,
}
