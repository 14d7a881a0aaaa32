#!/usr/bin/env python3
"""Malformed-frame injector for the dpdk-tob netns cluster.

Sends frames the daemons must drop through a raw AF_PACKET socket bound to one interface
(normally a veth leg on the cluster's bridge, in its own network namespace), at a bounded rate,
and reports per kind how many frames left and which drop counter of the daemon's statistics
(`lib/dataplane/observe/stats.cc`, visit_stats) each kind raises on every node.

    inject_frames.py --iface inj0 --cluster-id 7 --nodes 4 [--count-per-kind 20] [--rate 2000]
                     [--seed 1] [--json OUT] [--stale-cycle 1] [--dump FILE] [--dry-run]
    inject_frames.py --self-test      # no network: CRC32C, golden frames, classifier, builders

Frames follow docs/wire-format.md: Ethernet II to the cluster multicast MAC 01:1b:19:00:00:00
from 02:00:00:00:00:99, optional 802.1Q tag, EtherType 0x88B5, the 36-byte big-endian slot
frame header, sections, and a CRC32C trailer. Every frame is classified before it is sent by a
model of the receiver written from `lib/dataplane/port/ether.cc` (parse_ether), `lib/core/wire.cc`
(decode_frame) and `lib/dataplane/roles/rx_role.cc` (RxRole::classify); a frame the model says a
daemon could accept is a bug here and stops the run before anything is sent.

Kinds (the counter each one raises on every node; decode counters are "rx_decode_" plus
core::to_string(DecodeError) with spaces and dashes replaced by '_'):
  runt             rx_decode_too_short  Linux refuses AF_PACKET frames shorter than the 14-byte
                                        Ethernet header (EINVAL; probed at start), and drops
                                        802.1Q frames shorter than 20 bytes on receive, so
                                        rx_runt cannot be reached over veth: 14-byte frames of
                                        our EtherType with no payload are sent instead
  other_ethertype  rx_other_ethertype   0x88B6 and 0x88B4 with a slot frame, IPv4 (0x0800) with
                                        a garbage payload, VLAN-0 priority tag + 0x88B6. The IPv4
                                        header is well formed: a bridge with br_netfilter drops
                                        malformed IPv4 before it reaches any daemon
  wrong_vlan       rx_wrong_vlan        802.1Q VLAN 123 (and 1, 4094) + 0x88B5; the cluster is
                                        untagged. The inner frame is of cluster ID+1, so a path
                                        that strips the tag without reinserting it gives
                                        rx_wrong_cluster instead (DPDK 22.11 net_af_packet
                                        reinserts the tag the kernel strips)
  too_short        rx_decode_too_short  0x88B5, payload of 0..39 bytes (a cut valid frame)
  bad_magic        rx_decode_bad_magic
  bad_version      rx_decode_unsupported_version
  bad_kind         rx_decode_unknown_frame_kind
  bad_sender       rx_decode_sender_id_out_of_range                sender 64..255
  bad_segment      rx_decode_segment_index_not_below_segment_count
  bad_stage        rx_decode_unknown_stage                         stage 3..255
  bad_suspect      rx_decode_suspected_node_out_of_range           suspect 0x40..0xFE
  bad_length       rx_decode_section_bytes_beyond_the_frame        (checked before the CRC)
  bad_crc          rx_decode_CRC_mismatch                          one bit flipped
  section_overrun  rx_decode_section_overruns_the_section_area
  section_count    rx_decode_section_count_mismatch
  wrong_cluster    rx_wrong_cluster     valid frame of another cluster id
  unknown_sender   rx_unknown_sender    valid frame from sender NODES..63
  stale_cycle      rx_late              valid frame, real sender, cycle --stale-cycle (1); the
                                        node whose id is the sender counts it as rx_own_frames
                                        instead (senders rotate over 0..N-1), so "counter" is
                                        null and "per_node" holds the exact split
  garbage          rx_decode_too_short / rx_decode_bad_magic (random bytes, frames of 14..1514
                   bytes, never starting with the magic; "counters" holds the exact split)
  oversize         none expected        a 9000-byte frame, only when the interface MTU allows
                                        it (else skipped, with the reason). A veth whose peer (the
                                        bridge port) has a smaller MTU drops it, which AF_PACKET
                                        reports as ENOBUFS: the kind is then abandoned after 3
                                        refusals and reported as skipped

Apart from the one defect under test, frames are valid for the right cluster from a real sender
with cycle --stale-cycle, so a receiver that skipped the check under test would still drop them
as late. The order of the decode checks (wire.cc) is: length < 40, magic, version, kind, section
bytes beyond the buffer, CRC, sender, segment, stage, suspect, section walk, section count; the
frames of every decode kind from bad_sender on carry a correct CRC. Over veth and a Linux bridge
frames arrive unpadded; a hardware NIC would pad frames under 60 bytes, turning most too_short
frames into bad_magic ones.

JSON summary (stdout, and --json OUT):
  {"kinds": {KIND: {"sent": n, "counter": "rx_..." | null, "intended": "rx_...",
                    "counters": {counter: n} | null, "per_node": {"0": {counter: n}, ...},
                    "skipped": reason | null, "error": last send error | null, "note": "..."}},
   "sent": {KIND: n}, "expected_per_node": {"0": {counter: n}, ...}, "total_sent": n, ...}
"counter" is set only when every frame of the kind raises that one counter on every node.

Exit status: 0 sent (or self-test passed), 1 runtime error or self-test failure, 2 bad usage.
"""
from __future__ import annotations

import argparse
import errno
import fcntl
import json
import random
import re
import socket
import struct
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NoReturn

# --- wire constants (lib/core/wire.h, lib/dataplane/port/ether.h) --------------------------------

ETH_P_TOB = 0x88B5
TPID_VLAN = 0x8100
ETHER_HEADER_BYTES = 14
VLAN_TAG_BYTES = 4
CLUSTER_MAC = bytes.fromhex("011b19000000")
INJECTOR_MAC = bytes.fromhex("020000000099")
FRAME_MAGIC = 0x70B1
WIRE_VERSION = 2
KIND_SLOT = 1
KIND_IC = 2  # interactive-consistency round data (core/ic_wire.h): a known kind
HEADER_BYTES = 36
SECTION_HEADER_BYTES = 4
TRAILER_BYTES = 4
MIN_FRAME_BYTES = HEADER_BYTES + TRAILER_BYTES
MAX_NODES = 64
NO_NODE = 0xFF
STAGE_INACTIVE, STAGE_ACTIVE, STAGE_MEMBER = 0, 1, 2
SECTION_APP_BATCH = 1
SECTION_CLOCK_SYNC = 7
SECTION_MEMBERSHIP = 8
FLAG_SECOND_COPY = 1
OVERSIZE_BYTES = 9000
MAX_STANDARD_FRAME = 1514

# Bounds that keep a run short and gentle whatever the caller passes.
MAX_COUNT_PER_KIND = 10_000
MAX_RATE = 50_000.0

# core::to_string(DecodeError) in lib/core/wire.cc, in enum order (none excluded).
DECODE_ERROR_TEXT: dict[str, str] = {
    "too_short": "too short",
    "bad_magic": "bad magic",
    "bad_version": "unsupported version",
    "bad_kind": "unknown frame kind",
    "bad_sender": "sender id out of range",
    "bad_segment": "segment index not below segment count",
    "bad_stage": "unknown stage",
    "bad_suspect": "suspected node out of range",
    "bad_length": "section bytes beyond the frame",
    "bad_crc": "CRC mismatch",
    "section_overrun": "section overruns the section area",
    "section_count": "section count mismatch",
}


