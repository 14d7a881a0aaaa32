// Writes the seed corpora of the engine fuzz targets (docs/fuzzing.md) into DIR/mars, DIR/otfp and
// DIR/ic: one program per operation, and per section type the engines send a program that forges a
// frame carrying a section body a correct peer sent (taken from a warmed-up cluster), so the fuzzer
// starts from valid frames of every section type. Run once and commit the files:
//   ninja -C build tests/fuzz/fuzz-make-engine-corpus
//   build/tests/fuzz/fuzz-make-engine-corpus tests/fuzz/corpus
// Inputs libFuzzer found later are committed next to these (names starting "found-").
#include <array>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "core/batch.h"
#include "core/otfp_wire.h"
#include "core/wire.h"
#include "fuzz_ops.h"
#include "fuzz_targets.h"

namespace {

using namespace tob;
using Bytes = std::vector<uint8_t>;

// A program of operations (fuzz_ops.h) in the byte layout FuzzInput reads.
struct Program {
  Bytes b;
  Program& u8(uint8_t v) { return b.push_back(v), *this; }
  Program& u16(uint16_t v) { return u8(static_cast<uint8_t>(v >> 8)).u8(static_cast<uint8_t>(v)); }
  Program& u64(uint64_t v) {
    for (int s = 56; s >= 0; s -= 8) u8(static_cast<uint8_t>(v >> s));
    return *this;
  }
  Program& bytes(std::span<const uint8_t> v) { return b.insert(b.end(), v.begin(), v.end()), *this; }
  Program& window(uint8_t node, uint16_t offset) { return u8(1).u8(node).u8(0).u16(offset); }
  // A forged frame as `node`'s of this cycle (sender and cycle left to the harness), member stage.
  Program& forge_header(uint8_t sections) { return u8(2).u8(0).u8(core::kFlagAuthenticated).u8(0).u8(0).u8(0).u8(2).u8(sections); }
  Program& section(uint8_t type, uint8_t flags, std::span<const uint8_t> body) {
    return u8(type).u8(flags).u16(static_cast<uint16_t>(body.size())).bytes(body);
  }
  Program& cycles(uint8_t n) { return u8(8).u8(static_cast<uint8_t>(n - 1)); }
};

int g_written = 0;

void write(const std::filesystem::path& dir, const std::string& name, const Program& p) {
  std::ofstream out(dir / (name + ".bin"), std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(p.b.data()), static_cast<std::streamsize>(p.b.size()));
  if (!out) {
    std::fprintf(stderr, "cannot write %s\n", (dir / name).c_str());
    std::exit(1);
  }
  ++g_written;
}

// One program per operation, each after a cycle of correct operation.
void operation_seeds(const std::filesystem::path& dir) {
  write(dir, "op-advance", Program().u8(0).u16(30000).u8(0).u16(65535));
  write(dir, "op-window", Program().window(2, 1000).window(3, 5000));
  write(dir, "op-forge-empty", Program().window(1, 2000).forge_header(0).u8(0));
  write(dir, "op-forge-batch", Program().window(1, 2000).forge_header(1).u8(0x81).u8(0).u16(1200).u8(2)
                                   .u64(7).u64(0).u16(40).u64(8).u64(0).u16(10).u8(0));
  write(dir, "op-mutate", Program().cycles(1).window(2, 3000).u8(3).u8(0).u8(2).u16(40).u8(0xFF).u16(60).u8(1).u8(0));
  write(dir, "op-replay", Program().cycles(1).window(3, 3000).u8(4).u8(1).u8(0).cycles(2));
  write(dir, "op-load", Program().u8(5).u8(0).u8(1).u8(20).u8(5).u8(2).u8(2).u8(200).cycles(3));
  write(dir, "op-load-all", Program().u8(6).u8(1).u8(3).u8(0).u8(8).u8(1).u8(2).u8(3).u8(4).u8(5).u8(6).u8(7).u8(8)
                                .u8(0).u8(0).u8(0).cycles(4));
  // Every node writes "ka" 4 ms ahead (IC: published on every node) or submits 32 bytes, twice.
  Program traffic;
  for (int k = 0; k < 2; ++k) {
    traffic.u8(6).u8(0).u16(0x1000).u8(4).u8(1).u8(2).u8(3).u8(4);
    for (int pad = 0; pad < 8; ++pad) traffic.u8(0);
    traffic.cycles(1);
  }
  write(dir, "traffic", traffic.cycles(8).cycles(4));
  write(dir, "op-stall", Program().u8(7).u16(20000).cycles(3));
  write(dir, "op-cycles", Program().cycles(8).cycles(8));
}

// Application input on every node, then two cycles: the frames carry batches or key writes.
void add_traffic(fuzz::Target t, fuzz::FuzzCluster& c) {
  // A message of 40 bytes (client, length / 2); a key write "ka" 4 ms ahead, 4 bytes (fuzz_ops.h).
  static const uint8_t kMessage[] = {1, 20};
  static const uint8_t kWrite[] = {0, 0x10, 0x00, 4, 1, 2, 3, 4};
  for (int i = 0; i < c.size(); ++i) {
    fuzz::FuzzInput in(t == fuzz::Target::ic ? std::span<const uint8_t>(kWrite) : std::span<const uint8_t>(kMessage));
    c.load(i, in);
  }
  c.run_to(c.now() + 2 * c.schedule().cycle_ns());
}

// Per section type a correct peer sends: a frame forged in the window of that peer carrying the body.
void section_seeds(fuzz::Target t, const std::filesystem::path& dir) {
  const std::unique_ptr<fuzz::FuzzCluster> c = fuzz::steady_cluster(t);
  add_traffic(t, *c);
  std::set<uint8_t> seen;
  for (const Bytes& frame : c->recent()) {
    const core::DecodeResult d = core::decode_frame(frame);
    if (!d.ok()) continue;
    // The whole frame (up to the 4 sections a forged frame holds), once per section type it
    // brings first: otfp needs its state section beside the others.
    std::vector<core::SectionView> sections;
    bool fresh = false;
    core::SectionView sec;
    for (size_t off = 0; d.view.next_section(off, sec) && sections.size() < 4;) {
      fresh = seen.insert(static_cast<uint8_t>(sec.type)).second || fresh;
      sections.push_back(sec);
    }
    if (!fresh) continue;
    Program p;
    p.window(d.view.header.sender, 2000).forge_header(static_cast<uint8_t>(sections.size()));
    std::string name = "frame";
    for (const core::SectionView& x : sections) {
      p.section(static_cast<uint8_t>(x.type), x.flags, x.body);
      name += "-" + std::to_string(static_cast<int>(x.type));
    }
    write(dir, name, p.u8(0).cycles(2));
  }
}

// otfp's sections of recovery and catch-up, which a steady cluster does not send: one each, valid,
// for instance 9 (the cycle the seeds forge in), ballots of round 2 coordinated by node 1.
void otfp_seeds(const std::filesystem::path& dir) {
  const int64_t instance = 9;
  const uint32_t fast = core::ballot(2, false, 1);
  const core::OtfpVote vote{instance, fast + 1, {0xF, 0x1234}};
  std::array<uint8_t, 256> body{};
  std::array<uint8_t, core::kOtfpStateBytes> state{};
  core::write_state(state, instance - 1, fast + 1);
  const auto seed = [&](const std::string& name, core::SectionType type, size_t len) {
    Program p;
    p.window(1, 2000).forge_header(2).section(static_cast<uint8_t>(core::SectionType::otfp_state), 0, state);
    p.section(static_cast<uint8_t>(type), 0, std::span<const uint8_t>(body).first(len)).u8(0).cycles(2);
    write(dir, name, p);
  };
  seed("otfp-phase1a", core::SectionType::otfp_phase1a, core::write_ballot_instance(body, fast + 1, instance));
  seed("otfp-any", core::SectionType::otfp_any, core::write_ballot_instance(body, fast, instance));
  seed("otfp-phase2a", core::SectionType::otfp_phase2a, core::write_votes(body, {&vote, 1}));
  const core::Phase1bPart part{fast + 1, true, instance, instance - 2, core::kOtfpRangeOpen};
  seed("otfp-phase1b", core::SectionType::otfp_phase1b, core::write_phase1b(body, part, {&vote, 1}));
  const core::OtfpRequest request{instance - 1, 2, 0, 0, 0, UINT16_MAX};
  seed("otfp-request", core::SectionType::retransmit_request, core::write_requests(body, {&request, 1}));
  const size_t head = core::write_data_header(body, {2, instance - 1, 0, 1});
  core::BatchWriter batch(std::span<uint8_t>(body).subspan(head));
  batch.add({5, 0, 1, std::span<const uint8_t>(body).first(16)});
  seed("otfp-data", core::SectionType::retransmit_data, head + batch.finish());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR (writes CORPUS_DIR/mars, otfp, ic)\n", argv[0]);
    return 2;
  }
  for (fuzz::Target t : {fuzz::Target::mars, fuzz::Target::otfp, fuzz::Target::ic}) {
    const std::filesystem::path dir = std::filesystem::path(argv[1]) / fuzz::to_string(t);
    std::filesystem::create_directories(dir);
    operation_seeds(dir);
    section_seeds(t, dir);
    if (t == fuzz::Target::otfp) otfp_seeds(dir);
  }
  std::printf("wrote %d inputs\n", g_written);
  return 0;
}
