"""The users every MariaDB (or MySQL) node of the lab gets, on every back-end: the lab's admin,
the application user of the workloads, the replication user and the router's health-check
user (HAProxy's ``mysql-check``, ``runners.haproxy``).

One set of statements, ``user_statements``; the back-ends differ only in the host part of the
accounts and in how they run them:

- native replication (``runners.topology``): on the primary as root on its socket, through the
  binary log to the replicas (dbdeployer's replication user is used; the lab's is left out);
- native Galera and two primaries (``runners.bare``): on each node as root on its socket
  (two primaries: without the binary log);
- containers (``runners.containers.topology``): ``init_file``, the server's ``--init-file``
  in each node's container, run at every start without the binary log.

Natively the clients connect from 127.0.0.1 (``localhost`` too, for servers that resolve
names), so ``hosts`` is ``LOOPBACK_HOSTS``; in containers they come from the run's network
and the engine's port forwarding: ``CONTAINER_HOSTS`` (``'%'``). ProxySQL's monitor user is
ProxySQL's own (``runners.proxysql.monitor_user_statements``), made only with that router.
"""

from __future__ import annotations

from collections.abc import Sequence

from runners.mysql import Credentials

LOOPBACK_HOSTS = ("127.0.0.1", "localhost")
CONTAINER_HOSTS = ("%",)
HEALTH_CHECK_USER = "hacheck"  # HAProxy's mysql-check user (no password, no privilege)
# The application user lacks SUPER and READ_ONLY ADMIN, so ``read_only=1`` stops it (in
# 10.11 ALL PRIVILEGES includes READ_ONLY ADMIN).
APP_PRIVILEGES = ("SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, INDEX, ALTER, "
                  "CREATE TEMPORARY TABLES, LOCK TABLES, EXECUTE, PROCESS, REPLICATION CLIENT")


def user_statements(admin: Credentials, app: Credentials, repl: Credentials | None,
                    hosts: Sequence[str] = LOOPBACK_HOSTS) -> list[str]:
    """The users of every lab topology: admin and app at each of ``hosts``; the replication
    user (None: left out, dbdeployer's is used) and the health-check user at the first
    (where replicas and the router connect from)."""
    if not hosts:
        raise ValueError("users need at least one host")
    out: list[str] = []
    for host in hosts:
        out += [
            f"CREATE USER IF NOT EXISTS '{admin.user}'@'{host}' IDENTIFIED BY '{admin.password}'",
            f"GRANT ALL PRIVILEGES ON *.* TO '{admin.user}'@'{host}' WITH GRANT OPTION",
            f"CREATE USER IF NOT EXISTS '{app.user}'@'{host}' IDENTIFIED BY '{app.password}'",
            f"GRANT {APP_PRIVILEGES} ON *.* TO '{app.user}'@'{host}'",
        ]
    first = hosts[0]
    if repl is not None:
        out += [
            f"CREATE USER IF NOT EXISTS '{repl.user}'@'{first}' IDENTIFIED BY '{repl.password}'",
            f"GRANT REPLICATION SLAVE ON *.* TO '{repl.user}'@'{first}'",
        ]
    out.append(f"CREATE USER IF NOT EXISTS '{HEALTH_CHECK_USER}'@'{first}'")
    return out


def init_file(admin: Credentials, app: Credentials, repl: Credentials,
              hosts: Sequence[str] = CONTAINER_HOSTS) -> str:
    """``user_statements`` as a server's ``--init-file``: one statement a line, without the
    binary log (each node makes its users itself: no errant transactions on replicas, none
    replicated between two primaries)."""
    stmts = ["SET SESSION sql_log_bin=0", *user_statements(admin, app, repl, hosts)]
    return "".join(f"{s};\n" for s in stmts)