def stat_key(prefix: str, text: str) -> str:
    """The statistic name stats.cc derives from an enum's text ("CRC mismatch" -> "CRC_mismatch")."""
    return (prefix + text).replace(" ", "_").replace("-", "_")


DECODE_COUNTER: dict[str, str] = {e: stat_key("rx_decode_", t) for e, t in DECODE_ERROR_TEXT.items()}
RX_RUNT = "rx_runt"
RX_OTHER_ETHERTYPE = "rx_other_ethertype"
RX_WRONG_VLAN = "rx_wrong_vlan"
RX_WRONG_CLUSTER = "rx_wrong_cluster"
RX_UNKNOWN_SENDER = "rx_unknown_sender"
RX_OWN_FRAMES = "rx_own_frames"
RX_LATE = "rx_late"
ACCEPTED = "accepted"  # not a counter: the model says a daemon could take this frame

# --- CRC32C (Castagnoli), table-driven ------------------------------------------------------

_CRC32C_POLY = 0x82F63B78  # reflected Castagnoli polynomial, as in lib/core/crc32c.cc


def _crc32c_table() -> tuple[int, ...]:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ _CRC32C_POLY if c & 1 else c >> 1
        table.append(c)
    return tuple(table)


_CRC32C_TABLE = _crc32c_table()


def crc32c(data: bytes, crc: int = 0) -> int:
    """CRC32C of data, continuing from crc (0 to start), like core::crc32c."""
    c = crc ^ 0xFFFFFFFF
    table = _CRC32C_TABLE
    for b in data:
        c = (c >> 8) ^ table[(c ^ b) & 0xFF]
    return c ^ 0xFFFFFFFF


# --- encoder ---------------------------------------------------------------------------------

_HEADER = struct.Struct(">HBBHBBQHHQBBHI")
assert _HEADER.size == HEADER_BYTES


@dataclass(frozen=True)
class Header:
    """Every field of the 36-byte slot frame header, including ones a valid frame fixes."""

    cluster_id: int = 0
    sender: int = 0
    flags: int = 0
    cycle: int = 0
    segment_index: int = 0
    segment_count: int = 1
    view_vector: int = 0
    stage: int = STAGE_INACTIVE
    suspected: int = NO_NODE
    magic: int = FRAME_MAGIC
    version: int = WIRE_VERSION
    kind: int = KIND_SLOT


Section = tuple[int, int, bytes]  # type, flags, body


def section_area(sections: Sequence[Section]) -> bytes:
    return b"".join(struct.pack(">BBH", t, f, len(body)) + body for t, f, body in sections)


def encode_frame(h: Header, sections: Sequence[Section] = (), *, area: bytes | None = None,
                 section_count: int | None = None, section_bytes: int | None = None) -> bytes:
    """A slot frame (the Ethernet payload) with its CRC32C trailer over every byte before it.

    By default the section count and section bytes describe the sections, as FrameWriter writes
    them; area, section_count and section_bytes override them to build malformed frames (the
    trailer always follows the area actually written)."""
    if area is None:
        area = section_area(sections)
    count = len(sections) if section_count is None else section_count
    nbytes = len(area) if section_bytes is None else section_bytes
    body = _HEADER.pack(h.magic, h.version, h.kind, h.cluster_id, h.sender, h.flags, h.cycle,
                        h.segment_index, h.segment_count, h.view_vector, h.stage, h.suspected,
                        count, nbytes) + area
    return body + struct.pack(">I", crc32c(body))


def reseal(frame: bytes) -> bytes:
    """Recomputes the trailer of a frame whose header was patched (like reseal in test_wire.cc)."""
    end = HEADER_BYTES + struct.unpack_from(">I", frame, 32)[0]
    if end + TRAILER_BYTES > len(frame):
        raise ValueError("section bytes run past the frame")
    return frame[:end] + struct.pack(">I", crc32c(frame[:end])) + frame[end + TRAILER_BYTES:]


def batch_body(messages: Sequence[tuple[int, int, int, bytes]]) -> bytes:
    """An application batch section body: count, reserved, then msg_id, submit_ns, client, payload."""
    out = struct.pack(">HH", len(messages), 0)
    for msg_id, submit_ns, client, payload in messages:
        out += struct.pack(">QqHH", msg_id, submit_ns, client, len(payload)) + payload
    return out


def ether(payload: bytes, ether_type: int = ETH_P_TOB, vlan_tci: int | None = None,
          dst: bytes = CLUSTER_MAC, src: bytes = INJECTOR_MAC) -> bytes:
    """Ethernet II frame, with an 802.1Q tag (TPID 0x8100, the given TCI) when vlan_tci is set."""
    tag = b"" if vlan_tci is None else struct.pack(">HH", TPID_VLAN, vlan_tci)
    return dst + src + tag + struct.pack(">H", ether_type) + payload


def vlan_tci(vlan: int, pcp: int = 5) -> int:
    return (pcp & 7) << 13 | (vlan & 0x0FFF)


# --- receiver model --------------------------------------------------------------------------


def parse_ether(frame: bytes, expected_vlan: int = 0, ether_type: int = ETH_P_TOB) -> tuple[str, bytes]:
    """dataplane::parse_ether: ("ours" | "other_type" | "wrong_vlan" | "runt", payload)."""
    if len(frame) < ETHER_HEADER_BYTES:
        return "runt", b""
    off = 12
    etype = struct.unpack_from(">H", frame, off)[0]
    vlan = 0
    if etype == TPID_VLAN:
        if len(frame) < ETHER_HEADER_BYTES + VLAN_TAG_BYTES:
            return "runt", b""
        vlan = struct.unpack_from(">H", frame, off + 2)[0] & 0x0FFF
        off += VLAN_TAG_BYTES
        etype = struct.unpack_from(">H", frame, off)[0]
    off += 2
    if etype != ether_type:
        return "other_type", b""
    if vlan != 0 and vlan != expected_vlan:
        return "wrong_vlan", b""
    return "ours", frame[off:]


@dataclass(frozen=True)
class Decoded:
    """What decode_frame reports: an error key ("none" when valid) and the header if valid."""

    error: str
    header: Header | None = None
    section_count: int = 0


def decode_frame(b: bytes) -> Decoded:
    """core::decode_frame, check for check in the same order."""
    if len(b) < MIN_FRAME_BYTES:
        return Decoded("too_short")
    (magic, version, kind, cluster, sender, flags, cycle, seg_index, seg_count, view, stage, suspected,
     count, nbytes) = _HEADER.unpack_from(b, 0)
    if magic != FRAME_MAGIC:
        return Decoded("bad_magic")
    if version != WIRE_VERSION:
        return Decoded("bad_version")
    if kind not in (KIND_SLOT, KIND_IC):
        return Decoded("bad_kind")
    if HEADER_BYTES + nbytes + TRAILER_BYTES > len(b):
        return Decoded("bad_length")
    body_end = HEADER_BYTES + nbytes
    if crc32c(b[:body_end]) != struct.unpack_from(">I", b, body_end)[0]:
        return Decoded("bad_crc")
    if sender >= MAX_NODES:
        return Decoded("bad_sender")
    if seg_count == 0 or seg_index >= seg_count:
        return Decoded("bad_segment")
    if stage > STAGE_MEMBER:
        return Decoded("bad_stage")
    if suspected != NO_NODE and suspected >= MAX_NODES:
        return Decoded("bad_suspect")
    area = b[HEADER_BYTES:body_end]
    off = 0
    found = 0
    while off < len(area):
        if len(area) - off < SECTION_HEADER_BYTES:
            return Decoded("section_overrun")
        length = struct.unpack_from(">H", area, off + 2)[0]
        if len(area) - off - SECTION_HEADER_BYTES < length:
            return Decoded("section_overrun")
        off += SECTION_HEADER_BYTES + length
        found += 1
    if found != count:
        return Decoded("section_count")
    h = Header(cluster_id=cluster, sender=sender, flags=flags, cycle=cycle, segment_index=seg_index,
               segment_count=seg_count, view_vector=view, stage=stage, suspected=suspected)
    return Decoded("none", h, count)


