// IC round data on the wire (docs/wire-format.md section 6, core/ic_wire.h): a byte-exact frame,
// chunking at fixed boundaries, packing into as few frames as fit, reassembly of what the
// decoder returns, and refusal of chunk headers that are short or use the reserved byte.
#include <catch2/catch.hpp>

#include <string_view>
#include <vector>

#include "core/bytes.h"
#include "core/crc32c.h"
#include "core/ic_wire.h"
#include "hex.h"

namespace tob::core {
namespace {

using Bytes = std::vector<uint8_t>;
using tob::test::from_hex;

Bytes pattern(size_t n, uint8_t seed) {
  Bytes b(n);
  for (size_t k = 0; k < n; ++k) b[k] = static_cast<uint8_t>(seed + k * 13);
  return b;
}

std::vector<Bytes> encode(const std::vector<IcMessage>& msgs, const IcFrameParams& p) {
  Bytes out(64 * p.frame_bytes_max);
  std::vector<size_t> lengths(64);
  const size_t n = encode_ic_frames(msgs, p, out, lengths);
  std::vector<Bytes> frames;
  for (size_t k = 0; k < n; ++k) {
    const auto* at = out.data() + k * p.frame_bytes_max;
    frames.emplace_back(at, at + lengths[k]);
  }
  return frames;
}

}  // namespace

TEST_CASE("ic frame: byte-exact header, chunk header and trailer", "[wire][ic]") {
  const Bytes msg = {0, 0, 0, 1, 0xAB};  // one EIG entry: length 1, value AB
  IcFrameParams p;
  p.cluster_id = 1;
  p.sender = 2;
  p.cycle = 10;
  p.chunk_bytes = 1024;
  const auto frames = encode({{9, 1, msg}}, p);
  REQUIRE(frames.size() == 1);
  const Bytes want = from_hex(
      "70b1 02 02 0001 02 00"      // magic, version 2, kind 2 (ic), cluster 1, sender 2, flags
      "000000000000000a"           // cycle 10
      "0000 0001"                  // segment 0 of 1
      "0000000000000000 00 ff"     // no view vector, stage 0, no suspect
      "0001 00000019"              // one section, 25 section bytes
      "06 00 0015"                 // ic_round, 21 bytes
      "0000000000000009 01 00 0000 00000005"  // instance 9, round 1, chunk 0, message 5 bytes
      "00000001ab");
  REQUIRE(frames[0].size() == want.size() + 4);
  CHECK(Bytes(frames[0].begin(), frames[0].end() - 4) == want);
  CHECK(load_be32(frames[0].data() + want.size()) == crc32c(want));
  const DecodeResult d = decode_frame(frames[0]);
  REQUIRE(d.ok());
  CHECK(d.view.header.kind == FrameKind::ic);
}

TEST_CASE("ic chunks cut at fixed boundaries and reassemble to the message", "[wire][ic]") {
  CHECK(ic_chunk_count(1, 100) == 1);
  CHECK(ic_chunk_count(100, 100) == 1);
  CHECK(ic_chunk_count(101, 100) == 2);
  CHECK(ic_chunk_length(250, 100, 0) == 100);
  CHECK(ic_chunk_length(250, 100, 2) == 50);

  const Bytes big = pattern(5000, 1);
  const Bytes small = pattern(30, 99);
  IcFrameParams p;
  p.cycle = 77;
  p.sender = 5;
  p.chunk_bytes = 1400;
  p.frame_bytes_max = 1500;
  const std::vector<IcMessage> msgs = {{3, 2, big}, {4, 1, small}};
  const auto frames = encode(msgs, p);
  CHECK(ic_frame_count(msgs, p) == frames.size());
  // 5000 = 3 x 1400 + 800; the small message's chunk fits next to the last big chunk.
  REQUIRE(frames.size() == 4);
  Bytes got_big(big.size(), 0);
  Bytes got_small;
  size_t chunks = 0;
  for (size_t k = 0; k < frames.size(); ++k) {
    CHECK(frames[k].size() <= p.frame_bytes_max);
    const DecodeResult d = decode_frame(frames[k]);
    REQUIRE(d.ok());
    CHECK(d.view.header.segment_index == k);
    CHECK(d.view.header.segment_count == frames.size());
    CHECK(d.view.header.cycle == 77);
    SectionView s;
    for (size_t off = 0; d.view.next_section(off, s);) {
      REQUIRE(s.type == SectionType::ic_round);
      IcChunk c;
      REQUIRE(parse_ic_chunk(s.body, c));
      ++chunks;
      if (c.instance == 3) {
        CHECK(c.round == 2);
        CHECK(c.message_bytes == 5000);
        CHECK(c.data.size() == ic_chunk_length(5000, 1400, c.index));
        std::copy(c.data.begin(), c.data.end(), got_big.begin() + static_cast<std::ptrdiff_t>(c.index * 1400));
      } else {
        CHECK(c.instance == 4);
        got_small.assign(c.data.begin(), c.data.end());
      }
    }
  }
  CHECK(chunks == 5);
  CHECK(got_big == big);
  CHECK(got_small == small);
}

TEST_CASE("ic frame encoding refuses bad parameters and small buffers", "[wire][ic]") {
  const Bytes m = pattern(3000, 0);
  IcFrameParams p;
  p.chunk_bytes = 1400;
  Bytes out(1500);
  size_t lengths[4];
  CHECK(encode_ic_frames(std::vector<IcMessage>{{1, 1, m}}, p, out, lengths) == 0);  // needs 3 frames
  Bytes room(3 * 1500);
  CHECK(encode_ic_frames(std::vector<IcMessage>{{1, 1, m}}, p, room, std::span<size_t>(lengths, 2)) == 0);
  CHECK(encode_ic_frames(std::vector<IcMessage>{{1, 1, m}}, p, room, lengths) == 3);
  p.chunk_bytes = 1441;  // one chunk no longer fits a 1500-byte frame
  CHECK(ic_frame_count(std::vector<IcMessage>{{1, 1, m}}, p) == 0);
  p.chunk_bytes = 1440;
  CHECK(ic_frame_count(std::vector<IcMessage>{{1, 1, m}}, p) == 3);
  CHECK(ic_frame_count(std::vector<IcMessage>{{1, 1, {}}}, p) == 0);  // empty message
  p.sender = 64;
  CHECK(ic_frame_count(std::vector<IcMessage>{{1, 1, m}}, p) == 0);
}

TEST_CASE("ic chunk headers that are short or set the reserved byte are refused", "[wire][ic][malformed]") {
  IcChunk c;
  CHECK_FALSE(parse_ic_chunk(Bytes(15, 0), c));
  Bytes h(16, 0);
  CHECK(parse_ic_chunk(h, c));
  CHECK(c.data.empty());
  h[9] = 1;
  CHECK_FALSE(parse_ic_chunk(h, c));
}

}  // namespace tob::core
