# Two commands on a fresh machine: `make demo` and `make test`. Everything else is set-up.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
DEMO_DIR := .relay/demo-upstream

.PHONY: setup demo demo-upgrade lint test test-quick clean

setup: $(VENV)/.deps $(VENV)/.backend $(VENV)/.system

$(VENV)/.deps: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[dev]'
	$(BIN)/pip install -q -e '.[embedding]' || echo 'optional embedding agent not installed (its tests skip)'
	touch $@

# The C++ extension is ABI-bound to the installed torch minor version: rebuilt when sources change.
# The build imports torch, which would autoload the stale extension being replaced: switched off.
$(VENV)/.backend: $(VENV)/.deps $(wildcard backend/csrc/*.cpp backend/csrc/*/*.cpp backend/csrc/*.h backend/csrc/*/*.h) backend/setup.py backend/pyproject.toml
	TORCH_DEVICE_BACKEND_AUTOLOAD=0 $(BIN)/pip install -q --no-build-isolation -e backend
	touch $@

# redis-server, PostgreSQL and chromium for the integration and browser tests.
$(VENV)/.system: scripts/ensure-system-deps.sh
	scripts/ensure-system-deps.sh
	touch $@

demo: setup
	$(BIN)/relay-cli demo init $(DEMO_DIR) --force
	$(BIN)/relay-cli run --from 2.13 --to 2.14 --upstream $(DEMO_DIR) --rules testdefs/rules/demo; \
	  status=$$?; if [ $$status -eq 1 ]; then echo "demo: the run found the new failures the demo change introduces (exit 1, as expected)"; exit 0; fi; exit $$status

# The same change with each side on its own torch: 2.13.0 (installed) against 2.14.1 in its own
# environment under .relay/cache/envs (5.5 GB and several minutes the first time; reused after).
demo-upgrade: setup
	$(BIN)/relay-cli demo init $(DEMO_DIR) --force
	$(BIN)/relay-cli run --from 2.13 --to 2.14 --upstream $(DEMO_DIR) --rules testdefs/rules/demo \
	  --torch-from 2.13.0 --torch-to 2.14.1; \
	  status=$$?; if [ $$status -eq 1 ]; then echo "demo-upgrade: new failures or a broken device on 2.14.1 (exit 1): see the summary"; exit 0; fi; exit $$status

# The layering contracts (import-linter) and the agreed lint rules (ruff), both in pyproject.toml.
lint: setup
	$(BIN)/ruff check .
	$(BIN)/lint-imports

test: lint
	$(BIN)/python -m pytest -q

test-quick: lint
	$(BIN)/python -m pytest -q -m "not slow and not browser"

clean:
	rm -rf $(VENV) .relay backend/build
