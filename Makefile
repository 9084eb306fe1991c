# Two commands: `make run` and `make test`. Both set up what they need first.
VENV   := .venv
# The C timing loops are built by pip install: a change to it, or to how it is built, reinstalls.
BUILT  := pyproject.toml setup.py src/cryptbench/cipher/_units.c src/cryptbench/cipher/_af_alg.c
STAMP  := $(VENV)/.installed-$(shell cat $(BUILT) | cksum | cut -d' ' -f1)
ARGS   ?=
PYTEST_ARGS ?=
# apt's and pip's output goes here; each set-up step prints one line (scripts/quietly.sh).
LOG    := build/setup.log
QUIETLY := scripts/quietly.sh $(LOG)

.PHONY: run test test-steps setup system-deps test-deps lint lint-steps clean shell bytecode

setup: system-deps $(STAMP) shell bytecode

# Python writes no bytecode where PYTHONDONTWRITEBYTECODE is set (as on this VM) or where it
# cannot write (the kernel lab's read-only view of the tree), and then compiles every module
# anew in every process: every `cryptbench` and every test run. benchmarks/startup.py
# measures what that costs.
bytecode: $(STAMP)
	@$(QUIETLY) "compiling the Python bytecode" $(VENV)/bin/python -m compileall -q src tests benchmarks

# Completion for bash, zsh and fish, and the man page, from the parser; installed where
# the shells and man look when run as root (scripts/shell_integration.py).
shell: $(STAMP)
	@$(QUIETLY) "writing shell completion and the man page" \
		$(VENV)/bin/python scripts/shell_integration.py build/shell $(if $(filter 0,$(shell id -u)),--install,)

system-deps:
	@$(QUIETLY) "checking system packages" scripts/install-system-deps.sh

test-deps:
	@$(QUIETLY) "checking the tests' system packages" scripts/install-system-deps.sh --test
	@$(QUIETLY) "checking the kernel lab's Debian 13 kernel" scripts/fetch-lab-kernel.sh
	@$(QUIETLY) "checking the kernel lab's ZFS module (built once: minutes)" scripts/fetch-zfs.sh

$(STAMP): $(BUILT)
	@rm -f $(VENV)/.installed-*
	@$(QUIETLY) "making the Python environment $(VENV)" python3 -m venv $(VENV)
	@$(QUIETLY) "installing Python packages into $(VENV)" \
		$(VENV)/bin/pip install --disable-pip-version-check -e '.[dev]'
	@touch $@

run: setup
	@$(VENV)/bin/cryptbench run $(ARGS)

lint: setup
	@$(MAKE) --no-print-directory lint-steps

lint-steps:
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/ruff format --check src tests benchmarks
	$(VENV)/bin/mypy

# Timed as a whole, set-up included, and phase by phase: the table of where the time
# went ends the output and stays in build/test-times.txt (tests/support/time_budget.py).
PHASES := build/test-phases.tsv
TIMES  := build/pytest-times.json
test:
	@start=$$(date +%s); mkdir -p build; rm -f $(PHASES) build/pytest-times*.json; \
	$(MAKE) --no-print-directory test-steps; rc=$$?; total=$$(( $$(date +%s) - start )); \
	if [ -x $(VENV)/bin/python ]; then \
		$(VENV)/bin/python -m tests.support.time_budget $(PHASES) $(TIMES) $$total build/test-times.txt; fi; \
	echo "make test: exit $$rc after $$total s in all (set-up, lint and types, tests, kernel lab)"; \
	exit $$rc

# The whole suite runs in two lanes side by side (scripts/test_lanes.sh); tests picked
# by PYTEST_ARGS run in one pytest, after lint and types.
test-steps:
	@scripts/timed.sh $(PHASES) "set-up" $(MAKE) --no-print-directory setup test-deps
ifeq ($(strip $(PYTEST_ARGS)),)
	@scripts/timed.sh $(PHASES) "tests" scripts/test_lanes.sh $(PHASES) $(TIMES) $(VENV)/bin/pytest
else
	@scripts/timed.sh $(PHASES) "lint and types" $(MAKE) --no-print-directory lint-steps
	@scripts/timed.sh $(PHASES) "tests" env CRYPTBENCH_TEST_TIMES=$(TIMES) $(VENV)/bin/pytest $(PYTEST_ARGS)
endif

clean:
	rm -rf $(VENV) build src/*.egg-info .pytest_cache .ruff_cache
