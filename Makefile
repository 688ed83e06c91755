# replica-chaos-lab: `make demo` and `make test` are all a new user needs.
.PHONY: bootstrap demo test test-fast test-integration lint bench clean-runs validity

VENV := .venv
LAB := $(VENV)/bin/lab
PYTEST := $(VENV)/bin/python -m pytest

bootstrap:
	@bash tools/bootstrap.sh

demo: bootstrap
	$(LAB) doctor || true
	$(LAB) run experiments/quickstart.exp

test: bootstrap
	$(PYTEST) tests/unit -q
	$(PYTEST) tests/integration -q -m integration --durations=40

test-fast: bootstrap
	$(PYTEST) tests/unit -q

test-integration: bootstrap
	$(PYTEST) tests/integration -q -m integration --durations=40

lint: bootstrap
	$(VENV)/bin/ruff check dsl lab runners fault tests bench
	$(VENV)/bin/mypy dsl lab runners fault

# every bench script, even after a miss; writes bench/results.md; fails at the end on a miss
# or a crash. `make bench ONLY=parse,checkers` runs some of them.
bench: bootstrap
	$(VENV)/bin/python bench/run_all.py $(if $(ONLY),--only $(ONLY))

clean-runs: bootstrap
	$(LAB) gc

# docs/validity.md: every calibration experiment run on real servers, expected vs measured
validity: bootstrap
	$(VENV)/bin/python tools/validity.py
