#!/usr/bin/env bash
# Runs a command beside one CPU-bound process (a Python loop spinning on a core), the "another
# CPU-heavy job beside it" of a busy machine; the process ends with the command, also on Ctrl-C.
# `make catalogue-busy` runs the catalogue this way (docs/workshop/README.md, "A busy machine").
set -u
python3 -c 'while True: pass' &
hog=$!
trap 'kill "$hog" 2>/dev/null' EXIT INT TERM
"$@"
