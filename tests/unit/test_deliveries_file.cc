// The deliveries file's two formats (lib/dataplane/observe/deliveries_file.h): the text lines are
// the ones tob-sim and the old per-delivery fprintf wrote, the binary records have the documented
// layout, and a burst never reallocates.
#include <catch2/catch.hpp>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>

#include "dataplane/observe/deliveries_file.h"

using namespace tob::dataplane;

namespace {

LogRecord delivery(uint8_t sender, int64_t cycle, uint64_t msg_id) {
  LogRecord r{};
  r.kind = LogKind::delivery;
  r.node = sender;
  r.client = 7;
  r.payload_bytes = 64;
  r.cycle = cycle;
  r.msg_id = msg_id;
  r.at_ns = 0x0102030405060708;
  return r;
}

}  // namespace

TEST_CASE("text deliveries are the lines `node cycle sender msg_id` that printf wrote") {
  DeliveriesWriter w(DeliveriesFormat::text, 3, 4);
  w.header();  // nothing for text
  const LogRecord rs[] = {delivery(0, 0, 0), delivery(63, INT64_MAX, UINT64_MAX), delivery(2, -1, 17)};
  std::string want;
  for (const LogRecord& r : rs) {
    w.add(r);
    char line[96];
    std::snprintf(line, sizeof line, "%u %" PRId64 " %u %" PRIu64 "\n", 3u, r.cycle, static_cast<unsigned>(r.node), r.msg_id);
    want += line;
  }
  CHECK(std::string(w.pending()) == want);
}

TEST_CASE("binary deliveries: a 16-byte header, then 32-byte little-endian records") {
  DeliveriesWriter w(DeliveriesFormat::bin, 5, 2);
  w.header();
  w.add(delivery(9, 0x1122, 0xAABB));
  const std::string_view b = w.pending();
  REQUIRE(b.size() == kDeliveriesHeaderBytes + kDeliveryRecordBytes);
  CHECK(std::memcmp(b.data(), "TOBDLV\0\1", 8) == 0);
  CHECK(static_cast<uint8_t>(b[8]) == 5);
  CHECK(b[9] == 0);
  const auto* r = reinterpret_cast<const uint8_t*>(b.data() + kDeliveriesHeaderBytes);
  CHECK(r[0] == 0x22);  // cycle
  CHECK(r[1] == 0x11);
  CHECK(r[8] == 0xBB);  // msg_id
  CHECK(r[9] == 0xAA);
  CHECK(r[16] == 0x08);  // at_ns, little-endian
  CHECK(r[23] == 0x01);
  CHECK(r[24] == 9);  // sender
  CHECK(r[26] == 7);  // client
  CHECK(r[28] == 64);  // payload bytes
  CHECK(r[30] == 0);
}

TEST_CASE("a burst of the reserved size is rendered without reallocating, and flush writes it once") {
  DeliveriesWriter w(DeliveriesFormat::text, 0, 256);
  w.add(delivery(1, 1, 1));
  const char* before = w.pending().data();
  for (int i = 1; i < 256; ++i) w.add(delivery(63, INT64_MIN, UINT64_MAX));
  CHECK(w.pending().data() == before);
  std::FILE* f = std::tmpfile();
  REQUIRE(f != nullptr);
  const size_t n = w.pending().size();
  CHECK(w.flush(f));
  CHECK(w.pending().empty());
  CHECK(std::ftell(f) == static_cast<long>(n));
  std::fclose(f);
}

TEST_CASE("the format names: text and bin, nothing else") {
  DeliveriesFormat f{};
  CHECK(parse_deliveries_format("text", &f));
  CHECK(f == DeliveriesFormat::text);
  CHECK(parse_deliveries_format("bin", &f));
  CHECK(f == DeliveriesFormat::bin);
  CHECK_FALSE(parse_deliveries_format("csv", &f));
  CHECK_FALSE(parse_deliveries_format("", &f));
}
