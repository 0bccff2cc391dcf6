# corral: `make up` brings the platform up on the embedded AWS; `make test` runs the suite.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
STAMP := .corral/stamps

export CDK_DISABLE_CLI_TELEMETRY := true
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: install up test lint docs synth footprint smoke clean bench capacity fuzz invariant

install: $(STAMP)/venv $(STAMP)/npm $(STAMP)/cli $(STAMP)/client-ts

$(STAMP)/venv: requirements.txt functions/requirements.txt
	@mkdir -p $(STAMP)
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet -r requirements.txt
	@touch $@

# The `corral` command: this project's console script, installed editable (the code stays here).
$(STAMP)/cli: pyproject.toml $(STAMP)/venv
	$(PY) -m pip install --quiet --no-deps -e .
	@touch $@

$(STAMP)/npm: package.json package-lock.json
	@mkdir -p $(STAMP)
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# The TypeScript SDK (client-ts/): its own pinned toolchain; the build generates its types from the OpenAPI
# document the API's code serves (so it follows the API's and shared code), then runs tsc. `make test` runs its tests.
CLIENT_TS_SOURCES := $(filter-out client-ts/src/schema.ts,$(wildcard client-ts/src/*.ts client-ts/scripts/*))
API_SOURCES := $(shell find functions/api shared -name '*.py' -not -path '*/__pycache__/*')
$(STAMP)/client-ts: client-ts/package.json client-ts/package-lock.json $(CLIENT_TS_SOURCES) $(API_SOURCES) $(STAMP)/venv
	@mkdir -p $(STAMP)
	cd client-ts && npm ci --no-audit --no-fund --loglevel=error && CORRAL_PYTHON=../$(PY) npm run --silent build
	@touch $@

# The dashboard's browser tests drive Debian's Chromium (Playwright's own browser download is not used).
$(STAMP)/chromium:
	@mkdir -p $(STAMP)
	test -x /usr/bin/chromium || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }
	@touch $@

up: install
	$(PY) -m local.up $(ARGS)

# The CLI's terminal test runs it in tmux at 80 columns (tests/e2e/test_cli_terminal.py).
$(STAMP)/tmux:
	@mkdir -p $(STAMP)
	command -v tmux >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tmux; }
	@touch $@

# The dashboard tests drive Debian's Chromium; only the tests need it, not `make up`.
# tests/suite.py runs tests/e2e beside tests/unit, then tests/infra; with ARGS, one plain pytest run of them.
test: install $(STAMP)/chromium $(STAMP)/tmux
	$(PY) -m ruff check .
	$(PY) -m tests.suite $(ARGS)

lint: install
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

# The generated references (docs/reference/api.md from the served OpenAPI document, cli.md from the CLI);
# tests/unit/test_docs.py fails when the committed files differ from what this writes.
docs: $(STAMP)/venv
	$(PY) -m docs.generate

# API fuzzing against a stack it deploys (tests/e2e/test_api_fuzz.py), many more examples than `make test`.
FUZZ_EXAMPLES ?= 300
fuzz: install
	CORRAL_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) CORRAL_FUZZ_RANDOM=1 $(PY) -m pytest tests/e2e/test_api_fuzz.py -p no:cacheprovider $(ARGS)

# The one invariant across features (tests/unit/test_invariant.py, in process on moto), many more examples than
# `make test`'s 15: about 10 s an example on a loaded 2-core machine.
INVARIANT_EXAMPLES ?= 500
invariant: install
	CORRAL_INVARIANT_EXAMPLES=$(INVARIANT_EXAMPLES) $(PY) -m pytest tests/unit/test_invariant.py -p no:cacheprovider $(ARGS)

bench: install
	$(PY) -m bench $(ARGS)

capacity: install
	$(PY) -m bench.models.capacity $(ARGS)

# A newcomer's first 20 echo jobs at 4/s right after the stack comes up: make first-jobs ARGS=--compare
.PHONY: first-jobs
first-jobs: install
	$(PY) -m bench.scenarios.first_jobs $(ARGS)

# PROFILE=local synthesizes the emulator's variant (no DAX, no VPC).
PROFILE ?= aws
synth: install
	npx cdk synth -q -c corral:profile=$(PROFILE)

# Component kinds each profile deploys, against the budget of 9 (exit 1 if over).
footprint: install
	$(PY) -m infra.footprint $(ARGS)

# The end-to-end tests against any deployed API: make smoke URL=https://... KEY=...
# Queue/table checks also need AWS credentials (and AWS_ENDPOINT_URL for LocalStack); without them they skip.
smoke: install
	@test -n "$(URL)" -a -n "$(KEY)" || { echo "usage: make smoke URL=<api base url> KEY=<api key>" >&2; exit 2; }
	CORRAL_API_URL="$(URL)" CORRAL_API_KEY="$(KEY)" $(PY) -m pytest tests/e2e -p no:cacheprovider $(ARGS)

clean:
	rm -rf cdk.out .corral/build

# How fast the worker fleet empties a backlog, and whose CPU it takes (bench/scenarios/drain.py): make drain
.PHONY: drain
drain: install
	$(PY) -m bench.scenarios.drain $(ARGS)

# The noisy neighbour (bench/scenarios/noisy.py): make noisy (or ARGS="--quick"); the limiter's accuracy: make rate-limit-accuracy
.PHONY: noisy rate-limit-accuracy
noisy: install
	$(PY) -m bench.scenarios.noisy $(ARGS)

# Priority lanes (bench/scenarios/priorities.py): a high job's enqueue-to-run behind a backlog of 2,000 low jobs.
.PHONY: priorities
priorities: install
	$(PY) -m bench.scenarios.priorities $(ARGS)

rate-limit-accuracy: install
	$(PY) -m bench.models.rate_limit $(ARGS)

# The midnight herd, measured (bench/scenarios/herd.py): make herd ARGS="--schedules 1000"
.PHONY: herd
herd: install
	$(PY) -m bench.scenarios.herd $(ARGS)

# A customer's job in its own function against in-process, per job (bench/scenarios/fence.py): make fence (or ARGS="--quick")
.PHONY: fence
fence: install
	$(PY) -m bench.scenarios.fence $(ARGS)

# Durable jobs' cost against the same work as plain jobs, and their waits' latency (bench/scenarios/durable.py): make durable (or ARGS="--quick")
.PHONY: durable
durable: install
	$(PY) -m bench.scenarios.durable $(ARGS)

# corral beside a bare SQS→Lambda pipeline and Celery on SQS, one emulator (bench/compare/): make compare ARGS=--quick
.PHONY: compare
compare: install
	$(PY) -m bench.compare $(ARGS)
