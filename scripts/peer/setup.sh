#!/usr/bin/env bash
# Make the LlamaIndex peer's venv at .models/peer-venv (git-ignored) from requirements.lock
# (the pinned `pip freeze`), with Python 3.11. Idempotent: skipped when the venv already holds
# this lock (a stamp with the lock's sha256). PyPI only. PEER_VENV overrides the folder.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="${PEER_VENV:-$repo/.models/peer-venv}"
lock="$here/requirements.lock"
want="$(sha256sum "$lock" | cut -d' ' -f1)"
stamp="$venv/.peer-lock.sha256"

if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  echo "peer venv: $venv is up to date"
  exit 0
fi

py=""
for c in python3.11 python3; do
  if command -v "$c" >/dev/null && "$c" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; then
    py="$c"; break
  fi
done
[ -n "$py" ] || { echo "peer venv: needs Python 3.11 (python3.11 or python3)" >&2; exit 1; }

[ -x "$venv/bin/python" ] || "$py" -m venv "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$lock"
"$venv/bin/python" -m pip check
echo "$want" > "$stamp"
echo "peer venv: $venv ready ($(grep -c '==' "$lock") pinned packages)"
