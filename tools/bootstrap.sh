#!/usr/bin/env bash
# Sets up everything replica-chaos-lab needs on a Debian 12 machine. Idempotent: a second run
# only checks and takes a few seconds. Never starts a system service, and stops only a package
# service that its own install started (by the service's init script), never anything else.
set -euo pipefail
PY=${PYTHON:-python3}
DBDEPLOYER_VERSION=v1.73.0
TOXIPROXY_VERSION=v2.12.0
# chromium: headless, for the HTML report's browser test (no service)
# fuse3 libfuse3-dev gcc: lab-iofs (io delay, io fail), compiled here
APT_PACKAGES="mariadb-server galera-4 sysbench haproxy percona-toolkit mariadb-backup libmariadb-dev pkg-config rsync iptables socat chromium faketime podman runc mmdebstrap fuse3 libfuse3-dev gcc"

INIT_D=${LAB_INIT_D:-/etc/init.d}
SERVICES="mariadb mysql"  # the init scripts of Debian's MariaDB server package

say() { printf '[bootstrap] %s\n' "$*"; }

# The package services that run now, asked to their own init scripts.
running_services() {
  for s in $SERVICES; do
    if [ -x "$INIT_D/$s" ] && "$INIT_D/$s" status >/dev/null 2>&1; then echo "$s"; fi
  done
  return 0
}

# Stop, by its own init script, a package service that runs now but did not before the install
# ($1: the services running before). Nothing else is ever stopped: a server of the user's, or
# the package's service they ran before, keeps running.
stop_services_started_since() {
  for s in $(running_services); do
    case " $1 " in *" $s "*) continue ;; esac
    say "the install started the $s service: stopping it ($INIT_D/$s stop)"
    "$INIT_D/$s" stop >/dev/null 2>&1 || say "could not stop it: run $INIT_D/$s stop"
  done
  return 0
}

# lab-iofs, the FUSE filesystem of `io delay` and `io fail`, compiled from its C source into
# $1 (a directory); again only when the source changed since (a stamp of its digest).
build_iofs() {
  local dir=$1 src=${IOFS_SOURCE:-runners/iofs/lab_iofs.c} want
  want=$(sha256sum "$src" | cut -c1-16)
  if [ -x "$dir/lab-iofs" ] && [ "$(cat "$dir/.lab-iofs-source" 2>/dev/null)" = "$want" ]; then
    say "lab-iofs present"
    return 0
  fi
  say "compiling lab-iofs ($src)"
  mkdir -p "$dir"
  # shellcheck disable=SC2046 # pkg-config's flags are words
  cc -O2 -Wall -Wextra $(pkg-config --cflags fuse3) -o "$dir/lab-iofs.tmp" "$src" \
    $(pkg-config --libs fuse3)
  mv "$dir/lab-iofs.tmp" "$dir/lab-iofs"
  echo "$want" > "$dir/.lab-iofs-source"
}

main() {
  ROOT=$(pwd)
  TOOLS="$ROOT/.tools/bin"
  # 1. Debian packages ------------------------------------------------------------------------
  missing=""
  for p in $APT_PACKAGES; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
  done
  if [ -n "$missing" ]; then
    if [ "$(id -u)" != 0 ]; then
      say "missing Debian packages:$missing"
      say "run as root: apt-get update && apt-get install -y$missing"
      exit 1
    fi
    say "installing Debian packages:$missing"
    before=$(running_services)
    # Package scripts must not start services: a policy-rc.d that denies them, only if none exists.
    made_policy=""
    if [ ! -e /usr/sbin/policy-rc.d ]; then
      printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
      made_policy=1
      trap 'rm -f /usr/sbin/policy-rc.d' EXIT  # also when the install fails
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq $missing >/dev/null
    if [ -n "$made_policy" ]; then rm -f /usr/sbin/policy-rc.d; trap - EXIT; fi
    # A policy-rc.d of the machine's own may allow starts: stop what the install started.
    stop_services_started_since "$before"
  else
    say "Debian packages present"
  fi

  # 2. Go tools at pinned versions, into .tools/bin ----------------------------------------------
  mkdir -p "$TOOLS"
  if ! command -v go >/dev/null; then
    say "go is not installed: apt-get install -y golang-go (or the Go toolchain), then re-run"
    exit 1
  fi
  if [ ! -x "$TOOLS/dbdeployer" ] || ! "$TOOLS/dbdeployer" --version 2>/dev/null | grep -q "${DBDEPLOYER_VERSION#v}"; then
    say "building dbdeployer $DBDEPLOYER_VERSION"
    # The module proxy refuses version lists for dbdeployer, so @latest fails: download the
    # pinned module and install from its directory.
    go mod download "github.com/datacharmer/dbdeployer@$DBDEPLOYER_VERSION"
    modcache=$(go env GOMODCACHE)
    (cd "$modcache/github.com/datacharmer/dbdeployer@$DBDEPLOYER_VERSION" && GOFLAGS=-mod=mod GOBIN="$TOOLS" go install .)
  else
    say "dbdeployer $DBDEPLOYER_VERSION present"
  fi
  # go install from the proxy builds without version ldflags (it says "git"): keep a stamp.
  if [ ! -x "$TOOLS/toxiproxy-server" ] || [ "$(cat "$TOOLS/.toxiproxy-version" 2>/dev/null)" != "$TOXIPROXY_VERSION" ]; then
    say "building toxiproxy $TOXIPROXY_VERSION"
    tmp=$(mktemp -d)
    GOBIN="$tmp" go install "github.com/Shopify/toxiproxy/v2/cmd/server@$TOXIPROXY_VERSION" \
      "github.com/Shopify/toxiproxy/v2/cmd/cli@$TOXIPROXY_VERSION"
    mv "$tmp/server" "$TOOLS/toxiproxy-server"
    mv "$tmp/cli" "$TOOLS/toxiproxy-cli"
    echo "$TOXIPROXY_VERSION" > "$TOOLS/.toxiproxy-version"
    rm -rf "$tmp"
  else
    say "toxiproxy $TOXIPROXY_VERSION present"
  fi

  # 3. lab-iofs (C, libfuse3), into .tools/bin -----------------------------------------------
  build_iofs "$TOOLS"

  # 4. Python virtualenv with the project installed editable -----------------------------------
  stamp=.venv/.bootstrap-stamp
  want=$(cat pyproject.toml | sha256sum | cut -c1-16)
  if [ ! -x .venv/bin/lab ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    say "creating .venv and installing the project"
    [ -x .venv/bin/python ] || "$PY" -m venv .venv
    .venv/bin/pip install -q --upgrade pip
    .venv/bin/pip install -q -e '.[dev]'
    echo "$want" > "$stamp"
  else
    say ".venv up to date"
  fi
  # the project's bytecode, written here once: a lab started with PYTHONDONTWRITEBYTECODE set
  # would otherwise compile every module it imports, every time (0.1 s a process); a file
  # changed since is compiled again in memory, never read stale
  .venv/bin/python -m compileall -q dsl lab runners fault >/dev/null || true
  say "ready: .venv/bin/lab ($(.venv/bin/lab --version 2>/dev/null || echo 'lab not importable yet'))"
}

# Sourced (the tests call its functions), it only defines them.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  cd "$(dirname "$0")/.."
  main "$@"
fi
