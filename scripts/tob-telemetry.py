#!/usr/bin/env python3
"""Sends one DPDK telemetry command to a running dpdk-tob and prints the JSON reply.

    tob-telemetry.py FILE_PREFIX /tob/stats
    tob-telemetry.py FILE_PREFIX /tob/histogram,tx_error_spin

The same protocol as dpdk-telemetry.py (a SOCK_SEQPACKET socket under /var/run/dpdk/PREFIX),
without its interactive prompt, so scripts and tests can call it. Exit 1 when the daemon is
not running.
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tobclient import query  # noqa: E402


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        reply = query(sys.argv[1], sys.argv[2])
    except (OSError, ValueError) as e:
        print(f"tob-telemetry: {sys.argv[1]}: {e}", file=sys.stderr)
        return 1
    print(json.dumps(reply, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
