#!/usr/bin/env bash
# Sets up everything replica-chaos-lab needs on a Debian 12 machine. Idempotent: a second run
# only checks and takes a few seconds. Never starts a system service.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
TOOLS="$ROOT/.tools/bin"
PY=${PYTHON:-python3}
DBDEPLOYER_VERSION=v1.73.0
TOXIPROXY_VERSION=v2.12.0
APT_PACKAGES="mariadb-server galera-4 sysbench haproxy percona-toolkit mariadb-backup libmariadb-dev pkg-config rsync iptables socat"

say() { printf '[bootstrap] %s\n' "$*"; }

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
  # Package scripts must not start services: a policy-rc.d that denies them, only if none exists.
  made_policy=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
    made_policy=1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq $missing >/dev/null
  [ -n "$made_policy" ] && rm -f /usr/sbin/policy-rc.d
  # Some package scripts start a server despite everything: stop anything that is not ours.
  pkill -x mariadbd 2>/dev/null || true
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

# 3. Python virtualenv with the project installed editable -----------------------------------
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
say "ready: .venv/bin/lab ($(.venv/bin/lab --version 2>/dev/null || echo 'lab not importable yet'))"
