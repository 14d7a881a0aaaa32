#!/usr/bin/env bash
# PTP for dpdk-tob (issue 19; docs/operations.md "An external source: ptp4l"): ptp4l on a node's
# interface, and phc2sys to carry the NIC's clock to CLOCK_TAI, chosen by the port profile.
#
#   scripts/ptp.sh start IFACE [options]  start ptp4l (and phc2sys) for IFACE, return once running
#   scripts/ptp.sh stop IFACE             stop what `start` started for IFACE (by its PIDs)
#   scripts/ptp.sh status IFACE           ptp4l's CURRENT_DATA_SET through pmc (its offset, delay)
#
# Options of start:
#   --profile NAME     the port profile (drivers_cfg/NAME.ini, default af_packet): its [timing]
#                      rx_hw_timestamp = yes takes hardware time stamps (ptp4l -H disciplines the
#                      NIC's clock, phc2sys -w carries it to the system clock and the kernel's TAI
#                      offset, so CLOCK_TAI follows); no: software time stamps (ptp4l -S
#                      disciplines the system clock itself, no phc2sys)
#   --free-running     measure only: ptp4l never adjusts any clock (free_running 1) and no phc2sys
#                      runs. Required with --netns: namespaces share the host's clock.
#   --slave-only       never the master (-s)
#   --priority1 N      the best-master priority (default 128; lower wins)
#   --netns NS         run inside network namespace NS (the netns cluster: TOB_NET-nK)
#   --uds PATH         ptp4l's management socket (default /var/run/ptp4l-IFACE), what
#                      [timing] ptp4l_socket names (docs/configuration.md)
#   --dir DIR          configuration, log and PIDs (default /tmp/dpdk-tob-ptp)
#   --domain N         PTP domain (default 0)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
die() { printf 'ptp: %s\n' "$*" >&2; exit 2; }
usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 2; }

[ $# -ge 2 ] || usage
cmd=$1 iface=$2
shift 2
[[ "$iface" =~ ^[A-Za-z0-9_.-]{1,15}$ ]] || die "'$iface' is not an interface name"
profile=af_packet free=0 slave=0 prio=128 netns="" uds="" dir=/tmp/dpdk-tob-ptp domain=0
while [ $# -gt 0 ]; do
  case $1 in
    --profile) profile=${2:?--profile NAME}; shift 2 ;;
    --free-running) free=1; shift ;;
    --slave-only) slave=1; shift ;;
    --priority1) prio=${2:?--priority1 N}; shift 2 ;;
    --netns) netns=${2:?--netns NS}; shift 2 ;;
    --uds) uds=${2:?--uds PATH}; shift 2 ;;
    --dir) dir=${2:?--dir DIR}; shift 2 ;;
    --domain) domain=${2:?--domain N}; shift 2 ;;
    *) die "unknown option '$1' (scripts/ptp.sh with no arguments lists them)" ;;
  esac
done
[[ "$prio" =~ ^[0-9]+$ ]] && [ "$prio" -le 255 ] || die "--priority1 $prio: 0..255"
[[ "$domain" =~ ^[0-9]+$ ]] && [ "$domain" -le 127 ] || die "--domain $domain: 0..127"
uds=${uds:-/var/run/ptp4l-$iface}
[[ "$uds" = /* ]] || die "--uds $uds: an absolute path"
run=(); [ -z "$netns" ] || run=(ip netns exec "$netns")
pidf() { echo "$dir/$iface.$1.pid"; }

start() {
  [ "$(id -u)" -eq 0 ] || die "must run as root"
  command -v ptp4l >/dev/null || die "ptp4l not found (linuxptp: scripts/setup.sh installs it)"
  local prof="$repo/drivers_cfg/$profile.ini" hw
  [ -f "$prof" ] || die "--profile $profile: no $prof"
  hw=$(awk -F' *= *' '/^\[timing\]/ {t=1; next} /^\[/ {t=0} t && $1 == "rx_hw_timestamp" {print $2}' "$prof")
  if [ -n "$netns" ] && [ "$free" != 1 ]; then
    die "--netns needs --free-running: a namespace shares the host's clock, which ptp4l must not adjust"
  fi
  [ -n "$netns" ] && { ip netns list | grep -qw "$netns" || die "--netns $netns: no such namespace"; }
  mkdir -p "$dir"
  local cfg="$dir/$iface.cfg" ts=software
  [ "$hw" = yes ] && ts=hardware
  {
    echo "# written by scripts/ptp.sh for $iface (profile $profile)"
    echo "[global]"
    echo "time_stamping $ts"
    echo "network_transport L2"
    echo "domainNumber $domain"
    echo "priority1 $prio"
    echo "uds_address $uds"
    echo "free_running $free"
    echo "logSyncInterval -2"
    echo "summary_interval 2"
  } > "$cfg"
  [ -f "$(pidf ptp4l)" ] && kill -0 "$(cat "$(pidf ptp4l)")" 2>/dev/null && die "ptp4l already runs for $iface (PID $(cat "$(pidf ptp4l)"))"
  local args=(-f "$cfg" -i "$iface" -m)
  [ "$slave" = 1 ] && args+=(-s)
  "${run[@]}" ptp4l "${args[@]}" > "$dir/$iface.ptp4l.log" 2>&1 &
  echo $! > "$(pidf ptp4l)"
  # Running once its management socket answers.
  local i
  for i in $(seq 50); do
    kill -0 "$(cat "$(pidf ptp4l)")" 2>/dev/null || die "ptp4l for $iface stopped: $(tail -n 3 "$dir/$iface.ptp4l.log")"
    [ -S "$uds" ] && break
    sleep 0.1
  done
  if [ ! -S "$uds" ]; then
    kill "$(cat "$(pidf ptp4l)")" 2>/dev/null || true
    rm -f "$(pidf ptp4l)"
    die "ptp4l for $iface: no management socket $uds after 5 s (stopped it; log $dir/$iface.ptp4l.log)"
  fi
  if [ "$ts" = hardware ] && [ "$free" != 1 ]; then
    # The NIC's clock (disciplined by ptp4l, on the TAI scale) -> the system clock; -w waits for
    # ptp4l and takes its UTC offset, so CLOCK_REALTIME is UTC and CLOCK_TAI follows.
    command -v phc2sys >/dev/null || die "phc2sys not found (linuxptp)"
    "${run[@]}" phc2sys -s "$iface" -c CLOCK_REALTIME -w -z "$uds" -m > "$dir/$iface.phc2sys.log" 2>&1 &
    echo $! > "$(pidf phc2sys)"
  fi
  echo "ptp: ptp4l for $iface (${ts} time stamps$([ "$free" = 1 ] && echo ', free-running: no clock adjusted')) PID $(cat "$(pidf ptp4l)"), management socket $uds, log $dir/$iface.ptp4l.log"
  [ -f "$(pidf phc2sys)" ] && echo "ptp: phc2sys $iface -> CLOCK_REALTIME PID $(cat "$(pidf phc2sys)")"
  return 0
}

stop() {
  local what p
  for what in phc2sys ptp4l; do
    [ -f "$(pidf "$what")" ] || continue
    p=$(cat "$(pidf "$what")")
    kill "$p" 2>/dev/null && echo "ptp: stopped $what for $iface (PID $p)"
    rm -f "$(pidf "$what")"
  done
  return 0
}

status() {
  command -v pmc >/dev/null || die "pmc not found (linuxptp)"
  pmc -u -b 0 -s "$uds" -d "$domain" 'GET CURRENT_DATA_SET'
}

case $cmd in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) usage ;;
esac
