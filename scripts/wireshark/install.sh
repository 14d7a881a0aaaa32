#!/usr/bin/env bash
# Installs the dpdk-tob dissector (dpdk_tob.lua, next to this script) into the user's Wireshark
# plugin folder, so that Wireshark and tshark decode EtherType 0x88B5 as `tob` without -X:
#
#   bash scripts/wireshark/install.sh             # ~/.local/lib/wireshark/plugins (Wireshark >= 2.5)
#   bash scripts/wireshark/install.sh DIR         # another plugin folder
#
# Wireshark's "About > Folders" names the personal Lua plugins folder; tshark -G folders prints it.
# Idempotent: a second run replaces the file. Uninstall: rm DIR/dpdk_tob.lua.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
dir=${1:-}
if [ -z "$dir" ]; then
  # The folder tshark itself reports, else the documented default.
  if command -v tshark >/dev/null 2>&1; then
    dir=$(tshark -G folders 2>/dev/null | awk -F'\t' '/^Personal Lua Plugins:/ {print $2}')
  fi
  dir=${dir:-$HOME/.local/lib/wireshark/plugins}
fi
mkdir -p "$dir"
install -m 0644 "$here/dpdk_tob.lua" "$dir/dpdk_tob.lua"
echo "wireshark: installed $dir/dpdk_tob.lua (display filter: tob)"
if command -v tshark >/dev/null 2>&1; then
  if tshark -G protocols 2>/dev/null | awk -F'\t' '$3 == "tob"' | grep -q .; then
    echo "wireshark: tshark knows the protocol tob"
  else
    echo "wireshark: tshark does not list tob: is $dir its personal Lua plugins folder? (tshark -G folders)" >&2
    exit 1
  fi
fi
