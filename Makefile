# The commands the README names. `make test` is what CI runs (.ci/run).

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
CARGO ?= cargo
# Root installs directly (CI); anyone else goes through sudo.
SUDO := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)
APT := $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get

.PHONY: help deps run test bench bench-codec bench-deps fmt lint fuzz fuzz-deps compat compat-redis-py compat-go-redis compat-hiredis compat-jedis compat-lettuce compat-bullmq compat-node-redis compat-ioredis

help:
	@echo "make run    build in release and run redline bench against its embedded redline-server (ping/set/get/mixed, P=1 and P=16,"
	@echo "            multiplexed and redis-benchmark modes)"
	@echo "make test   install missing tools, then fmt check, clippy -D warnings, all tests"
	@echo "make bench  every comparison (clients, REST service, server, fill) + codec; writes bench/REPORT.md"
	@echo "            QUICK=1 for the short plan (< 15 min after the release build)"
	@echo "make bench-codec  criterion benchmarks of the RESP codec only"
	@echo "make bench-deps   install wrk and openssl (apt-get), redis tools and the Go harness's modules"
	@echo "make fmt    format the code"
	@echo "make lint   fmt check and clippy -D warnings"
	@echo "make deps   install redis-server, redis-sentinel and redis-tools with apt-get if missing"
	@echo "make compat REDIS_SRC=<redis 7.0.15 source tree>  Redis's Tcl suite against redis-server and"
	@echo "            redline-server side by side; writes compat/REPORT.md (UNITS=a,b for a subset;"
	@echo "            MODE=external-cluster or external-nodebug: Redis's other two external CI jobs,"
	@echo "            compat/REPORT-<mode>.md;"
	@echo "            MODE=spawned: the suite starts the servers itself, slow tests included, and"
	@echo "            Redis's cluster and Sentinel suites run too (UNITS=cluster-suite or"
	@echo "            sentinel-suite alone), compat/REPORT-spawned.md; with TLS=1, the suites'"
	@echo "            --tls mode, compat/REPORT-spawned-tls.md)"
	@echo "make compat-redis-py REDIS_PY_SRC=<redis-py v5.0.9 checkout>  redis-py's own tests against"
	@echo "            redis-server and redline-server; writes compat/REPORT-redis-py.md"
	@echo "make compat-go-redis GO_REDIS_SRC=<go-redis v9.7.0 checkout> [REDIS_SRC=<redis 7.0.15 tree>]"
	@echo "            go-redis's own specs against redis-server and redline-server (with Redis's"
	@echo "            redis.conf when REDIS_SRC is given); writes compat/REPORT-go-redis.md"
	@echo "make compat-hiredis HIREDIS_SRC=<hiredis v1.2.0 checkout>  hiredis's test.sh (TCP, Unix socket,"
	@echo "            TLS) against redis-server and redline-server; writes compat/REPORT-hiredis.md"
	@echo "make compat-jedis JEDIS_SRC=<jedis v5.1.5 checkout>  Jedis's JUnit tests (its Makefile's servers)"
	@echo "            against redis-server and redline-server; writes compat/REPORT-jedis.md"
	@echo "make compat-lettuce LETTUCE_SRC=<lettuce 6.2.7.RELEASE checkout>  Lettuce's tests"
	@echo "            (its Makefile's servers) against both servers; writes compat/REPORT-lettuce.md"
	@echo "make compat-bullmq BULLMQ_SRC=<bullmq v5.81.3 checkout>  BullMQ's tests (port 6379)"
	@echo "make compat-node-redis NODE_REDIS_SRC=<node-redis redis@5.12.1 checkout>  node-redis's client tests"
	@echo "make compat-ioredis IOREDIS_SRC=<ioredis v5.11.1 checkout>  ioredis's tests (ports 6379, 3000-3005)"
	@echo "make fuzz   run every cargo-fuzz target for FUZZ_SECONDS (default 60) each, on nightly"

