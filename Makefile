# Lockstep: `make run` starts everything; `make test` sets up and runs the whole suite.
PY := .venv/bin/python
export PYTHONPATH := $(CURDIR)
export DJANGO_SETTINGS_MODULE := dashboard.settings

.PHONY: setup setup-test run test lint typecheck format bench

setup:
	@bash bin/setup

setup-test:
	@bash bin/setup --test

run: setup
	@bash bin/run

lint: setup-test
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy .

test: setup-test lint
	bash bin/check-prometheus-rules
	$(PY) -m pytest $(PYTEST_ARGS)

format: setup
	$(PY) -m ruff check --fix .
	$(PY) -m ruff format .
