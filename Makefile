# Vigil: the two commands a newcomer needs are `make run` and `make test`.
SHELL := /bin/bash
.DEFAULT_GOAL := help

CACHE      := .cache
VENV_TEST  := $(CACHE)/venv-test
PY         ?= python3

.PHONY: help run test test-unit lint fmt build deploy clean bench

help: ## List the targets
	@grep -E '^[a-z-]+:.*##' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

run: ## The whole API on http://127.0.0.1:3000/v1 over SQLite (vigil.db), with demo data
	cargo run --bin vigil -- serve

$(VENV_TEST)/.installed: requirements-test.txt
	$(PY) -m venv $(VENV_TEST)
	$(VENV_TEST)/bin/pip install --quiet --disable-pip-version-check -r requirements-test.txt
	touch $@

test: $(VENV_TEST)/.installed ## Every test: unit, handlers, both stores (DynamoDB via a local moto_server), black-box HTTP
	scripts/with-moto.sh $(VENV_TEST) cargo test --all-targets --locked

test-unit: ## Unit tests only (no emulator)
	cargo test --lib --locked

fmt: ## Format the code
	cargo fmt

clean: ## Remove build outputs and caches
	cargo clean
	rm -rf $(CACHE) .aws-sam