@dataclass(frozen=True)
class Verdict:
    """The node-independent part of RxRole::classify: a counter, or a valid frame from `sender`
    (then rx_own_frames on that node and rx_late on the others, for a stale cycle)."""

    counter: str
    sender: int = -1

    def on_node(self, node: int) -> str:
        if self.counter == RX_LATE and self.sender == node:
            return RX_OWN_FRAMES
        return self.counter


def classify(frame: bytes, cluster_id: int, nodes: int, stale_cycle: int, expected_vlan: int = 0) -> Verdict:
    """Which counter RxRole::classify raises for this frame (ACCEPTED if it could take it).

    The receiver compares the frame's cycle with its own clock; the model assumes the cluster is
    past cycle stale_cycle, so a valid frame with a cycle up to stale_cycle is late, and any
    other cycle could be accepted."""
    verdict, payload = parse_ether(frame, expected_vlan)
    if verdict == "runt":
        return Verdict(RX_RUNT)
    if verdict == "other_type":
        return Verdict(RX_OTHER_ETHERTYPE)
    if verdict == "wrong_vlan":
        return Verdict(RX_WRONG_VLAN)
    d = decode_frame(payload)
    if d.error != "none":
        return Verdict(DECODE_COUNTER[d.error])
    assert d.header is not None
    h = d.header
    if h.cluster_id != cluster_id:
        return Verdict(RX_WRONG_CLUSTER)
    if h.sender >= nodes:
        return Verdict(RX_UNKNOWN_SENDER)
    if h.cycle <= stale_cycle:
        return Verdict(RX_LATE, h.sender)
    return Verdict(ACCEPTED, h.sender)


# --- frame kinds -----------------------------------------------------------------------------


@dataclass
class Ctx:
    cluster_id: int
    nodes: int
    stale_cycle: int
    runt_len: int = ETHER_HEADER_BYTES  # 14 when the kernel refuses shorter frames
    mtu: int | None = None               # None: not known (dry run, self-test)

    def base_header(self, sender: int) -> Header:
        """A header the cluster would take from `sender` if the cycle were current."""
        return Header(cluster_id=self.cluster_id, sender=sender, cycle=self.stale_cycle,
                      view_vector=(1 << self.nodes) - 1, stage=STAGE_MEMBER, suspected=NO_NODE)

    def real_sender(self, i: int) -> int:
        return i % self.nodes

    def other_cluster(self, i: int) -> int:
        return [(self.cluster_id + 1) & 0xFFFF, self.cluster_id ^ 0x8000, (self.cluster_id - 1) & 0xFFFF][i % 3]


def clock_section(rng: random.Random) -> Section:
    """A section 7 of 1 to 4 wake-up samples (release_ns i64, late_ns i32, 0 u32): telemetry that
    the engines skip; its instants are random, far from now, so the daemons set them aside."""
    return (SECTION_CLOCK_SYNC, 0, b"".join(struct.pack(">qiI", rng.randrange(-2**63, 2**63), rng.randrange(-2**31, 2**31), 0)
                                            for _ in range(rng.randrange(1, 5))))


def base_payload(ctx: Ctx, rng: random.Random, i: int, **changes: int) -> bytes:
    """A valid slot frame (stale cycle, real sender) with header fields changed as given."""
    h = replace(ctx.base_header(ctx.real_sender(i)), **changes)
    return encode_frame(h, [clock_section(rng)])


def build_runt(ctx: Ctx, rng: random.Random, i: int) -> bytes:
    if ctx.runt_len >= ETHER_HEADER_BYTES:
        return ether(b"")
    return (CLUSTER_MAC + INJECTOR_MAC + struct.pack(">H", ETH_P_TOB))[:ctx.runt_len]


def inet_checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f">{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return int(~total & 0xFFFF)


def ipv4_packet(rng: random.Random) -> bytes:
    """A well-formed IPv4 packet with a garbage payload: TTL 1, protocol 253 (experimental),
    192.0.2.99 to 239.255.0.99 (no host joins it). Well formed because a bridge with
    br_netfilter (bridge-nf-call-iptables) drops malformed IPv4 before any daemon sees it."""
    payload = rng.randbytes(rng.randrange(8, 180))
    header = bytearray(struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), rng.randrange(0x10000), 0,
                                   1, 253, 0, bytes([192, 0, 2, 99]), bytes([239, 255, 0, 99])))
    struct.pack_into(">H", header, 10, inet_checksum(bytes(header)))
    return bytes(header) + payload


def build_other_ethertype(ctx: Ctx, rng: random.Random, i: int) -> bytes:
    variant = i % 4
    if variant == 0:
        return ether(base_payload(ctx, rng, i), 0x88B6)
    if variant == 1:
        return ether(ipv4_packet(rng), 0x0800)
    if variant == 2:
        return ether(base_payload(ctx, rng, i), 0x88B4)
    return ether(base_payload(ctx, rng, i), 0x88B6, vlan_tci=vlan_tci(0))


def build_wrong_vlan(ctx: Ctx, rng: random.Random, i: int) -> bytes:
    vlan = [123, 123, 1, 4094][i % 4]
    return ether(base_payload(ctx, rng, i, cluster_id=ctx.other_cluster(i)), vlan_tci=vlan_tci(vlan))


def build_too_short(ctx: Ctx, rng: random.Random, i: int) -> bytes:
    return ether(base_payload(ctx, rng, i)[:rng.randrange(0, MIN_FRAME_BYTES)])


def build_bad_magic(ctx: Ctx, rng: random.Random, i: int) -> bytes:
    magic = [0x71B1, 0xB170, 0x0000, 0xFFFF][i % 4] if i % 5 else rng.randrange(0x10000)
    if magic == FRAME_MAGIC:
        magic ^= 0x0100
    return ether(base_payload(ctx, rng, i, magic=magic))


def build_bad_version(ctx: Ctx, rng: random.Random, i: int) -> bytes:
    version = [0, 1, 0xFF][i % 3] if i % 4 else rng.randrange(3, 256)
    return ether(base_payload(ctx, rng, i, version=version))


def build_bad_kind(ctx: Ctx, rng: random.Random, i: int) -> bytes:
    kind = [0, 3, 0xFF][i % 3] if i % 4 else rng.randrange(3, 256)  # 1 slot, 2 ic (wire.h)
    return ether(base_payload(ctx, rng, i, kind=kind))


def build_bad_sender(ctx: Ctx, rng: random.Random, i: int) -> bytes:
    sender = [64, 0xFE, 0xFF][i % 3] if i % 4 else rng.randrange(64, 256)
    return ether(base_payload(ctx, rng, i, sender=sender))


def build_bad_segment(ctx: Ctx, rng: random.Random, i: int) -> bytes:
    if i % 5:
        index, count = [(0, 0), (1, 1), (5, 3), (0xFFFF, 0xFFFF)][i % 4]
    else:
        count = rng.randrange(0, 0x10000)
        index = rng.randrange(count, 0x10000)
    return ether(base_payload(ctx, rng, i, segment_index=index, segment_count=count))


def build_bad_stage(ctx: Ctx, rng: random.Random, i: int) -> bytes:
    stage = [3, 4, 0x80, 0xFF][i % 4] if i % 5 else rng.randrange(3, 256)
    return ether(base_payload(ctx, rng, i, stage=stage))


