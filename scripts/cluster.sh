#!/usr/bin/env bash
# A real dpdk-tob cluster on one machine (docs/architecture.md "Testing on one machine"): one network namespace per node, each with
# a veth leg on a Linux bridge that lives in its own "switch" namespace, and one dpdk-tob per
# node namespace on DPDK net_af_packet with its own --file-prefix. Nothing touches the host's
# own network: every interface is created inside namespaces this script owns.
#
#   scripts/cluster.sh up [N]          create namespaces, write cluster.ini, start N nodes (default 4)
#                                      and wait until every node answers and all are members
#   scripts/cluster.sh down            stop every node (SIGTERM, then SIGKILL), remove namespaces
#   scripts/cluster.sh status          each node's PID, state and last status line
#   scripts/cluster.sh start K         start node K again (after stop/kill)
#   scripts/cluster.sh stop K          SIGTERM node K: it leaves cleanly, files flushed
#   scripts/cluster.sh kill K          SIGKILL node K: a crash, as the others see it
#   scripts/cluster.sh telemetry K CMD one telemetry command, e.g. /tob/membership
#   scripts/cluster.sh net-up [N]      only the namespaces, veths and bridge (for other tools)
#
# Environment (defaults in brackets):
#   TOB_RUN_DIR [/tmp/dpdk-tob]   cluster.ini, logs, PIDs, deliveries, events, stats per node
#   TOB_CYCLE_NS [100000000]      cycle length: generous, VM stalls of ~10 ms happen here (docs/operations.md)
#   TOB_SLOT_NS []                packed slots: node K's slot at K x this, this long, the rest of the
#                                 cycle idle (docs/configuration.md "Packed slots"); unset: N equal slots
#   TOB_IDLE [sleep]              idle policy of the daemons (poll needs a core per daemon)
#   TOB_RT_PRIORITY [10]          SCHED_FIFO priority of the daemons' lcores with idle sleep (0: off)
#   TOB_LCORES [0@(0-N)]          EAL --lcores of each daemon (default: main lcore floats on all CPUs)
#   TOB_LCORES_K []               EAL --lcores of node K only (e.g. "0@1" pins it to CPU 1)
#   TOB_CPUS_K []                 CPUs node K's whole process may use (taskset -c): its EAL control
#                                 threads (tob-io, tob-log, telemetry) too, which DPDK otherwise
#                                 places on the CPUs its lcores leave free, i.e. another node's
#   TOB_DAEMON_ARGS []            extra daemon options for every node, e.g. "--gen-rate 50"
#   TOB_NODE_ARGS_K []            extra daemon options for node K only
#   TOB_ORDER [mars]              ordering engine: mars or otfp (otfp logs to RUN/acceptor-K.log)
#   TOB_LOG_DIR [TOB_RUN_DIR]     otfp: the directory of the acceptor logs (perf/short_cycles.py
#                                 --disk-stall-ms puts them on a file system of their own)
#   TOB_CLUSTER_EXTRA []          extra lines appended to the generated cluster.ini's [cluster]
#   TOB_CONFIG_EXTRA []           extra lines appended to the generated cluster.ini's [timing]
#   TOB_CONFIG_TAIL []            extra sections appended to it, e.g. "[clients]\nring = 64"
#   TOB_MTU [1500]                MTU of the veths, their bridge ports and the bridge (jumbo: 9000)
#   TOB_PROFILE [af_packet, or af_packet_jumbo when TOB_MTU > 1500]  port profile (drivers_cfg/)
#                                 whose vdev line the nodes use, passed as --profile
#   TOB_FRAME_BYTES []            [limits] frame_bytes (the TOB frame; jumbo: 8958)
#   TOB_BATCH_MSGS []             [limits] batch_msgs (messages per slot; 64 when unset)
#   TOB_DELIVERIES_FORMAT [text]  the deliveries files' format: text or bin (32-byte records)
#   TOB_BUILD_DIR [repo/build]
#   TOB_NET [tob]                 names: namespaces NET-nK and NET-sw, bridge NETbr0, DPDK file
#                                 prefix NET-nodeK (perf/compare uses its own, cmp)
#   TOB_KEEP_NET []               1: `down` stops the nodes but keeps the namespaces (a topology
#                                 that another tool made and removes)
#   TOB_UP_WAIT [1]               `up` returns when every node answers on its telemetry socket and
#                                 the membership holds every node, or fails naming the node and
#                                 the reason (0: return once the daemons are started)
#   TOB_UP_TIMEOUT_S [60]         how long `up` waits for that
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${TOB_BUILD_DIR:-$repo/build}
run=${TOB_RUN_DIR:-/tmp/dpdk-tob}
cycle_ns=${TOB_CYCLE_NS:-100000000}
slot_ns=${TOB_SLOT_NS:-}
[[ "$slot_ns" =~ ^[0-9]*$ ]] || { echo "cluster: TOB_SLOT_NS must be a number of nanoseconds" >&2; exit 2; }
idle=${TOB_IDLE:-sleep}
daemon="$build/app/dpdk-tob/dpdk-tob"
net=${TOB_NET:-tob}
[[ "$net" =~ ^[a-z][a-z0-9]{0,5}$ ]] || { echo "cluster: TOB_NET must be 1-6 lower-case letters or digits" >&2; exit 2; }
sw=$net-sw           # the switch namespace holding the bridge
bridge=${net}br0
prefix=$net-node     # DPDK file prefix per node: tob-node<K>

