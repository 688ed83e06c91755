"""What every helper container of a run has in common (HAProxy, ProxySQL, toxiproxy): whether
it runs, its address on the run's network, its output saved to its log in the run directory,
and a stop that saves the log and kills it (the container itself is removed by the run's
labels at teardown)."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from runners.containers import engine as engines


class ContainerPart:
    """Mixed into a router's or toxiproxy's class: ``engine``, ``container`` and ``log`` are
    set by it."""

    engine: engines.Engine
    container: Any
    log: Path

    def running(self) -> bool:
        with contextlib.suppress(Exception):
            doc = engines.inspect(self.engine.client, self.container.id)
            return bool(doc.get("State", {}).get("Running"))
        return False

    def ip(self, network: str) -> str | None:
        """Its address on the run's network (a cut between a node and it)."""
        doc = engines.inspect(self.engine.client, self.container.id)
        nets = doc.get("NetworkSettings", {}).get("Networks") or {}
        addr = (nets.get(network) or {}).get("IPAddress")
        return str(addr) if addr else None

    def save_log(self) -> Path:
        with contextlib.suppress(Exception):
            self.log.write_bytes(self.container.logs(stdout=True, stderr=True))
        return self.log

    def stop(self) -> None:
        if self.container is None:
            return
        self.save_log()
        with contextlib.suppress(Exception):
            self.container.kill(signal="SIGKILL")