def build_bad_suspect(ctx: Ctx, rng: random.Random, i: int) -> bytes:
    suspect = [0x40, 0x80, 0xFE][i % 3] if i % 4 else rng.randrange(0x40, 0xFF)
    return ether(base_payload(ctx, rng, i, suspected=suspect))


def build_bad_length(ctx: Ctx, rng: random.Random, i: int) -> bytes:
    h = ctx.base_header(ctx.real_sender(i))
    sections = [clock_section(rng)]
    actual = len(section_area(sections))
    section_bytes = [actual + 1, actual + rng.randrange(2, 2000), 0x7FFFFFFF, 0xFFFFFFFF][i % 4]
    return ether(encode_frame(h, sections, section_bytes=section_bytes))


def build_bad_crc(ctx: Ctx, rng: random.Random, i: int) -> bytes:
    frame = bytearray(base_payload(ctx, rng, i))
    # Any byte the sender wrote after the fixed checks except the section-bytes field (a flip
    # there changes where the trailer is, or runs past the buffer).
    positions = [p for p in range(4, len(frame) - TRAILER_BYTES) if not 32 <= p < 36]
    frame[rng.choice(positions)] ^= 1 << rng.randrange(8)
    return ether(bytes(frame))


def build_section_overrun(ctx: Ctx, rng: random.Random, i: int) -> bytes:
    h = ctx.base_header(ctx.real_sender(i))
    variant = i % 3
    if variant == 0:  # the last section claims one byte more than the area has
        body = rng.randbytes(rng.randrange(0, 24))
        area = struct.pack(">BBH", SECTION_CLOCK_SYNC, 0, len(body) + 1) + body
        return ether(encode_frame(h, area=area, section_count=1))
    if variant == 1:  # a valid section, then 1..3 stray bytes: not even a section header
        area = section_area([clock_section(rng)]) + bytes(rng.randrange(1, SECTION_HEADER_BYTES))
        return ether(encode_frame(h, area=area, section_count=2))
    body = rng.randbytes(rng.randrange(0, 24))  # the first section claims 0xFFFF bytes
    area = struct.pack(">BBH", SECTION_CLOCK_SYNC, 0, 0xFFFF) + body
    return ether(encode_frame(h, area=area, section_count=1))


def build_section_count(ctx: Ctx, rng: random.Random, i: int) -> bytes:
    h = ctx.base_header(ctx.real_sender(i))
    sections = [clock_section(rng) for _ in range(rng.randrange(0, 3))]
    wrong = [n for n in (0, 1, 3, 0xFFFF, len(sections) + 1) if n != len(sections)]
    return ether(encode_frame(h, sections, section_count=wrong[i % len(wrong)]))


def build_wrong_cluster(ctx: Ctx, rng: random.Random, i: int) -> bytes:
    return ether(base_payload(ctx, rng, i, cluster_id=ctx.other_cluster(i)))


def build_unknown_sender(ctx: Ctx, rng: random.Random, i: int) -> bytes:
    return ether(base_payload(ctx, rng, i, sender=ctx.nodes + i % (MAX_NODES - ctx.nodes)))


def build_stale_cycle(ctx: Ctx, rng: random.Random, i: int) -> bytes:
    return ether(base_payload(ctx, rng, i))


def build_garbage(ctx: Ctx, rng: random.Random, i: int) -> bytes:
    # One frame in four below the 40-byte minimum, the others anywhere up to a full frame.
    top = MIN_FRAME_BYTES if i % 4 == 0 else MAX_STANDARD_FRAME - ETHER_HEADER_BYTES + 1
    payload = bytearray(rng.randbytes(rng.randrange(0, top)))
    if len(payload) >= 2 and payload[0] == FRAME_MAGIC >> 8 and payload[1] == FRAME_MAGIC & 0xFF:
        payload[1] ^= 0xFF
    return ether(bytes(payload))


def build_oversize(ctx: Ctx, rng: random.Random, i: int) -> bytes:
    h = ctx.base_header(ctx.real_sender(i))
    h = replace(h, cluster_id=ctx.other_cluster(i))
    body = OVERSIZE_BYTES - ETHER_HEADER_BYTES - MIN_FRAME_BYTES - SECTION_HEADER_BYTES
    return ether(encode_frame(h, [(SECTION_CLOCK_SYNC, 0, rng.randbytes(body))]))


def skip_unknown_sender(ctx: Ctx) -> str | None:
    return f"no sender id between {ctx.nodes} and 63" if ctx.nodes >= MAX_NODES else None


def skip_oversize(ctx: Ctx) -> str | None:
    need = OVERSIZE_BYTES - ETHER_HEADER_BYTES
    if ctx.mtu is None:
        return None
    if ctx.mtu < need:
        return f"interface MTU {ctx.mtu} is below {need} ({OVERSIZE_BYTES}-byte frames)"
    return None


@dataclass(frozen=True)
class Kind:
    name: str
    build: Callable[[Ctx, random.Random, int], bytes]
    intended: str | None  # the counter the kind is meant to raise (None: several, see note)
    note: str
    allowed: frozenset[str] = field(default_factory=frozenset)  # other counters a frame may raise
    skip: Callable[[Ctx], str | None] | None = None


KINDS: list[Kind] = [
    Kind("runt", build_runt, DECODE_COUNTER["too_short"],
         "14-byte frames, our EtherType, no payload (Linux refuses AF_PACKET frames under 14 bytes)"),
    Kind("other_ethertype", build_other_ethertype, RX_OTHER_ETHERTYPE,
         "0x88B6/0x88B4 with a slot frame, well-formed IPv4 with a garbage payload, VLAN-0 tag + 0x88B6"),
    Kind("wrong_vlan", build_wrong_vlan, RX_WRONG_VLAN,
         "802.1Q VLAN 123/1/4094 + 0x88B5; inner frame of cluster ID+1: rx_wrong_cluster if the tag is stripped"),
    Kind("too_short", build_too_short, DECODE_COUNTER["too_short"], "0x88B5, payload of 0..39 bytes"),
    Kind("bad_magic", build_bad_magic, DECODE_COUNTER["bad_magic"], "magic != 0x70B1"),
    Kind("bad_version", build_bad_version, DECODE_COUNTER["bad_version"], "version != 1"),
    Kind("bad_kind", build_bad_kind, DECODE_COUNTER["bad_kind"], "kind != 1"),
    Kind("bad_sender", build_bad_sender, DECODE_COUNTER["bad_sender"], "sender 64..255, correct CRC"),
    Kind("bad_segment", build_bad_segment, DECODE_COUNTER["bad_segment"],
         "segment index >= segment count (or count 0), correct CRC"),
    Kind("bad_stage", build_bad_stage, DECODE_COUNTER["bad_stage"], "stage 3..255, correct CRC"),
    Kind("bad_suspect", build_bad_suspect, DECODE_COUNTER["bad_suspect"], "suspected node 0x40..0xFE, correct CRC"),
    Kind("bad_length", build_bad_length, DECODE_COUNTER["bad_length"],
         "section bytes run past the frame (checked before the CRC)"),
    Kind("bad_crc", build_bad_crc, DECODE_COUNTER["bad_crc"], "valid frame with one bit flipped"),
    Kind("section_overrun", build_section_overrun, DECODE_COUNTER["section_overrun"],
         "a section length past the area, or 1..3 stray bytes, correct CRC"),
    Kind("section_count", build_section_count, DECODE_COUNTER["section_count"],
         "header section count disagrees with the sections, correct CRC"),
    Kind("wrong_cluster", build_wrong_cluster, RX_WRONG_CLUSTER, "valid frame of another cluster id"),
    Kind("unknown_sender", build_unknown_sender, RX_UNKNOWN_SENDER, "valid frame from sender NODES..63",
         skip=skip_unknown_sender),
    Kind("stale_cycle", build_stale_cycle, RX_LATE,
         "valid frame, senders 0..N-1 in turn, old cycle: node k counts its own id's frames as rx_own_frames",
         allowed=frozenset({RX_OWN_FRAMES})),
    Kind("garbage", build_garbage, None,
         "random payload of 0..1500 bytes (one in four under 40), never starting with the magic",
         allowed=frozenset({DECODE_COUNTER["too_short"], DECODE_COUNTER["bad_magic"]})),
    Kind("oversize", build_oversize, None,
         f"{OVERSIZE_BYTES}-byte frame of cluster ID+1: dropped at the first 1500-MTU hop; "
         "rx_decode_section_bytes_beyond_the_frame if truncated, rx_wrong_cluster if delivered whole",
         allowed=frozenset({RX_WRONG_CLUSTER}), skip=skip_oversize),
]
KIND_BY_NAME = {k.name: k for k in KINDS}


