# `make run` and `make test` both work from a fresh clone: they create .venv and install what they need.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
MYPY_TARGETS ?= agentfolio

.PHONY: run lint test bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(VENV)/bin/agentfolio serve --demo

# Lint first: ruff, the import contracts (docs/architecture.md) and the type checker.
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy $(MYPY_TARGETS)

# The test set-up starts what the tests need: the machine's PostgreSQL 15 (with a test
# database), Debian's chromium (installed with apt when missing) and the JavaScript
# clients of tests/js (npm ci from its lockfile). When one cannot
# be had, its tests skip with the reason, or fail when CI is set.
test: lint
	-bash scripts/ensure-chromium.sh
	-bash scripts/ensure-node-deps.sh
	AGENTFOLIO_TEST_POSTGRES_URL="$${AGENTFOLIO_TEST_POSTGRES_URL:-$$(bash scripts/ensure-postgres.sh || true)}" \
		$(PY) -m pytest -q

bench: $(STAMP)
	for script in bench/*.py; do $(PY) $$script || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis test-output
