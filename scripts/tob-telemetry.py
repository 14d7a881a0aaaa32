#!/usr/bin/env python3
"""Sends one DPDK telemetry command to a running dpdk-tob and prints the JSON reply.

    tob-telemetry.py FILE_PREFIX /tob/stats
    tob-telemetry.py FILE_PREFIX /tob/histogram,tx.error.spin

The same protocol as dpdk-telemetry.py (a SOCK_SEQPACKET socket under /var/run/dpdk/PREFIX),
without its interactive prompt, so scripts and tests can call it. Exit 1 when the daemon is
not running.
"""
import json
import os
import socket
import sys


def query(prefix: str, command: str, run_dir: str = "/var/run/dpdk") -> dict:
    path = os.path.join(run_dir, prefix, "dpdk_telemetry.v2")
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
        s.settimeout(5)
        s.connect(path)
        hello = json.loads(s.recv(16384).decode())
        s.send(command.encode())
        reply = s.recv(int(hello.get("max_output_len", 16384))).decode()
    return json.loads(reply)


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
