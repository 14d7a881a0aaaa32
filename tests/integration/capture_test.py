"""Capturing a running node with DPDK's tools and reading it with the Wireshark dissector (issue 20).

Three daemons (scripts/cluster.sh, its own namespaces `tcap-*`) under light load (the built-in
generator, 20 messages/s per node):
1. `cluster.sh up` returns a usable cluster: the README's next command, a telemetry submit,
   succeeds at once on every node.
2. dpdk-dumpcap, a DPDK secondary process of node 1 (--file-prefix tcap-node1), captures its port
   into pcapng for a few seconds while an injector in node 0's namespace sends malformed frames
   (bad CRC, cut, bad sections: tests/integration/inject_frames.py) across the bridge.
3. tshark reads the file with scripts/wireshark/dpdk_tob.lua: both directions are there (node
   1's own slots, leaving, and the others', arriving); the application messages decoded from the
   frames of the cycles inside the capture are exactly node 1's deliveries of those cycles; every
   injected frame shows as malformed with the decoder's reason (never a Lua error), and node 1
   keeps running with the membership whole.
Ends with `N passed, M failed`.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))
from tobclient import cluster, query, wait_for  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import check, run_suite  # noqa: E402
import inject_frames  # noqa: E402
sys.path.insert(0, str(REPO / "tests/wireshark"))
from dissector_test import tshark  # noqa: E402

BUILD = Path(os.environ.get("TOB_BUILD_DIR", REPO / "build"))
RUN = Path(os.environ.get("TOB_TEST_RUN_DIR", "/tmp/dpdk-tob-capture"))
NET = "tcap"  # namespaces tcap-n<K>, DPDK file prefixes tcap-node<K>: apart from other tests' clusters
NODES = 3
NODE = 1  # the node captured
CAPTURE_S = 4
GEN_RATE = 20
ENV = dict(os.environ, TOB_NET=NET, TOB_RUN_DIR=str(RUN), TOB_CYCLE_NS="100000000", TOB_BUILD_DIR=str(BUILD),
           TOB_STATUS_INTERVAL="2", TOB_DAEMON_ARGS=f"--gen-rate {GEN_RATE} --gen-size 24")
PCAP = RUN / f"node{NODE}.pcapng"
INJECT_DUMP = RUN / "injected.txt"
# Frames the daemon's decoder refuses, two of each (inject_frames.py kinds), and one kind it
# accepts at decode and drops later (another cluster's valid frames).
REFUSED_KINDS = ["too_short", "bad_magic", "bad_version", "bad_kind", "bad_sender", "bad_segment", "bad_stage",
                 "bad_suspect", "bad_length", "bad_crc", "section_overrun", "section_count"]
VALID_KINDS = ["wrong_cluster"]
INJECTOR_MAC = "02:00:00:00:00:99"
FIELDS = ["frame.number", "eth.src", "tob.sender", "tob.cycle", "tob.kind", "tob.flags", "tob.cluster",
          "tob.error", "tob.crc.status", "tob.msg.sender", "tob.msg.id", "tob.version"]


def prefix(k: int) -> str:
    return f"{NET}-node{k}"


def telemetry(k: int, cmd: str) -> dict:
    reply = query(prefix(k), cmd).get(cmd.split(",")[0])
    if reply is None:
        raise RuntimeError(f"node {k}: {cmd}: no reply")
    return reply


def deliveries(k: int) -> list[tuple[int, int, int]]:
    """(cycle, sender, msg_id) of node k's whole lines so far."""
    text = (RUN / f"node{k}.deliveries").read_text(encoding="ascii")
    out = []
    for line in text[: text.rfind("\n") + 1].splitlines():
        _, cycle, sender, msg_id = (int(x) for x in line.split())
        out.append((cycle, sender, msg_id))
    return out


def test_up_then_telemetry() -> None:
    up = cluster(ENV, "up", str(NODES), check=False)
    check("cluster.sh up returns 0 and says the cluster is ready", up.returncode == 0 and "ready after" in up.stdout,
          next((line for line in up.stdout.splitlines() if "ready after" in line), (up.stdout + up.stderr).strip()[-300:]))
    if up.returncode != 0:
        raise RuntimeError("no cluster")
    # The README's next command, right after `up`, on every node.
    results = []
    for k in range(NODES):
        r = cluster(ENV, "telemetry", str(k), f"/tob/submit,hello-after-up-{k}", check=False)
        results.append((k, r.returncode, (r.stdout + r.stderr).strip()[-200:]))
    check("the telemetry submit right after up succeeds on every node",
          all(rc == 0 and '"queued"' in out for _, rc, out in results), str([r for r in results if r[1] != 0]))


