// Section bodies of the otfp engine (docs/wire-format.md, docs/protocol-otfp.md). All integers
// big-endian. Readers are total: a body of the wrong length or with an entry count that does not
// fill it exactly is refused (the frame then counts as malformed), never read past.
//
//   state    (12)  low u64 | ballot seen u32                   (every otfp frame, 12 bytes)
//   vote     (2)   count u16 | 0 u16 | count x Vote            (phase 2b)
//   phase2a  (3)   count u16 | 0 u16 | count x Vote            (coordinator proposals)
//   request  (4)   count u16 | 0 u16 | count x Request         (retransmission requests)
//   data     (5)   sender u8 | 0 u8 | index u16 | instance u64 | count u16 | 0 u16 | body
//                  (retransmission: segment `index` of `count` of the sender's batch)
//   phase1a  (9)   ballot u32 | low u64                        (12 bytes)
//   phase1b  (10)  ballot u32 | last u8 | 0 u8 | count u16 | highest u64 | from u64 | to u64 | count x Vote
//                  one part of the acceptor's answer: every vote it holds for the instances in
//                  [from, to), each its latest; the last part has to = INT64_MAX (no vote above
//                  `highest`, the highest instance it ever voted in, -1 none)
//   any      (11)  ballot u32 | activation u64                 (12 bytes)
//   decided  (13)  count u16 | 0 u16 | count x Vote            (decisions, for nodes behind)
//
//   Vote    = instance u64 | ballot u32 | mask u64 | digest u64     (28 bytes)
//   Request = instance u64 | sender u8 | attempt u8 | target u8 | 0 u8 | first u16 | last u16
//             (16 bytes; target 0xFF: the partition's acceptor for the attempt; the segments
//             wanted, first..last of the batch, 0..0xFFFF when the requester knows none)
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>

#include "core/schedule.h"

namespace tob::core {

struct OtfpValue {
  uint64_t mask = 0;    // senders whose batch of the instance is in the value
  uint64_t digest = 0;  // over (sender, CRC32C of the batch) of those senders
  bool operator==(const OtfpValue&) const = default;
};

struct OtfpVote {
  int64_t instance = 0;
  uint32_t ballot = 0;
  OtfpValue value;
};

struct OtfpRequest {
  int64_t instance = 0;
  NodeId sender = 0;
  uint8_t attempt = 0;
  NodeId target = kNoNode;  // the acceptor asked; kNoNode: (sender + instance + attempt) mod N
  uint16_t first = 0;       // segments wanted (inclusive)
  uint16_t last = UINT16_MAX;
};

// A retransmitted segment: segment `index` of `count` of `sender`'s batch of `instance`.
struct OtfpData {
  NodeId sender = 0;
  int64_t instance = 0;
  uint16_t index = 0;
  uint16_t count = 1;
};

inline constexpr size_t kOtfpVoteBytes = 28;
inline constexpr size_t kOtfpRequestBytes = 16;
inline constexpr size_t kOtfpListHeader = 4;
inline constexpr size_t kOtfpStateBytes = 12;
inline constexpr size_t kOtfpPhase1aBytes = 12;
inline constexpr size_t kOtfpAnyBytes = 12;
inline constexpr size_t kOtfpPhase1bHeader = 32;
inline constexpr size_t kOtfpDataHeader = 16;

// Ballots: round << 7 | coordinator << 1 | classic, ordered as integers (protocol-otfp.md
// "Ballots"): rounds first, then the coordinator, then classic above fast. The classic ballot
// of coordinated recovery is its fast ballot + 1, the immediate successor, so no ballot of
// another coordinator sits between them (seed 002 §5.3). 0 is no ballot (round 0 is never used).
inline constexpr uint32_t kBallotRoundMax = (1u << 25) - 1;
inline constexpr uint32_t ballot(uint32_t round, bool classic, NodeId coordinator) {
  return (round << 7) | (static_cast<uint32_t>(coordinator & 0x3Fu) << 1) | (classic ? 1u : 0u);
}
inline constexpr uint32_t ballot_round(uint32_t b) { return b >> 7; }
inline constexpr bool ballot_classic(uint32_t b) { return (b & 1u) != 0; }
inline constexpr NodeId ballot_coordinator(uint32_t b) { return static_cast<NodeId>((b >> 1) & 0x3Fu); }
static_assert(ballot(1, true, 5) == ballot(1, false, 5) + 1, "recovery ballot = fast ballot + 1");
static_assert(ballot(1, false, 6) == ballot(1, true, 5) + 1, "no ballot between a recovery ballot and the next");
static_assert(ballot(2, false, 0) > ballot(1, true, kMaxNodes - 1), "rounds first");
static_assert(ballot(kBallotRoundMax, true, kMaxNodes - 1) == UINT32_MAX, "the encoding fills 32 bits");

// One Vote entry at `out` / from `in` (kOtfpVoteBytes).
void write_vote(uint8_t* out, const OtfpVote& v);
OtfpVote read_vote(const uint8_t* in);
// Writers return the bytes written (0 if `out` is too small).
size_t write_votes(std::span<uint8_t> out, std::span<const OtfpVote> votes);
size_t write_requests(std::span<uint8_t> out, std::span<const OtfpRequest> requests);
size_t write_state(std::span<uint8_t> out, int64_t low, uint32_t ballot_seen);
size_t write_ballot_instance(std::span<uint8_t> out, uint32_t ballot, int64_t instance);  // phase1a, any
inline constexpr int64_t kOtfpRangeOpen = INT64_MAX;  // phase 1b `to` of the last part
struct Phase1bPart {
  uint32_t ballot = 0;
  bool last = false;
  int64_t highest = -1;
  int64_t from = 0;
  int64_t to = 0;
};
size_t write_phase1b(std::span<uint8_t> out, const Phase1bPart& part, std::span<const OtfpVote> votes);
size_t write_data_header(std::span<uint8_t> out, const OtfpData& d);

// Readers: false when the body is malformed.
class VoteList {
 public:
  bool parse(std::span<const uint8_t> body, size_t header_bytes = kOtfpListHeader);
  size_t size() const { return count_; }
  OtfpVote at(size_t k) const;

 private:
  std::span<const uint8_t> entries_;
  size_t count_ = 0;
};

bool read_requests(std::span<const uint8_t> body, size_t& count, std::span<const uint8_t>& entries);
OtfpRequest request_at(std::span<const uint8_t> entries, size_t k);
bool read_state(std::span<const uint8_t> body, int64_t& low, uint32_t& ballot_seen);
bool read_ballot_instance(std::span<const uint8_t> body, uint32_t& ballot, int64_t& instance);
struct Phase1b {
  Phase1bPart part;
  VoteList votes;
};
// Also refuses a part whose range is empty or whose votes lie outside it or are not in
// increasing instance order.
bool read_phase1b(std::span<const uint8_t> body, Phase1b& out);
// False unless the header is whole and names a segment of a batch (index < count).
bool read_data(std::span<const uint8_t> body, OtfpData& d, std::span<const uint8_t>& batch);

}  // namespace tob::core
