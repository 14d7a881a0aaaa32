// libFuzzer target for the slot frame decoder (docs/wire-format.md: "the decoder is total ... It is
// fuzzed"). Properties checked on every input:
//   - decode_frame never reads outside the input (ASan) and never hits undefined behaviour;
//   - a decoded frame's sections can all be iterated, and app batch sections either fail
//     validate_batch or read back exactly `count` messages inside the section body;
//   - ic_round sections either fail parse_ic_chunk or give chunk data that is exactly the rest
//     of the section body;
//   - re-encoding the decoded header and sections with FrameWriter gives back the input's
//     frame bytes exactly, and those decode to the same header.
// Also linked into fuzz-replay (replay.cc), which runs the committed corpus under g++.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include "core/batch.h"
#include "core/ic_wire.h"
#include "core/wire.h"

namespace {

using namespace tob::core;

void check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "fuzz_decode: property violated: %s\n", what);
  std::abort();
}

bool same_header(const FrameHeader& a, const FrameHeader& b) {
  return a.kind == b.kind && a.cluster_id == b.cluster_id && a.sender == b.sender &&
         a.flags == b.flags && a.cycle == b.cycle && a.segment_index == b.segment_index &&
         a.segment_count == b.segment_count && a.view_vector == b.view_vector &&
         a.stage == b.stage && a.suspected == b.suspected;
}

bool inside(std::span<const uint8_t> inner, std::span<const uint8_t> outer) {
  return inner.data() >= outer.data() &&
         inner.data() + inner.size() <= outer.data() + outer.size();
}

void check_batch(std::span<const uint8_t> body) {
  uint16_t count = 0;
  if (!validate_batch(body, &count)) return;
  BatchReader reader(body);
  size_t read = 0;
  size_t payload_bytes = 0;
  for (AppMessage m; reader.next(m);) {
    check(inside(m.payload, body), "batch payload inside the section body");
    payload_bytes += m.payload.size();
    ++read;
  }
  check(read == count, "batch reader returns exactly count messages");
  check(kBatchHeaderBytes + read * kBatchEntryHeaderBytes + payload_bytes == body.size(),
        "validated batch entries cover the body exactly");
}

void check_ic_chunk(std::span<const uint8_t> body) {
  IcChunk c;
  if (!parse_ic_chunk(body, c)) {
    check(body.size() < kIcChunkHeaderBytes || body[9] != 0, "ic chunk refused only when short or reserved set");
    return;
  }
  check(inside(c.data, body), "ic chunk data inside the section body");
  check(c.data.size() + kIcChunkHeaderBytes == body.size(), "ic chunk data is the rest of the body");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> input(data, size);
  const DecodeResult r = decode_frame(input);
  if (!r.ok()) {
    check(static_cast<int>(r.error) < kDecodeErrorCount, "decode error in range");
    return 0;
  }
  const FrameView& v = r.view;
  check(v.frame_bytes >= kMinFrameBytes && v.frame_bytes <= size, "frame bytes within input");
  check(inside(v.sections, input), "section area inside the input");

  std::vector<uint8_t> out(v.frame_bytes);
  FrameWriter w(out);
  check(w.begin(v.header), "a decoded header can be encoded again");
  size_t sections = 0;
  SectionView s;
  for (size_t off = 0; v.next_section(off, s);) {
    check(inside(s.body, v.sections), "section body inside the section area");
    if (s.type == SectionType::app_batch) check_batch(s.body);
    if (s.type == SectionType::ic_round) check_ic_chunk(s.body);
    check(w.add_section(s.type, s.flags, s.body), "a decoded section can be encoded again");
    ++sections;
  }
  check(sections == v.section_count, "iteration finds section_count sections");
  const size_t len = w.finish();
  check(len == v.frame_bytes, "re-encoded frame has the decoded length");
  check(std::memcmp(out.data(), data, len) == 0, "re-encoded frame is byte-identical");
  const DecodeResult again = decode_frame(out);
  check(again.ok(), "re-encoded frame decodes");
  check(same_header(again.view.header, v.header), "re-encoded frame has the same header");
  check(again.view.section_count == v.section_count, "re-encoded frame has the same sections");
  return 0;
}