@dataclass
class Planned:
    kind: str
    frame: bytes
    verdict: Verdict


def plan(ctx: Ctx, count_per_kind: int, seed: int,
         kinds: Sequence[Kind] = KINDS) -> tuple[list[Planned], dict[str, str]]:
    """Every frame to send, kinds interleaved, each classified; and the kinds skipped, with why."""
    per_kind: list[list[Planned]] = []
    skipped: dict[str, str] = {}
    for kind in kinds:
        reason = kind.skip(ctx) if kind.skip else None
        if reason:
            skipped[kind.name] = reason
            continue
        rng = random.Random(f"{seed}/{kind.name}")  # a kind's frames do not depend on the others
        frames = []
        for i in range(count_per_kind):
            f = kind.build(ctx, rng, i)
            frames.append(Planned(kind.name, f, classify(f, ctx.cluster_id, ctx.nodes, ctx.stale_cycle)))
        per_kind.append(frames)
    out: list[Planned] = []
    for i in range(count_per_kind):
        out.extend(frames[i] for frames in per_kind)
    return out, skipped


def check_plan(ctx: Ctx, planned: Sequence[Planned]) -> list[str]:
    """Problems with planned frames: anything a daemon could accept, or off its kind's counters."""
    problems = []
    for p in planned:
        kind = KIND_BY_NAME[p.kind]
        ok = {kind.intended} | kind.allowed if kind.intended else set(kind.allowed)
        counters = {p.verdict.on_node(n) for n in range(ctx.nodes)}
        if p.kind == "oversize":
            counters = {p.verdict.counter}
        if ACCEPTED in counters or not counters <= ok:
            problems.append(f"{p.kind}: frame classified {sorted(counters)}, expected {sorted(ok)}: "
                            f"{p.frame[:64].hex()}")
    return problems


# --- sending ---------------------------------------------------------------------------------

SIOCGIFFLAGS = 0x8913
SIOCGIFMTU = 0x8921
IFF_UP = 0x1
IFF_RUNNING = 0x40


class InjectError(Exception):
    """A failure with a message for the user (no traceback)."""


def _ifreq(sock: socket.socket, request: int, iface: str, fmt: str) -> int:
    name = iface.encode()
    buf = struct.pack(f"16s{fmt}", name, 0).ljust(40, b"\0")
    res = fcntl.ioctl(sock.fileno(), request, buf)
    value: int = struct.unpack_from(f"16s{fmt}", res)[1]
    return value


def open_socket(iface: str) -> tuple[socket.socket, int]:
    """A raw AF_PACKET socket bound to iface (protocol 0: it receives nothing), and the MTU."""
    if not hasattr(socket, "AF_PACKET"):
        raise InjectError("AF_PACKET sockets need Linux")
    try:
        socket.if_nametoindex(iface)
    except OSError:
        raise InjectError(f"no interface '{iface}' in this network namespace "
                          "(run inside the namespace that holds it, e.g. ip netns exec NS ...)") from None
    try:
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    except PermissionError:
        raise InjectError("cannot open an AF_PACKET raw socket: permission denied "
                          "(run as root, or with CAP_NET_RAW)") from None
    except OSError as e:
        raise InjectError(f"cannot open an AF_PACKET raw socket: {e.strerror or e}") from None
    try:
        sock.bind((iface, 0))
        flags = _ifreq(sock, SIOCGIFFLAGS, iface, "H")
        mtu = _ifreq(sock, SIOCGIFMTU, iface, "i")
    except OSError as e:
        sock.close()
        raise InjectError(f"cannot bind to or query interface '{iface}': {e.strerror or e}") from None
    if not flags & IFF_UP:
        sock.close()
        raise InjectError(f"interface '{iface}' is down (ip link set {iface} up)")
    if not flags & IFF_RUNNING:
        print(f"inject_frames: warning: interface '{iface}' has no carrier (veth peer down?): "
              "frames may be dropped", file=sys.stderr)
    return sock, mtu


def probe_runt(sock: socket.socket) -> int:
    """Whether the kernel sends a frame shorter than an Ethernet header: 13 if it did (that
    probe frame is then the first runt), 14 if it refused (Linux: EINVAL)."""
    probe = (CLUSTER_MAC + INJECTOR_MAC + struct.pack(">H", ETH_P_TOB))[:ETHER_HEADER_BYTES - 1]
    try:
        sock.send(probe)
    except OSError as e:
        if e.errno in (errno.EINVAL, errno.EMSGSIZE, errno.ENOBUFS):
            return ETHER_HEADER_BYTES
        raise
    return ETHER_HEADER_BYTES - 1


FATAL_SEND_ERRORS = {errno.ENETDOWN, errno.ENXIO, errno.ENODEV, errno.EPERM, errno.EACCES}
SEND_ATTEMPTS = 5      # ENOBUFS/EAGAIN: a full queue (retry), or a veth peer that drops the frame
GIVE_UP_AFTER = 3      # refused frames of one kind in a row before the kind is abandoned


def send_all(sock: socket.socket, planned: Sequence[Planned], rate: float,
             sent: dict[str, int], errors: dict[str, str]) -> set[str]:
    """Sends at most `rate` frames per second (paced, no bursts); counts sent frames per kind.

    A frame the kernel refuses is not counted and its error is kept per kind; a kind refused
    GIVE_UP_AFTER times in a row is abandoned (e.g. oversize frames a veth peer with a smaller
    MTU drops: AF_PACKET reports that as ENOBUFS). Returns the abandoned kinds."""
    streak: dict[str, int] = {}
    abandoned: set[str] = set()
    start = time.monotonic()
    for n, p in enumerate(planned):
        if p.kind in abandoned:
            continue
        due = start + n / rate
        delay = due - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        for attempt in range(SEND_ATTEMPTS):
            try:
                written = sock.send(p.frame)
            except OSError as e:
                if e.errno in FATAL_SEND_ERRORS:
                    raise InjectError(f"send failed: {e.strerror or e} (interface gone or down?)") from None
                if e.errno in (errno.ENOBUFS, errno.EAGAIN) and attempt + 1 < SEND_ATTEMPTS:
                    time.sleep(0.001)
                    continue
                errors[p.kind] = f"{errno.errorcode.get(e.errno or 0, e.errno)}: {e.strerror}"
                streak[p.kind] = streak.get(p.kind, 0) + 1
                if streak[p.kind] >= GIVE_UP_AFTER:
                    abandoned.add(p.kind)
                break
            if written == len(p.frame):
                sent[p.kind] += 1
                streak[p.kind] = 0
            else:
                errors[p.kind] = f"short write: {written} of {len(p.frame)} bytes"
            break
    return abandoned


