#!/bin/sh
# mmdebstrap customize hook: $1 is the root of the image being built.
# A data directory made ahead (so a node starts in about half a second), with the lab's small
# redo log; nothing the image does not need at run time (docs, man pages, apt lists, caches).
set -eu
root=$1
chroot "$root" sh -eu -c '
  rm -rf /var/lib/mysql/*
  mariadb-install-db --user=mysql --datadir=/var/lib/mysql --skip-test-db \
    --innodb-log-file-size=48M --innodb-buffer-pool-size=64M >/dev/null
  rm -f /var/lib/mysql/aria_log_control.lock
  mkdir -p /etc/lab /run/mysqld && : > /etc/lab/start-options
  chown mysql:mysql /run/mysqld /etc/lab /etc/lab/start-options
'
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/* "$root"/usr/share/doc/* \
  "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/var/log/*.log
