# receipts — run `make help` for the targets.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
WAREHOUSE ?= receipts.duckdb

.DEFAULT_GOAL := help

.PHONY: help install node-deps browser-deps test lint demo bench clean

help: ## Show this help.
	@grep -E '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  %-10s %s\n", $$1, $$2}'

$(BIN)/receipts: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	@touch $(BIN)/receipts

install: $(BIN)/receipts ## Create .venv and install receipts with its dev tools.

node-deps: ## Install the Node packages some tests use (Sanity's schema package, groq-js), from the lock file.
	cd tests/node && npm ci --no-audit --no-fund --loglevel=error

browser-deps: ## Install Debian's chromium and chromedriver for the report's browser test (needs root).
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null; }

test: install ## Run the test suite.
	$(BIN)/pytest -q

lint: install ## Run ruff and mypy on the packages.
	$(BIN)/ruff check pipelines sources warehouse tests bench demo
	$(BIN)/ruff format --check pipelines sources warehouse tests bench demo
	$(BIN)/mypy pipelines sources warehouse

demo: install ## Offline: refresh the bundled corpora from recorded sessions into a fresh receipts.duckdb; NDJSON, drift report in out/demo/.
	$(BIN)/python -m demo.run --warehouse $(WAREHOUSE)

# The peer of the backfill benchmark, dlt, lives in its own virtual environment: it is
# never a dependency of receipts.
DLT_VENV := bench/.venv-dlt

$(DLT_VENV)/bin/python:
	$(PY) -m venv $(DLT_VENV)
	$(DLT_VENV)/bin/pip install --quiet 'dlt[duckdb]==1.31.0' 'pyarrow>=16'

bench: install $(DLT_VENV)/bin/python ## Run the benchmarks (dlt beside the backfill); writes bench/results.json.
	$(BIN)/python -m bench.run --out bench/results.json

clean: ## Remove the venv, caches and demo outputs.
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache $(WAREHOUSE) $(WAREHOUSE).wal out
