#!/bin/sh
# The lab's node image entrypoint: lab-entrypoint SERVER_ID [MARIADBD ARGS...]
#
# Before starting mariadbd it writes an init file that (re)creates the run's users from the
# environment (LAB_ADMIN_USER/PASSWORD, LAB_APP_USER/PASSWORD, LAB_REPL_USER/PASSWORD) without
# writing them to the binary log (each node makes them itself: no errant transactions), and
# appends the options of this one start from /etc/lab/start-options (one per line, written by
# the lab before a `start ... with` and emptied after).
set -eu
server_id=${1:?usage: lab-entrypoint SERVER_ID [MARIADBD ARGS...]}
shift
mkdir -p /run/mysqld /etc/lab
chown mysql:mysql /run/mysqld
init=/run/mysqld/lab-init.sql
umask 077
{
  echo "SET SESSION sql_log_bin=0;"
  for who in ADMIN APP REPL; do
    eval "u=\${LAB_${who}_USER:-}"
    eval "p=\${LAB_${who}_PASSWORD:-}"
    [ -n "$u" ] || continue
    echo "CREATE USER IF NOT EXISTS '$u'@'%' IDENTIFIED BY '$p';"
    echo "ALTER USER '$u'@'%' IDENTIFIED BY '$p';"
    case $who in
      ADMIN) echo "GRANT ALL PRIVILEGES ON *.* TO '$u'@'%' WITH GRANT OPTION;" ;;
      APP) echo "GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, INDEX, ALTER, CREATE TEMPORARY TABLES, LOCK TABLES, EXECUTE, PROCESS, REPLICATION CLIENT ON *.* TO '$u'@'%';" ;;
      REPL) echo "GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO '$u'@'%';" ;;
    esac
  done
} > "$init"
chown mysql:mysql "$init"
set -- "$@"
if [ -s /etc/lab/start-options ]; then
  while IFS= read -r opt; do
    [ -n "$opt" ] && set -- "$@" "$opt"
  done < /etc/lab/start-options
fi
exec /usr/sbin/mariadbd --user=mysql --server-id="$server_id" --init-file="$init" "$@"
