# Two commands: `make run` starts the app with the demo loaded, `make test` runs every check
# (the manual's build included: `make docs`).
# Installs are pinned by constraints.txt (what CI tested); `make lock` rewrites it from .venv.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PORT   ?= 8501
# Loopback only by default; `make run ADDRESS=0.0.0.0` exposes the app (read docs/security.md first).
ADDRESS ?= 127.0.0.1

.PHONY: run test test-fast lint lint-js test-js lock demo bench clean browser postgres frameworks docs cog

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.runtime: requirements.txt pyproject.toml constraints.txt | $(BIN)/python
	$(BIN)/pip install --quiet -c constraints.txt -r requirements.txt
	touch $@

# The dev tools are pyproject.toml's `dev` dependency group (pip 25.1 or later reads it), installed
# beside the package with the extras the tests use.
DEV_INSTALL := -e '.[team,postgres]' --group dev
$(VENV)/.dev: requirements.txt pyproject.toml constraints.txt | $(BIN)/python
	$(BIN)/pip install --quiet -c constraints.txt $(DEV_INSTALL)
	touch $(VENV)/.runtime $@

# After changing a dependency: install the newest versions pyproject.toml allows, run
# `make test`, then commit the pins this writes.
lock: | $(BIN)/python
	$(BIN)/pip install --quiet --upgrade $(DEV_INSTALL)
	{ echo "# What CI tested: every distribution in the dev venv, pinned (\`make lock\` rewrites this file)."; \
	  echo "# The Makefile installs with \`-c constraints.txt\`; pyproject.toml keeps the ranges the code needs."; \
	  $(BIN)/pip freeze --all --exclude-editable --exclude pip; } > constraints.txt
	touch $(VENV)/.runtime $(VENV)/.dev

# DeepEval, Ragas and Langfuse in a venv of their own (they pin other versions of libraries the
# app uses): the golden-set tests load the exports with them (tests/frameworks/).
FW_VENV := .venv-frameworks
$(FW_VENV)/.done: tests/frameworks/requirements.txt
	$(PYTHON) -m venv $(FW_VENV)
	$(FW_VENV)/bin/pip install --quiet -r tests/frameworks/requirements.txt
	touch $@

frameworks: $(FW_VENV)/.done

# Debian's Chromium: its headless shell drives the browser tests, the full browser the benchmarks
# and screenshots; playwright cannot download one here.
BROWSERS := chromium chromium-headless-shell
browser:
	@missing=""; for b in $(BROWSERS); do command -v $$b >/dev/null 2>&1 || missing="$$missing $$b"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else echo "missing:$$missing: install Debian's packages (browser tests will be skipped)"; fi; fi

# Debian's postgresql binaries: the tests start a throwaway server of their own (tests/pg_server.py).
postgres:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v pg_config >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; \
	  else echo "postgresql missing: install Debian's postgresql package (the PostgreSQL tests need it)"; fi; }

# The review card's JavaScript: ESLint and node's test runner, installed by npm from the
# committed package-lock.json (Node 20 or later; Debian's nodejs and npm packages).
node_modules/.installed: package.json package-lock.json
	@command -v npm >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null; \
	  else echo "node and npm missing: install Debian's nodejs and npm packages"; exit 1; fi; }
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

lint-js: node_modules/.installed
	npx --no-install eslint

test-js: node_modules/.installed
	node --test tests/js/

demo: $(VENV)/.runtime
	$(BIN)/python -m calibration demo

run: demo
	$(BIN)/calibration serve --port $(PORT) --address $(ADDRESS)

# The pages' generated parts (the CLI reference, printed output, the benches' figures under
# docs/figures/) are what their sources print now: `make cog` rewrites them, `cog --check` fails
# on a stale one (tools/manual.py holds what they call).
COG_PAGES := README.md $(wildcard docs/*.md)
lint: $(VENV)/.dev lint-js
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/vulture
	$(BIN)/python -m cogapp --check $(COG_PAGES)

cog: $(VENV)/.dev
	$(BIN)/python -m cogapp -r $(COG_PAGES)

# The manual (docs/, mkdocs.yml) into site/; any warning (a broken link, a page left out of the
# navigation) fails the build. The generator: docs/development.md, "The manual".
docs: $(VENV)/.dev
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

# Whole files per worker: a file's module-scoped app server stays in one worker. Three workers on
# two cores: a browser test waits on its app server and Chromium in turn, so two workers left the
# cores 16% idle. Files go out in collection order (tests/browser first, the longest) rather than
# xdist's most-tests-first, which left the browser files for the end, one worker running alone.
test: $(VENV)/.dev browser postgres frameworks lint test-js docs
	$(BIN)/python -m pytest -n 3 --dist loadfile --no-loadscope-reorder

# No browser and no slow test: the quick check while working (`make test` stays what CI runs).
test-fast: $(VENV)/.dev
	TEST_BACKENDS=sqlite $(BIN)/python -m pytest -n 2 --dist loadfile -m "not browser and not slow"

# Each bench also writes what it prints to docs/figures/; `make cog` then copies it into the pages.
bench: $(VENV)/.dev
	for f in bench/bench_*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

clean:
	rm -rf $(VENV) $(FW_VENV) node_modules .pytest_cache .ruff_cache site
