#!/bin/sh
# The lab's node image entrypoint: lab-entrypoint SERVER_ID [MARIADBD ARGS...]
#
# The run's users come from the lab's --init-file among the arguments (runners.users). It
# appends the options of this one start from /etc/lab/start-options (one per line, written by
# the lab before a start; emptied here once read). Two lines there are steps of this script, not
# options: --lab-forget-view removes the data directory's gvwstate.dat (a Galera node that
# must not wait for its last primary component) and --lab-safe-to-bootstrap sets
# "safe_to_bootstrap: 1" in its grastate.dat (the node a whole-cluster recovery bootstraps).
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
umask 077
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
forget_view=
safe_to_bootstrap=
if [ -s /etc/lab/start-options ]; then
  while IFS= read -r opt; do
    case $opt in
      '') ;;
      --lab-forget-view) forget_view=1 ;;
      --lab-safe-to-bootstrap) safe_to_bootstrap=1 ;;
      *) set -- "$@" "$opt" ;;
    esac
  done < /etc/lab/start-options
  : > /etc/lab/start-options
fi
if [ -n "$forget_view" ]; then
  rm -f "$datadir/gvwstate.dat"
fi
if [ -n "$safe_to_bootstrap" ] && [ -f "$datadir/grastate.dat" ]; then
  # rewritten in place: the file keeps its owner (the server's user)
  state=$(grep -v '^safe_to_bootstrap:' "$datadir/grastate.dat" || true)
  printf '%s\nsafe_to_bootstrap: 1\n' "$state" > "$datadir/grastate.dat"
fi
exec "$server" --user=mysql --server-id="$server_id" "$@"
