#!/usr/bin/env bash
# Upload-to-searchable latency and uploads/s: one `ingest serve` node against three sharing
# one PostgreSQL catalog and one Qdrant collection (a 3-node Qdrant cluster), on this
# machine. Each run starts its own throw-away PostgreSQL and Qdrant; uploads go round-robin
# to the nodes; a document counts as searchable when its job is `indexed` (its chunks are
# in the collection and its entry in the catalog, so every node's search finds it).
#
#   bash benches/nodes/run.sh [UPLOADS] [CONCURRENCY]     (needs `make build`, PostgreSQL)
set -euo pipefail
cd "$(dirname "$0")/../.."
UPLOADS=${1:-120}
CONC=${2:-8}
BIN=${INGEST_BIN:-${CARGO_TARGET_DIR:-$HOME/.cache/ingest-target}/release/ingest}
PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
WORK=$(mktemp -d /tmp/ingest-nodes-XXXX)
chmod 755 "$WORK"
trap 'for p in $(cat "$WORK"/*.pid 2>/dev/null); do kill $p 2>/dev/null || true; done;
      runuser -u postgres -- "$PGBIN/pg_ctl" -D "$WORK/pg" -m immediate stop >/dev/null 2>&1 || true;
      bash ../shared/qdrant/stop-cluster.sh "$WORK/qc" >/dev/null 2>&1 || true; rm -rf "$WORK"' EXIT
mkdir -p "$WORK/pg" && chown postgres "$WORK/pg"
runuser -u postgres -- "$PGBIN/initdb" -D "$WORK/pg" -A trust -U ingest --locale=C -E UTF8 >/dev/null
runuser -u postgres -- "$PGBIN/pg_ctl" -D "$WORK/pg" -o "-k $WORK/pg -p 25432 -h 127.0.0.1" -l "$WORK/pg/log" -w start >/dev/null
bash ../shared/qdrant/start-cluster.sh "$WORK/qc" 27333 >/dev/null
MODEL=$(ls -d .models/all-minilm-l6-v2* 2>/dev/null | head -1)
KEY=k-bench-0123456789abcdef00
run() {  # $1 = nodes, $2 = database
  local n=$1 db=$2 urls=()
  psql_create "$db"
  for i in $(seq 0 $((n-1))); do
    local d="$WORK/n$n-$i"; mkdir -p "$d"
    mkdir -p "$WORK/spool-$db"
    printf 'spool_dir = "%s"\n[[api_keys]]\nkey = "%s"\nuser = "bench"\nmandate = "m"\n' "$WORK/spool-$db" "$KEY" > "$d/ingest.toml"
    "$BIN" serve --listen 127.0.0.1:0 --config "$d/ingest.toml" --data-dir "$d/data" \
      --catalog "postgres://ingest@127.0.0.1:25432/$db" \
      --store "qdrant://127.0.0.1:$((27334 + 10*i))/bench_$db" > "$d/out" 2> "$d/err" &
    echo $! > "$WORK/n$n-$i.pid"
  done
  for i in $(seq 0 $((n-1))); do
    local d="$WORK/n$n-$i"
    for _ in $(seq 600); do grep -q "^listening on " "$d/out" 2>/dev/null && break; sleep 0.2; done
    grep -q "^listening on " "$d/out" || { echo "node $i did not start:"; cat "$d/err"; exit 1; }
    urls+=("$(sed -n 's/^listening on //p' "$d/out" | head -1)")
  done
  python3 benches/nodes/load.py "$KEY" "$UPLOADS" "$CONC" "${urls[@]}"
  for i in $(seq 0 $((n-1))); do kill "$(cat "$WORK/n$n-$i.pid")"; wait "$(cat "$WORK/n$n-$i.pid")" 2>/dev/null || true; done
}
psql_create() { python3 - "$1" <<'PY'
import socket, sys
# CREATE DATABASE over the simple query protocol (no psql needed): startup, trust auth.
s = socket.create_connection(("127.0.0.1", 25432))
def msg(t, b): return t + (len(b) + 4).to_bytes(4, "big") + b
params = b"user\0ingest\0database\0postgres\0\0"
s.sendall((len(params) + 8).to_bytes(4, "big") + (196608).to_bytes(4, "big") + params)
def read_until(tag):
    buf = b""
    while True:
        t = s.recv(1); l = int.from_bytes(s.recv(4), "big"); body = b""
        while len(body) < l - 4: body += s.recv(l - 4 - len(body))
        if t == b"E": sys.exit("postgres: " + body.decode(errors="replace"))
        if t == tag: return
read_until(b"Z")
s.sendall(msg(b"Q", f"CREATE DATABASE {sys.argv[1]}\0".encode())); read_until(b"Z")
PY
}
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) threads; $UPLOADS uploads, $CONC at a time"
echo "== 1 node"; run 1 one
echo "== 3 nodes"; run 3 three
