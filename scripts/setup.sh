#!/usr/bin/env bash
# Installs everything dpdk-tob needs on Debian 12 and reserves hugepages.
# Idempotent: a second run on a ready machine only checks and returns in about a second.
set -euo pipefail

packages=(
  build-essential g++ pkg-config meson ninja-build
  dpdk dpdk-dev libdpdk-dev
  libbsd-dev libnuma-dev
  libssl-dev libsodium-dev
  linuxptp
  catch2 libbenchmark-dev
  clang libclang-rt-14-dev
  python3 python3-venv python3-pip python3-matplotlib python3-pytest
  iproute2 ethtool stress-ng
  tshark
)

hugepages_2m=${TOB_HUGEPAGES_2M:-1024}   # 2 GiB: four daemons plus their secondaries

log() { printf 'setup: %s\n' "$*"; }

if [ "$(id -u)" -ne 0 ]; then
  echo "setup: must run as root (installs packages and reserves hugepages)" >&2
  exit 1
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # tshark (wireshark-common) asks whether non-root users may capture: no, and no question.
  echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  log "packages present"
fi

# Hugepages: DPDK multi-process (daemon + secondary applications) needs them.
hp=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
if [ -w "$hp" ]; then
  have=$(cat "$hp")
  if [ "$have" -lt "$hugepages_2m" ]; then
    echo "$hugepages_2m" > "$hp" || true
    have=$(cat "$hp")
  fi
  if [ "$have" -lt "$hugepages_2m" ]; then
    log "warning: only $have of $hugepages_2m 2 MiB hugepages could be reserved"
  else
    log "hugepages: $have x 2 MiB"
  fi
else
  log "warning: $hp not writable; hugepages not reserved"
fi
if ! mountpoint -q /dev/hugepages 2>/dev/null; then
  mkdir -p /dev/hugepages
  mount -t hugetlbfs nodev /dev/hugepages 2>/dev/null || log "warning: could not mount hugetlbfs"
fi
