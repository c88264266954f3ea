# Lockstep: `make run` starts everything; `make test` sets up and runs the whole suite.
PY := .venv/bin/python
export PYTHONPATH := $(CURDIR)
export DJANGO_SETTINGS_MODULE := lockstep.dashboard.settings
# Bytecode is written (into the ignored __pycache__ folders) even where the environment
# says not to: the suite starts hundreds of Python processes, and without it each one
# compiles every module it imports, the test modules of each worker included.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: setup setup-test run reset-demo test checks suite test-quick test-postgres lint audit typecheck format bench wheel

setup:
	@bash bin/setup

setup-test:
	@bash bin/setup --test

run: setup
	@bash bin/run

# `make run` keeps its data between runs in its data directory, found as bin/run finds it
# (LOCKSTEP_DATA_DIR, else the checkout's var/): the database with the demo's users, dead
# letters and alerts, Redis's append-only files, the analytics data set. Removing it makes
# the next run start clean. Stop `make run` first: its processes hold those files open.
# A REDIS_URL or DATABASE_URL of your own is not touched.
DEMO_DATA_DIR = $(or $(LOCKSTEP_DATA_DIR),$(CURDIR)/var)
reset-demo:
	rm -rf "$(DEMO_DATA_DIR)"

lint: setup-test
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy .

# Known vulnerabilities in the pinned packages (PyPI's advisory feed): exits non-zero on
# any, and when the feed cannot be reached. Pins are read from the lock as they are,
# hashes required, without pip resolving anything. A package the feed does not know is
# listed as skipped, not failed (--strict would fail on it): check that list.
audit: setup-test
	$(PY) -m pip_audit -r requirements.lock -r requirements-uv.lock --require-hashes --disable-pip --progress-spinner off

# Tests run in parallel with pytest-xdist: most of them wait (on heartbeats, lock expiry,
# processes starting), so more workers than cores pays. --dist loadscope hands out whole
# modules (their module fixtures start once), slow ones first (tests/scheduling.py).
# TEST_WORKERS=0 runs them in the make process, one after another.
TEST_WORKERS ?= 4
XDIST = -n $(TEST_WORKERS) --dist loadscope

# The checks (ruff, mypy, the audit, the Prometheus rules, the deploy files) run beside the
# tests, not before them: the tests mostly wait, the checks mostly compute. `make test`
# fails if either does.
test: setup-test
	@$(MAKE) --no-print-directory -j 3 suite checks

checks: lint audit
	bash bin/check-prometheus-rules
	$(PY) bin/check-deploy

# The PostgreSQL run (docs/testing.md, "Stores"): the tests marked on_postgres again, on a
# PostgreSQL server the run starts itself (tests/postgres.py). Two workers: the set is one
# long test (the ingester killed mid-stream) beside half a minute of others, and each
# worker migrates a test database of its own. Exit status 5 is "no test selected", as when
# PYTEST_ARGS names only tests not marked on_postgres.
POSTGRES_WORKERS ?= $(if $(filter 0,$(TEST_WORKERS)),0,2)
POSTGRES_RUN = LOCKSTEP_TEST_STORE=postgres $(PY) -m pytest -n $(POSTGRES_WORKERS) \
	--dist loadscope --durations=5 $(PYTEST_ARGS) || test $$? -eq 5

# The slowest 15 are printed at the end of every run: a test that grows shows there first.
# Then the PostgreSQL run.
suite: setup-test
	$(PY) -m pytest $(XDIST) --durations=15 $(PYTEST_ARGS)
	$(POSTGRES_RUN)

# The PostgreSQL run alone.
test-postgres: setup-test
	$(POSTGRES_RUN)

# The inner loop: every test not marked slow (no browser, Spark, Redis Cluster, kills or
# wheels; tests/conftest.py marks them). No lint, no audit: `make test` runs everything,
# as CI does.
test-quick: setup-test
	$(PY) -m pytest -m "not slow" $(XDIST) $(PYTEST_ARGS)

format: setup
	$(PY) -m ruff check --fix .
	$(PY) -m ruff format .

# The distribution (docs/packaging.md): dist/lockstep-<version>-py3-none-any.whl, built
# with the build requirements .venv already has (setuptools, from the lock). build/ is
# cleared first: setuptools copies into it and never removes what the source no longer has;
# lockstep.egg-info goes too, or tools with the checkout on their path take it for an install.
wheel: setup
	rm -rf build lockstep.egg-info
	$(PY) -m pip wheel --no-deps --no-build-isolation -w dist .
	rm -rf build lockstep.egg-info
