# receipts — run `make help` for the targets.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
WAREHOUSE ?= receipts.duckdb

.DEFAULT_GOAL := help

.PHONY: help install test test-lake test-deps node-deps browser-deps go-deps lint docs demo bench clean

help: ## Show this help.
	@grep -E '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  %-10s %s\n", $$1, $$2}'

# What `make install` puts into .venv besides receipts: everything the suite needs (the dev
# tools, the DuckLake extension wheels for the same DuckDB engine, MkDocs for `make docs`).
EXTRAS ?= dev,lake,docs

$(BIN)/receipts: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[$(EXTRAS)]'
	@touch $(BIN)/receipts

install: $(BIN)/receipts ## Create .venv: receipts, its dev tools, the DuckLake extensions and MkDocs.

# Test processes (pytest-xdist) for `make test` and `make test-lake`: most tests wait on
# subprocesses, DuckDB, a browser, a PostgreSQL cluster or the S3 server, so three keep two
# cores busy; TEST_WORKERS=0 runs them in one process. Each test file stays in one process
# (its module fixtures are made once).
TEST_WORKERS ?= 3
# DuckDB's threads per warehouse connection in the tests (tests/conftest.py): the test
# processes already keep the cores busy, and DuckDB's parallel plans cost CPU besides.
TEST_DUCKDB_THREADS ?= 1
# The suite's processes write Python's bytecode caches (__pycache__, ignored by git) even
# where the environment says not to (PYTHONDONTWRITEBYTECODE): without them each of the
# `receipts` processes the tests start compiles the project's modules again (a
# lake reader took 1.45 s of CPU without them, 1.09 s with them; means of 6), and
# pytest rewrites every test module again in each of its processes.
PYTEST := env -u PYTHONDONTWRITEBYTECODE RECEIPTS_TEST_DUCKDB_THREADS=$(TEST_DUCKDB_THREADS) \
	$(BIN)/pytest -q \
	-p no:cacheprovider -n $(TEST_WORKERS) --dist loadfile
# The lake tests are chosen by marker (set in tests/conftest.py): `lake`, the DuckLake tests
# themselves; `lake_subset`, suite modules run again with their warehouse fixtures on each
# DuckLake catalog. PostgreSQL catalogs are made at RECEIPTS_TEST_PG (host=127.0.0.1
# user=postgres unless set).
LAKE_CATALOGS := ducklake:sqlite ducklake:postgres
# Each pytest session of a target appends its counts here; the target ends with one line.
TEST_RESULTS := $(VENV)/test-results.jsonl

# One pytest session in a target's sequence: `$(call session,ENV,ARGS)`. A failure (or exit
# 5: no test collected) marks the target failed, and the next sessions still run.
session = echo '$(strip $(1) pytest $(2))'; \
	env RECEIPTS_TEST_RESULTS=$(TEST_RESULTS) $(1) $(PYTEST) $(2) || { code=$$?; rc=1; \
	  [ $$code -ne 5 ] || echo 'no test collected: $(strip $(1) pytest $(2))' >&2; }; 
lake_sessions = $(foreach catalog,$(LAKE_CATALOGS),\
	$(call session,RECEIPTS_TEST_WAREHOUSE=$(catalog),-m lake_subset))
# Then one line: what passed, failed and skipped, and the command enabling each skip.
summary = $(BIN)/python -m tests.run_summary $(TEST_RESULTS) 'make $@'; rm -f $(TEST_RESULTS); exit $$rc

test: install test-deps ## The whole suite, then its lake subset on each DuckLake catalog; ends with one line naming what skipped.
	@rm -f $(TEST_RESULTS); rc=0; $(call session,,) $(lake_sessions) $(summary)

test-lake: install test-deps ## The DuckLake tests, then the lake subset on SQLite and PostgreSQL catalogs.
	@rm -f $(TEST_RESULTS); rc=0; $(call session,,-m lake) $(lake_sessions) $(summary)

node-deps: ## Install the Node packages some tests use (Sanity's schema package, groq-js), from the lock file.
	cd tests/node && npm ci --no-audit --no-fund --loglevel=error

browser-deps: ## Install Debian's chromium and chromedriver for the report's browser test (needs root).
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null; }

go-deps: ## Install Debian's Go and golang.org/x/mod for the transparency log's interop tests (needs root).
	@command -v go >/dev/null && [ -d /usr/share/gocode/src/golang.org/x/mod/sumdb/tlog ] || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq golang-go golang-golang-x-mod-dev >/dev/null; }

# npm ci leaves this file behind: the Node packages are installed again when the lock changes.
NODE_STAMP := tests/node/node_modules/.package-lock.json
$(NODE_STAMP): tests/node/package-lock.json
	cd tests/node && npm ci --no-audit --no-fund --loglevel=error

# What the suite needs besides .venv, where this machine allows, as CI installs it: the Node
# packages (with npm), chromium and Go (as root), a running PostgreSQL (started as root).
# Without one, its tests skip and `make test` names them in its last line.
test-deps: ## Install what the whole suite needs where this machine can: Node packages, chromium, Go, PostgreSQL.
	@if command -v npm >/dev/null; then $(MAKE) --no-print-directory $(NODE_STAMP); fi
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  $(MAKE) --no-print-directory browser-deps go-deps; fi
	@if [ "$$(id -u)" = 0 ] && [ -d /etc/postgresql ] && ! pg_isready -q -h 127.0.0.1; then \
	  pg_ctlcluster --skip-systemctl-redirect "$$(ls /etc/postgresql)" main start; fi

lint: install ## Run ruff and mypy on the packages.
	$(BIN)/ruff check pipelines sources warehouse tests bench demo fakes docs/hooks
	$(BIN)/ruff format --check pipelines sources warehouse tests bench demo fakes docs/hooks
	$(BIN)/mypy pipelines sources warehouse

docs: install ## Build the documentation site into site/ (mkdocs build --strict: a broken link fails).
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

demo: install ## Offline: refresh the bundled corpora from recorded sessions into a fresh receipts.duckdb; NDJSON, drift report in out/demo/.
	$(BIN)/python -m demo.run --warehouse $(WAREHOUSE)

# The peer of the backfill benchmark, dlt, lives in its own virtual environment: it is
# never a dependency of receipts.
DLT_VENV := bench/.venv-dlt

$(DLT_VENV)/bin/python:
	$(PY) -m venv $(DLT_VENV)
	$(DLT_VENV)/bin/pip install --quiet 'dlt[duckdb]==1.31.0' 'pyarrow>=16'

# The benchmarks' processes run as an installed receipts does, with Python's bytecode caches
# (see PYTEST above): otherwise each one compiles the modules it imports again.
bench: install $(DLT_VENV)/bin/python ## Run the benchmarks (dlt beside the backfill); writes out/bench/results.json.
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m bench.run --out out/bench/results.json

clean: ## Remove the venv, caches and demo outputs.
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache $(WAREHOUSE) $(WAREHOUSE).wal out site
