# corral: `make up` brings the platform up on the embedded AWS; `make test` runs the suite.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
STAMP := .corral/stamps

export CDK_DISABLE_CLI_TELEMETRY := true
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: install up test lint unit synth clean bench capacity

install: $(STAMP)/venv $(STAMP)/npm

$(STAMP)/venv: requirements.txt functions/requirements.txt
	@mkdir -p $(STAMP)
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet -r requirements.txt
	@touch $@

$(STAMP)/npm: package.json package-lock.json
	@mkdir -p $(STAMP)
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

up: install
	$(PY) -m local.up $(ARGS)

test: install
	$(PY) -m ruff check .
	$(PY) -m pytest $(ARGS)

lint: install
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

bench: install
	$(PY) -m bench $(ARGS)

capacity: install
	$(PY) -m bench.capacity $(ARGS)

synth: install
	npx cdk synth -q

clean:
	rm -rf cdk.out .corral/build
