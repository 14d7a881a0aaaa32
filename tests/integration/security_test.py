#!/usr/bin/env python3
"""Integration test of authenticated frames (issue 21, docs/wire-format.md "Authenticated frames").

Four daemons on the netns cluster (scripts/cluster.sh) with `[security] key_file`, and a fifth
namespace on the same bridge that captures and injects frames through a raw AF_PACKET socket.
Checks, each reported as one case:
  - every node says at start that its frames are authenticated, and the cluster delivers one
    order;
  - forged frames (a real sender, a changed section, a correct CRC, a wrong tag) are counted
    rx_auth_failed on every other node, frames without a tag rx_auth_missing, and the order
    stays identical with the membership whole;
  - a captured authentic frame sent again is counted rx_replayed on every node that had it;
  - the key is rotated on the running cluster in three steps (accept the new key, send with it,
    drop the old), one step by telemetry and one by SIGHUP, and the cluster keeps delivering in
    one order without a removal; at the end every node sends with the new key;
  - a bad key file is refused by /tob/keys/reload and the keys in use stay;
  - otfp with [ic] and 10% receive loss: every kind of frame the daemon sends (batch copies,
    retransmissions in aux frames, IC frames) is authenticated and taken once: one order, IC
    instances finish, no frame refused by authentication or replay protection.
Ends with `N passed, M failed`. Needs root.
"""
from __future__ import annotations

import os
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
os.environ.setdefault("TOB_NET", "tobsec")  # before tobclient reads it: a cluster of its own
sys.path.insert(0, str(REPO / "scripts"))
from tobclient import (  # noqa: E402
    NET, cluster as run_cluster, common_window, order_conflicts, read_deliveries, telemetry)
from tobclient import wait_for  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import check, run_suite  # noqa: E402
from inject_frames import crc32c  # noqa: E402

BUILD = Path(os.environ.get("TOB_BUILD_DIR", REPO / "build"))
RUN = Path(os.environ.get("TOB_TEST_RUN_DIR", "/tmp/dpdk-tob-security-test"))
KEY = RUN / "cluster.key"
CYCLE_NS = 100_000_000
NODES = 4
ETH_P_TOB = 0x88B5
HEADER = 36
TRAILER = 20
FLAG_AUTH = 0x04
INJ_NS = f"{NET}-inj"
INJ_IF = "inj0"
ENV = dict(os.environ, TOB_RUN_DIR=str(RUN), TOB_CYCLE_NS=str(CYCLE_NS), TOB_BUILD_DIR=str(BUILD), TOB_NET=NET,
           TOB_DAEMON_ARGS="--gen-rate 20 --gen-size 48", TOB_STATUS_INTERVAL="2",
           TOB_CONFIG_TAIL=f"[security]\\nkey_file = {KEY}")
OLD = "11" * 32
NEW = "2f" * 32


def cluster(*args: str, check_rc: bool = True) -> subprocess.CompletedProcess[str]:
    return run_cluster(ENV, *args, check=check_rc)


def stats(k: int) -> dict:
    return telemetry(k, "/tob/stats")


def deliveries(k: int):
    return read_deliveries(RUN / f"node{k}.deliveries")


def pid_of(k: int) -> int:
    return int((RUN / f"node{k}.pid").read_text())


def same_order(what: str, min_new: int, before: list[int]) -> None:
    seqs = [deliveries(k) for k in range(NODES)]
    _, diff = common_window(seqs)
    grew = [len(s) - b for s, b in zip(seqs, before)]
    st = [stats(k) for k in range(NODES)]
    removals = [s["node_removals"] for s in st]
    # Under mars a frame late or missed is a fault: a host stall of this guest removes a node, which
    # then misses deliveries. Excused when nodes counted such timing failures and the order holds.
    timing = sum(s["tx_missed"] + s["tx_late"] + s["rx_late"] + s["rx_early"] for s in st)
    clean = diff == "" and all(r == 0 for r in removals)
    left = sum(removals) + sum(s["node_self_shutdowns"] for s in st)  # a gap needs a node out of the membership
    excused = not clean and left > 0 and timing > 0 and order_conflicts(seqs) == ""
    check(what, (clean or excused) and min(grew) >= min_new,
          f"new deliveries per node {grew}, removals {removals}" + (f"; {diff}" if diff else ", one order")
          + (f"; excused: {timing} timing failures (host stalls), no order conflict" if excused else ""))


