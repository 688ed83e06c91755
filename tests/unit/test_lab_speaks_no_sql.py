"""``lab/`` speaks no SQL to a server: every statement and database connection is in
``runners/`` (issue 24). A scan of every module of ``lab/`` (its syntax tree, not its text).

What counts as speaking SQL to a server:

- a string constant, or an f-string's leading text, that starts with an upper-case statement
  keyword (after an optional parenthesis) followed by a space or by nothing: ``SELECT``,
  ``SHOW``, ``SET``, ``INSERT``, ``UPDATE``, ``DELETE``, ``REPLACE``, ``CREATE``, ``DROP``,
  ``ALTER``, ``START TRANSACTION``, ``BEGIN``, ``COMMIT``, ``ROLLBACK``, ``FLUSH``, ``KILL``,
  ``CHANGE MASTER``, ``STOP SLAVE``, ``START SLAVE``, ``RESET``; not when it is only the
  argument of a method that inspects text
  (``startswith``, ``removeprefix`` …: reading a recorded statement is not sending one);
- a call of ``.scalar(``, ``.sql(`` or ``.cursor(`` (a server node's or a connection's), or of
  ``.execute(``/``.executemany(`` on anything but ``store.conn`` (the results store);
- importing ``MySQLdb`` or ``pymysql``, or ``connect``/``connect_within``/``query``/
  ``run_within`` from ``runners.mysql``.

Left out: ``lab/judge/checkers`` (it reads recorded data only) and ``lab/store/``, the results
store: the lab's own SQLite file, whose statements are lower-case, not a database server's.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

LAB = Path(__file__).resolve().parents[2] / "lab"
EXEMPT = ("judge/checkers/", "store/")
KEYWORDS = re.compile(
    r"\s*\(?(SELECT|SHOW|SET|INSERT|UPDATE|DELETE|REPLACE|CREATE|DROP|ALTER|START TRANSACTION|"
    r"BEGIN|COMMIT|ROLLBACK|FLUSH|KILL|CHANGE MASTER|STOP SLAVE|START SLAVE|RESET)(\s|$)")
TEXT_METHODS = frozenset({"startswith", "endswith", "removeprefix", "removesuffix", "replace",
                          "split", "partition", "find", "index", "count"})
SQL_CALLS = frozenset({"scalar", "sql", "cursor"})
EXECUTE = frozenset({"execute", "executemany"})
DRIVERS = frozenset({"MySQLdb", "pymysql"})
MYSQL_CONNECTS = frozenset({"connect", "connect_within", "query", "run_within"})


def sql_spoken(source: str) -> list[str]:
    """Every place ``source`` speaks SQL to a server, as ``line: what``."""
    tree = ast.parse(source)
    inspected: set[int] = set()  # constants only inspected by a text method
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            attr = node.func.attr
            if attr in TEXT_METHODS:
                inspected.update(id(a) for a in node.args)
            elif attr in SQL_CALLS:
                found.append(f"{node.lineno}: .{attr}( call")
            elif attr in EXECUTE and ast.unparse(node.func.value) != "store.conn":
                found.append(f"{node.lineno}: .{attr}( on {ast.unparse(node.func.value)}")
        elif isinstance(node, ast.Import):
            found += [f"{node.lineno}: import {a.name}" for a in node.names
                      if a.name.split(".")[0] in DRIVERS]
        elif isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            if mod.split(".")[0] in DRIVERS:
                found.append(f"{node.lineno}: from {mod} import")
            if mod == "runners.mysql":
                found += [f"{node.lineno}: from runners.mysql import {a.name}"
                          for a in node.names if a.name in MYSQL_CONNECTS]
    for node in ast.walk(tree):
        text = None
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        elif isinstance(node, ast.JoinedStr) and node.values and isinstance(
                node.values[0], ast.Constant):
            text = str(node.values[0].value) + "x"  # a value follows its leading text
            for v in node.values:
                inspected.add(id(v))  # the f-string is judged whole, not its parts
        if text is not None and id(node) not in inspected and KEYWORDS.match(text):
            found.append(f"{node.lineno}: statement {text[:40]!r}")
    return sorted(set(found))


def test_the_scan_finds_what_it_looks_for() -> None:
    """The scan can fail: each kind of SQL it names, found in a sample."""
    sample = (
        "import MySQLdb\n"
        "from runners.mysql import Address, connect\n"
        "def f(node, conn, store, t):\n"
        "    node.scalar('SELECT 1')\n"
        "    conn.cursor().execute(f'SELECT k FROM {t}')\n"
        "    q = 'SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ'\n"
        "    store.conn.execute('select id from runs')\n"  # the results store: allowed
        "    s = t.removeprefix('SET GLOBAL ')\n"  # inspecting a recorded statement: allowed
        "    c = '(SELECT COUNT(*) FROM ' + 'SELECT '\n"
        "    return 'set members have one'\n"  # English, not SQL
    )
    got = sql_spoken(sample)
    assert got == sorted([
        "1: import MySQLdb", "2: from runners.mysql import connect", "4: .scalar( call",
        "4: statement 'SELECT 1'", "5: .cursor( call", "5: .execute( on conn.cursor()",
        "5: statement 'SELECT k FROM x'",
        "6: statement 'SET SESSION TRANSACTION ISOLATION LEVEL '",
        "9: statement '(SELECT COUNT(*) FROM '", "9: statement 'SELECT '"])


def test_no_module_of_lab_speaks_sql_to_a_server() -> None:
    modules = [p for p in sorted(LAB.rglob("*.py"))
               if not p.relative_to(LAB).as_posix().startswith(EXEMPT)]
    assert len(modules) > 20  # the scan saw lab/
    spoken = {p.relative_to(LAB).as_posix(): got for p in modules
              if (got := sql_spoken(p.read_text()))}
    assert spoken == {}, "SQL in lab/ (move it to runners/):\n" + "\n".join(
        f"lab/{m}:{w}" for m, ws in spoken.items() for w in ws)
