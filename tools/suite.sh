#!/usr/bin/env bash
# The whole suite, as `make test` runs it (and `.ci/run`, with --lint):
#   1. the integration pool (real servers, IT_WORKERS tests at a time) and, beside it, one
#      process running the lint (with --lint) and then the unit tests, at the lowest CPU and
#      I/O priority: the pool's tests wait on their loads most of the time (the 2 cores about
#      60 % busy with four), so the job beside them takes what they leave and saves its own
#      minute and a half (at normal priority it slowed them: two failed on figures of timing);
#   2. when both are done, alone on the machine, the integration tests marked `serial`
#      (tests/integration/conftest.py: calibrations whose tolerance is for an idle machine, and
#      what acts on the whole machine).
# Every part runs, even after a failure in another; the exit status is 1 if any failed. The
# output of the job beside the pool is printed when the pool is done (it is also kept in
# $LAB_SUITE_LOG, default a temporary file, for reading while it runs).
set -uo pipefail
cd "$(dirname "$0")/.."
PYTEST=(.venv/bin/python -m pytest)
workers=${IT_WORKERS:-2}
lint=0
[[ ${1:-} == --lint ]] && lint=1

beside_log=${LAB_SUITE_LOG:-$(mktemp -t lab-suite-beside.XXXXXX)}
low=(nice -n 19)
command -v ionice >/dev/null && low+=(ionice -c 2 -n 7)
"${low[@]}" bash -c '
    s=0
    if [[ $1 == 1 ]]; then
        echo "== lint (ruff, mypy)"
        .venv/bin/ruff check dsl lab runners fault tests bench || s=1
        .venv/bin/mypy dsl lab runners fault || s=1
    fi
    echo "== unit tests"
    .venv/bin/python -m pytest tests/unit -q -p no:cacheprovider || s=1
    exit $s
' beside "$lint" > "$beside_log" 2>&1 &
beside=$!
# Ctrl-C or a kill of the suite stops the job beside the pool too
trap 'pkill -TERM -P "$beside" 2>/dev/null; kill "$beside" 2>/dev/null' EXIT

echo "== integration tests, $workers at a time (beside them: $( ((lint)) && echo "lint, then ")unit tests, output in $beside_log)"
s=0
"${PYTEST[@]}" tests/integration -q -m "integration and not serial" -n "$workers" \
    --dist loadgroup --durations="${IT_DURATIONS:-30}" || s=1

wait "$beside" || s=1
trap - EXIT
cat "$beside_log"
[[ -z ${LAB_SUITE_LOG:-} ]] && rm -f "$beside_log"

echo "== integration tests that run alone"
"${PYTEST[@]}" tests/integration -q -m "integration and serial" --durations=10 || s=1
exit $s
