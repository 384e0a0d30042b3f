#!/usr/bin/env bash
# Runs the project's pinned Deno, installing it first from the npm registry
# (the `deno` package carries the binary) into the user cache when missing.
#   bash scripts/deno.sh task test
# Set DENO_BIN to use another deno binary instead.
set -euo pipefail

version="2.9.6"
if [ -n "${DENO_BIN:-}" ]; then exec "$DENO_BIN" "$@"; fi

dir="${XDG_CACHE_HOME:-$HOME/.cache}/dependency-controller/deno-$version"
deno="$dir/node_modules/.bin/deno"
if ! "$deno" --version >/dev/null 2>&1; then
  command -v npm >/dev/null || { echo "deno.sh: npm is needed to install Deno $version" >&2; exit 1; }
  echo "deno.sh: installing deno@$version from the npm registry into $dir" >&2
  mkdir -p "$dir"
  npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "deno@$version" >&2
  "$deno" --version >/dev/null
fi
exec "$deno" "$@"
