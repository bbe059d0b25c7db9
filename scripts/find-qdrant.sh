#!/usr/bin/env bash
# Where the Qdrant server tests find a server; prints it and exits 0, or exits 1 when none.
# Same order as ingest::testing::QdrantServer: QDRANT_URL (a running server's gRPC address),
# INGEST_QDRANT_BIN, the binary ../shared/qdrant/get.sh unpacks (~/.cache/qdrant-v1.18.3/),
# or get.sh itself in INGEST_QDRANT_DIR or ../shared/qdrant beside this repository.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ -n "${QDRANT_URL:-}" ]; then echo "$QDRANT_URL"; exit 0; fi
if [ -n "${INGEST_QDRANT_BIN:-}" ] && [ -x "$INGEST_QDRANT_BIN" ]; then echo "$INGEST_QDRANT_BIN"; exit 0; fi
if [ -x "$HOME/.cache/qdrant-v1.18.3/qdrant" ]; then echo "$HOME/.cache/qdrant-v1.18.3/qdrant"; exit 0; fi
for d in "${INGEST_QDRANT_DIR:-}" "$here/../shared/qdrant"; do
  if [ -n "$d" ] && [ -f "$d/get.sh" ]; then
    bin=$(bash "$d/get.sh") && [ -x "$bin" ] && { echo "$bin"; exit 0; }
  fi
done
exit 1
