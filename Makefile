# Two commands: `make run` starts the app with the demo loaded, `make test` runs every check.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PORT   ?= 8501
# Loopback only by default; `make run ADDRESS=0.0.0.0` exposes the app (read the README first).
ADDRESS ?= 127.0.0.1

.PHONY: run test lint demo bench clean browser

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.runtime: requirements.txt pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -r requirements.txt
	touch $@

$(VENV)/.dev: requirements-dev.txt requirements.txt pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -r requirements-dev.txt
	touch $(VENV)/.runtime $@

# Debian's chromium drives the browser tests; playwright cannot download one here.
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "chromium missing: install Debian's chromium package (browser tests will be skipped)"; fi; }

demo: $(VENV)/.runtime
	$(BIN)/python -m calibration demo

run: demo
	$(BIN)/streamlit run app.py --server.port $(PORT) --server.address $(ADDRESS) --server.headless true \
	  --browser.gatherUsageStats false

lint: $(VENV)/.dev
	$(BIN)/ruff check .
	$(BIN)/mypy

# Two workers, whole files each: a file's module-scoped app server stays in one worker.
test: $(VENV)/.dev browser lint
	$(BIN)/python -m pytest -n 2 --dist loadfile

bench: $(VENV)/.dev
	for f in bench/bench_*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