mtu=${TOB_MTU:-1500}
[[ "$mtu" =~ ^[0-9]+$ ]] && [ "$mtu" -ge 1280 ] && [ "$mtu" -le 9600 ] || {
  echo "cluster: TOB_MTU must be 1280..9600" >&2; exit 2; }
if [ "$mtu" -gt 1500 ]; then profile=${TOB_PROFILE:-af_packet_jumbo}; else profile=${TOB_PROFILE:-af_packet}; fi
[ -f "$repo/drivers_cfg/$profile.ini" ] || { echo "cluster: TOB_PROFILE: no drivers_cfg/$profile.ini" >&2; exit 2; }

log() { printf 'cluster: %s\n' "$*"; }
die() { printf 'cluster: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "must run as root (network namespaces, hugepages)"

ns_of() { echo "$net-n$1"; }
node_count() { cat "$run/nodes" 2>/dev/null || echo 0; }
pid_of() { cat "$run/node$1.pid" 2>/dev/null || true; }
alive() { local p; p=$(pid_of "$1"); [ -n "$p" ] && kill -0 "$p" 2>/dev/null; }
mac_of() { printf '02:00:00:00:00:%02x' $(($1 + 1)); }

# Namespaces, veths and the bridge. Idempotent.
net_up() {
  local n=$1 k ns
  ip netns list | grep -qw "$sw" || ip netns add "$sw"
  ip -n "$sw" link show "$bridge" >/dev/null 2>&1 || {
    ip -n "$sw" link add "$bridge" type bridge stp_state 0 forward_delay 0 mcast_snooping 0
  }
  ip -n "$sw" link set lo up
  ip -n "$sw" link set "$bridge" up
  for ((k = 0; k < n; k++)); do
    ns=$(ns_of "$k")
    ip netns list | grep -qw "$ns" || ip netns add "$ns"
    if ! ip -n "$ns" link show "veth$k" >/dev/null 2>&1; then
      ip -n "$sw" link del "port$k" 2>/dev/null || true
      ip link add "veth$k" netns "$ns" type veth peer name "port$k" netns "$sw"
    fi
    ip -n "$ns" link set lo up
    ip -n "$ns" link set "veth$k" address "$(mac_of "$k")"
    # No IPv6 chatter (router/neighbour solicitations) on the cluster link.
    ip netns exec "$ns" sysctl -qw "net.ipv6.conf.veth$k.disable_ipv6=1" || true
    ip -n "$ns" link set "veth$k" mtu "$mtu"
    ip -n "$sw" link set "port$k" mtu "$mtu"
    ip -n "$ns" link set "veth$k" up
    ip -n "$sw" link set "port$k" master "$bridge"
    ip -n "$sw" link set "port$k" up
  done
  # After its ports: a bridge's MTU may not exceed its ports'.
  ip -n "$sw" link set "$bridge" mtu "$mtu"
}

net_down() {
  local ns
  for ns in $(ip netns list | awk '{print $1}' | grep -E "^$net-(n[0-9]+|sw|inj)\$" || true); do
    ip netns del "$ns" 2>/dev/null || true
  done
}

write_config() {
  local n=$1 k
  {
    echo "; written by scripts/cluster.sh: $n nodes on a bridge, af_packet on veth"
    echo "[cluster]"
    echo "name = netns"
    echo "id = 7"
    echo "nodes = $n"
    echo "order = ${TOB_ORDER:-mars}"
    echo "multicast_mac = 01:1b:19:00:00:00"
    [ -z "${TOB_CLUSTER_EXTRA:-}" ] || printf '%b\n' "$TOB_CLUSTER_EXTRA"
    echo
    echo "[timing]"
    echo "clock = tai"
    echo "cycle_ns = $cycle_ns"
    [ -z "${TOB_CONFIG_EXTRA:-}" ] || printf '%b\n' "$TOB_CONFIG_EXTRA"
    if [ -n "${TOB_FRAME_BYTES:-}${TOB_BATCH_MSGS:-}" ]; then
      echo
      echo "[limits]"
      [ -z "${TOB_FRAME_BYTES:-}" ] || echo "frame_bytes = $TOB_FRAME_BYTES"
      [ -z "${TOB_BATCH_MSGS:-}" ] || echo "batch_msgs = $TOB_BATCH_MSGS"
    fi
    for ((k = 0; k < n; k++)); do
      echo
      echo "[node.$k]"
      echo "mac = $(mac_of "$k")"
      if [ -n "$slot_ns" ]; then
        echo "slot_offset_ns = $((k * slot_ns))"
        echo "slot_length_ns = $slot_ns"
      fi
    done
    if [ "${TOB_ORDER:-mars}" = otfp ]; then
      echo
      echo "[storage]"
      echo "path = ${TOB_LOG_DIR:-$run}/acceptor-{node}.log"
      echo "durability = ${TOB_DURABILITY:-sync}"
    fi
    [ -z "${TOB_CONFIG_TAIL:-}" ] || printf '\n%b\n' "$TOB_CONFIG_TAIL"
  } > "$run/cluster.ini"
}

vdev_of() {
  local k=$1 tmpl
  tmpl=$(sed -n 's/^vdev *= *//p' "$repo/drivers_cfg/$profile.ini" | head -n 1)
  echo "${tmpl//\{iface\}/veth$k}"
}

start_node() {
  local k=$1 ns extra_var extra lcores
  ns=$(ns_of "$k")
  alive "$k" && die "node $k already runs (PID $(pid_of "$k"))"
  [ -x "$daemon" ] || die "$daemon not built (bash scripts/build.sh)"
  extra_var="TOB_NODE_ARGS_$k"
  extra="${TOB_DAEMON_ARGS:-} ${!extra_var:-}"
  lcores=${TOB_LCORES:-"0@(0-$(($(nproc) - 1)))"}
  local lcores_var="TOB_LCORES_$k"
  lcores=${!lcores_var:-$lcores}
  local cpus_var="TOB_CPUS_$k" pin=()
  [ -z "${!cpus_var:-}" ] || pin=(taskset -c "${!cpus_var}")
  local rt=${TOB_RT_PRIORITY:-10}
  [ "$idle" = sleep ] || rt=0  # a polling loop under SCHED_FIFO would be throttled
  rm -rf "/var/run/dpdk/$prefix$k"
  # shellcheck disable=SC2086  # extra options are words on purpose
  # Own session: the cluster outlives the shell that started it and its terminal's signals.
  setsid ip netns exec "$ns" "${pin[@]}" "$daemon" --no-pci --file-prefix "$prefix$k" --lcores "$lcores" \
    --vdev "$(vdev_of "$k")" -- \
    --config "$run/cluster.ini" --node-id "$k" --profile "$profile" --idle "$idle" --rt-priority "$rt" \
    --deliveries "$run/node$k.deliveries" --deliveries-format "${TOB_DELIVERIES_FORMAT:-text}" --events "$run/node$k.events" \
    --stats-file "$run/node$k.stats.json" --status-interval "${TOB_STATUS_INTERVAL:-5}" $extra \
    >> "$run/node$k.log" 2>&1 &
  echo $! > "$run/node$k.pid"
  log "node $k started (PID $!, namespace $ns, log $run/node$k.log)"
}

stop_node() {
  local k=$1 sig=${2:-TERM} p i
  p=$(pid_of "$k")
  [ -n "$p" ] || return 0
  if kill -0 "$p" 2>/dev/null; then
    kill "-$sig" "$p" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do
      kill -0 "$p" 2>/dev/null || break
      sleep 0.05
    done
    if kill -0 "$p" 2>/dev/null; then
      log "node $k (PID $p) ignored SIG$sig for 5 s: SIGKILL"
      kill -KILL "$p" 2>/dev/null || true
    fi
  fi
  wait "$p" 2>/dev/null || true
  rm -f "$run/node$k.pid"
  # A crashed primary leaves its hugepage files behind; a restart would reuse them anyway.
  [ "$sig" = KILL ] || rm -f /dev/hugepages/"$prefix$k"map_* 2>/dev/null || true
}

status() {
  local n k p state
  n=$(node_count)
  [ "$n" -gt 0 ] || { echo "no cluster (run: scripts/cluster.sh up)"; return 0; }
  echo "cluster of $n nodes, run directory $run, cycle $(awk -F' *= *' '/^cycle_ns/ {print $2}' "$run/cluster.ini") ns"
  for ((k = 0; k < n; k++)); do
    p=$(pid_of "$k")
    if alive "$k"; then state="running (PID $p)"; else state="stopped"; fi
    printf '  node %d: %s\n' "$k" "$state"
    grep -E '^node [0-9]+ cycle' "$run/node$k.log" 2>/dev/null | tail -n 1 | sed 's/^/    /' || true
  done
}

# `up` returns when the cluster is usable: every daemon answers on its telemetry socket and
# every node's membership holds every node (docs/operations.md "Running a cluster"). Fails with
# the node and the reason: the daemon exited (the tail of its log), or what it last answered.
wait_ready() {
  local n=$1 timeout_s=${TOB_UP_TIMEOUT_S:-60} pids=() k
  for ((k = 0; k < n; k++)); do pids+=("$(pid_of "$k")"); done
  python3 - "$repo/scripts" "$prefix" "$run" "$n" "$timeout_s" "${pids[@]}" <<'PY'
import os, sys, time
sys.path.insert(0, sys.argv[1])
from tobclient import query  # noqa: E402
prefix, run, n, timeout_s = sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
pids = [int(p) for p in sys.argv[6:]]
want = list(range(n))
start = time.monotonic()
why = {k: "not polled yet" for k in want}
def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
while True:
    for k in want:
        if why[k] is None:
            continue
        if not alive(pids[k]):
            try:
                tail = open(f"{run}/node{k}.log", errors="replace").read().strip().splitlines()[-8:]
            except OSError:
                tail = []
            print(f"cluster: node {k} is not ready: its daemon (PID {pids[k]}) exited; last lines of "
                  f"{run}/node{k}.log:", file=sys.stderr)
            for line in tail:
                print(f"cluster:   {line}", file=sys.stderr)
            sys.exit(1)
        try:
            reply = query(f"{prefix}{k}", "/tob/membership").get("/tob/membership")
        except (OSError, ValueError) as e:
            why[k] = f"telemetry socket /var/run/dpdk/{prefix}{k}/: {e}"
            continue
        if not reply:
            why[k] = "telemetry answers, /tob/membership not registered yet"
            continue
        members = reply.get("members", [])
        if members == want:
            why[k] = None
        else:
            why[k] = f"membership {members} (state {reply.get('state')}), waiting for {want}"
    if all(w is None for w in why.values()):
        print(f"cluster: ready after {time.monotonic() - start:.1f} s: every node answers on its "
              f"telemetry socket, membership {want}")
        sys.exit(0)
    if time.monotonic() - start > timeout_s:
        for k in want:
            if why[k] is not None:
                print(f"cluster: node {k} is not ready after {timeout_s:g} s: {why[k]}", file=sys.stderr)
        sys.exit(1)
    time.sleep(0.1)
PY
}

cmd=${1:-}
shift || true
case "$cmd" in
  up)
    n=${1:-4}
    [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -ge 3 ] && [ "$n" -le 16 ] || die "N must be 3..16 (got '$n')"
    [ "$(node_count)" -eq 0 ] || die "a cluster is up already (scripts/cluster.sh down first)"
    bash "$repo/scripts/setup.sh" >/dev/null
    mkdir -p "$run"
    rm -f "$run"/node*.{log,deliveries,events,stats.json,pid} "${TOB_LOG_DIR:-$run}"/acceptor-*.log
    echo "$n" > "$run/nodes"
    net_up "$n"
    write_config "$n"
    for ((k = 0; k < n; k++)); do start_node "$k"; done
    if [ "${TOB_UP_WAIT:-1}" != 0 ] && ! wait_ready "$n"; then
      die "up: the cluster is not ready (logs in $run; scripts/cluster.sh down stops what runs)"
    fi
    ;;
  net-up)
    n=${1:-4}
    mkdir -p "$run"
    net_up "$n"
    ;;
  down)
    n=$(node_count)
    for ((k = 0; k < n; k++)); do stop_node "$k" TERM; done
    [ "${TOB_KEEP_NET:-}" = 1 ] || net_down
    rm -f "$run/nodes"
    for ((k = 0; k < 64; k++)); do rm -rf "/var/run/dpdk/$prefix$k"; rm -f /dev/hugepages/"$prefix$k"map_*; done
    log "down"
    ;;
  status) status ;;
  start) [ -n "${1:-}" ] || die "usage: cluster.sh start K"; start_node "$1" ;;
  stop) [ -n "${1:-}" ] || die "usage: cluster.sh stop K"; stop_node "$1" TERM; log "node $1 stopped" ;;
  kill) [ -n "${1:-}" ] || die "usage: cluster.sh kill K"; stop_node "$1" KILL; log "node $1 killed" ;;
  telemetry)
    [ -n "${2:-}" ] || die "usage: cluster.sh telemetry K /tob/COMMAND[,PARAMS]"
    python3 "$repo/scripts/tob-telemetry.py" "$prefix$1" "$2"
    ;;
  *)
    sed -n '2,/^set -euo pipefail/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
    [ -z "$cmd" ] || [ "$cmd" = help ] || [ "$cmd" = -h ] || [ "$cmd" = --help ] || exit 2
    ;;
esac
