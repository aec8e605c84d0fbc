# Thin entry points; each calls scripts/setup (idempotent) and then the harness.
# `make help` lists them.
SHELL := /bin/bash
LEAKLAB := .venv/bin/leaklab
PYTEST := .venv/bin/pytest
LAB ?= 01
VARIANT ?= broken
DURATION ?=

# The course's pinned Go (scripts/lib.sh says why), for every go command a target runs;
# a GOTOOLCHAIN naming a version is the user's choice and kept.
ifeq ($(filter go1.%,$(GOTOOLCHAIN)),)
export GOTOOLCHAIN := go1.27.3
endif

# The base set-up's stamp: scripts/setup writes it when the base is done, so targets that
# need only the base run the set-up again only when what it installs from has changed.
BASE := .leaklab/setup/base
$(BASE): scripts/setup scripts/lib.sh tools/leaklab/pyproject.toml tools/leaklab/uv.lock
	@scripts/setup

.PHONY: help setup setup-all demo test lint run compare capture doctor notebooks jupyter bench bench-grader grade diff slides clean

help: ## this list
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

setup: ## install the base: Python, the harness, and Go for lab 01 (idempotent)
	@scripts/setup

setup-all: ## install every lab's toolchain, the slides and the lint tools (idempotent)
	@scripts/setup --all

demo: setup ## the main job: lab 01 broken vs fixed, table + plot
	@$(LEAKLAB) demo 01 $(if $(DURATION),--duration $(DURATION))

# The quick tests run on two workers (builds and notebooks keep both cores busy; two
# processes never build the same tree at once: build.py locks each build). Lab 02's trees
# share one cargo cache and so one lock, and lab 01's first `go test -race` compiles the
# race-built standard library: each lab's building tests go to one worker (--dist
# loadgroup; tests/conftest.py sets the groups and stops if xdist did not apply them).
# A third worker was tried once: two of the harness's Ctrl-C tests timed out on the
# busier machine. The leak tests measure memory under load and run one at a time, alone
# on the machine.
test: setup-all lint ## the whole test suite (what CI runs)
	@$(PYTEST) tools/leaklab -m "not leak" -q -n 2 --dist loadgroup --durations=15
	@$(PYTEST) tools/leaklab -m leak -q --durations=0

lint: setup-all ## ruff and mypy on the harness; go vet and gofmt on the Go labs (and the load tests); cargo fmt and clippy on the Rust labs
	@.venv/bin/ruff check tools/leaklab
	@.venv/bin/ruff format --check tools/leaklab
	@.venv/bin/mypy tools/leaklab/src
	@# Go: every module, the load kit (labs/loadkit, not a lab) included.
	@for mod in labs/loadkit/ labs/*/*/; do \
	  if [ -f $$mod/go.mod ]; then \
	    (cd $$mod && go vet ./... && test -z "$$(gofmt -l .)") || { echo "go lint failed in $$mod"; exit 1; }; \
	  fi; \
	done
	@# The kit's and the load programs' own tests (seconds; the services' run in the labs' jobs).
	@for mod in labs/loadkit/ labs/*/load/; do \
	  if [ -f $$mod/go.mod ]; then \
	    (cd $$mod && go test -count=1 ./...) || { echo "go test failed in $$mod"; exit 1; }; \
	  fi; \
	done
	@# Rust: clippy shares the lab's cargo target folder with the harness's builds.
	@for ws in labs/*/*/; do \
	  if [ -f $$ws/Cargo.toml ]; then \
	    lab=$$(basename $$(dirname $$ws)); ws=$${ws%/}; \
	    (cd $$ws && cargo fmt --all --check && \
	      cargo clippy --quiet --locked --all-targets --target-dir "$(CURDIR)/.leaklab/build/$$lab/cache/cargo-target" -- -D warnings) \
	      || { echo "rust lint failed in $$ws"; exit 1; }; \
	  fi; \
	done

run: $(BASE) ## one run: make run LAB=01 VARIANT=broken
	@$(LEAKLAB) run $(LAB) --variant $(VARIANT)

compare: $(BASE) ## your latest runs of a lab side by side: make compare LAB=01
	@$(LEAKLAB) compare $(LAB)

capture: $(BASE) ## re-capture a lab's datasets (maintainers): make capture LAB=01
	@for v in $$($(LEAKLAB) list --variants $(LAB)); do $(LEAKLAB) capture $(LAB) --variant $$v || exit 1; done

notebooks: $(BASE) ## execute every notebook in place on the committed datasets
	@.venv/bin/leaklab notebooks --in-place

jupyter: $(BASE) ## JupyterLab on the notebooks, from .venv, on 127.0.0.1:8888 (PORT=...)
	@# --allow-root only where the shell is root (a bare container); Codespaces is not.
	@.venv/bin/jupyter lab --ServerApp.ip=127.0.0.1 --ServerApp.port=$${PORT:-8888} \
	  --ServerApp.open_browser=False --ServerApp.root_dir=notebooks \
	  $$([ "$$(id -u)" = 0 ] && echo --allow-root)

bench: $(BASE) ## per-operation view of lab 01: go test -bench, broken vs fixed (benchstat)
	@.venv/bin/leaklab bench $(LAB)

N ?= 10
bench-grader: $(BASE) ## how often the grader is wrong: grade broken and fixed N times (make bench-grader LAB=03 N=10 [CASE=a grading case])
	@.venv/bin/python tools/leaklab/benchmarks/grader_error_rate.py $(LAB) --rounds $(N) $(if $(CASE),--case $(CASE))

grade: $(BASE) ## grade your fix in labs/NN/service: make grade LAB=01
	@$(LEAKLAB) grade $(LAB)

diff: $(BASE) ## your change beside the solution's patches: make diff LAB=01
	@$(LEAKLAB) diff $(LAB)

slides: setup ## build every deck to slides/build/ (HTML; PDF when chromium is present)
	@scripts/setup-slides --quiet
	@scripts/build-slides

doctor: $(BASE) ## check this machine for the course
	@$(LEAKLAB) doctor

clean: ## remove builds, runs and reports (.leaklab/ except tools)
	@rm -rf .leaklab/build .leaklab/runs .leaklab/reports
