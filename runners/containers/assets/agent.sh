#!/bin/sh
# HAProxy's agent check for one node in one role, in the router's container (one socat
# listener per node and role runs it per check): agent.sh ROLE NODE GALERA
# Asks the node what the lab's native agent asks (runners.replication.role_state) and answers
# "up ready" or "down": writer = read_only off (and, on Galera, wsrep_local_state 4, Synced);
# reader = answering (and, on Galera, Synced). A node that does not answer in 2 s is down.
role=$1 node=$2 galera=$3
q="SELECT @@read_only, IFNULL((SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME='WSREP_LOCAL_STATE'), '')"
out=$(MYSQL_PWD="$LAB_ADMIN_PASSWORD" timeout 2 mariadb -h "$node" -P 3306 -u "$LAB_ADMIN_USER" \
  --connect-timeout=1 -N -B -e "$q" 2>/dev/null) || { echo down; exit 0; }
ro=$(printf '%s' "$out" | cut -f1)
state=$(printf '%s' "$out" | cut -f2)
if [ "$galera" = 1 ] && [ "$state" != 4 ]; then echo down; exit 0; fi
if [ "$role" = writer ] && [ "$ro" != 0 ]; then echo down; exit 0; fi
echo "up ready"
