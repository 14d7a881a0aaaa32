#!/usr/bin/env bash
# Configures (once) and builds dpdk-tob into build/ (or $TOB_BUILD_DIR).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${TOB_BUILD_DIR:-$repo/build}
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" "$repo" >/dev/null
fi
ninja -C "$build" >/dev/null
