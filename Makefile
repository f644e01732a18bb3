# Vigil: the two commands a newcomer needs are `make run` and `make test`.
SHELL := /bin/bash
.DEFAULT_GOAL := help

CACHE      := .cache
VENV_TEST  := $(CACHE)/venv-test
VENV_TOOLS := $(CACHE)/venv-tools
VENV_BROWSER := $(CACHE)/venv-browser
DOCS_LINT  := $(CACHE)/docs-lint
PY         ?= python3
# `make production`'s server: a store path and the flags of docs/operations.md's recipe.
PRODUCTION_ARGS ?= --db vigil.db serve --no-demo-account --addr 127.0.0.1:3000

# The Lambda functions: one binary each (src/bin/), one function each in template.yaml.
LAMBDAS       := list-results session-score get-plan get-project create-webhook list-webhooks \
                 delete-webhook list-deliveries create-project list-projects update-project get-usage \
                 create-event list-events get-event collect agent-script list-sessions get-stats dashboard \
                 get-webhook-secret rotate-webhook-secret test-webhook redeliver list-device-sessions \
                 get-sealing-key rotate-sealing-key put-label get-label delete-label list-labels get-quality \
                 api-reference authorizer fallback webhook-dispatch webhook-sweep \
                 calibrate
LAMBDA_TARGET := aarch64-unknown-linux-gnu
# The tools venv first on PATH: cargo finds `cargo lambda` there, cargo-lambda finds zig
# (`python3 -m ziglang`), and SAM's rust-cargolambda builder finds cargo-lambda.
TOOLS_ENV     := PATH="$(CURDIR)/$(VENV_TOOLS)/bin:$$PATH" SAM_CLI_TELEMETRY=0
# `sam validate` and `sam build` need a region but no account or credentials.
SAM_OFFLINE   := $(TOOLS_ENV) AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1

.PHONY: help run production test test-unit test-browser test-network test-api test-clients lint agent agent-check fmt build sizes sam-build deploy tools clean bench bench-agent data wire-data eval cost links

help: ## List the targets
	@grep -E '^[a-z-]+:.*##' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

run: ## The whole API on http://127.0.0.1:3000/v1 over SQLite (vigil.db), with demo data
	cargo run --bin vigil -- serve --demo --stun-port 3478

production: ## Build vigil for a long-running server (the `server` profile: opt-level 3, LTO) into target/server/vigil and run it with PRODUCTION_ARGS (docs/operations.md, "Running vigil serve in production")
	cargo build --profile server --locked --bin vigil
	target/server/vigil $(PRODUCTION_ARGS)

$(VENV_TEST)/.installed: requirements-test.txt
	$(PY) -m venv $(VENV_TEST)
	$(VENV_TEST)/bin/pip install --quiet --disable-pip-version-check -r requirements-test.txt
	touch $@

# The official Standard Webhooks library for Node, pinned by tests/node/package-lock.json: the
# webhook tests verify deliveries with it as a receiver would.
NODE_TEST := $(CACHE)/test-node
$(NODE_TEST)/.installed: tests/node/package.json tests/node/package-lock.json
	mkdir -p $(NODE_TEST)
	cp tests/node/package.json tests/node/package-lock.json $(NODE_TEST)/
	cd $(NODE_TEST) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

test: $(VENV_TEST)/.installed $(NODE_TEST)/.installed ## Every test: unit, handlers, both stores (DynamoDB via a local moto_server), black-box HTTP
	scripts/with-moto.sh $(VENV_TEST) cargo test --workspace --all-targets --locked

$(VENV_BROWSER)/.installed: requirements-browser.txt
	$(PY) -m venv $(VENV_BROWSER)
	$(VENV_BROWSER)/bin/pip install --quiet --disable-pip-version-check -r requirements-browser.txt
	touch $@

# puppeteer-core and the stealth plugin, pinned by tests/browser/package-lock.json (no browser download).
NODE_BROWSER := $(CACHE)/browser-node
$(NODE_BROWSER)/.installed: tests/browser/package.json tests/browser/package-lock.json
	mkdir -p $(NODE_BROWSER)
	cp tests/browser/package.json tests/browser/package-lock.json $(NODE_BROWSER)/
	cd $(NODE_BROWSER) && PUPPETEER_SKIP_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error
	touch $@

