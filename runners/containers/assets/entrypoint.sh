#!/bin/sh
# The lab's node image entrypoint: lab-entrypoint SERVER_ID [MARIADBD ARGS...]
#
# Before starting mariadbd it writes an init file that (re)creates the run's users from the
# environment (LAB_ADMIN_USER/PASSWORD, LAB_APP_USER/PASSWORD, LAB_REPL_USER/PASSWORD) without
# writing them to the binary log (each node makes them itself: no errant transactions), and
# appends the options of this one start from /etc/lab/start-options (one per line, written by
# the lab before a `start ... with` and emptied after).
#
# LAB_DATADIR (a directory the lab mounted: `disk full`): the server's data directory is there;
# on the first start it is seeded with the image's (/var/lib/mysql). LAB_BINLOG_DIR: a mounted
# directory for the binary logs (`disk full NODE binlog`), made the server's. LAB_FAKETIME_FILE
# (`clock skew`): the server runs with libfaketime preloaded, its offset read from that file
# (+0 until the lab writes another).
#
# It runs in the lab's node image and, copied in by the lab, in an image the experiment names
# (`image "mariadb:11.4"`): there it finds the server (mariadbd or mysqld), makes the data
# directory when it is empty (mariadb-install-db) and finds the image's Galera provider.
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
if [ -n "${LAB_DATADIR:-}" ]; then
  if [ ! -e "$LAB_DATADIR/mysql" ]; then
    cp -a /var/lib/mysql/. "$LAB_DATADIR"/
  fi
  chown mysql:mysql "$LAB_DATADIR"
fi
if [ -n "${LAB_BINLOG_DIR:-}" ]; then
  chown mysql:mysql "$LAB_BINLOG_DIR"
fi
if [ -n "${LAB_FAKETIME_FILE:-}" ]; then
  [ -s "$LAB_FAKETIME_FILE" ] || echo +0 > "$LAB_FAKETIME_FILE"
  chmod 644 "$LAB_FAKETIME_FILE"
  preload=
  for lib in /usr/lib/*/faketime/libfaketime.so.1 /usr/lib/faketime/libfaketime.so.1 \
      /usr/lib64/faketime/libfaketime.so.1; do
    if [ -f "$lib" ]; then preload=$lib; break; fi
  done
  [ -n "$preload" ] || { echo "lab-entrypoint: clock skew needs libfaketime in the image" \
    "(Debian's libfaketime package); this image has none" >&2; exit 1; }
  export LD_PRELOAD="$preload" FAKETIME_TIMESTAMP_FILE="$LAB_FAKETIME_FILE" FAKETIME_NO_CACHE=1
fi
# `command -v` one name at a time: dash's stops at the first name it does not find
first_program() {
  for name in "$@"; do
    found=$(command -v "$name" 2>/dev/null || true)
    if [ -n "$found" ]; then echo "$found"; return 0; fi
  done
  return 0
}
server=
for candidate in "$(first_program mariadbd mysqld)" /usr/sbin/mariadbd /usr/sbin/mysqld \
    /usr/bin/mariadbd /usr/libexec/mysqld; do
  if [ -n "$candidate" ] && [ -x "$candidate" ]; then server=$candidate; break; fi
done
[ -n "$server" ] || { echo "lab-entrypoint: no mariadbd or mysqld in this image" >&2; exit 1; }
# the data directory the server is given, and the image's Galera provider where the lab's
# usual path is not there
datadir=/var/lib/mysql
count=$#
for arg in "$@"; do
  case $arg in
    --datadir=*) datadir=${arg#--datadir=} ;;
    --wsrep_provider=*)
      if [ ! -f "${arg#--wsrep_provider=}" ]; then
        for lib in /usr/lib/galera/libgalera_smm.so /usr/lib64/galera4/libgalera_smm.so \
            /usr/lib/galera4/libgalera_smm.so /usr/lib64/galera/libgalera_smm.so \
            /usr/lib/libgalera_smm.so; do
          if [ -f "$lib" ]; then arg=--wsrep_provider=$lib; break; fi
        done
      fi ;;
  esac
  set -- "$@" "$arg"
done
shift "$count"
if [ ! -d "$datadir/mysql" ]; then
  install=$(first_program mariadb-install-db mysql_install_db)
  [ -n "$install" ] || { echo "lab-entrypoint: $datadir is empty and this image has no" \
    "mariadb-install-db to make it" >&2; exit 1; }
  mkdir -p "$datadir"
  chown mysql:mysql "$datadir"
  "$install" --user=mysql --datadir="$datadir" --skip-test-db \
    --innodb-log-file-size=48M >/dev/null
fi
if [ -s /etc/lab/start-options ]; then
  while IFS= read -r opt; do
    [ -n "$opt" ] && set -- "$@" "$opt"
  done < /etc/lab/start-options
fi
exec "$server" --user=mysql --server-id="$server_id" --init-file="$init" "$@"
