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
# Build directories set up before libtob.pc became relocatable (meson.build default_options).
if ! grep -q '"name": "pkgconfig.relocatable", "value": true' "$build/meson-info/intro-buildoptions.json" 2>/dev/null; then
  meson configure "$build" -Dpkgconfig.relocatable=true >"$log" 2>&1 || { cat "$log" >&2; exit 1; }
fi
if ! ninja -C "$build" >"$log" 2>&1; then
  cat "$log" >&2
  echo "build: compilation failed" >&2
  exit 1
fi
