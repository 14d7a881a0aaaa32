#!/usr/bin/env bash
# The daemon's CPU per frame with and without [security] on the netns cluster (issue 21's "at
# most 10% of the per-frame CPU at 1.5 KB"): 4 mars nodes, frames of about 1.4 KB (one 1300-byte
# message per slot), one run without a key and one with, each DURATION seconds; per node the
# process's CPU time (utime + stime from /proc, all its threads: lcores, I/O, telemetry) over the
# frames it sent and received (tx_frames + rx_frames), and the difference between the runs.
#
#   sudo bash perf/auth_cpu.sh [DURATION_S]        # TOB_NET, TOB_RUN_DIR, TOB_CYCLE_NS as cluster.sh
#
# A shared machine's other load adds noise to both runs alike; repeat to see the spread.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
duration=${1:-20}
export TOB_NET=${TOB_NET:-authcp}
export TOB_RUN_DIR=${TOB_RUN_DIR:-/tmp/dpdk-tob-auth-cpu}
export TOB_CYCLE_NS=${TOB_CYCLE_NS:-2000000}
export TOB_DAEMON_ARGS="--gen-rate $((1000000000 / TOB_CYCLE_NS)) --gen-size 1300"
export TOB_STATUS_INTERVAL=0
key_dir=$(mktemp -d)
trap 'bash "$repo/scripts/cluster.sh" down >/dev/null 2>&1 || true; rm -rf "$key_dir"' EXIT
openssl rand -hex 32 > "$key_dir/cluster.key"
hz=$(getconf CLK_TCK)

cpu_ticks() {  # utime + stime of a process
  awk '{print $14 + $15}' "/proc/$1/stat"
}
frames() {  # tx_frames + rx_frames of node K
  bash "$repo/scripts/cluster.sh" telemetry "$1" /tob/stats |
    python3 -c 'import json,sys; s=json.load(sys.stdin); s=s.get("/tob/stats", s); print(s["tx_frames"] + s["rx_frames"])'
}

one_run() {  # label, config tail
  local label=$1
  export TOB_CONFIG_TAIL=$2
  bash "$repo/scripts/cluster.sh" up 4 >/dev/null
  sleep 3
  local k pids=() t0=() f0=() total=0
  for k in 0 1 2 3; do
    pids[k]=$(cat "$TOB_RUN_DIR/node$k.pid")
    t0[k]=$(cpu_ticks "${pids[k]}")
    f0[k]=$(frames "$k")
  done
  sleep "$duration"
  for k in 0 1 2 3; do
    local dt df ns
    dt=$(( $(cpu_ticks "${pids[k]}") - t0[k] ))
    df=$(( $(frames "$k") - f0[k] ))
    ns=$(( dt * 1000000000 / hz / (df > 0 ? df : 1) ))
    echo "$label node $k: cpu $((dt * 1000 / hz)) ms, frames $df, cpu per frame $ns ns"
    total=$((total + ns))
  done
  echo "$label mean cpu per frame $((total / 4)) ns"
  bash "$repo/scripts/cluster.sh" down >/dev/null
}

# A 1300-byte message per slot needs payload_bytes above the default 1024.
limits="[limits]\npayload_bytes = 1400"
one_run "plain" "$limits"
one_run "auth " "$limits\n\n[security]\nkey_file = $key_dir/cluster.key"