# --- summary ---------------------------------------------------------------------------------


def summarize(ctx: Ctx, args: argparse.Namespace, planned: Sequence[Planned], sent: dict[str, int],
              skipped: dict[str, str], errors: dict[str, str], elapsed_s: float, dry_run: bool) -> dict[str, Any]:
    """The JSON report. Counts cover frames that left (all planned ones in a dry run)."""
    left: dict[str, int] = {k.name: 0 for k in KINDS}
    kinds: dict[str, dict[str, Any]] = {}
    per_kind_node: dict[str, list[dict[str, int]]] = {k.name: [{} for _ in range(ctx.nodes)] for k in KINDS}
    # Frames are sent in plan order, so the first sent[kind] frames of each kind are the ones out.
    for p in planned:
        if left[p.kind] >= sent[p.kind]:
            continue
        left[p.kind] += 1
        if p.kind == "oversize":
            continue  # nothing reliable: see the note
        for node in range(ctx.nodes):
            c = p.verdict.on_node(node)
            per_kind_node[p.kind][node][c] = per_kind_node[p.kind][node].get(c, 0) + 1
    expected: list[dict[str, int]] = [{} for _ in range(ctx.nodes)]
    for k in KINDS:
        nodes = per_kind_node[k.name]
        uniform = all(n == nodes[0] for n in nodes)
        counter = next(iter(nodes[0])) if uniform and len(nodes[0]) == 1 else None
        kinds[k.name] = {
            "sent": sent[k.name],
            "counter": counter,
            "intended": k.intended,
            "counters": dict(sorted(nodes[0].items())) if uniform and nodes[0] else None,
            "per_node": {str(n): dict(sorted(t.items())) for n, t in enumerate(nodes)},
            "skipped": skipped.get(k.name),
            "error": errors.get(k.name),
            "note": k.note,
        }
        for n, tally in enumerate(nodes):
            for name, v in tally.items():
                expected[n][name] = expected[n].get(name, 0) + v
    if ctx.runt_len < ETHER_HEADER_BYTES:
        kinds["runt"]["note"] = f"{ctx.runt_len}-byte frames: the kernel sent a frame shorter than an Ethernet header"
        kinds["runt"]["intended"] = RX_RUNT
    return {
        "iface": args.iface,
        "cluster_id": ctx.cluster_id,
        "nodes": ctx.nodes,
        "count_per_kind": args.count_per_kind,
        "rate_fps": args.rate,
        "seed": args.seed,
        "stale_cycle": ctx.stale_cycle,
        "mtu": ctx.mtu,
        "dry_run": dry_run,
        "src_mac": ":".join(f"{b:02x}" for b in INJECTOR_MAC),
        "dst_mac": ":".join(f"{b:02x}" for b in CLUSTER_MAC),
        "elapsed_s": round(elapsed_s, 3),
        "total_sent": sum(sent.values()),
        "sent": dict(sent),
        "skipped": skipped,
        "kinds": kinds,
        "expected_per_node": {str(n): dict(sorted(c.items())) for n, c in enumerate(expected)},
    }


# --- self-test -------------------------------------------------------------------------------

# Frozen bytes of tests/unit/test_wire.cc (kGoldenA, kGoldenB, kGoldenC).
GOLDEN_A = ("70b10201 0102 03 00 0000000000000005 0000 0001 000000000000000f 02 ff 0000 00000000"
            " 610bffe3")
GOLDEN_B = ("70b10201 0001 02 00 0000000000000007 0000 0001 0000000000000007 02 ff 0002 0000003f"
            " 08 00 0008 000000000000000b 01 00 002f 0002 0000 0000000000000010 00000000000003e8"
            " 0005 0003 616263 0000000000000011 ffffffffffffffff 0006 0000 fb30a110")
GOLDEN_C = ("70b10201 beef 01 01 0102030405060708 0001 0002 8000000000000001 01 04 0001 00000004"
            " 07 00 0000 ec8cacb7")


def golden_frames() -> dict[str, bytes]:
    """frame_a, frame_b and frame_c of test_wire.cc, built with this encoder."""
    a = encode_frame(Header(cluster_id=0x0102, sender=3, cycle=5, view_vector=0xF, stage=STAGE_MEMBER))
    b = encode_frame(Header(cluster_id=1, sender=2, cycle=7, view_vector=0x7, stage=STAGE_MEMBER),
                     [(SECTION_MEMBERSHIP, 0, struct.pack(">Q", 0xB)),
                      (SECTION_APP_BATCH, 0, batch_body([(0x10, 1000, 5, b"abc"), (0x11, -1, 6, b"")]))])
    c = encode_frame(Header(cluster_id=0xBEEF, sender=1, flags=FLAG_SECOND_COPY, cycle=0x0102030405060708,
                            segment_index=1, segment_count=2, view_vector=0x8000000000000001,
                            stage=STAGE_ACTIVE, suspected=4),
                     [(SECTION_CLOCK_SYNC, 0, b"")])
    return {"A": a, "B": b, "C": c}


def from_hex(text: str) -> bytes:
    return bytes.fromhex("".join(ch for ch in text if ch in "0123456789abcdefABCDEF"))


def repo_goldens(path: Path) -> dict[str, bytes]:
    """The golden hex literals as they stand in test_wire.cc (comments stripped)."""
    src = "\n".join(line.split("//")[0] for line in path.read_text().splitlines())
    out = {}
    for name in "ABC":
        m = re.search(rf"kGolden{name}\s*=(.*?);", src, re.DOTALL)
        if m:
            out[name] = from_hex("".join(re.findall(r'"([^"]*)"', m.group(1))))
    return out


