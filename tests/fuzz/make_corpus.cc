// Writes the seed corpus for fuzz_decode into a directory: valid frames of several shapes and
// one file per decoder error and per malformed batch. Run once and commit the files:
//   ninja -C build tests/fuzz/fuzz-make-corpus && build/tests/fuzz/fuzz-make-corpus tests/fuzz/corpus
// Inputs that libFuzzer found later are committed next to these (names starting "found-").
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include "core/batch.h"
#include "core/bytes.h"
#include "core/crc32c.h"
#include "core/ic_wire.h"
#include "core/wire.h"

namespace {

using namespace tob::core;
using Bytes = std::vector<uint8_t>;

std::filesystem::path g_dir;
int g_written = 0;

void write(const std::string& name, const Bytes& b) {
  std::ofstream out(g_dir / (name + ".bin"), std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  if (!out) {
    std::fprintf(stderr, "cannot write %s\n", name.c_str());
    std::exit(1);
  }
  ++g_written;
}

FrameHeader member_header(NodeId sender, uint64_t cycle) {
  FrameHeader h;
  h.cluster_id = 1;
  h.sender = sender;
  h.cycle = cycle;
  h.view_vector = 0xF;
  h.stage = Stage::member;
  return h;
}

struct Section {
  SectionType type;
  Bytes body;
};

Bytes encode(const FrameHeader& h, const std::vector<Section>& sections) {
  Bytes buf(9000);
  FrameWriter w(buf);
  if (!w.begin(h)) std::abort();
  for (const Section& s : sections)
    if (!w.add_section(s.type, 0, s.body)) std::abort();
  const size_t len = w.finish();
  if (len == 0) std::abort();
  buf.resize(len);
  return buf;
}

Bytes membership(uint64_t members) {
  Bytes b(8);
  store_be64(b.data(), members);
  return b;
}

Bytes batch(int count, size_t payload_bytes) {
  Bytes body(kBatchHeaderBytes + static_cast<size_t>(count) * (kBatchEntryHeaderBytes + payload_bytes));
  BatchWriter w(body);
  Bytes payload(payload_bytes);
  for (int i = 0; i < count; ++i) {
    for (size_t k = 0; k < payload_bytes; ++k) payload[k] = static_cast<uint8_t>(i + k);
    if (!w.add({static_cast<uint64_t>(100 + i), 1'000'000 + i, static_cast<uint16_t>(i % 3), payload}))
      std::abort();
  }
  body.resize(w.finish());
  return body;
}

void reseal(Bytes& f) {
  const size_t end = kHeaderBytes + load_be32(f.data() + 32);
  store_be32(f.data() + end, crc32c(std::span<const uint8_t>(f).first(end)));
}

Bytes patched(Bytes f, size_t at, uint8_t value, bool seal) {
  f[at] = value;
  if (seal) reseal(f);
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  g_dir = argv[1];
  std::filesystem::create_directories(g_dir);

  // Valid frames.
  const Bytes header_only = encode(member_header(0, 1), {});
  const Bytes one = encode(member_header(1, 2), {{SectionType::membership, membership(0xF)},
                                                 {SectionType::app_batch, batch(1, 64)}});
  const Bytes sixteen = encode(member_header(2, 3), {{SectionType::membership, membership(0x7)},
                                                     {SectionType::app_batch, batch(16, 64)}});
  write("valid-header-only", header_only);
  write("valid-membership-batch-1", one);
  write("valid-membership-batch-16", sixteen);
  write("valid-batch-empty-payloads", encode(member_header(3, 4), {{SectionType::app_batch, batch(5, 0)}}));
  write("valid-batch-count-0", encode(member_header(3, 4), {{SectionType::app_batch, batch(0, 0)}}));
  {
    FrameHeader h = member_header(63, 0xFFFFFFFFFFFFFFFFu);
    h.flags = kFlagSecondCopy;
    h.stage = Stage::active;
    h.suspected = 62;
    h.segment_index = 2;
    h.segment_count = 3;
    h.view_vector = ~uint64_t{0};
    write("valid-second-copy-joining-suspect", encode(h, {{SectionType::clock_sync, {}}}));
  }
  write("valid-unknown-section-types",
        encode(member_header(4, 9), {{static_cast<SectionType>(200), {1, 2, 3}},
                                     {SectionType::otfp_vote, {}},
                                     {SectionType::retransmit_request, Bytes(17, 0xAB)}}));
  write("valid-two-batches", encode(member_header(5, 9), {{SectionType::app_batch, batch(2, 3)},
                                                          {SectionType::app_batch, batch(1, 0)}}));
  {
    Bytes padded = header_only;
    padded.resize(60, 0);
    write("valid-padded-to-60", padded);
  }

  // One file per decoder error.
  write("bad-empty", {});
  write("bad-too-short-39", Bytes(header_only.begin(), header_only.end() - 1));
  write("bad-magic", patched(one, 0, 0x71, false));
  write("bad-version", patched(one, 2, 1, false));  // version 1, before otfp segments
  write("bad-kind", patched(one, 3, 3, true));
  write("bad-sender-64", patched(one, 6, 64, true));
  write("bad-segment-count-0", patched(header_only, 19, 0, true));
  write("bad-stage-3", patched(one, 28, 3, true));
  write("bad-suspect-64", patched(one, 29, 64, true));
  write("bad-length-truncated", Bytes(one.begin(), one.end() - 1));
  {
    Bytes f = header_only;
    store_be32(f.data() + 32, 0xFFFFFFFFu);
    write("bad-length-max-section-bytes", f);
  }
  write("bad-crc", patched(one, one.size() - 1, static_cast<uint8_t>(one.back() ^ 1), false));
  {
    Bytes f = one;
    store_be16(f.data() + 36 + 2, 0xFFFF);  // membership section claims 65535 bytes
    reseal(f);
    write("bad-section-overrun", f);
  }
  {
    Bytes f = one;
    store_be16(f.data() + 30, 3);
    reseal(f);
    write("bad-section-count", f);
  }

  // Valid frames whose app batch body is malformed (the decoder accepts them; the batch
  // validator must not).
  {
    Bytes body = batch(2, 4);
    store_be16(body.data(), 3);
    write("batch-count-too-large", encode(member_header(1, 5), {{SectionType::app_batch, body}}));
  }
  {
    Bytes body = batch(2, 4);
    store_be16(body.data() + kBatchHeaderBytes + 18, 0xFFFF);
    write("batch-entry-past-end", encode(member_header(1, 5), {{SectionType::app_batch, body}}));
  }
  {
    Bytes body = batch(1, 4);
    body.push_back(0);
    write("batch-trailing-garbage", encode(member_header(1, 5), {{SectionType::app_batch, body}}));
  }
  write("batch-shorter-than-header",
        encode(member_header(1, 5), {{SectionType::app_batch, {0, 1}}}));
  write("membership-wrong-size",
        encode(member_header(1, 5), {{SectionType::membership, {1, 2, 3}}}));

  // Interactive-consistency frames (kind 2, ic_round sections; core/ic_wire.h): a round message
  // cut into chunks over two frames, and chunk headers the IC node must refuse.
  {
    Bytes big(2000);
    Bytes small(40);
    for (size_t k = 0; k < big.size(); ++k) big[k] = static_cast<uint8_t>(k * 7);
    for (size_t k = 0; k < small.size(); ++k) small[k] = static_cast<uint8_t>(k);
    const IcMessage msgs[] = {{9, 1, small}, {8, 2, big}};
    IcFrameParams p;
    p.sender = 2;
    p.cycle = 10;
    p.chunk_bytes = 1024;
    p.frame_bytes_max = 1500;
    Bytes out(4 * p.frame_bytes_max);
    size_t lengths[4];
    const size_t frames = encode_ic_frames(msgs, p, out, lengths);
    if (frames != 2) std::abort();
    write("valid-ic-round-frame-0", Bytes(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(lengths[0])));
    write("valid-ic-round-frame-1", Bytes(out.begin() + 1500, out.begin() + 1500 + static_cast<std::ptrdiff_t>(lengths[1])));
    FrameHeader h = member_header(3, 11);
    h.kind = FrameKind::ic;
    h.stage = Stage::inactive;
    h.view_vector = 0;
    write("ic-chunk-shorter-than-header", encode(h, {{SectionType::ic_round, Bytes(15, 1)}}));
    Bytes reserved(kIcChunkHeaderBytes + 4, 0);
    reserved[8] = 1;
    reserved[9] = 0x80;
    write("ic-chunk-reserved-set", encode(h, {{SectionType::ic_round, reserved}}));
  }

  std::printf("wrote %d files to %s\n", g_written, g_dir.c_str());
  return 0;
}
