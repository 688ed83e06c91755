"""Every workload kind of one statement an operation -> its class (``KINDS``); the
transactional kinds are ``runners.txn_workloads.TXN_KINDS``."""

from __future__ import annotations

from runners.probe_workloads import (
    ConnectWorkload,
    ProbeWorkload,
    UniqueInsertWorkload,
    UniqueWritesWorkload,
)
from runners.read_your_writes import ReadYourWritesWorkload
from runners.workloads import Workload

KINDS: dict[str, type[Workload]] = {
    "probe": ProbeWorkload,
    "unique_writes": UniqueWritesWorkload,
    "read_your_writes": ReadYourWritesWorkload,
    "unique_insert": UniqueInsertWorkload,
    "connect": ConnectWorkload,
}
