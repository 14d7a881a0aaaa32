// A slot's batch carried in several frames (docs/plans/throughput.md §7.2-7.3): the sender cuts
// its batch into segments, each a self-contained application batch section (whole entries,
// docs/wire-format.md section 1) in a frame whose header numbers it (segment index of count).
// A receiver puts the segments of one (sender, cycle) back together here and takes the batch
// only when every segment is there: a batch with a segment missing is the sender's omission at
// that receiver, exactly as a missing single frame is (send-twice applies per segment: the
// second copy of a segment is a duplicate once the first arrived).
//
// Storage is fixed at construction (segments_max x segment_bytes_max, one stride per segment):
// no allocation while frames arrive. The messages of the batch are the segments' entries in
// segment order, then entry order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/batch.h"

namespace tob::core {

class Reassembly {
 public:
  enum class Add : uint8_t {
    fresh,      // a segment not seen before; the batch is not complete yet
    duplicate,  // this segment is already here (a second copy)
    complete,   // this segment completed the batch (reported once)
    malformed,  // index or count out of range, a count unlike the first segment's, a bad body:
                // this frame is refused, the batch goes on from the others
  };

  // Whether a segment's body was validated as a batch already (a receiver that checks a whole
  // frame before it acts on any section): then it is not walked a second time.
  enum class Checked : bool { no, yes };

  // Messages longer than payload_max make a segment malformed (validate_batch).
  Reassembly(size_t segments_max, size_t segment_bytes_max, size_t payload_max = SIZE_MAX);
  // Copies hold the same batches; an assignment between equal shapes reuses the storage (the
  // engine fuzz targets copy a warmed-up node for every input, docs/fuzzing.md).
  Reassembly(const Reassembly& other);
  Reassembly& operator=(const Reassembly& other);
  Reassembly(Reassembly&&) noexcept = default;
  Reassembly& operator=(Reassembly&&) noexcept = default;
  ~Reassembly() = default;

  // A segment of `cycle`'s batch. A cycle other than the current one starts that cycle afresh
  // (the caller routes by cycle; what it held of another cycle is dropped).
  Add add(int64_t cycle, uint16_t index, uint16_t count, std::span<const uint8_t> body, Checked checked = Checked::no);
  // Forget everything (the sender's slot begins anew).
  void reset(int64_t cycle);
  // The sender's own batch, written in place after reset(cycle): segment j's storage, then
  // put(j, ...) with what was written (a BatchWriter's finish() and count()), then close(count).
  // Nothing is checked or copied: the batch was built here.
  std::span<uint8_t> room(uint16_t j);
  void put(uint16_t j, size_t length, uint16_t entries);
  void close(uint16_t count);

  int64_t cycle() const { return cycle_; }
  bool complete() const { return complete_; }
  uint16_t count() const { return count_; }
  uint16_t have() const { return have_n_; }
  size_t bytes() const { return bytes_; }       // batch bodies, all segments
  uint32_t messages() const { return msgs_; }
  // CRC32C of the segment bodies in index order (= the CRC of their concatenation); complete only.
  uint32_t crc() const;
  // The body of segment j (complete batches; j < count()).
  std::span<const uint8_t> segment(uint16_t j) const;
  // Segment j of `cycle`'s batch is here (or the batch is complete).
  bool has(int64_t cycle, uint16_t j) const;
  // The lowest and highest segment of `cycle`'s batch still missing: [0, 0xFFFF] when nothing
  // (so no count) is known yet; false when complete.
  bool missing(int64_t cycle, uint16_t& lo, uint16_t& hi) const;
  size_t segments_max() const { return segments_max_; }
  size_t segment_bytes_max() const { return stride_; }

  // Every message of a complete batch, in segment then entry order.
  template <class F>
  void for_each_message(F&& f) const {
    for (uint16_t j = 0; j < count_; ++j) {
      BatchReader r(segment(j));
      for (AppMessage m; r.next(m);) f(m);
    }
  }

 private:
  size_t segments_max_;
  size_t stride_;
  size_t payload_max_;
  std::unique_ptr<uint8_t[]> bytes_store_;  // not initialised: pages are touched as segments land
  std::vector<uint32_t> len_;
  std::vector<uint64_t> have_;  // bitmap over segment indexes
  int64_t cycle_ = INT64_MIN;
  uint16_t count_ = 0;
  uint16_t have_n_ = 0;
  size_t bytes_ = 0;
  uint32_t msgs_ = 0;
  bool complete_ = false;
};

}  // namespace tob::core
