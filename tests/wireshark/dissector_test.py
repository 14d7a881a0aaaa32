#!/usr/bin/env python3
"""The Wireshark dissector (scripts/wireshark/dpdk_tob.lua) through tshark, without a cluster.

    dissector_test.py BUILD/tests/wireshark/tob-golden-frames tests/fuzz/corpus

1. Frames of every section type from the project's own encoder (tob-golden-frames writes them
   and what each must show): every expected field value appears, in order, and nothing is
   refused.
2. The decoder's fuzz corpus (tests/fuzz/corpus, made by tests/fuzz/make_corpus.cc and libFuzzer),
   each file the payload of one Ethernet frame: a frame the decoder refuses (bad-*) is shown
   refused (tob.error and Malformed expert info) with the decoder's reason, a malformed section
   body (batch-*, membership-*, ic-chunk-*) is flagged, a valid one is not, and none of them
   makes the dissector fail ("Lua Error").
"""
from __future__ import annotations

import json
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests/integration"))
from harness import check  # noqa: E402

DISSECTOR = REPO / "scripts/wireshark/dpdk_tob.lua"
CLUSTER_MAC = bytes.fromhex("011b19000000")
SENDER_MAC = bytes.fromhex("020000000099")
ETHERTYPE = b"\x88\xb5"

# Wire versions the dissector decodes: 2 (docs/wire-format.md: otfp slots in several frames,
# sections 4 and 5 carry segment numbers) and 1 (older captures).
KNOWN_VERSIONS = (1, 2)

# What decode_frame (lib/core/wire.cc) says for each bad-* file of the corpus (make_corpus.cc).
CORPUS_REASON = {
    "bad-crc": "CRC mismatch",
    "bad-empty": "too short",
    "bad-kind": "unknown frame kind",
    "bad-length-max-section-bytes": "section bytes beyond the frame",
    "bad-length-truncated": "section bytes beyond the frame",
    "bad-magic": "bad magic",
    "bad-section-count": "section count mismatch",
    "bad-section-overrun": "section overruns the section area",
    "bad-segment-count-0": "segment index not below segment count",
    "bad-sender-64": "sender id out of range",
    "bad-stage-3": "unknown stage",
    "bad-suspect-64": "suspected node out of range",
    "bad-too-short-39": "too short",
    "bad-version": "unsupported version",
    "bad-version-9": "unsupported version",
}


