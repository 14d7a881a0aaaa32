// The instances an otfp node holds (docs/protocol-otfp.md "Instances and memory"): a ring of
// kOtfpRing consecutive instances with, for each, the batches received, the acceptor's vote,
// the learner's tally, the coordinator's reports and proposal, and retransmission state; plus
// the batches, each put back together from its segments (core/segments.h: a slot's batch may
// span several frames). Allocated at start, never after.
//
// The ring only moves forward. Opening instance i forgets everything at or below i - kOtfpRing:
// the acceptor's *floor* rises past it, and below its floor an acceptor neither votes nor
// reports (it cannot prove what it voted there). Above the floor, an instance the ring does not
// hold is one this node never voted in (its log holds every vote it cast).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "core/otfp_wire.h"
#include "core/schedule.h"
#include "core/segments.h"

namespace tob::core {

// Instances held: the tempo window, kappa, recovery and a stalled node's catch-up.
inline constexpr int64_t kOtfpRing = 128;

struct OtfpPeerVote {
  uint32_t ballot = 0;  // 0: none
  OtfpValue value;
};

struct OtfpInstance {
  int64_t id = -1;
  // Batches of this instance this node holds whole, every segment (seed 002 §5.2: a value names
  // them by sender), and the CRC32C of each (over its segments in order).
  uint64_t have = 0;
  std::array<uint32_t, kMaxNodes> crc{};
  // Senders whose slot frame of this cycle came without a batch: they propose nothing in it, so
  // the value can name no batch of theirs (an acceptor may fix its vote early, "Fast ballot").
  uint64_t no_batch = 0;

  // Acceptor (seed 002 §4): its latest vote, and a phase 2a waiting for the batches it names.
  uint32_t voted_ballot = 0;
  OtfpValue voted;
  uint64_t persisted = 0;  // batches already in the log
  uint64_t voted_at = 0;   // the log's byte count after the vote's record: it leaves once durable
  uint32_t pending_ballot = 0;
  OtfpValue pending;

  // Learner: each acceptor's latest vote, and its latest fast-ballot vote apart (a later classic
  // vote does not unmake the fast quorum it was part of).
  std::array<OtfpPeerVote, kMaxNodes> votes{};
  std::array<OtfpPeerVote, kMaxNodes> fast_votes{};
  bool decided = false;
  uint32_t decided_ballot = 0;
  OtfpValue decision;

  // Coordinator: phase 1b reports of its round `reports_ballot` (one per acceptor that reported
  // a vote here), and the phase 2a it sends for this instance.
  uint32_t reports_ballot = 0;
  std::array<OtfpPeerVote, kMaxNodes> reports{};
  uint32_t proposal_ballot = 0;
  OtfpValue proposal;
  int64_t proposal_cycle = -1;

  // Proposer: this node's batch went out in this instance.
  bool own_sent = false;

  // Retransmission (seed 002 §5.5): batches asked for, the attempt and when.
  uint64_t requested = 0;
  uint8_t attempt = 0;
  int64_t request_cycle = -1;
};

class OtfpRing {
 public:
  // A batch of sender k spans at most segments[k] segments of segment_bytes each.
  OtfpRing(int nodes, std::span<const uint16_t> segments, size_t segment_bytes);
  // One segment per batch (tests).
  OtfpRing(int nodes, size_t batch_bytes);

  // nullptr when the ring does not hold i.
  OtfpInstance* held(int64_t i);
  const OtfpInstance* held(int64_t i) const;
  // Holds i from now on (a fresh record when it did not). nullptr when i is below the floor or
  // older than the instance in its slot: its state is forgotten and must not be made up.
  OtfpInstance* open(int64_t i);
  // Oldest instance whose acceptor state is complete here.
  int64_t floor() const { return floor_; }
  // The lowest instance the ring can still open while `newest` is open.
  static int64_t oldest_with(int64_t newest) { return newest - kOtfpRing + 1; }

  enum class Store : uint8_t { fresh, duplicate, complete, refused };
  // Segment `index` of `count` of `sender`'s batch for the instance. The batch is held (`have`,
  // its CRC) once every segment is here; a one-segment batch must carry a message. Refused: not
  // a batch, too big, numbers out of range or unlike the other segments'.
  Store store_segment(OtfpInstance& in, NodeId sender, uint16_t index, uint16_t count, std::span<const uint8_t> body,
                      Reassembly::Checked checked = Reassembly::Checked::no);
  // A whole one-segment batch (true when it completed the batch).
  bool store(OtfpInstance& in, NodeId sender, std::span<const uint8_t> body) {
    return store_segment(in, sender, 0, 1, body) == Store::complete;
  }
  // Segment `index` of the batch is here (the second copy of a segment is then a duplicate).
  bool has_segment(const OtfpInstance& in, NodeId sender, uint16_t index) const;
  // The segments of the sender's batch still missing (false: held whole).
  bool missing(const OtfpInstance& in, NodeId sender, uint16_t& first, uint16_t& last) const;
  // Drops what is held of the senders in `mask` (bodies unlike a value's: fetched again).
  void forget(OtfpInstance& in, uint64_t mask);
  // This node's own batch, written in place: begin_own, then per segment own_room(j) and
  // put_own(j, bytes, messages), then close_own(segments) makes it held.
  void begin_own(OtfpInstance& in, NodeId self);
  std::span<uint8_t> own_room(OtfpInstance& in, NodeId self, uint16_t j);
  void put_own(OtfpInstance& in, NodeId self, uint16_t j, size_t bytes, uint16_t messages);
  void close_own(OtfpInstance& in, NodeId self, uint16_t segments);
  // A held batch, its segments and messages.
  const Reassembly& batch(const OtfpInstance& in, NodeId sender) const;
  size_t segment_bytes_max() const { return segment_bytes_; }
  uint16_t segments_max(NodeId sender) const { return segments_[sender]; }

  // The value naming the batches of `mask` as this node holds them (digest over sender and CRC).
  OtfpValue value_of(const OtfpInstance& in, uint64_t mask) const;
  static bool holds_all(const OtfpInstance& in, uint64_t mask) { return (mask & ~in.have) == 0; }

 private:
  OtfpInstance& slot(int64_t i) { return slots_[static_cast<size_t>(i % kOtfpRing)]; }
  const OtfpInstance& slot(int64_t i) const { return slots_[static_cast<size_t>(i % kOtfpRing)]; }
  Reassembly& parts(int64_t i, NodeId sender) {
    return parts_[static_cast<size_t>(i % kOtfpRing) * static_cast<size_t>(n_) + sender];
  }
  const Reassembly& parts(int64_t i, NodeId sender) const {
    return parts_[static_cast<size_t>(i % kOtfpRing) * static_cast<size_t>(n_) + sender];
  }

  int n_;
  size_t segment_bytes_;
  std::array<uint16_t, kMaxNodes> segments_{};
  int64_t floor_ = 0;
  std::vector<OtfpInstance> slots_;
  std::vector<Reassembly> parts_;  // kOtfpRing x N: each sender's batch of each instance held
};

}  // namespace tob::core