# Tests start their own redis-server and redis-sentinel processes on free ports, so the
# services the Debian packages start (6379, 26379) are stopped and disabled right after
# installing them.
deps:
	@missing=""; \
	for tool in redis-server redis-cli redis-benchmark redis-sentinel; do \
	  command -v "$$tool" >/dev/null || missing="$$missing $$tool"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "deps: missing$$missing; installing redis-server, redis-sentinel and redis-tools with apt-get"; \
	  $(APT) update -q; \
	  $(APT) install -y -q --no-install-recommends redis-server redis-sentinel redis-tools; \
	  for service in redis-server redis-sentinel; do \
	    if [ -d /run/systemd/system ]; then \
	      $(SUDO) systemctl disable --now "$$service" >/dev/null 2>&1 || true; \
	    elif [ -x "/etc/init.d/$$service" ]; then \
	      $(SUDO) "/etc/init.d/$$service" stop >/dev/null 2>&1 || true; \
	      $(SUDO) update-rc.d "$$service" disable >/dev/null 2>&1 || true; \
	    fi; \
	  done; \
	fi; \
	for tool in redis-server redis-cli redis-benchmark redis-sentinel; do \
	  command -v "$$tool" >/dev/null || { echo "deps: $$tool still missing" >&2; exit 1; }; \
	done; \
	echo "deps: $$(redis-server --version | cut -d' ' -f1-3)"

# Both modes: the callers multiplexed over one connection (how an application uses redline),
# then one connection per caller (what redis-benchmark -c measures).
run:
	$(CARGO) run --release -p redline-cli --bin redline -- bench --mode both

# Each test binary runs under `timeout`, through cargo's runner for the host: one that
# hangs (a server that never exits, say) is killed and fails with its name, and the rest
# still run, instead of the whole job meeting CI's limit. The slowest binary takes about
# two minutes here.
TEST_BINARY_TIMEOUT ?= 1200
HOST_RUNNER = CARGO_TARGET_$(shell rustc -vV 2>/dev/null | sed -n 's/^host: //p' | tr 'a-z.-' 'A-Z__')_RUNNER

test: deps lint
	$(HOST_RUNNER)="timeout -k 10 $(TEST_BINARY_TIMEOUT)" $(CARGO) test --workspace --no-fail-fast

# Peer comparisons: bench/scripts/bench.py builds the release binaries and bench/go, runs
# the sections with alternating rounds, writes bench/results/<date>-<section>.json and
# regenerates bench/REPORT.md. The criterion codec bench runs after it (QUICK skips it).
QUICK ?=
bench: bench-deps
	python3 bench/scripts/bench.py $(if $(filter 1 yes true,$(QUICK)),--quick)
	$(if $(filter 1 yes true,$(QUICK)),@echo "bench: QUICK=1 skips the codec bench (make bench-codec)",$(MAKE) bench-codec)

bench-codec:
	$(CARGO) bench -p redline-resp

# wrk from Debian (like `deps` does for redis), then the Go modules of bench/go.
bench-deps: deps
	@if ! command -v wrk >/dev/null; then \
	  echo "bench-deps: installing wrk with apt-get"; \
	  $(APT) update -q; \
	  $(APT) install -y -q --no-install-recommends wrk; \
	fi; \
	command -v wrk >/dev/null || { echo "bench-deps: wrk still missing" >&2; exit 1; }; \
	if ! command -v openssl >/dev/null; then \
	  echo "bench-deps: installing openssl with apt-get (certificates for the TLS section)"; \
	  $(APT) update -q; \
	  $(APT) install -y -q --no-install-recommends openssl; \
	fi; \
	command -v go >/dev/null || { echo "bench-deps: go is required for bench/go" >&2; exit 1; }; \
	(cd bench/go && go mod download); \
	echo "bench-deps: $$(wrk -v 2>&1 | head -n1 | cut -d' ' -f1-2), $$(go version | cut -d' ' -f3)"

fmt:
	$(CARGO) fmt --all

# The fuzz targets live in workspaces of their own (outside clippy's), so they are
# checked here too: a server API they call must not drift from under them unnoticed.
FUZZ_DIRS = $(sort $(foreach entry,$(FUZZ_TARGETS),$(firstword $(subst :, ,$(entry)))))

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	@for dir in $(FUZZ_DIRS); do \
	  echo "check: $$dir"; \
	  $(CARGO) check --quiet --manifest-path $$dir/Cargo.toml --target-dir target/fuzz-check --bins || exit 1; \
	done

# Fuzzing needs the nightly toolchain (rustup) and cargo-fuzz; both are installed when missing.
# Each entry is <fuzz workspace dir>:<target>; a crate's fuzz/ folder is its own workspace.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= crates/resp/fuzz:parse crates/resp/fuzz:decoder crates/resp/fuzz:request crates/server/fuzz:requests crates/server/fuzz:persist_load

fuzz-deps:
	@rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
	@command -v cargo-fuzz >/dev/null || $(CARGO) install cargo-fuzz --locked

