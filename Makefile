# roundaudit: `make run` serves the API on the embedded SQLite store, `make test` runs every test.
# Both create the virtual environment (.venv) and install the project first when needed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test test-slow lint types check contract bench bench-quick bench-boundless bench-seal clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/roundaudit serve --host $(HOST) --port $(PORT)

test: $(STAMP)
	$(BIN)/python -m pytest

test-slow: $(STAMP)
	$(BIN)/python -m pytest -m slow

lint: $(STAMP)
	$(BIN)/ruff check .

types: $(STAMP)
	$(BIN)/mypy

check: lint types test

contract: $(STAMP)
	bash .ci/schemathesis

# every figure of issue 15 on SQLite and PostgreSQL beside its raw-library baseline (one table,
# artifacts/benchmarks.json; under 10 minutes); bench-quick: the same, tiny (a smoke test)
bench: $(STAMP)
	$(BIN)/python -m benchmarks

bench-quick: $(STAMP)
	$(BIN)/python -m benchmarks --quick --json artifacts/benchmarks-quick.json

bench-boundless: $(STAMP)
	$(BIN)/python -m benchmarks.boundless --players 10000 --store sqlite --verify

bench-seal: $(STAMP)
	$(BIN)/python -m benchmarks.seal_cost --store sqlite
	$(BIN)/python -m benchmarks.seal_cost --store postgres
	$(BIN)/python -m benchmarks.seal_window --store sqlite

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
