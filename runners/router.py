"""What the lab needs of a router in front of the nodes (``router.writer``,
``router.reader``): start it with role checks, ask which servers it routes to, move the
writer on a promote, stop it. ``runners.haproxy.HAProxy`` and ``runners.proxysql.ProxySQL``
implement it; a third router is one more implementation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

RoleCheck = Callable[[str], bool]  # node name -> it may take this role now


def current_writer(router: Router) -> str | None:
    """The node the router sends writes to now: the first server its writer backend has up
    (HAProxy balances the writer backend with ``balance first``: every connection goes to the
    first server, in topology order, that is up and passes the writer role check; the next
    one takes writes only when it is down). None when no server takes writes."""
    up = router.up_servers("writer")
    return up[0] if up else None


class Router(Protocol):
    # the attempts of its last start that a signal ended (ProxySQL, started once more after a
    # crash while loading its servers, sysown/proxysql#3233); always empty for a router the
    # lab never starts again by itself (HAProxy)
    start_crashes: list[str]

    def start(self, writer_check: RoleCheck, reader_check: RoleCheck,
              ready_timeout: float = 15.0) -> None:
        """Start, configure, and wait until writes are routed."""

    def server_states(self, backend: str) -> dict[str, str]:
        """{node: the router's own status word} in the ``writer`` or ``reader`` backend."""

    def up_servers(self, backend: str) -> list[str]:
        """The nodes the ``writer`` or ``reader`` backend routes to now."""

    def move_writer(self, node: str) -> float:
        """Route writes to ``node`` now; the seconds it took."""

    def stop(self) -> None: ...