def self_test() -> int:
    failures: list[str] = []
    passed = 0

    def err(frame: bytes) -> str:
        return decode_frame(frame).error

    def check(name: str, ok: bool, detail: str = "") -> None:
        nonlocal passed
        if ok:
            passed += 1
        else:
            failures.append(f"{name}{': ' + detail if detail else ''}")

    # CRC32C: the standard check value and the empty string.
    check("crc32c('123456789') == 0xE3069283", crc32c(b"123456789") == 0xE3069283, hex(crc32c(b"123456789")))
    check("crc32c('') == 0", crc32c(b"") == 0)
    check("crc32c continues", crc32c(b"6789", crc32c(b"12345")) == 0xE3069283)
    check("crc32c of 32 zero bytes == 0x8A9136AA", crc32c(bytes(32)) == 0x8A9136AA)

    # The encoder against the golden frames of the C++ tests.
    mine = golden_frames()
    frozen = {"A": from_hex(GOLDEN_A), "B": from_hex(GOLDEN_B), "C": from_hex(GOLDEN_C)}
    for name in "ABC":
        check(f"golden frame {name}: encoder bytes", mine[name] == frozen[name],
              f"{mine[name].hex()} != {frozen[name].hex()}")
        check(f"golden frame {name}: decodes", decode_frame(frozen[name]).error == "none")
    repo = Path(__file__).resolve().parents[2]
    test_wire = repo / "tests/unit/test_wire.cc"
    if test_wire.exists():
        theirs = repo_goldens(test_wire)
        for name in "ABC":
            check(f"golden frame {name} matches {test_wire.name}", theirs.get(name) == mine[name],
                  f"{(theirs.get(name) or b'').hex()} != {mine[name].hex()}")
    wire_cc = repo / "lib/core/wire.cc"
    if wire_cc.exists():
        texts = dict(re.findall(r'case DecodeError::(\w+): return "([^"]*)";', wire_cc.read_text()))
        texts.pop("none", None)
        check("decode error texts match lib/core/wire.cc", texts == DECODE_ERROR_TEXT,
              f"{texts} != {DECODE_ERROR_TEXT}")
    check("counter name of bad_crc", DECODE_COUNTER["bad_crc"] == "rx_decode_CRC_mismatch")

    # The decoder model against the expectations of test_wire.cc.
    a, b, c = frozen["A"], frozen["B"], frozen["C"]
    for f in (a, b, c):
        bad = [n for n in range(len(f)) if err(f[:n]) != ("too_short" if n < MIN_FRAME_BYTES else "bad_length")]
        check("every proper prefix is too short or bad length", not bad, str(bad[:5]))
        flips = []
        for bit in range(len(f) * 8):
            at = bit // 8
            g = bytearray(f)
            g[at] ^= 1 << (bit % 8)
            e = decode_frame(bytes(g)).error
            allowed = ({"bad_magic"} if at < 2 else {"bad_version"} if at == 2 else {"bad_kind"} if at == 3
                    else {"bad_length", "bad_crc"} if 32 <= at < 36 else {"bad_crc"})
            if e not in allowed:
                flips.append((bit, e))
        check("every single-bit flip is rejected as in test_wire.cc", not flips, str(flips[:5]))
        check("padding after the trailer is ignored", err(f + bytes(max(60 - len(f), 4))) == "none")

    def patched(f: bytes, at: int, fmt: str, value: int) -> bytes:
        g = bytearray(f)
        struct.pack_into(fmt, g, at, value)
        return reseal(bytes(g))

    check("sender 63 ok", err(patched(a, 6, "B", 63)) == "none")
    check("sender 64.. bad", all(err(patched(a, 6, "B", s)) == "bad_sender" for s in (64, 100, 0xFE, 0xFF)))
    for idx, cnt, want in ((0, 0, "bad_segment"), (1, 1, "bad_segment"), (5, 3, "bad_segment"),
                           (0xFFFF, 0xFFFF, "bad_segment"), (0xFFFE, 0xFFFF, "none"), (2, 3, "none")):
        check(f"segment {idx} of {cnt}", decode_frame(patched(patched(a, 16, ">H", idx), 18, ">H", cnt)).error == want)
    check("stage 3.. bad", all(err(patched(a, 28, "B", s)) == "bad_stage" for s in (3, 4, 0x80, 0xFF)))
    check("stage 0..2 ok", all(err(patched(a, 28, "B", s)) == "none" for s in (0, 1, 2)))
    check("suspect 64..254 bad", all(err(patched(a, 29, "B", s)) == "bad_suspect" for s in (64, 0x80, 0xFE)))
    check("suspect 0, 63, 0xFF ok", all(err(patched(a, 29, "B", s)) == "none" for s in (0, 63, 0xFF)))
    for sb in (64, 100, 0x7FFFFFFF, 0xFFFFFFFB, 0xFFFFFFFF):
        g = bytearray(b)
        struct.pack_into(">I", g, 32, sb)
        check(f"section bytes {sb} beyond the buffer", decode_frame(bytes(g)).error == "bad_length")
    check("section length one past the area", err(patched(b, 50, ">H", 48)) == "section_overrun")
    check("first section claims 0xFFFF", err(patched(b, 38, ">H", 0xFFFF)) == "section_overrun")
    raw = Header(segment_count=1)
    for stray in (1, 2, 3):
        check(f"{stray} stray bytes", err(encode_frame(raw, area=bytes(stray), section_count=1)) == "section_overrun")
        check(f"empty section + {stray} stray bytes",
              err(encode_frame(raw, area=bytes([7, 0, 0, 0]) + bytes(stray), section_count=2)) == "section_overrun")
    well_formed = bytes([7, 0, 0, 1, 0xAA, 1, 0, 0, 0])
    check("well-formed raw area", err(encode_frame(raw, area=well_formed, section_count=2)) == "none")
    for cnt in (0, 1, 3, 0xFFFF):
        check(f"section count {cnt} of 2", err(patched(b, 30, ">H", cnt)) == "section_count")
    check("no sections, count 1", decode_frame(encode_frame(raw, section_count=1)).error == "section_count")
    patches = ((0, ">H", 0x71B1), (0, ">H", 0xB170), (2, "B", 0), (2, "B", 1), (3, "B", 0), (3, "B", 3))
    check("magic, version, kind", [err(patched(b, at, fmt, v)) for at, fmt, v in patches]
          == ["bad_magic"] * 2 + ["bad_version"] * 2 + ["bad_kind"] * 2)

    # parse_ether as tests/unit/test_ether.cc and ether.cc describe it.
    ours = ether(a)
    check("untagged header bytes", ours[:14] == bytes.fromhex("011b19000000020000000099") + b"\x88\xb5")
    check("tagged header bytes: TCI 0xA064 for PCP 5 VLAN 100",
          ether(b"", vlan_tci=vlan_tci(100))[12:18] == bytes.fromhex("8100a06488b5"))
    check("ours", parse_ether(ours) == ("ours", a))
    check("VLAN 0 priority tag is ours", parse_ether(ether(a, vlan_tci=vlan_tci(0))) == ("ours", a))
    check("VLAN 100 expected 100", parse_ether(ether(a, vlan_tci=vlan_tci(100)), 100)[0] == "ours")
    check("VLAN 123 is wrong", parse_ether(ether(a, vlan_tci=vlan_tci(123)))[0] == "wrong_vlan")
    check("stripped tag still ours", parse_ether(ours, 100)[0] == "ours")
    check("IPv4 is other", parse_ether(ether(a, 0x0800))[0] == "other_type")
    check("13 bytes is a runt", parse_ether(ours[:13])[0] == "runt")
    check("tag without inner type is a runt", parse_ether(ether(b"", vlan_tci=vlan_tci(5))[:17])[0] == "runt")
    ip = ipv4_packet(random.Random(1))
    check("IPv4 variant: header checksum verifies, lengths agree",
          inet_checksum(ip[:20]) == 0 and struct.unpack_from(">H", ip, 2)[0] == len(ip) and ip[0] == 0x45)
    check("14 bytes of our type: too short", classify(ether(b""), 7, 4, 1).counter == "rx_decode_too_short")

    # Every builder, for a few cluster sizes and seeds, gives only its counters and nothing accepted.
    for nodes in (3, 4, 16, 63):
        for seed in (1, 2):
            ctx = Ctx(cluster_id=7 if seed == 1 else 0xFFFF, nodes=nodes, stale_cycle=1)
            planned, skipped = plan(ctx, 40, seed)
            problems = check_plan(ctx, planned)
            check(f"builders, {nodes} nodes, seed {seed}", not problems and not skipped, "; ".join(problems[:3]))
            check("every frame to the cluster MAC from the injector MAC",
                  all(p.frame[:12] == CLUSTER_MAC + INJECTOR_MAC for p in planned))
            check("frames fit a 1500-byte MTU except oversize",
                  all(14 <= len(p.frame) <= MAX_STANDARD_FRAME or p.kind == "oversize" for p in planned))
            late = [Verdict(RX_LATE, s) for s in range(nodes)]
            stale = [p for p in planned if p.kind == "stale_cycle"]
            check("stale frames rotate over the real senders",
                  sorted({p.verdict.sender for p in stale}) == list(range(min(nodes, 40))) and
                  all(p.verdict in late for p in stale))
    ctx = Ctx(cluster_id=7, nodes=64, stale_cycle=1, mtu=1500)
    _, skipped = plan(ctx, 2, 1)
    check("64 nodes and MTU 1500 skip unknown_sender and oversize", set(skipped) == {"unknown_sender", "oversize"},
          str(skipped))
    p1, _ = plan(Ctx(7, 4, 1), 10, 5)
    p2, _ = plan(Ctx(7, 4, 1), 10, 5)
    check("a seed gives the same frames", [p.frame for p in p1] == [p.frame for p in p2])
    check("garbage covers too short and bad magic",
          {p.verdict.counter for p in plan(Ctx(7, 4, 1), 200, 1, [KIND_BY_NAME["garbage"]])[0]}
          == {DECODE_COUNTER["too_short"], DECODE_COUNTER["bad_magic"]})

    for failure in failures:
        print(f"FAIL: {failure}")
    print(f"self-test: {passed} passed, {len(failures)} failed")
    return 0 if not failures else 1