def write_pcap(path: Path, frames: list[bytes]) -> None:
    with path.open("wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, frame in enumerate(frames):
            f.write(struct.pack("<IIII", 1_700_000_000, i, len(frame), len(frame)))
            f.write(frame)


def tshark(pcap: Path, fields: list[str]) -> tuple[list[dict[str, list[str]]], str]:
    """One dict per frame: field -> every occurrence; and everything tshark printed besides."""
    args = ["tshark", "-n", "-X", f"lua_script:{DISSECTOR}", "-r", str(pcap), "-T", "fields",
            "-E", "separator=/t", "-E", "occurrence=a", "-E", "aggregator=|"]
    for name in fields:
        args += ["-e", name]
    p = subprocess.run(args, capture_output=True, text=True, timeout=120)
    rows = []
    for line in p.stdout.splitlines():
        cols = line.split("\t")
        rows.append({name: (cols[i].split("|") if i < len(cols) and cols[i] else []) for i, name in enumerate(fields)})
    # The verbose tree too: every label the dissector formats is exercised.
    v = subprocess.run(["tshark", "-n", "-X", f"lua_script:{DISSECTOR}", "-r", str(pcap), "-V"],
                       capture_output=True, text=True, timeout=120)
    return rows, p.stderr + v.stdout + v.stderr


def as_int(text: str) -> int | str:
    try:
        return int(text, 0)
    except ValueError:
        return text


def golden(tool: Path, tmp: Path) -> None:
    pcap, manifest = tmp / "golden.pcap", tmp / "golden.jsonl"
    subprocess.run([str(tool), str(pcap), str(manifest)], check=True, capture_output=True, timeout=30)
    records = [json.loads(line) for line in manifest.read_text().splitlines()]
    fields = sorted({f for r in records for f in r["fields"]} | {"tob.error", "frame.number"})
    rows, other = tshark(pcap, fields)
    check("tshark decodes the encoder's frames without a Lua error", "Lua Error" not in other and len(rows) == len(records),
          f"{len(rows)} rows for {len(records)} frames; {other.strip()[-300:] if 'Lua Error' in other else ''}")
    sections_seen: set[int] = set()
    for rec, row in zip(records, rows):
        bad = []
        for field, want in rec["fields"].items():
            got = [as_int(x) for x in row.get(field, [])]
            if got != want:
                bad.append(f"{field}: shown {got}, encoded {want}")
        if row.get("tob.error"):
            bad.append(f"refused: {row['tob.error']}")
        sections_seen |= {int(t) for t in rec["fields"].get("tob.section.type", [])}
        check(f"dissector shows what the encoder wrote: {rec['name']}", not bad, "; ".join(bad))
    defined = set(range(1, 14))
    check("the encoder's frames cover every section type docs/wire-format.md defines",
          defined <= sections_seen, f"missing {sorted(defined - sections_seen)}")


def corpus(corpus_dir: Path, tmp: Path) -> None:
    files = sorted(corpus_dir.glob("*.bin"))
    frames = [CLUSTER_MAC + SENDER_MAC + ETHERTYPE + f.read_bytes() for f in files]
    # Tagged variants of two: the dissector sits behind Wireshark's 802.1Q dissector too.
    tagged = [f for f in files if f.stem in ("valid-header-only", "bad-crc")]
    # A version no daemon ever spoke (the corpus's bad-version is 1, which the dissector reads).
    base = (corpus_dir / "valid-header-only.bin").read_bytes()
    frames.append(CLUSTER_MAC + SENDER_MAC + ETHERTYPE + base[:2] + b"\x09" + base[3:])
    files_names_extra = ["bad-version-9"]
    frames += [CLUSTER_MAC + SENDER_MAC + b"\x81\x00\xa0\x64" + ETHERTYPE + f.read_bytes() for f in tagged]
    names = [f.stem for f in files] + files_names_extra + [f"{f.stem} (802.1Q)" for f in tagged]
    pcap = tmp / "corpus.pcap"
    write_pcap(pcap, frames)
    rows, other = tshark(pcap, ["tob.error", "tob.crc.status", "_ws.expert.group", "tob.version"])
    # A Lua error, or an exception Wireshark catches ("[Malformed Packet: TOB]", "Dissector bug"):
    # both mean the dissector read past what it checked.
    failures = [m for m in ("Lua Error", "[Malformed Packet", "Dissector bug") if m in other]
    check("tshark reads every corpus frame without a Lua error or a dissector exception",
          not failures and len(rows) == len(frames),
          f"{len(rows)} rows for {len(frames)} frames; "
          + "; ".join(other[other.find(m):][:300] for m in failures))
    wrong = []
    for name, row in zip(names, rows):
        stem = name.split(" ")[0]
        error = "|".join(row["tob.error"])
        malformed_info = any(g in ("0x07000000", "117440512", "Malformed") for g in row["_ws.expert.group"])
        if stem == "bad-version" and row["tob.version"] and int(row["tob.version"][0]) in KNOWN_VERSIONS:
            continue  # a version the decoder refuses but the dissector reads (1, older captures)
        if stem in CORPUS_REASON:
            if not error.startswith(CORPUS_REASON[stem]) or not malformed_info:
                wrong.append(f"{name}: error '{error}', expert {row['_ws.expert.group']}, want '{CORPUS_REASON[stem]}'")
        elif stem.startswith(("batch-", "membership-", "ic-chunk-")):
            if not error.startswith("section: ") or not malformed_info:
                wrong.append(f"{name}: error '{error}', expert {row['_ws.expert.group']}, want a malformed section")
        elif stem.startswith("valid-"):
            # The framing is valid; a section body may still be one its codec refuses (the
            # corpus's "unknown" types 2..13 were written before they were defined).
            if (error and not error.startswith("section: ")) or row["tob.crc.status"] != ["1"]:
                wrong.append(f"{name}: error '{error}', CRC status {row['tob.crc.status']}")
    check("every refused corpus frame shows the decoder's reason as malformed, valid ones show none",
          not wrong, "; ".join(wrong))
    bad_crc = [r for n, r in zip(names, rows) if n.startswith("bad-crc")]
    check("a bad CRC shows as CRC status Bad, tagged or not", len(bad_crc) == 2 and all(r["tob.crc.status"] == ["0"] for r in bad_crc),
          str([r["tob.crc.status"] for r in bad_crc]))


def authenticated(tmp: Path) -> None:
    """Frames of a cluster with [security] (docs/wire-format.md "Authenticated frames"): flag bit 2,
    the 20-byte trailer after the CRC (copy, reserved, key id, tag), then padding; a cut trailer
    is flagged malformed, and the frame itself still decodes."""
    sys.path.insert(0, str(REPO / "tests/integration"))
    from inject_frames import crc32c  # noqa: E402
    membership = bytes([8, 0, 0, 8]) + (0b1111).to_bytes(8, "big")
    header = struct.pack(">HBBHBBQHHQBBHI", 0x70B1, 2, 1, 7, 2, 0x04 | 0x01, 123456, 0, 1, 0b1111, 2, 0xFF, 1,
                         len(membership))
    body = header + membership
    frame = body + struct.pack(">I", crc32c(body))
    trailer = bytes([1, 0, 0xAB, 0xCD]) + bytes(range(16))
    eth = CLUSTER_MAC + SENDER_MAC + ETHERTYPE
    pcap = tmp / "auth.pcap"
    write_pcap(pcap, [eth + frame + trailer + bytes(6), eth + frame + trailer[:7]])
    rows, other = tshark(pcap, ["tob.flags.authenticated", "tob.auth.copy", "tob.auth.key_id", "tob.auth.tag",
                                "tob.error", "tob.crc.status", "_ws.expert.message"])
    ok = (len(rows) == 2 and "Lua Error" not in other and rows[0]["tob.flags.authenticated"] == ["1"]
          and rows[0]["tob.auth.copy"] == ["1"] and rows[0]["tob.auth.key_id"] == ["0xabcd"]
          and rows[0]["tob.auth.tag"] == [bytes(range(16)).hex()] and not rows[0]["tob.error"]
          and rows[0]["tob.crc.status"] == ["1"])
    check("an authenticated frame shows its trailer: copy, key id and tag", ok, str(rows[:1]) + ("" if ok else other[-300:]))
    cut = len(rows) == 2 and any("trailer is 20" in m for m in rows[1]["_ws.expert.message"]) and not rows[1]["tob.error"]
    check("a cut authentication trailer is flagged malformed, the frame itself still decodes", cut, str(rows[1:]))


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    if shutil.which("tshark") is None:
        check("tshark is installed (scripts/setup.sh)", False)
        print("0 passed, 1 failed")
        return 1
    with tempfile.TemporaryDirectory(prefix="tob-dissector-") as d:
        tmp = Path(d)
        golden(Path(sys.argv[1]), tmp)
        corpus(Path(sys.argv[2]), tmp)
        authenticated(tmp)
    from harness import results  # noqa: E402
    passed = sum(1 for _, ok, _ in results if ok)
    print(f"{passed} passed, {len(results) - passed} failed")
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