# --- the fifth namespace: capture and inject -----------------------------------------------------

def inj_up() -> None:
    subprocess.run(["ip", "netns", "del", INJ_NS], capture_output=True)
    for c in (["ip", "netns", "add", INJ_NS],
              ["ip", "link", "add", INJ_IF, "netns", INJ_NS, "type", "veth", "peer", "name", f"{NET}pinj",
               "netns", f"{NET}-sw"],
              ["ip", "-n", INJ_NS, "link", "set", INJ_IF, "up"],
              ["ip", "-n", f"{NET}-sw", "link", "set", f"{NET}pinj", "master", f"{NET}br0"],
              ["ip", "-n", f"{NET}-sw", "link", "set", f"{NET}pinj", "up"]):
        subprocess.run(c, check=True, capture_output=True)


def in_inj_ns(code: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Runs a short Python program (this file's helpers importable) in the injector's namespace."""
    prog = f"import sys; sys.path.insert(0, {str(Path(__file__).resolve().parent)!r}); " \
           f"from security_test import *; {code}"
    return subprocess.run(["ip", "netns", "exec", INJ_NS, sys.executable, "-c", prog, *args], text=True,
                          capture_output=True, timeout=timeout)


def open_raw() -> socket.socket:
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_TOB))
    s.bind((INJ_IF, ETH_P_TOB))
    s.settimeout(5)
    return s


def capture(sender: int, out: str) -> None:
    """Writes the first authenticated first-copy slot frame of `sender` seen on the bridge (hex)."""
    s = open_raw()
    end = time.monotonic() + 10
    while time.monotonic() < end:
        f = s.recv(10000)
        p = f[14:]
        if len(p) >= HEADER + 4 + TRAILER and p[3] == 1 and p[6] == sender and p[7] == FLAG_AUTH:
            Path(out).write_text(f.hex())
            return
    raise SystemExit("no authenticated frame captured")


def send_frames(frames_hex: str, count: int, gap_s: float) -> None:
    s = open_raw()
    frames = [bytes.fromhex(h) for h in Path(frames_hex).read_text().split()]
    for i in range(count):
        s.send(frames[i % len(frames)])
        time.sleep(gap_s)


def section_bytes(p: bytes) -> int:
    return struct.unpack_from(">I", p, 32)[0]


def forge(frame: bytes, i: int) -> bytes:
    """The captured frame with a byte of its sections changed and the CRC made right again: what
    CRC32C alone let through. The tag no longer matches."""
    eth, p = frame[:14], bytearray(frame[14:])
    body_end = HEADER + section_bytes(p)
    first_body = struct.unpack_from(">H", p, HEADER + 2)[0]  # a byte of the first section's body:
    at = HEADER + 4 + i % max(1, first_body)                   # its framing stays valid
    p[at] ^= 0x5A
    struct.pack_into(">I", p, body_end, crc32c(bytes(p[:body_end])))
    return eth + bytes(p)


def strip_tag(frame: bytes, i: int) -> bytes:
    """The captured frame as a daemon without a key would send it: no flag, no trailer."""
    eth, p = frame[:14], bytearray(frame[14:])
    body_end = HEADER + section_bytes(p)
    p[7] &= ~FLAG_AUTH & 0xFF
    p[HEADER + 4] ^= i & 0xFF
    struct.pack_into(">I", p, body_end, crc32c(bytes(p[:body_end])))
    return eth + bytes(p[:body_end + 4])


# --- the test -----------------------------------------------------------------------------------

def counters(name: str) -> list[int]:
    return [stats(k)[name] for k in range(NODES)]


def test_forgery_and_replay() -> None:
    inj_up()
    sender = 1
    captured = RUN / "captured.hex"
    p = in_inj_ns(f"capture({sender}, {str(captured)!r})")
    if not check("a frame of node 1 is captured from the bridge, with the authenticated flag", p.returncode == 0,
                 (p.stdout + p.stderr)[-300:]):
        return
    frame = bytes.fromhex(captured.read_text())
    others = [k for k in range(NODES) if k != sender]
    count = 40
    forged = RUN / "forged.hex"
    forged.write_text(" ".join(forge(frame, i).hex() for i in range(count)))
    plain = RUN / "plain.hex"
    plain.write_text(" ".join(strip_tag(frame, i).hex() for i in range(count)))
    before_n = [len(deliveries(k)) for k in range(NODES)]
    failed0, missing0 = counters("rx_auth_failed"), counters("rx_auth_missing")
    p1 = in_inj_ns(f"send_frames({str(forged)!r}, {count}, 0.02)")
    p2 = in_inj_ns(f"send_frames({str(plain)!r}, {count}, 0.02)")
    time.sleep(0.5)
    failed = [a - b for a, b in zip(counters("rx_auth_failed"), failed0)]
    missing = [a - b for a, b in zip(counters("rx_auth_missing"), missing0)]
    check("forged frames with a correct CRC and a wrong tag are counted rx_auth_failed on every other node",
          p1.returncode == 0 and all(failed[k] == count for k in others) and failed[sender] == 0,
          f"rx_auth_failed +{failed} for {count} forged frames of node {sender}; {(p1.stdout + p1.stderr)[-200:]}")
    check("frames without a tag are counted rx_auth_missing on every other node",
          p2.returncode == 0 and all(missing[k] == count for k in others),
          f"rx_auth_missing +{missing}; {(p2.stdout + p2.stderr)[-200:]}")
    time.sleep(2)
    same_order("the forged frames change nothing: one order, the membership whole", 20, before_n)

    replayed0 = counters("rx_replayed")
    p3 = in_inj_ns(f"send_frames({str(captured)!r}, 10, 0.05)")
    time.sleep(0.5)
    replayed = [a - b for a, b in zip(counters("rx_replayed"), replayed0)]
    check("a captured authentic frame sent again is counted rx_replayed on every other node",
          p3.returncode == 0 and all(replayed[k] == 10 for k in others),
          f"rx_replayed +{replayed} for 10 replays; {(p3.stdout + p3.stderr)[-200:]}")


def key_id(k: int) -> str:
    return telemetry(k, "/tob/keys")["send_key_id"]


def reload_all(how: str) -> list[str]:
    """Every node re-reads the key file; returns the failures."""
    bad = []
    for k in range(NODES):
        if how == "telemetry":
            r = telemetry(k, "/tob/keys/reload")
            if r.get("result") != "reloaded":
                bad.append(f"node {k}: {r}")
        else:
            before = telemetry(k, "/tob/keys")["reloads"]
            os.kill(pid_of(k), signal.SIGHUP)
            if not wait_for(lambda: telemetry(k, "/tob/keys")["reloads"] > before, 5):
                bad.append(f"node {k}: SIGHUP did not reload")
    return bad


def test_rotation() -> None:
    old_id = key_id(0)
    failed0 = counters("rx_auth_failed")
    before_n = [len(deliveries(k)) for k in range(NODES)]
    steps = [("accept the new key", f"{OLD}\n{NEW}\n", "telemetry"),
             ("send with the new key", f"{NEW}\n{OLD}\n", "sighup"),
             ("drop the old key", f"{NEW}\n", "telemetry")]
    problems = []
    for what, text, how in steps:
        KEY.write_text(text)
        problems += [f"{what}: {b}" for b in reload_all(how)]
        time.sleep(1.5)
    time.sleep(2)
    ids = [key_id(k) for k in range(NODES)]
    others = [telemetry(k, "/tob/keys")["other_key_id"] for k in range(NODES)]
    check("rotation in three steps (telemetry, SIGHUP, telemetry): every node sends with the new key only",
          not problems and len(set(ids)) == 1 and ids[0] != old_id and all(o == "none" for o in others),
          f"send keys {ids} (old {old_id}), other keys {others}" + (f"; {problems}" if problems else ""))
    failed = [a - b for a, b in zip(counters("rx_auth_failed"), failed0)]
    check("no frame fails authentication during the rotation", all(f == 0 for f in failed), f"rx_auth_failed +{failed}")
    same_order("the cluster keeps delivering in one order through the rotation", 60, before_n)
    logs = [(RUN / f"node{k}.log").read_text(errors="replace") for k in range(NODES)]
    check("SIGHUP's reload is reported in each node's log",
          all("dpdk-tob: SIGHUP: keys reloaded from" in log for log in logs), "")

    KEY.write_text("not a key\n")
    r = telemetry(0, "/tob/keys/reload")
    check("a bad key file is refused by /tob/keys/reload naming the file, and the keys in use stay",
          r.get("result") == "refused" and str(KEY) in r.get("detail", "") and key_id(0) == ids[0],
          str(r)[:300])
    KEY.write_text(f"{NEW}\n")


def test_otfp_ic() -> None:
    cluster("down", check_rc=False)
    env = dict(ENV, TOB_ORDER="otfp", TOB_DURABILITY="none",
               TOB_DAEMON_ARGS="--gen-rate 20 --gen-size 48 --drop-rx 0.1 --ic-gen-keys 4",
               TOB_CONFIG_TAIL="[ic]\\nf = 1\\nperiod_cycles = 1\\nkeys_per_period = 16\\n"
                               f"[security]\\nkey_file = {KEY}")
    run_cluster(env, "up", str(NODES))
    # A node refuses as replayed what its peers sent in cycles before it started (its replay floor,
    # replay_window.h), frames its port had queued before its RX role ran included: the node that
    # starts last counted 6 such once. The check is on the frames of the running cluster.
    time.sleep(1)
    names = ("rx_auth_missing", "rx_auth_failed", "rx_replayed", "rx_auth_unexpected", "control_tx_seal_failed")
    st0 = [stats(k) for k in range(NODES)]
    time.sleep(7)
    same_order("otfp with [ic] and 10% loss delivers one order with authenticated frames", 100, [0] * NODES)
    st = [stats(k) for k in range(NODES)]
    refused = {name: [s[name] - s0[name] for s, s0 in zip(st, st0)] for name in names}
    at_start = {name: [s0[name] for s0 in st0] for name in names if any(s0[name] for s0 in st0)}
    served = sum(s["node_retransmit_served"] for s in st)
    ic = [telemetry(k, "/tob/ic")["ic_instances_finished"] for k in range(NODES)]
    check("batch copies, retransmissions (aux frames) and IC frames all pass authentication and replay protection",
          all(v == 0 for vs in refused.values() for v in vs) and served > 0 and min(ic) > 20,
          f"refusals after the first second {refused} (in it: {at_start or 'none'}), retransmitted segments "
          f"served {served}, IC instances finished {ic}")


def body() -> None:
    RUN.mkdir(parents=True, exist_ok=True)
    KEY.write_text(f"{OLD}\n")
    KEY.chmod(0o600)
    cluster("down", check_rc=False)
    cluster("up", str(NODES))
    logs = [(RUN / f"node{k}.log").read_text(errors="replace") for k in range(NODES)]
    check("every node says at start that its frames are authenticated",
          all("dpdk-tob: frames authenticated (AES-256-GMAC" in log for log in logs),
          next((line for line in logs[0].splitlines() if "authenticated" in line), "no such line in node 0's log"))
    time.sleep(4)
    same_order("a cluster with a key delivers one order", 40, [0] * NODES)
    test_forgery_and_replay()
    test_rotation()
    KEY.write_text(f"{OLD}\n")
    test_otfp_ic()


def teardown() -> None:
    subprocess.run(["ip", "netns", "del", INJ_NS], capture_output=True)
    cluster("down", check_rc=False)


if __name__ == "__main__":
    sys.exit(run_suite("security", RUN, body, teardown))