def inject_malformed() -> subprocess.CompletedProcess[str]:
    """From node 0's namespace across the bridge: node 1 receives them (and counts them dropped)."""
    cmd = ["ip", "netns", "exec", f"{NET}-n0", sys.executable, str(Path(__file__).resolve().parent / "inject_frames.py"),
           "--iface", "veth0", "--cluster-id", "7", "--nodes", str(NODES), "--count-per-kind", "2",
           "--rate", "20", "--kinds", ",".join(REFUSED_KINDS + VALID_KINDS), "--dump", str(INJECT_DUMP)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


def test_capture() -> None:
    PCAP.unlink(missing_ok=True)
    # A secondary process of node 1; the host's network namespace is fine (the multi-process
    # socket is a path under /var/run/dpdk/tcap-node1).
    dumpcap = subprocess.Popen(["dpdk-dumpcap", f"--file-prefix={prefix(NODE)}", "-i", "net_af_packet0",
                                "-w", str(PCAP), "-a", f"duration:{CAPTURE_S}", "-s", "2048"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    # Wait for the capture to start before the malformed frames leave.
    started = wait_for(lambda: PCAP.exists() and PCAP.stat().st_size > 0, 10)
    time.sleep(0.5)
    inj = inject_malformed()
    try:
        out, _ = dumpcap.communicate(timeout=CAPTURE_S + 30)
    except subprocess.TimeoutExpired:
        dumpcap.kill()
        out, _ = dumpcap.communicate()
    summary = next((line for line in out.splitlines() if line.startswith("Packets received/dropped")), "")
    check("dpdk-dumpcap captures node 1's port from outside (pcapng, none dropped)",
          started and dumpcap.returncode == 0 and PCAP.exists() and summary.endswith("/0 (100.0)"),
          f"exit {dumpcap.returncode}; {summary or out.strip()[-300:]}")
    said = (inj.stdout + inj.stderr).strip().splitlines()
    check("the injector sent its malformed frames during the capture", inj.returncode == 0,
          next((line for line in said if line.startswith("inject_frames: sent")), "\n".join(said[-5:])))
    alive = wait_for(lambda: telemetry(NODE, "/tob/membership")["members"] == list(range(NODES)), 5)
    check("node 1 runs on after the capture with the membership whole", alive)
    time.sleep(1.5)  # the I/O thread writes the deliveries of the last cycles

    rows, other = tshark(PCAP, FIELDS)
    failures = [m for m in ("Lua Error", "[Malformed Packet", "Dissector bug") if m in other]
    check("tshark reads the capture with the Lua dissector, no Lua error or dissector exception",
          rows and not failures, "; ".join(other[other.find(m):][:300] for m in failures) or f"{len(rows)} frames")
    tob = [r for r in rows if r["tob.sender"] and r["eth.src"] != [INJECTOR_MAC] and not r["tob.error"]]
    senders = {int(r["tob.sender"][0]) for r in tob}
    check("both directions: node 1's own frames (TX) and every other node's (RX)", senders == set(range(NODES)),
          f"senders {sorted(senders)} in {len(tob)} frames")

    # Messages of the frames (first copies) of the cycles strictly inside the capture, against
    # node 1's deliveries of the same cycles: a batch is delivered in its own cycle.
    captured: set[tuple[int, int, int]] = set()
    cycles = [int(r["tob.cycle"][0]) for r in tob]
    lo, hi = min(cycles) + 1, max(cycles) - 1
    for r in tob:
        cycle = int(r["tob.cycle"][0])
        if int(r["tob.flags"][0], 0) & 1 or not lo <= cycle <= hi or r["tob.kind"] != ["1"]:
            continue
        for s, m in zip(r["tob.msg.sender"], r["tob.msg.id"]):
            captured.add((cycle, int(s), int(m)))
    delivered = {d for d in deliveries(NODE) if lo <= d[0] <= hi}
    missing, extra = delivered - captured, captured - delivered
    check("the messages decoded from the capture are node 1's deliveries of those cycles",
          delivered and not missing and not extra,
          f"cycles {lo}..{hi}: {len(captured)} decoded, {len(delivered)} delivered; "
          f"delivered not decoded {sorted(missing)[:5]}, decoded not delivered {sorted(extra)[:5]}")

    # The injected frames, in the order they left (one sender, one path).
    planned = [line.split() for line in INJECT_DUMP.read_text().splitlines()] if INJECT_DUMP.exists() else []
    injected = [r for r in rows if r["eth.src"] == [INJECTOR_MAC]]
    wrong = []
    if len(injected) != len(planned):
        wrong.append(f"{len(injected)} injected frames captured, {len(planned)} sent")
    for (kind, hexframe), r in zip(planned, injected):
        error = "|".join(r["tob.error"])
        frame = bytes.fromhex(hexframe)
        if kind in VALID_KINDS:
            if error or r["tob.cluster"] in ([], ["7"]):
                wrong.append(f"{kind}: shown '{error}', cluster {r['tob.cluster']}")
            continue
        if kind == "bad_version" and len(frame) > 16 and frame[16] in (1, 2):
            continue  # versions the dissector reads: 2, and 1 of older captures (scripts/wireshark/dpdk_tob.lua)
        reason = inject_frames.DECODE_ERROR_TEXT[kind]
        if not error.startswith(reason):
            wrong.append(f"{kind}: shown '{error}', want '{reason}'")
        if kind == "bad_crc" and r["tob.crc.status"] != ["0"]:
            wrong.append(f"bad_crc: CRC status {r['tob.crc.status']}")
    check("every injected malformed frame shows as malformed with the decoder's reason, the valid one does not",
          planned and not wrong, "; ".join(wrong[:6]))


def body() -> None:
    if shutil.which("tshark") is None or shutil.which("dpdk-dumpcap") is None:
        check("tshark and dpdk-dumpcap are installed (scripts/setup.sh)", False)
        return
    cluster(ENV, "down", check=False)
    test_up_then_telemetry()
    test_capture()


def teardown() -> None:
    cluster(ENV, "down", check=False)


if __name__ == "__main__":
    sys.exit(run_suite("capture", RUN, body, teardown))
