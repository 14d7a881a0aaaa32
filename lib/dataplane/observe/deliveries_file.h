// The deliveries file (--deliveries, docs/operations.md "Deliveries file"): every delivery of the
// node, rendered by the I/O thread into one buffer per drain and written with one call, never a
// formatted write per delivery. Two formats (--deliveries-format):
//
//   text  one line per delivery, `node cycle sender msg_id` (tob-sim's --deliveries format)
//   bin   a 16-byte header: magic "TOBDLV\0\1", node u16, 6 zero bytes; then 32-byte records:
//         cycle i64 | msg_id u64 | at_ns i64 | sender u16 | client u16 | payload bytes u16 | 0 u16
//         (little-endian; at_ns: when the node handed the delivery out)
//
// scripts/tobclient.py read_deliveries reads both (it tells them apart by the magic).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string_view>
#include <vector>

#include "dataplane/context.h"

namespace tob::dataplane {

enum class DeliveriesFormat : uint8_t { text, bin };

inline constexpr char kDeliveriesMagic[8] = {'T', 'O', 'B', 'D', 'L', 'V', '\0', '\1'};
inline constexpr size_t kDeliveriesHeaderBytes = 16;
inline constexpr size_t kDeliveryRecordBytes = 32;

bool parse_deliveries_format(std::string_view s, DeliveriesFormat* out);

class DeliveriesWriter {
 public:
  // Room for `burst` deliveries is reserved once: add() never allocates below that.
  DeliveriesWriter(DeliveriesFormat format, unsigned node, size_t burst);

  // The bin header, for a file that is still empty.
  void header();
  void add(const LogRecord& r);
  // Everything added since the last flush, in one write. False when the write failed (what was
  // added is dropped: the caller counts the error).
  bool flush(std::FILE* f);
  std::string_view pending() const { return {buf_.data(), used_}; }

 private:
  char* room(size_t n);
  DeliveriesFormat format_;
  unsigned node_;
  std::vector<char> buf_;
  size_t used_ = 0;
};

}  // namespace tob::dataplane
