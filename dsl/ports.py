"""The port layout of a run's block of 100 loopback ports, in one place: offsets from the
block's base. The plan (``dsl.compile``) and the runtime (``runners.runtime.PortLayout``) both
read it; docs/topologies.md shows it.

    base + i          client port of node i (i = 1, 2, ... in topology order)
    base + 20 + i     node i's client link (toxiproxy)
    base + 30 + i     node i's replication link (toxiproxy)
    base + 40 + i     Galera group communication of node i
    base + 50 + i     Galera incremental state transfer of node i
    base + 60 + i     Galera state snapshot transfer of node i
    base + 70 + i     node i's writer role agent (HAProxy)
    base + 80 + i     node i's reader role agent (HAProxy)
    base + 90         router writer endpoint
    base + 91         router reader endpoint
    base + 92         ProxySQL admin
    base + 99         toxiproxy API
"""

from __future__ import annotations

BLOCK = 100
NODE_OFFSET = 0
CLIENT_PROXY_OFFSET = 20
REPLICATION_PROXY_OFFSET = 30
GALERA_GROUP_OFFSET = 40
GALERA_IST_OFFSET = 50
GALERA_SST_OFFSET = 60
WRITER_AGENT_OFFSET = 70
READER_AGENT_OFFSET = 80
ROUTER_WRITER_OFFSET = 90
ROUTER_READER_OFFSET = 91
PROXYSQL_ADMIN_OFFSET = 92
TOXIPROXY_API_OFFSET = 99
