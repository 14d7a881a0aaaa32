#!/usr/bin/env bash
# The README's main command: a real 4-node dpdk-tob cluster on this machine. It installs what is
# missing, builds, creates one network namespace per node with a veth leg on a Linux bridge,
# starts one dpdk-tob per namespace on DPDK net_af_packet, feeds the cluster messages, shows
# them delivered in the same order on every node, crashes a node and brings it back, prints the
# membership and timing statistics, and shuts everything down cleanly. About 16 s once installed
# and built; the first run on a fresh machine installs packages and builds for a few minutes.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${TOB_BUILD_DIR:-$repo/build}
cd "$repo"
echo "demo: checking packages and hugepages (scripts/setup.sh)"
bash scripts/setup.sh
if [ -f "$build/build.ninja" ]; then
  echo "demo: building (meson/ninja into $build)"
else
  echo "demo: building from scratch (meson/ninja into $build): a few minutes on a small machine, quiet until done"
fi
TOB_BUILD_DIR=$build bash scripts/build.sh
export TOB_BUILD_DIR=$build TOB_RUN_DIR=${TOB_RUN_DIR:-/tmp/dpdk-tob-demo}
trap 'bash scripts/cluster.sh down >/dev/null 2>&1 || true' EXIT INT TERM
python3 scripts/demo.py "$@"
