#!/usr/bin/env bash
# Builds the image's two binaries, controller and webhook; the Containerfile's
# builder stage runs exactly these two steps:
#   bash scripts/build.sh install           # deno install --frozen (network)
#   bash scripts/build.sh compile OUT_DIR   # deno compile, no network needed
# `install` fetches the locked npm packages into DENO_DIR. `compile` then reads
# only that cache (--frozen --cached-only). `deno compile` itself downloads its
# runtime (denort) from dl.deno.land unless DENORT_BIN names a local copy.
# BUILD_SMOKE=1 makes `compile` do all of it but the runtime: for each binary,
# `deno check` and `deno run --help` with the same flags, writing nothing
# (tests/hermetic_build_test.ts runs it offline this way).
# Set DENO_BIN to use another deno binary than the one on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
deno="${DENO_BIN:-deno}"

# What every binary may do; the V8 flags are per binary.
permissions=(--allow-net --allow-read --allow-env)

# build NAME V8_FLAGS OUT_DIR: compiles NAME.ts to OUT_DIR/NAME.
build() {
  local name="$1" v8_flags="$2" out="$3"
  if [ "${BUILD_SMOKE:-}" = "1" ]; then
    # `run` first: `deno check` does not honour --cached-only for npm packages
    # (it tries to download a missing one), `run` names a missing one.
    "$deno" run --frozen --cached-only "--v8-flags=$v8_flags" "${permissions[@]}" \
      "$name.ts" --help
    "$deno" check --frozen --cached-only "$name.ts"
  else
    "$deno" compile --frozen --cached-only "--v8-flags=$v8_flags" "${permissions[@]}" \
      --output "$out/$name" "$name.ts"
  fi
}

case "${1:-}" in
  install)
    "$deno" install --frozen
    ;;
  compile)
    out="${2:?usage: build.sh compile OUT_DIR}"
    build controller --max-semi-space-size=2 "$out"
    build webhook --max-semi-space-size=2,--max-old-space-size=128 "$out"
    ;;
  *)
    echo "usage: build.sh install | build.sh compile OUT_DIR" >&2
    exit 2
    ;;
esac
