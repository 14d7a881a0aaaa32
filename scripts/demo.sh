#!/usr/bin/env bash
# The README's main command. Until the dpdk-tob daemon lands (issue: the daemon), it runs the
# protocol core in the deterministic simulator: a 4-node cluster forms its first membership,
# carries application messages in TDMA slots, survives a crash and a lost frame, takes the
# crashed node back, and every node delivers the same sequence. Nothing touches the network.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${TOB_BUILD_DIR:-$repo/build}
cd "$repo"
bash scripts/setup.sh
echo "demo: building"
TOB_BUILD_DIR=$build bash scripts/build.sh
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

cat <<'TXT'

== dpdk-tob demo: 4 nodes, MARS membership and ordering, simulated on virtual time ==
cycle 1 ms (4 slots of 250 us), each message sent twice per slot, 3 messages/node/cycle.
faults: node 2 crashes in cycle 40 and restarts 5 cycles later; node 1's frame of cycle 70
is lost to every receiver (an outgoing link failure).

TXT
"$build/app/tob-sim/tob-sim" --nodes 4 --cycles 120 --load 3 \
  --crash 2@40+5 --fault send-omission:1@70 \
  --deliveries "$out/deliveries.txt" --trace "$out/trace.txt"

echo
echo "membership changes seen by node 0:"
grep -E '^[0-9]+ node 0 cycle' "$out/trace.txt" | grep -v suspicion | sed 's/^/  /' | head -20
echo
echo "the first deliveries of each node (sender/msg_id), identical on every node:"
for n in 0 1 2 3; do
  printf '  node %s: ' "$n"
  awk -v n="$n" '$1 == n { printf "%s/%s ", $3, $4; if (++k == 8) exit }' "$out/deliveries.txt"
  echo
done
echo
python3 tests/sim/check_deliveries.py "$out/deliveries.txt" | sed 's/^/independent check: /'
