# receipts — run `make help` for the targets.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
WAREHOUSE ?= receipts.duckdb

.DEFAULT_GOAL := help

.PHONY: help install install-lake test-lake node-deps browser-deps test lint docs demo bench clean

help: ## Show this help.
	@grep -E '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  %-10s %s\n", $$1, $$2}'

$(BIN)/receipts: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	@touch $(BIN)/receipts

install: $(BIN)/receipts ## Create .venv and install receipts with its dev tools.

# Test processes (pytest-xdist) for `make test` and `make test-lake`: most tests wait on
# subprocesses, DuckDB or a browser, so two keep two cores busy; TEST_WORKERS=0 runs them in
# one process. Each test file stays in one process (its module fixtures are made once).
TEST_WORKERS ?= 2
PARALLEL := -n $(TEST_WORKERS) --dist loadfile

# DuckLake warehouses: a second venv with receipts[lake] (DuckDB 1.5.5 and the extension
# wheels; the main venv keeps DuckDB 2.x).
LAKE_VENV ?= .venv-lake
LAKE_BIN := $(LAKE_VENV)/bin
# The lake tests: the dedicated ones (real processes, both catalogs), then this subset of the
# suite with the warehouse fixtures on each DuckLake catalog (RECEIPTS_TEST_WAREHOUSE).
LAKE_TESTS := tests/test_lake_concurrency.py tests/test_lake_backends.py tests/test_row_groups.py \
	tests/test_table_digests.py tests/test_large_listings.py
LAKE_SUBSET := tests/test_ingest_engine.py tests/test_audit_commands.py tests/test_flat_bulk.py \
	tests/test_snapshot_compression.py

$(LAKE_BIN)/receipts: pyproject.toml
	$(PY) -m venv $(LAKE_VENV)
	$(LAKE_BIN)/pip install --quiet --upgrade pip
	$(LAKE_BIN)/pip install --quiet -e '.[dev,lake]'
	@touch $(LAKE_BIN)/receipts

install-lake: $(LAKE_BIN)/receipts ## Create .venv-lake: receipts[lake] (DuckLake on DuckDB 1.5.5) with dev tools.

test-lake: install-lake ## The DuckLake tests on SQLite and PostgreSQL catalogs (a PostgreSQL at 127.0.0.1).
	$(LAKE_BIN)/pytest -q -p no:cacheprovider $(PARALLEL) $(LAKE_TESTS)
	RECEIPTS_TEST_WAREHOUSE=ducklake:sqlite $(LAKE_BIN)/pytest -q -p no:cacheprovider $(PARALLEL) $(LAKE_SUBSET)
	RECEIPTS_TEST_WAREHOUSE=ducklake:postgres $(LAKE_BIN)/pytest -q -p no:cacheprovider $(PARALLEL) $(LAKE_SUBSET)

node-deps: ## Install the Node packages some tests use (Sanity's schema package, groq-js), from the lock file.
	cd tests/node && npm ci --no-audit --no-fund --loglevel=error

browser-deps: ## Install Debian's chromium and chromedriver for the report's browser test (needs root).
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null; }

test: install ## Run the test suite (TEST_WORKERS=2 parallel processes).
	$(BIN)/pytest -q $(PARALLEL)

lint: install ## Run ruff and mypy on the packages.
	$(BIN)/ruff check pipelines sources warehouse tests bench demo
	$(BIN)/ruff format --check pipelines sources warehouse tests bench demo
	$(BIN)/mypy pipelines sources warehouse

# The docs extra (MkDocs, the Material theme) in .venv, installed again when pyproject.toml changes.
$(BIN)/mkdocs: pyproject.toml $(BIN)/receipts
	$(BIN)/pip install --quiet -e '.[dev,docs]'
	@touch $(BIN)/mkdocs

docs: install $(BIN)/mkdocs ## Build the documentation site into site/ (mkdocs build --strict: a broken link fails).
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

demo: install ## Offline: refresh the bundled corpora from recorded sessions into a fresh receipts.duckdb; NDJSON, drift report in out/demo/.
	$(BIN)/python -m demo.run --warehouse $(WAREHOUSE)

# The peer of the backfill benchmark, dlt, lives in its own virtual environment: it is
# never a dependency of receipts.
DLT_VENV := bench/.venv-dlt

$(DLT_VENV)/bin/python:
	$(PY) -m venv $(DLT_VENV)
	$(DLT_VENV)/bin/pip install --quiet 'dlt[duckdb]==1.31.0' 'pyarrow>=16'

bench: install install-lake $(DLT_VENV)/bin/python ## Run the benchmarks (dlt beside the backfill); writes bench/results.json.
	$(BIN)/python -m bench.run --out bench/results.json

clean: ## Remove the venv, caches and demo outputs.
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache $(WAREHOUSE) $(WAREHOUSE).wal out