test-browser: $(VENV_BROWSER)/.installed ## Real browsers and clients: the detection matrix (bots and people), thirty sessions of one person's Chromium (velocity), the wire matrix over HTTPS, patchright/nodriver/undetected-chromedriver against people at an action, the quiet scraper over the demo shop's pages, the acting scraper (humanized cursors, a forged summary) against replayed people, the dashboard, and the API reference page
	scripts/browser-deps.sh
	$(MAKE) --no-print-directory $(NODE_BROWSER)/.installed
	cargo build --bin vigil --locked
	$(VENV_BROWSER)/bin/python tests/browser/demo.py
	$(VENV_BROWSER)/bin/python tests/browser/velocity.py
	$(VENV_BROWSER)/bin/python tests/browser/wire.py
	$(VENV_BROWSER)/bin/python tests/browser/automation.py
	$(VENV_BROWSER)/bin/python tests/browser/quiet.py
	$(VENV_BROWSER)/bin/python tests/browser/acting.py
	$(VENV_BROWSER)/bin/python tests/browser/dashboard.py
	$(VENV_BROWSER)/bin/python tests/browser/reference.py

test-network: ## The relay lab: network namespaces joined by a delaying wire, HTTP CONNECT and SOCKS5 exits, curl, Python and Chromium, direct and relayed (root, ip netns, /dev/net/tun)
	scripts/browser-deps.sh
	cargo build --bin vigil --locked
	python3 tests/network/lab.py

test-api: $(VENV_TEST)/.installed ## Schemathesis against vigil serve on SQLite and on the emulator (every check, stateful links)
	cargo build --bin vigil --locked
	scripts/with-moto.sh $(VENV_TEST) scripts/test-api.sh $(VENV_TEST)

test-clients: ## The Node and Python packages (clients/): packed and built, installed into fresh projects outside the repository, type-checked (tsc --strict, mypy --strict) and run against vigil serve --demo
	cargo build --bin vigil --locked
	clients/node/run-e2e.sh target/debug/vigil
	clients/python/run-e2e.sh target/debug/vigil

test-unit: ## Unit tests only (no emulator)
	cargo test --workspace --lib --locked

$(VENV_TOOLS)/.installed: requirements-tools.txt
	$(PY) -m venv $(VENV_TOOLS)
	$(VENV_TOOLS)/bin/pip install --quiet --disable-pip-version-check -r requirements-tools.txt
	touch $@

tools: $(VENV_TOOLS)/.installed ## Install the deploy tools (SAM CLI, cargo-lambda, zig) and the arm64 Rust target
	@rustup target list --installed | grep -qx '$(LAMBDA_TARGET)' || rustup target add $(LAMBDA_TARGET)

