#include "fuzz_ops.h"

#include <algorithm>
#include <array>
#include <vector>

#include "core/batch.h"

namespace tob::fuzz {

namespace {

// The node whose reception window holds `t` (a sender the node under test would accept now).
core::NodeId owner_at(const core::Schedule& s, int64_t t) {
  const int64_t cycle = s.cycle_of(t);
  for (int k = 0; k < s.node_count(); ++k)
    if (s.reception_window(cycle, static_cast<core::NodeId>(k)).contains(t)) return static_cast<core::NodeId>(k);
  return static_cast<core::NodeId>(1 + (t / 1000) % (s.node_count() - 1));
}

core::FrameHeader forge_header(FuzzInput& in, const FuzzCluster& c, core::FrameKind kind) {
  const uint8_t sel = in.u8();
  core::FrameHeader h;
  h.kind = kind;
  h.cluster_id = (sel & 1) != 0 ? in.u16() : 1;
  h.sender = (sel & 2) != 0 ? static_cast<core::NodeId>(in.u8() % core::kMaxNodes) : owner_at(c.schedule(), c.now());
  h.flags = in.u8();
  const int64_t cycle = c.schedule().cycle_of(c.now());
  h.cycle = (sel & 4) != 0 ? in.u64() : static_cast<uint64_t>(cycle + static_cast<int8_t>(in.u8()) / 32);
  h.segment_index = (sel & 8) != 0 ? in.u16() : in.u8() % 4;
  h.segment_count = static_cast<uint16_t>(std::max<uint16_t>(1, (sel & 8) != 0 ? in.u16() : 1 + in.u8() % 4));
  h.segment_index = std::min<uint16_t>(h.segment_index, static_cast<uint16_t>(h.segment_count - 1));
  h.view_vector = (sel & 16) != 0 ? in.u64() : (1u << c.size()) - 1;
  h.stage = static_cast<core::Stage>(in.u8() % 3);
  h.suspected = (sel & 32) != 0 ? static_cast<core::NodeId>(in.u8() % c.size()) : core::kNoNode;
  return h;
}

// A valid app batch of up to 8 messages (ids and sizes from the input).
size_t forge_batch(FuzzInput& in, std::span<uint8_t> body) {
  core::BatchWriter w(body);
  static const std::array<uint8_t, 300> kPayload{};
  const int count = in.u8() % 9;
  for (int m = 0; m < count; ++m) {
    const core::AppMessage msg{in.u64(), static_cast<int64_t>(in.u32()), in.u8(),
                               std::span<const uint8_t>(kPayload).first(in.u16() % kPayload.size())};
    if (!w.fits(msg.payload.size()) || !w.add(msg)) break;
  }
  return w.finish();
}

void forge_section(FuzzInput& in, core::FrameWriter& w) {
  const uint8_t type = in.u8();
  const uint8_t flags = in.u8();
  const size_t len = in.u16() % (std::min<size_t>(w.room(), 1600) + 1);
  const std::span<uint8_t> body = w.open_section(static_cast<core::SectionType>(type % 16), flags, len);
  if (body.empty() && len != 0) return;
  if (type % 16 == static_cast<uint8_t>(core::SectionType::app_batch) && (type & 0x80) != 0) {
    w.close_section(forge_batch(in, body));
    return;
  }
  const std::span<const uint8_t> bytes = in.take(len);
  std::copy(bytes.begin(), bytes.end(), body.begin());
  std::fill(body.begin() + static_cast<std::ptrdiff_t>(bytes.size()), body.begin() + static_cast<std::ptrdiff_t>(len), 0);
  w.close_section(len);
}

void mutate_recent(FuzzInput& in, FuzzCluster& c) {
  if (c.recent().empty()) return;
  std::vector<uint8_t> f = c.recent()[in.u8() % c.recent().size()];
  const int changes = 1 + in.u8() % 8;
  for (int k = 0; k < changes; ++k) {
    const size_t at = in.u16() % (f.size() - core::kTrailerBytes);
    f[at] = static_cast<uint8_t>(f[at] ^ in.u8());
  }
  reseal_crc(f);
  c.inject(f, in.u8() % 2);
}

void load_all(FuzzInput& in, FuzzCluster& c) {
  const std::span<const uint8_t> args = in.take(16);  // what one load reads at most
  for (int i = 0; i < c.size(); ++i) {
    FuzzInput same(args);
    c.load(i, same);
  }
}

void to_window(FuzzInput& in, FuzzCluster& c) {
  const auto k = static_cast<core::NodeId>(in.u8() % c.size());
  const int64_t cycle = c.schedule().cycle_of(c.now()) + 1 + (in.u8() & 1);
  const core::Window w = c.schedule().reception_window(cycle, k);
  c.run_to(w.open_ns + in.u16() % (w.close_ns - w.open_ns));
}

void step(FuzzInput& in, FuzzCluster& c, core::FrameKind kind, std::vector<uint8_t>& buf) {
  const int64_t cycle_ns = c.schedule().cycle_ns();
  switch (in.u8() % kOpCount) {
    case 0: c.run_to(c.now() + in.u16() * int64_t{8}); break;
    case 1: to_window(in, c); break;
    case 2: {
      const size_t len = forge_frame(in, c, kind, buf);
      if (len != 0) c.inject(std::span<const uint8_t>(buf).first(len), in.u8() % 2);
      break;
    }
    case 3: mutate_recent(in, c); break;
    case 4:
      if (!c.recent().empty()) c.inject(c.recent()[in.u8() % c.recent().size()], in.u8() % 2);
      break;
    case 5: {
      const int node = in.u8() % c.size();
      c.load(node, in);
      break;
    }
    case 6: load_all(in, c); break;
    case 7: c.stall_target(c.now() + in.u16() * int64_t{32}); break;
    default: c.run_to(c.now() + (1 + in.u8() % 8) * cycle_ns); break;
  }
}

}  // namespace

size_t forge_frame(FuzzInput& in, const FuzzCluster& c, core::FrameKind kind, std::span<uint8_t> buf) {
  core::FrameWriter w(buf.first(core::kMaxFrameBytes));
  if (!w.begin(forge_header(in, c, kind))) return 0;
  const int sections = in.u8() % 5;
  for (int s = 0; s < sections; ++s) forge_section(in, w);
  return w.finish();
}

void run_ops(FuzzCluster& c, FuzzInput& in, core::FrameKind kind) {
  std::vector<uint8_t> buf(core::kMaxFrameBytes);
  const int64_t end_ns = c.now() + kRunCyclesMax * c.schedule().cycle_ns();
  for (int op = 0; op < kOpsMax && !in.done() && c.now() < end_ns; ++op) step(in, c, kind, buf);
  c.run_to(c.now() + 2 * c.schedule().cycle_ns());  // the consequences play out
}

}  // namespace tob::fuzz
