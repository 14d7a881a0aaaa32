#!/usr/bin/env bash
# Configures (once) and builds dpdk-tob into build/ (or $TOB_BUILD_DIR). Quiet on success,
# the full compiler/meson output on failure.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${TOB_BUILD_DIR:-$repo/build}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if [ ! -f "$build/build.ninja" ]; then
  if ! meson setup "$build" "$repo" >"$log" 2>&1; then
    cat "$log" >&2
    echo "build: meson setup failed" >&2
    exit 1
  fi
fi
if ! ninja -C "$build" >"$log" 2>&1; then
  cat "$log" >&2
  echo "build: compilation failed" >&2
  exit 1
fi