lint: $(VENV_TOOLS)/.installed $(DOCS_LINT)/.installed ## rustfmt check, clippy (warnings are errors), no module pair importing each other, sam validate + cfn-lint, OpenAPI, the docs' links
	cargo fmt --all --check
	cargo clippy --workspace --all-targets --locked -- -D warnings
	@for src in crates/*/src src; do $(PY) scripts/module-circles.py $$src > /dev/null || { $(PY) scripts/module-circles.py $$src; exit 1; }; done
	$(SAM_OFFLINE) sam validate --lint
	$(VENV_TOOLS)/bin/openapi-spec-validator openapi.yaml
	scripts/vendor-redoc.sh --check
	$(MAKE) --no-print-directory agent-check
	$(MAKE) --no-print-directory links

# The agent as served: agent/vigil.js minified by terser, pinned by scripts/agent-min/package-lock.json.
# The minified copy is committed (the Rust build includes it and needs no Node); lint checks it.
AGENT_MIN := $(CACHE)/agent-min
TERSER    := $(AGENT_MIN)/node_modules/.bin/terser --compress passes=2 --mangle --comments '/^!/'
$(AGENT_MIN)/.installed: scripts/agent-min/package.json scripts/agent-min/package-lock.json
	mkdir -p $(AGENT_MIN)
	cp scripts/agent-min/package.json scripts/agent-min/package-lock.json $(AGENT_MIN)/
	cd $(AGENT_MIN) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

agent: $(AGENT_MIN)/.installed ## Minify agent/vigil.js into agent/vigil.min.js (what /v1/agent.js serves), and print its gzipped size
	$(TERSER) agent/vigil.js -o agent/vigil.min.js
	@echo "agent/vigil.min.js: $$(wc -c < agent/vigil.min.js) bytes, $$(gzip -9c agent/vigil.min.js | wc -c) gzipped (budget 6144)"

agent-check: $(AGENT_MIN)/.installed ## Fail when agent/vigil.min.js is not terser's output of agent/vigil.js (run make agent)
	@$(TERSER) agent/vigil.js -o $(AGENT_MIN)/check.js
	@cmp -s $(AGENT_MIN)/check.js agent/vigil.min.js || { echo "agent/vigil.min.js is stale: run make agent"; exit 1; }

# The docs' relative links, files and headings (a moved heading fails), offline: remark with
# remark-validate-links, pinned by scripts/docs-lint/package-lock.json; URLs are not fetched.
$(DOCS_LINT)/.installed: scripts/docs-lint/package.json scripts/docs-lint/package-lock.json
	mkdir -p $(DOCS_LINT)
	cp scripts/docs-lint/package.json scripts/docs-lint/package-lock.json $(DOCS_LINT)/
	cd $(DOCS_LINT) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

links: $(DOCS_LINT)/.installed ## Check the README's and docs/'s relative links and headings, offline
	$(DOCS_LINT)/node_modules/.bin/remark --no-config --frail --quiet --no-stdout --no-color \
	  --use "$(CURDIR)/$(DOCS_LINT)/node_modules/remark-validate-links/index.js=repository:false" \
	  README.md docs/

build: tools ## Cross-compile the Lambda functions for arm64: target/lambda/<name>/bootstrap
	$(TOOLS_ENV) cargo lambda build --release --arm64 --locked $(addprefix --bin ,$(LAMBDAS))
	@$(MAKE) --no-print-directory sizes

# The functions that evaluate visits carry the engine's data (8.2 MB, mostly the country database)
# and its pattern sets: on x86_64 the collect binary is 18.3 MB beside get-plan's 6.2 MB.
DETECTING := create-event collect

sizes: ## Print the size of each Lambda bootstrap (budget: 6 MB each, 20 MB for those that evaluate)
	@for b in $(LAMBDAS); do \
	  f=target/lambda/$$b/bootstrap; \
	  budget=6e6; case " $(DETECTING) " in *" $$b "*) budget=20e6;; esac; \
	  if [ -f $$f ]; then \
	    stat -c %s $$f | awk -v b=$$b -v max=$$budget '{ printf "  %-15s %9d bytes  %5.2f MB%s\n", b, $$1, $$1 / 1e6, \
	      ($$1 > max ? "  over its budget" : "") }'; \
	  else printf '  %-15s (not built: make build)\n' $$b; fi; \
	done

sam-build: tools ## sam build: the template's functions with cargo-lambda into .aws-sam/build
	$(SAM_OFFLINE) sam build --beta-features

deploy: tools ## Build and deploy the stack with SAM (asks for stack name, region, ... the first time)
	$(TOOLS_ENV) sam build --beta-features && $(TOOLS_ENV) sam deploy --guided

bench: $(VENV_TEST)/.installed ## Benchmarks: vigil serve req/s, webhook latency and dispatch, detection speed and memory, the engine's build and a function's init
	benches/serve_rps.sh 10 32
	cargo bench --bench webhook_latency
	cargo bench --bench detect
	cargo bench -p vigil-detect --bench engine_build
	cargo build --release --locked --bin collect --bin get-plan
	scripts/with-moto.sh $(VENV_TEST) $(PY) benches/cold_start.py 25
	cargo bench --bench agents
	cargo bench -p vigil-store-sqlite --bench velocity
	benches/evaluate_vs_isbot.sh 300000

bench-agent: $(VENV_BROWSER)/.installed ## The agent's collection time over N visits (default 20) by a disguised Chromium (AGENT=file tries a variant) or a person's (PERSON=1)
	scripts/browser-deps.sh
	cargo build --bin vigil --locked
	$(VENV_BROWSER)/bin/python benches/agent_collect.py $(if $(N),--visits $(N)) $(if $(AGENT),--agent $(AGENT)) $(if $(PERSON),--person)

data: ## Rebuild data/ (bot patterns, IP ranges, countries, zones) from pinned registry packages, and the wire table
	$(PY) scripts/data.py
	$(MAKE) --no-print-directory wire-data

wire-data: $(VENV_BROWSER)/.installed ## Capture this machine's clients' TLS fingerprints into data/wire-fingerprints.tsv
	scripts/browser-deps.sh
	cargo build --bin vigil --locked
	$(VENV_BROWSER)/bin/python tests/browser/velocity.py
	$(VENV_BROWSER)/bin/python tests/browser/wire.py --capture data/wire-fingerprints.tsv
	$(PY) scripts/data.py --manifest

cost: ## The cost and capacity model: USD per million visits, reads and deliveries, and the limits that bind first
	cargo run --release --locked --example capacity

eval: ## Accuracy of the detection engine on labelled corpora (fetched into .cache/eval)
	$(PY) scripts/data.py --corpora
	cargo run --release --locked --example eval -- .cache/eval
	cargo build --release --locked --bin vigil
	$(PY) scripts/old_browsers.py target/release/vigil

fmt: ## Format the code
	cargo fmt --all

clean: ## Remove build outputs and caches
	cargo clean
	rm -rf $(CACHE) .aws-sam