fuzz: fuzz-deps
	@for entry in $(FUZZ_TARGETS); do \
	  dir=$${entry%%:*}; target=$${entry##*:}; \
	  dict=""; for d in $$dir/*.dict; do [ -f "$$d" ] && dict="-dict=$$(basename $$d)"; done; \
	  log=$$(mktemp); \
	  echo "fuzz: $$dir $$target for $(FUZZ_SECONDS)s"; \
	  if (cd $$dir && $(CARGO) +nightly fuzz run $$target -- $$dict -max_total_time=$(FUZZ_SECONDS)) >"$$log" 2>&1; then \
	    grep -E '^Done [0-9]+ runs' "$$log" || tail -n 3 "$$log"; rm -f "$$log"; \
	  else \
	    tail -n 40 "$$log"; echo "fuzz: $$target failed (log: $$log)" >&2; exit 1; \
	  fi; \
	done

# Redis's own test suite (external-server mode) against both servers, unit by unit:
# compat/run.py starts a fresh redis-server and redline-server per unit and writes
# compat/REPORT.md and compat/results/. The suite itself is not part of this repository.
REDIS_SRC ?=
UNITS ?=
compat: deps
	@test -n "$(REDIS_SRC)" -a -f "$(REDIS_SRC)/tests/test_helper.tcl" || \
	  { echo "usage: make compat REDIS_SRC=<redis source tree at tag 7.0.15>" >&2; exit 2; }
	@if ! command -v tclsh >/dev/null; then \
	  echo "compat: installing tcl with apt-get"; \
	  $(APT) update -q; \
	  $(APT) install -y -q --no-install-recommends tcl; \
	fi
	@if [ -n "$(TLS)" ] && ! echo 'package require tls' | tclsh >/dev/null 2>&1; then \
	  echo "compat: installing tcl-tls and openssl with apt-get"; \
	  $(APT) update -q; \
	  $(APT) install -y -q --no-install-recommends tcl-tls openssl; \
	fi
	$(CARGO) build --release -p redline-server
	python3 compat/run.py --redis-src "$(REDIS_SRC)" --redline-bin target/release/redline-server \
	  $(if $(UNITS),--units $(UNITS)) $(if $(MODE),--mode $(MODE)) $(if $(TLS),--tls)

# redis-py's own test suite (a checkout at tag v5.0.9) against redis-server and
# redline-server; writes compat/REPORT-redis-py.md. Its test dependencies go into a
# virtual environment under target/.
compat-redis-py: deps
	@test -n "$(REDIS_PY_SRC)" -a -f "$(REDIS_PY_SRC)/tests/conftest.py" || \
	  { echo "usage: make compat-redis-py REDIS_PY_SRC=<redis-py checkout at tag v5.0.9>" >&2; exit 2; }
	$(CARGO) build --release -p redline-server
	python3 compat/redis_py.py --redis-py-src "$(REDIS_PY_SRC)" --redline-bin target/release/redline-server

# go-redis's own Ginkgo specs (a checkout at tag v9.7.0) against redis-server and
# redline-server, every server started from Redis's own redis.conf when REDIS_SRC is
# given; writes compat/REPORT-go-redis.md. Needs Go (modules from the Go proxy).
compat-go-redis: deps
	@test -n "$(GO_REDIS_SRC)" -a -f "$(GO_REDIS_SRC)/main_test.go" || \
	  { echo "usage: make compat-go-redis GO_REDIS_SRC=<go-redis checkout at tag v9.7.0> [REDIS_SRC=<redis tree>]" >&2; exit 2; }
	$(CARGO) build --release -p redline-server
	python3 compat/go_redis.py --go-redis-src "$(GO_REDIS_SRC)" --redline-bin target/release/redline-server \
	  $(if $(REDIS_SRC),--redis-conf $(REDIS_SRC)/redis.conf)

# hiredis's own tests (a checkout at tag v1.2.0): its test.sh starts the server daemonized
# from its own configuration file and tests over TCP, a Unix socket and TLS; writes
# compat/REPORT-hiredis.md. Needs a C compiler and OpenSSL's headers (libssl-dev).
compat-hiredis: deps
	@test -n "$(HIREDIS_SRC)" -a -f "$(HIREDIS_SRC)/test.sh" || \
	  { echo "usage: make compat-hiredis HIREDIS_SRC=<hiredis checkout at tag v1.2.0>" >&2; exit 2; }
	$(CARGO) build --release -p redline-server
	python3 compat/hiredis.py --hiredis-src "$(HIREDIS_SRC)" --redline-bin target/release/redline-server

# Jedis's own tests (a checkout at tag v5.1.5): its Makefile starts the servers by the
# name redis-server on fixed ports (6379-6389, 6400, 7379-7383, 26379-26383); writes
# compat/REPORT-jedis.md. Needs a JDK, Maven (Maven Central reachable) and gcc.
compat-jedis: deps
	@test -n "$(JEDIS_SRC)" -a -f "$(JEDIS_SRC)/pom.xml" || \
	  { echo "usage: make compat-jedis JEDIS_SRC=<jedis checkout at tag v5.1.5>" >&2; exit 2; }
	$(CARGO) build --release -p redline-server
	python3 compat/jedis.py --jedis-src "$(JEDIS_SRC)" --redline-bin target/release/redline-server

# Lettuce's own tests (a checkout at tag 6.2.7.RELEASE): its Makefile starts the servers
# by the name redis-server on fixed ports (6443-6445, 6479-6484, 6925-6926, 7379-7385,
# 7442-7445, 7479-7481, 7582, 8443-8444, 26379-26381, 26822-26824) and stops them with
# `pkill redis-server`; writes compat/REPORT-lettuce.md. Needs a JDK, Maven (Maven
# Central reachable), openssl and stunnel (installed with apt-get when missing).
compat-lettuce: deps
	@test -n "$(LETTUCE_SRC)" -a -f "$(LETTUCE_SRC)/pom.xml" || \
	  { echo "usage: make compat-lettuce LETTUCE_SRC=<lettuce checkout at tag 6.2.7.RELEASE>" >&2; exit 2; }
	@command -v stunnel4 >/dev/null 2>&1 && command -v openssl >/dev/null 2>&1 || { \
	  echo "compat-lettuce: installing stunnel4 and openssl with apt-get"; \
	  $(APT) update -q && $(APT) install -y -q --no-install-recommends stunnel4 openssl; }
	$(CARGO) build --release -p redline-server
	python3 compat/lettuce.py --lettuce-src "$(LETTUCE_SRC)" --redline-bin target/release/redline-server

# BullMQ's own tests (a checkout at tag v5.81.3): a Node.js job queue built on Lua
# scripts, streams and blocking commands; its tests use a server on localhost:6379, which
# must be free; writes compat/REPORT-bullmq.md. Needs Node.js 20 and npm (the npm
# registry reachable).
compat-bullmq: deps
	@test -n "$(BULLMQ_SRC)" -a -f "$(BULLMQ_SRC)/package.json" || \
	  { echo "usage: make compat-bullmq BULLMQ_SRC=<bullmq checkout at tag v5.81.3>" >&2; exit 2; }
	$(CARGO) build --release -p redline-server
	python3 compat/bullmq.py --bullmq-src "$(BULLMQ_SRC)" --redline-bin target/release/redline-server

# node-redis's own client tests (a checkout at tag redis@5.12.1): its test utilities
# start servers with `docker run`, which a stand-in on PATH turns into local processes
# of the server under test (no Docker needed); writes compat/REPORT-node-redis.md.
# Needs Node.js 20 and npm (the npm registry reachable).
compat-node-redis: deps
	@test -n "$(NODE_REDIS_SRC)" -a -f "$(NODE_REDIS_SRC)/packages/client/package.json" || \
	  { echo "usage: make compat-node-redis NODE_REDIS_SRC=<node-redis checkout at tag redis@5.12.1>" >&2; exit 2; }
	$(CARGO) build --release -p redline-server
	python3 compat/node_redis.py --node-redis-src "$(NODE_REDIS_SRC)" --redline-bin target/release/redline-server

# ioredis's own tests (a checkout at tag v5.11.1): unit and functional tests against one
# server on localhost:6379, cluster tests against three masters with a replica each on
# ports 3000-3005 (all must be free); writes compat/REPORT-ioredis.md. Needs Node.js 20,
# npm (the npm registry reachable) and redis-cli.
compat-ioredis: deps
	@test -n "$(IOREDIS_SRC)" -a -f "$(IOREDIS_SRC)/package.json" || \
	  { echo "usage: make compat-ioredis IOREDIS_SRC=<ioredis checkout at tag v5.11.1>" >&2; exit 2; }
	$(CARGO) build --release -p redline-server
	python3 compat/ioredis.py --ioredis-src "$(IOREDIS_SRC)" --redline-bin target/release/redline-server
