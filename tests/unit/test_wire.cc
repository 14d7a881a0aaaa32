// Slot frame codec (docs/wire-format.md): byte-exact golden frames, decode round trips, and every
// malformed input the decoder must reject with its own typed error.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "core/batch.h"
#include "core/bytes.h"
#include "core/crc32c.h"
#include "core/wire.h"
#include "hex.h"

namespace tob::core {
namespace {

using Bytes = std::vector<uint8_t>;
using tob::test::from_hex;
using tob::test::to_hex;

// Recomputes the trailer after a test patched header bytes, so the decoder gets past the CRC
// check and reaches the field under test.
void reseal(Bytes& f) {
  const size_t body_end = kHeaderBytes + load_be32(f.data() + 32);
  REQUIRE(body_end + kTrailerBytes <= f.size());
  store_be32(f.data() + body_end, crc32c(std::span<const uint8_t>(f).first(body_end)));
}

// A frame with an arbitrary section area (possibly malformed), a given section count and a
// correct CRC: exercises the section walk, which FrameWriter never gets wrong.
Bytes raw_frame(const Bytes& area, uint16_t section_count) {
  Bytes f(kHeaderBytes + area.size() + kTrailerBytes, 0);
  store_be16(f.data(), kFrameMagic);
  f[2] = kWireVersion;
  f[3] = static_cast<uint8_t>(FrameKind::slot);
  store_be16(f.data() + 18, 1);  // segment count
  f[29] = kNoNode;
  store_be16(f.data() + 30, section_count);
  store_be32(f.data() + 32, static_cast<uint32_t>(area.size()));
  std::copy(area.begin(), area.end(), f.begin() + kHeaderBytes);
  reseal(f);
  return f;
}

DecodeError decode_error(const Bytes& f) { return decode_frame(f).error; }

// --- the golden frames --------------------------------------------------------------------

FrameHeader header_a() {
  FrameHeader h;
  h.cluster_id = 0x0102;
  h.sender = 3;
  h.cycle = 5;
  h.view_vector = 0xF;
  h.stage = Stage::member;
  return h;
}

Bytes frame_a() {  // header only
  Bytes buf(64);
  FrameWriter w(buf);
  REQUIRE(w.begin(header_a()));
  const size_t len = w.finish();
  REQUIRE(len == kMinFrameBytes);
  buf.resize(len);
  return buf;
}

FrameHeader header_b() {
  FrameHeader h;
  h.cluster_id = 1;
  h.sender = 2;
  h.cycle = 7;
  h.view_vector = 0x7;
  h.stage = Stage::member;
  return h;
}

const uint8_t kAbc[] = {'a', 'b', 'c'};

Bytes frame_b() {  // membership section + app batch of two messages (one empty)
  Bytes buf(256);
  FrameWriter w(buf);
  REQUIRE(w.begin(header_b()));
  uint8_t members[8];
  store_be64(members, 0xB);  // nodes 0, 1, 3
  REQUIRE(w.add_section(SectionType::membership, 0, members));
  std::span<uint8_t> body = w.open_section(SectionType::app_batch, 0, 64);
  REQUIRE(body.size() == 64);
  BatchWriter bw(body);
  REQUIRE(bw.add({0x10, 1000, 5, kAbc}));
  REQUIRE(bw.add({0x11, -1, 6, {}}));
  const size_t body_len = bw.finish();
  REQUIRE(body_len == 47);
  w.close_section(body_len);
  const size_t len = w.finish();
  REQUIRE(len > 0);
  buf.resize(len);
  return buf;
}

FrameHeader header_c() {
  FrameHeader h;
  h.cluster_id = 0xBEEF;
  h.sender = 1;
  h.flags = kFlagSecondCopy;
  h.cycle = 0x0102030405060708;
  h.segment_index = 1;
  h.segment_count = 2;
  h.view_vector = 0x8000000000000001;
  h.stage = Stage::active;
  h.suspected = 4;
  return h;
}

Bytes frame_c() {  // second copy, joining, a suspicion, one empty clock-sync section
  Bytes buf(64);
  FrameWriter w(buf);
  REQUIRE(w.begin(header_c()));
  REQUIRE(w.add_section(SectionType::clock_sync, 0, {}));
  const size_t len = w.finish();
  REQUIRE(len > 0);
  buf.resize(len);
  return buf;
}

// Frozen bytes. Each line is one group of fields at the offsets of docs/wire-format.md.
const char* const kGoldenA =
    "70b1 02 01"                // 0: magic, version 2, kind 1 (slot)
    "0102 03 00"                // 4: cluster 0x0102, sender 3, flags 0
    "0000000000000005"          // 8: cycle 5
    "0000 0001"                 // 16: segment 0 of 1
    "000000000000000f"          // 20: view vector: nodes 0..3
    "02 ff 0000 00000000"       // 28: stage member, no suspect, 0 sections, 0 section bytes
    "610bffe3";                 // 36: CRC32C of bytes 0..35

const char* const kGoldenB =
    "70b1 02 01 0001 02 00"     // 0: magic, version, kind, cluster 1, sender 2, flags 0
    "0000000000000007"          // 8: cycle 7
    "0000 0001"                 // 16: segment 0 of 1
    "0000000000000007"          // 20: view vector: nodes 0..2
    "02 ff 0002 0000003f"       // 28: member, no suspect, 2 sections, 63 section bytes
    "08 00 0008"                // 36: membership section, 8-byte body
    "000000000000000b"          // 40: member bitmap: nodes 0, 1, 3
    "01 00 002f"                // 48: app batch section, 47-byte body
    "0002 0000"                 // 52: 2 messages, reserved
    "0000000000000010"          // 56: msg id 0x10
    "00000000000003e8"          // 64: submit_ns 1000
    "0005 0003 616263"          // 72: client 5, 3 bytes "abc"
    "0000000000000011"          // 79: msg id 0x11
    "ffffffffffffffff"          // 87: submit_ns -1
    "0006 0000"                 // 95: client 6, empty payload
    "fb30a110";                 // 99: CRC32C of bytes 0..98

const char* const kGoldenC =
    "70b1 02 01 beef 01 01"     // 0: cluster 0xBEEF, sender 1, flags: second copy
    "0102030405060708"          // 8: cycle
    "0001 0002"                 // 16: segment 1 of 2
    "8000000000000001"          // 20: view vector: nodes 0 and 63
    "01 04 0001 00000004"       // 28: active (joining), suspects node 4, 1 section, 4 bytes
    "07 00 0000"                // 36: clock-sync section, empty body
    "ec8cacb7";                 // 40: CRC32C of bytes 0..39

void check_header(const FrameHeader& got, const FrameHeader& want) {
  CHECK(got.kind == want.kind);
  CHECK(got.cluster_id == want.cluster_id);
  CHECK(got.sender == want.sender);
  CHECK(got.flags == want.flags);
  CHECK(got.cycle == want.cycle);
  CHECK(got.segment_index == want.segment_index);
  CHECK(got.segment_count == want.segment_count);
  CHECK(got.view_vector == want.view_vector);
  CHECK(got.stage == want.stage);
  CHECK(got.suspected == want.suspected);
}

// Section 7 (docs/wire-format.md "Section 7: wake-up samples"): the body's bytes, its limits, and
// a section appended to an encoded frame as the dataplane does.
TEST_CASE("wake-up samples encode to their frozen bytes and decode back", "[wire]") {
  const WakeSample in[] = {{0x0102030405060708, 1500}, {-5, -7}};
  uint8_t body[kWakeSamplesMax * kWakeSampleBytes];
  const size_t n = encode_wake_samples(in, body);
  REQUIRE(n == 32);
  CHECK(to_hex(std::span<const uint8_t>(body, n)) ==
        "0102030405060708000005dc00000000" "fffffffffffffffbfffffff900000000");
  std::array<WakeSample, kWakeSamplesMax> out{};
  REQUIRE(decode_wake_samples(std::span<const uint8_t>(body, n), out) == 2);
  CHECK(out[0].release_ns == in[0].release_ns);
  CHECK(out[0].late_ns == 1500);
  CHECK(out[1].release_ns == -5);
  CHECK(out[1].late_ns == -7);
}

TEST_CASE("wake-up samples clamp their lateness and refuse bodies that are not 1..4 entries", "[wire]") {
  const WakeSample big[] = {{1, int64_t{1} << 40}, {2, -(int64_t{1} << 40)}};
  uint8_t body[80] = {};
  REQUIRE(encode_wake_samples(big, body) == 32);
  std::array<WakeSample, kWakeSamplesMax> out{};
  REQUIRE(decode_wake_samples(std::span<const uint8_t>(body, 32), out) == 2);
  CHECK(out[0].late_ns == INT32_MAX);
  CHECK(out[1].late_ns == INT32_MIN);
  CHECK(decode_wake_samples(std::span<const uint8_t>(body, 0), out) == -1);
  CHECK(decode_wake_samples(std::span<const uint8_t>(body, 15), out) == -1);
  CHECK(decode_wake_samples(std::span<const uint8_t>(body, 17), out) == -1);
  CHECK(decode_wake_samples(std::span<const uint8_t>(body, 80), out) == -1);
}

// Section 14 (docs/wire-format.md "Section 14: rate windows"): frozen bytes, the "not whole"
// sum, and bodies of another length refused.
TEST_CASE("a rate window encodes to its frozen bytes, decodes back, and refuses other lengths", "[wire]") {
  uint8_t body[kClockWindowBytes + 1] = {};
  REQUIRE(encode_clock_window({0x0102030405060708, -2}, body) == kClockWindowBytes);
  CHECK(to_hex(std::span<const uint8_t>(body, kClockWindowBytes)) == "0102030405060708" "fffffffffffffffe");
  ClockWindow out;
  REQUIRE(decode_clock_window(std::span<const uint8_t>(body, kClockWindowBytes), out));
  CHECK(out.window == 0x0102030405060708);
  CHECK(out.sum_ns == -2);
  REQUIRE(encode_clock_window({7, kNoSum}, body) == kClockWindowBytes);
  REQUIRE(decode_clock_window(std::span<const uint8_t>(body, kClockWindowBytes), out));
  CHECK(out.sum_ns == kNoSum);
  CHECK_FALSE(decode_clock_window(std::span<const uint8_t>(body, kClockWindowBytes - 1), out));
  CHECK_FALSE(decode_clock_window(std::span<const uint8_t>(body, kClockWindowBytes + 1), out));
  CHECK_FALSE(decode_clock_window(std::span<const uint8_t>(body, 0), out));
}

TEST_CASE("a section appended to an encoded frame decodes with the others", "[wire]") {
  Bytes f = frame_b();
  const size_t len = f.size();
  const WakeSample in[] = {{1'000'000, 42}};
  uint8_t body[kWakeSampleBytes];
  REQUIRE(encode_wake_samples(in, body) == kWakeSampleBytes);
  f.resize(len + kSectionHeaderBytes + kWakeSampleBytes);
  const size_t grown = append_section(f, len, SectionType::clock_sync, 0, body);
  REQUIRE(grown == f.size());
  const DecodeResult d = decode_frame(f);
  REQUIRE(d.error == DecodeError::none);
  CHECK(d.view.section_count == 3);
  SectionView s{};
  REQUIRE(d.view.find_section(SectionType::membership, s));
  REQUIRE(d.view.find_section(SectionType::app_batch, s));
  REQUIRE(d.view.find_section(SectionType::clock_sync, s));
  std::array<WakeSample, kWakeSamplesMax> out{};
  REQUIRE(decode_wake_samples(s.body, out) == 1);
  CHECK(out[0].release_ns == 1'000'000);
  CHECK(out[0].late_ns == 42);
  // No room: nothing changes.
  Bytes g = frame_b();
  const Bytes before = g;
  CHECK(append_section(g, g.size(), SectionType::clock_sync, 0, body) == 0);
  CHECK(g == before);
}

}  // namespace

TEST_CASE("FrameWriter produces the frozen bytes of the header-only frame", "[wire]") {
  CHECK(to_hex(frame_a()) == to_hex(from_hex(kGoldenA)));
}

TEST_CASE("FrameWriter produces the frozen bytes of a membership + app batch frame", "[wire]") {
  CHECK(to_hex(frame_b()) == to_hex(from_hex(kGoldenB)));
}

TEST_CASE("FrameWriter produces the frozen bytes of a second-copy frame", "[wire]") {
  CHECK(to_hex(frame_c()) == to_hex(from_hex(kGoldenC)));
}

TEST_CASE("golden frames decode to the headers and sections they were built from", "[wire]") {
  SECTION("header only") {
    const Bytes f = from_hex(kGoldenA);
    const DecodeResult r = decode_frame(f);
    REQUIRE(r.ok());
    check_header(r.view.header, header_a());
    CHECK(r.view.section_count == 0);
    CHECK(r.view.sections.empty());
    CHECK(r.view.frame_bytes == f.size());
    size_t off = 0;
    SectionView s;
    CHECK_FALSE(r.view.next_section(off, s));
  }
  SECTION("membership and app batch") {
    const Bytes f = from_hex(kGoldenB);
    const DecodeResult r = decode_frame(f);
    REQUIRE(r.ok());
    check_header(r.view.header, header_b());
    CHECK(r.view.section_count == 2);
    CHECK(r.view.frame_bytes == f.size());
    SectionView s;
    REQUIRE(r.view.find_section(SectionType::membership, s));
    REQUIRE(s.body.size() == 8);
    CHECK(load_be64(s.body.data()) == 0xB);
    REQUIRE(r.view.find_section(SectionType::app_batch, s));
    uint16_t count = 0;
    REQUIRE(validate_batch(s.body, &count));
    CHECK(count == 2);
    BatchReader reader(s.body);
    AppMessage m;
    REQUIRE(reader.next(m));
    CHECK(m.msg_id == 0x10);
    CHECK(m.submit_ns == 1000);
    CHECK(m.client == 5);
    CHECK(std::string(m.payload.begin(), m.payload.end()) == "abc");
    REQUIRE(reader.next(m));
    CHECK(m.msg_id == 0x11);
    CHECK(m.submit_ns == -1);
    CHECK(m.client == 6);
    CHECK(m.payload.empty());
    CHECK_FALSE(reader.next(m));
    CHECK_FALSE(r.view.find_section(SectionType::otfp_vote, s));
  }
  SECTION("second copy with an empty section") {
    const Bytes f = from_hex(kGoldenC);
    const DecodeResult r = decode_frame(f);
    REQUIRE(r.ok());
    check_header(r.view.header, header_c());
    size_t off = 0;
    SectionView s;
    REQUIRE(r.view.next_section(off, s));
    CHECK(s.type == SectionType::clock_sync);
    CHECK(s.flags == 0);
    CHECK(s.body.empty());
    CHECK_FALSE(r.view.next_section(off, s));
  }
}

TEST_CASE("random headers and sections survive encode then decode unchanged", "[wire]") {
  std::mt19937_64 rng(7);
  Bytes buf(1500);
  for (int iter = 0; iter < 500; ++iter) {
    FrameHeader h;
    h.cluster_id = static_cast<uint16_t>(rng());
    h.sender = static_cast<NodeId>(rng() % kMaxNodes);
    h.flags = static_cast<uint8_t>(rng());
    h.cycle = rng();
    h.segment_count = static_cast<uint16_t>(1 + rng() % 0xFFFF);
    h.segment_index = static_cast<uint16_t>(rng() % h.segment_count);
    h.view_vector = rng();
    h.stage = static_cast<Stage>(rng() % 3);
    h.suspected = rng() % 4 == 0 ? kNoNode : static_cast<NodeId>(rng() % kMaxNodes);
    FrameWriter w(buf);
    REQUIRE(w.begin(h));
    const auto nsec = static_cast<int>(rng() % 5);
    std::vector<Bytes> bodies;
    for (int k = 0; k < nsec; ++k) {
      Bytes body(rng() % 100);
      for (auto& b : body) b = static_cast<uint8_t>(rng());
      REQUIRE(w.add_section(static_cast<SectionType>(1 + k), static_cast<uint8_t>(k), body));
      bodies.push_back(body);
    }
    const size_t len = w.finish();
    REQUIRE(len > 0);
    const DecodeResult r = decode_frame(std::span<const uint8_t>(buf).first(len));
    REQUIRE(r.ok());
    check_header(r.view.header, h);
    REQUIRE(r.view.section_count == nsec);
    size_t off = 0;
    SectionView s;
    for (int k = 0; k < nsec; ++k) {
      REQUIRE(r.view.next_section(off, s));
      CHECK(static_cast<int>(s.type) == 1 + k);
      CHECK(s.flags == k);
      CHECK(Bytes(s.body.begin(), s.body.end()) == bodies[static_cast<size_t>(k)]);
    }
    CHECK_FALSE(r.view.next_section(off, s));
  }
}

TEST_CASE("decoder rejects an empty buffer as too short", "[wire][malformed]") {
  CHECK(decode_frame({}).error == DecodeError::too_short);
}

TEST_CASE("decoder rejects every proper prefix of a valid frame", "[wire][malformed]") {
  for (const char* golden : {kGoldenA, kGoldenB, kGoldenC}) {
    const Bytes f = from_hex(golden);
    for (size_t len = 0; len < f.size(); ++len) {
      INFO("frame of " << f.size() << " bytes cut to " << len);
      const DecodeError e = decode_frame(std::span<const uint8_t>(f).first(len)).error;
      CHECK(e == (len < kMinFrameBytes ? DecodeError::too_short : DecodeError::bad_length));
    }
  }
}

TEST_CASE("decoder rejects a wrong magic, version or kind", "[wire][malformed]") {
  Bytes f = from_hex(kGoldenB);
  SECTION("magic") {
    f[0] = 0x71;
    CHECK(decode_error(f) == DecodeError::bad_magic);
  }
  SECTION("byte-swapped magic") {
    f[0] = 0xB1;
    f[1] = 0x70;
    CHECK(decode_error(f) == DecodeError::bad_magic);
  }
  SECTION("version 0, 1 (one frame per slot and copy, before otfp's segments) and 3") {
    f[2] = 0;
    CHECK(decode_error(f) == DecodeError::bad_version);
    f[2] = 1;
    CHECK(decode_error(f) == DecodeError::bad_version);
    f[2] = 3;
    CHECK(decode_error(f) == DecodeError::bad_version);
  }
  SECTION("kind 0, 3 and 255 (reserved)") {
    for (int kind : {0, 3, 255}) {
      f[3] = static_cast<uint8_t>(kind);
      INFO("kind " << kind);
      CHECK(decode_error(f) == DecodeError::bad_kind);
    }
  }
  SECTION("kind 2 (ic round data) decodes with its kind") {
    f[3] = 2;
    reseal(f);
    const DecodeResult r = decode_frame(f);
    REQUIRE(r.ok());
    CHECK(r.view.header.kind == FrameKind::ic);
  }
}

TEST_CASE("decoder rejects a sender id of 64 or more", "[wire][malformed]") {
  Bytes f = from_hex(kGoldenA);
  f[6] = 63;
  reseal(f);
  CHECK(decode_error(f) == DecodeError::none);
  for (int s : {64, 100, 0xFE, 0xFF}) {
    f[6] = static_cast<uint8_t>(s);
    reseal(f);
    INFO("sender " << s);
    CHECK(decode_error(f) == DecodeError::bad_sender);
  }
}

TEST_CASE("decoder rejects a segment index not below the segment count", "[wire][malformed]") {
  Bytes f = from_hex(kGoldenA);
  const auto set = [&](uint16_t index, uint16_t count) {
    store_be16(f.data() + 16, index);
    store_be16(f.data() + 18, count);
    reseal(f);
    return decode_error(f);
  };
  CHECK(set(0, 0) == DecodeError::bad_segment);
  CHECK(set(1, 1) == DecodeError::bad_segment);
  CHECK(set(5, 3) == DecodeError::bad_segment);
  CHECK(set(0xFFFF, 0xFFFF) == DecodeError::bad_segment);
  CHECK(set(0xFFFE, 0xFFFF) == DecodeError::none);
  CHECK(set(2, 3) == DecodeError::none);
}

TEST_CASE("decoder rejects an unknown stage", "[wire][malformed]") {
  Bytes f = from_hex(kGoldenA);
  for (int stage : {3, 4, 0x80, 0xFF}) {
    f[28] = static_cast<uint8_t>(stage);
    reseal(f);
    INFO("stage " << stage);
    CHECK(decode_error(f) == DecodeError::bad_stage);
  }
  for (int stage : {0, 1, 2}) {
    f[28] = static_cast<uint8_t>(stage);
    reseal(f);
    CHECK(decode_error(f) == DecodeError::none);
  }
}

TEST_CASE("decoder rejects a suspected node id of 64..254", "[wire][malformed]") {
  Bytes f = from_hex(kGoldenA);
  for (int s : {64, 0x80, 0xFE}) {
    f[29] = static_cast<uint8_t>(s);
    reseal(f);
    INFO("suspect " << s);
    CHECK(decode_error(f) == DecodeError::bad_suspect);
  }
  for (int s : {0, 63, 0xFF}) {  // 0xFF: no suspicion
    f[29] = static_cast<uint8_t>(s);
    reseal(f);
    CHECK(decode_error(f) == DecodeError::none);
  }
}

TEST_CASE("decoder rejects section bytes that run beyond the buffer", "[wire][malformed]") {
  Bytes f = from_hex(kGoldenB);
  for (uint32_t sb : {64u, 100u, 0x7FFFFFFFu, 0xFFFFFFFBu, 0xFFFFFFFFu}) {
    store_be32(f.data() + 32, sb);
    INFO("section bytes " << sb);
    CHECK(decode_error(f) == DecodeError::bad_length);
  }
}

TEST_CASE("decoder rejects every single-bit flip of a valid frame", "[wire][malformed]") {
  for (const char* golden : {kGoldenA, kGoldenB, kGoldenC}) {
    Bytes f = from_hex(golden);
    for (size_t bit = 0; bit < f.size() * 8; ++bit) {
      const size_t at = bit / 8;
      f[at] ^= static_cast<uint8_t>(1u << (bit % 8));
      const DecodeError e = decode_error(f);
      INFO("frame of " << f.size() << " bytes, bit " << bit << ": " << to_string(e));
      if (at < 2) {
        CHECK(e == DecodeError::bad_magic);
      } else if (at == 2) {
        CHECK(e == DecodeError::bad_version);
      } else if (at == 3) {
        CHECK(e == DecodeError::bad_kind);
      } else if (at >= 32 && at < 36) {
        // A longer area runs past the buffer; a shorter one moves the trailer.
        CHECK((e == DecodeError::bad_length || e == DecodeError::bad_crc));
      } else {
        CHECK(e == DecodeError::bad_crc);
      }
      f[at] ^= static_cast<uint8_t>(1u << (bit % 8));
    }
    CHECK(decode_error(f) == DecodeError::none);
  }
}

TEST_CASE("decoder rejects a section whose length runs past the section area",
          "[wire][malformed]") {
  SECTION("body length one past the area") {
    Bytes f = from_hex(kGoldenB);
    store_be16(f.data() + 48 + 2, 48);  // the app batch section claims 48 of its 47 bytes
    reseal(f);
    CHECK(decode_error(f) == DecodeError::section_overrun);
  }
  SECTION("first section claims the whole area and more") {
    Bytes f = from_hex(kGoldenB);
    store_be16(f.data() + 36 + 2, 0xFFFF);
    reseal(f);
    CHECK(decode_error(f) == DecodeError::section_overrun);
  }
  SECTION("one to three stray bytes: not even a section header") {
    for (size_t stray = 1; stray < kSectionHeaderBytes; ++stray) {
      INFO(stray << " stray bytes");
      CHECK(decode_error(raw_frame(Bytes(stray, 0), 1)) == DecodeError::section_overrun);
      Bytes area = {7, 0, 0, 0};  // a valid empty section, then the stray bytes
      area.resize(4 + stray, 0);
      CHECK(decode_error(raw_frame(area, 2)) == DecodeError::section_overrun);
    }
  }
  SECTION("a well-formed raw area is accepted") {
    const Bytes area = {7, 0, 0, 1, 0xAA, 1, 0, 0, 0};
    const DecodeResult r = decode_frame(raw_frame(area, 2));
    REQUIRE(r.ok());
    CHECK(r.view.section_count == 2);
  }
}

TEST_CASE("decoder rejects a section count that disagrees with the sections", "[wire][malformed]") {
  for (uint16_t count : {0, 1, 3, 0xFFFF}) {
    Bytes f = from_hex(kGoldenB);
    store_be16(f.data() + 30, count);
    reseal(f);
    INFO("count " << count);
    CHECK(decode_error(f) == DecodeError::section_count);
  }
  CHECK(decode_error(raw_frame({}, 1)) == DecodeError::section_count);
}

TEST_CASE("decoder ignores Ethernet padding after the trailer", "[wire]") {
  Bytes f = from_hex(kGoldenA);
  const size_t len = f.size();
  f.resize(60, 0);
  const DecodeResult r = decode_frame(f);
  REQUIRE(r.ok());
  CHECK(r.view.frame_bytes == len);
  check_header(r.view.header, header_a());
  Bytes g = from_hex(kGoldenC);
  g.resize(60, 0xEE);
  CHECK(decode_error(g) == DecodeError::none);
}

TEST_CASE("FrameWriter refuses a buffer smaller than header plus trailer", "[wire]") {
  Bytes small(kMinFrameBytes - 1);
  FrameWriter w(small);
  CHECK_FALSE(w.begin(header_a()));
  CHECK(w.failed());
  CHECK(w.finish() == 0);
  CHECK(w.open_section(SectionType::app_batch, 0, 0).empty());

  Bytes exact(kMinFrameBytes);
  FrameWriter x(exact);
  REQUIRE(x.begin(header_a()));
  CHECK(x.room() == 0);  // no room even for an empty section header
  CHECK_FALSE(x.add_section(SectionType::clock_sync, 0, {}));
  CHECK(x.finish() == 0);  // a failed step poisons the frame
  FrameWriter y(exact);
  REQUIRE(y.begin(header_a()));
  CHECK(y.finish() == kMinFrameBytes);
}

TEST_CASE("FrameWriter refuses headers the decoder would reject", "[wire]") {
  Bytes buf(64);
  FrameHeader h = header_a();
  h.sender = kMaxNodes;
  CHECK_FALSE(FrameWriter(buf).begin(h));
  h = header_a();
  h.segment_count = 0;
  h.segment_index = 0;
  CHECK_FALSE(FrameWriter(buf).begin(h));
  h = header_a();
  h.segment_count = 2;
  h.segment_index = 2;
  CHECK_FALSE(FrameWriter(buf).begin(h));
}

TEST_CASE("FrameWriter refuses a section larger than the room left", "[wire]") {
  Bytes buf(100);
  FrameWriter w(buf);
  REQUIRE(w.begin(header_a()));
  const size_t room = w.room();
  CHECK(room == 100 - kHeaderBytes - kSectionHeaderBytes - kTrailerBytes);
  const Bytes too_big(room + 1, 1);
  CHECK_FALSE(w.add_section(SectionType::app_batch, 0, too_big));
  CHECK(w.failed());
  CHECK(w.finish() == 0);

  REQUIRE(w.begin(header_a()));  // begin() starts over
  const Bytes fits(room, 2);
  REQUIRE(w.add_section(SectionType::app_batch, 0, fits));
  CHECK(w.room() == 0);
  const size_t len = w.finish();
  CHECK(len == buf.size());
  CHECK(decode_frame(buf).ok());
}

TEST_CASE("FrameWriter refuses a section body above 65535 bytes", "[wire]") {
  Bytes buf(70000);
  FrameWriter w(buf);
  REQUIRE(w.begin(header_a()));
  CHECK(w.room() == kMaxSectionBody);
  const Bytes big(kMaxSectionBody + 1, 3);
  CHECK_FALSE(w.add_section(SectionType::app_batch, 0, big));
  CHECK(w.finish() == 0);
  REQUIRE(w.begin(header_a()));
  REQUIRE(w.add_section(SectionType::app_batch, 0, std::span<const uint8_t>(big).first(kMaxSectionBody)));
  const size_t len = w.finish();
  REQUIRE(len == kMinFrameBytes + kSectionHeaderBytes + kMaxSectionBody);
  CHECK(decode_frame(std::span<const uint8_t>(buf).first(len)).ok());
}

TEST_CASE("FrameWriter refuses a second open section and a section before begin", "[wire]") {
  Bytes buf(200);
  FrameWriter before(buf);
  CHECK(before.open_section(SectionType::app_batch, 0, 4).empty());
  CHECK(before.failed());

  FrameWriter w(buf);
  REQUIRE(w.begin(header_a()));
  REQUIRE(w.open_section(SectionType::app_batch, 0, 4).size() == 4);
  CHECK(w.room() == 0);
  CHECK(w.open_section(SectionType::membership, 0, 4).empty());
  CHECK(w.failed());
  CHECK(w.finish() == 0);
}

TEST_CASE("every decode error has its own description", "[wire]") {
  std::vector<std::string> seen;
  for (int e = 0; e < kDecodeErrorCount; ++e) {
    const std::string s = to_string(static_cast<DecodeError>(e));
    CHECK(s != "unknown");
    CHECK(std::find(seen.begin(), seen.end(), s) == seen.end());
    seen.push_back(s);
  }
}

}  // namespace tob::core