# --- command line ----------------------------------------------------------------------------


def die(msg: str, status: int = 1) -> NoReturn:
    print(f"inject_frames: error: {msg}", file=sys.stderr)
    sys.exit(status)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="inject_frames.py",
        description="Send malformed frames at a dpdk-tob cluster through a raw AF_PACKET socket and report "
                    "per kind how many left and which daemon drop counter they raise (run as root, inside "
                    "the namespace holding the interface).",
        epilog="Kinds: " + ", ".join(k.name for k in KINDS) + ". See the module docstring for the counters.")
    p.add_argument("--iface", help="interface to send on (e.g. inj0, a veth leg on the cluster bridge)")
    p.add_argument("--cluster-id", type=int, help="the cluster's id ([cluster] id in cluster.ini), 0..65535")
    p.add_argument("--nodes", type=int, help="the cluster's node count, 1..64")
    p.add_argument("--count-per-kind", type=int, default=20, metavar="K",
                   help=f"frames of each kind (default 20, at most {MAX_COUNT_PER_KIND})")
    p.add_argument("--rate", type=float, default=2000.0, metavar="FPS",
                   help=f"frames per second, at most (default 2000, at most {MAX_RATE:g})")
    p.add_argument("--seed", type=int, default=1, help="random seed: same seed, same frames (default 1)")
    p.add_argument("--json", type=Path, metavar="OUT", help="also write the JSON summary here")
    p.add_argument("--stale-cycle", type=int, default=1, metavar="C",
                   help="cycle number of otherwise valid frames; the cluster must be past it (default 1)")
    p.add_argument("--kinds", metavar="LIST", help="comma-separated subset of kinds (default: all)")
    p.add_argument("--dump", type=Path, metavar="FILE",
                   help="write every planned frame as 'kind hex' lines, in send order")
    p.add_argument("--dry-run", action="store_true", help="build and classify the frames, send nothing")
    p.add_argument("--self-test", action="store_true",
                   help="check CRC32C, the encoder against the golden frames of tests/unit/test_wire.cc, the "
                        "receiver model and every builder; no network; exit 0 or 1")
    args = p.parse_args(argv)
    if args.self_test:
        return args
    missing = [o for o, v in (("--cluster-id", args.cluster_id), ("--nodes", args.nodes)) if v is None]
    if not args.dry_run and args.iface is None:
        missing.insert(0, "--iface")
    if missing:
        p.error("required: " + ", ".join(missing))
    if not 0 <= args.cluster_id <= 0xFFFF:
        p.error("--cluster-id must be 0..65535")
    if not 1 <= args.nodes <= MAX_NODES:
        p.error(f"--nodes must be 1..{MAX_NODES}")
    if not 1 <= args.count_per_kind <= MAX_COUNT_PER_KIND:
        p.error(f"--count-per-kind must be 1..{MAX_COUNT_PER_KIND}")
    if not 0 < args.rate <= MAX_RATE:
        p.error(f"--rate must be in (0, {MAX_RATE:g}]")
    if not 0 <= args.stale_cycle < 1 << 63:
        p.error("--stale-cycle must be 0..2^63-1")
    if args.kinds:
        names = [n.strip() for n in args.kinds.split(",") if n.strip()]
        unknown = [n for n in names if n not in KIND_BY_NAME]
        if unknown or not names:
            p.error(f"unknown kinds {unknown}; known: {', '.join(KIND_BY_NAME)}")
        args.kinds = names
    return args


def run(args: argparse.Namespace) -> int:
    kinds = [KIND_BY_NAME[n] for n in args.kinds] if args.kinds else KINDS
    ctx = Ctx(cluster_id=args.cluster_id, nodes=args.nodes, stale_cycle=args.stale_cycle)
    sock: socket.socket | None = None
    sent = {k.name: 0 for k in KINDS}
    errors: dict[str, str] = {}
    interrupted = False
    start = time.monotonic()
    json_out = None
    if args.json:  # fail before sending anything rather than after
        try:
            json_out = args.json.open("w", encoding="ascii")
        except OSError as e:
            die(f"cannot write {args.json}: {e.strerror or e}")
    try:
        if not args.dry_run:
            sock, ctx.mtu = open_socket(args.iface)
            if any(k.name == "runt" for k in kinds):
                ctx.runt_len = probe_runt(sock)
        planned, skipped = plan(ctx, args.count_per_kind, args.seed, kinds)
        problems = check_plan(ctx, planned)
        if problems:
            raise InjectError("a planned frame is not one the daemons must drop (bug):\n  " + "\n  ".join(problems[:5]))
        if args.dump:
            with args.dump.open("w", encoding="ascii") as out:
                for p in planned:
                    out.write(f"{p.kind} {p.frame.hex()}\n")
        if sock is None:
            for p in planned:
                sent[p.kind] += 1
        else:
            to_send = list(planned)
            if ctx.runt_len < ETHER_HEADER_BYTES:  # the probe went out: it was the first runt
                sent["runt"] += 1
                to_send.pop(next(i for i, p in enumerate(to_send) if p.kind == "runt"))
            try:
                for kind in send_all(sock, to_send, args.rate, sent, errors):
                    skipped[kind] = (f"abandoned after {GIVE_UP_AFTER} refused frames ({errors[kind]}; "
                                     f"{sent[kind]} sent before)")
            except KeyboardInterrupt:
                interrupted = True
    except InjectError as e:
        die(str(e))
    except OSError as e:
        die(f"{e.strerror or e}" + (f": {e.filename}" if e.filename else ""))
    finally:
        if sock is not None:
            sock.close()
    summary = summarize(ctx, args, planned, sent, skipped, errors, time.monotonic() - start, args.dry_run)
    if interrupted:
        summary["interrupted"] = True
    text = json.dumps(summary, indent=2)
    print(text, flush=True)
    if json_out is not None:
        try:
            with json_out:
                json_out.write(text + "\n")
        except OSError as e:
            die(f"cannot write {args.json}: {e.strerror or e}")
    brief = ", ".join(f"{k}={n}" for k, n in sent.items() if n)
    print(f"inject_frames: {'planned' if args.dry_run else 'sent'} {summary['total_sent']} frames on "
          f"{args.iface or '-'} ({brief}); skipped: {skipped or 'none'}", file=sys.stderr)
    if errors:
        print(f"inject_frames: send errors: {errors}", file=sys.stderr)
    return 130 if interrupted else 0


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.self_test:
        try:
            return self_test()
        except Exception as e:  # noqa: BLE001 -- a broken self-test is a failure, reported in one line
            print(f"FAIL: self-test raised {type(e).__name__}: {e}")
            return 1
    try:
        return run(args)
    except KeyboardInterrupt:
        die("interrupted", 130)
    except Exception as e:  # noqa: BLE001 -- never a traceback: one line saying what broke
        die(f"unexpected {type(e).__name__}: {e}")


if __name__ == "__main__":
    sys.exit(main())
