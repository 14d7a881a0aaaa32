#include "core/otfp_wire.h"

#include "core/bytes.h"
#include "core/result.h"

namespace tob::core {

void write_vote(uint8_t* p, const OtfpVote& v) {
  store_be64(p, static_cast<uint64_t>(v.instance));
  store_be32(p + 8, v.ballot);
  store_be64(p + 12, v.value.mask);
  store_be64(p + 20, v.value.digest);
}

namespace {

// A list body: `count` entries of `entry` bytes fill it exactly after the header.
bool list_fits(std::span<const uint8_t> body, size_t header, size_t entry, size_t count) {
  return body.size() == header + count * entry;
}

}  // namespace

size_t write_votes(std::span<uint8_t> out, std::span<const OtfpVote> votes) {
  const size_t n = kOtfpListHeader + votes.size() * kOtfpVoteBytes;
  if (out.size() < n || votes.size() > UINT16_MAX) return 0;
  store_be16(out.data(), static_cast<uint16_t>(votes.size()));
  store_be16(out.data() + 2, 0);
  for (size_t k = 0; k < votes.size(); ++k) write_vote(out.data() + kOtfpListHeader + k * kOtfpVoteBytes, votes[k]);
  return n;
}

size_t write_requests(std::span<uint8_t> out, std::span<const OtfpRequest> requests) {
  const size_t n = kOtfpListHeader + requests.size() * kOtfpRequestBytes;
  if (out.size() < n || requests.size() > UINT16_MAX) return 0;
  store_be16(out.data(), static_cast<uint16_t>(requests.size()));
  store_be16(out.data() + 2, 0);
  for (size_t k = 0; k < requests.size(); ++k) {
    uint8_t* p = out.data() + kOtfpListHeader + k * kOtfpRequestBytes;
    store_be64(p, static_cast<uint64_t>(requests[k].instance));
    p[8] = requests[k].sender;
    p[9] = requests[k].attempt;
    p[10] = requests[k].target;
    p[11] = 0;
    store_be16(p + 12, requests[k].first);
    store_be16(p + 14, requests[k].last);
  }
  return n;
}

size_t write_state(std::span<uint8_t> out, int64_t low, uint32_t ballot_seen) {
  if (out.size() < kOtfpStateBytes) return 0;
  store_be64(out.data(), static_cast<uint64_t>(low));
  store_be32(out.data() + 8, ballot_seen);
  return kOtfpStateBytes;
}

size_t write_ballot_instance(std::span<uint8_t> out, uint32_t ballot, int64_t instance) {
  if (out.size() < kOtfpPhase1aBytes) return 0;
  store_be32(out.data(), ballot);
  store_be64(out.data() + 4, static_cast<uint64_t>(instance));
  return kOtfpPhase1aBytes;
}

size_t write_phase1b(std::span<uint8_t> out, const Phase1bPart& part, std::span<const OtfpVote> votes) {
  const size_t n = kOtfpPhase1bHeader + votes.size() * kOtfpVoteBytes;
  if (out.size() < n || votes.size() > UINT16_MAX) return 0;
  store_be32(out.data(), part.ballot);
  out[4] = part.last ? 1 : 0;
  out[5] = 0;
  store_be16(out.data() + 6, static_cast<uint16_t>(votes.size()));
  store_be64(out.data() + 8, static_cast<uint64_t>(part.highest));
  store_be64(out.data() + 16, static_cast<uint64_t>(part.from));
  store_be64(out.data() + 24, static_cast<uint64_t>(part.last ? kOtfpRangeOpen : part.to));
  for (size_t k = 0; k < votes.size(); ++k) write_vote(out.data() + kOtfpPhase1bHeader + k * kOtfpVoteBytes, votes[k]);
  return n;
}

size_t write_data_header(std::span<uint8_t> out, const OtfpData& d) {
  if (out.size() < kOtfpDataHeader) return 0;
  out[0] = d.sender;
  out[1] = 0;
  store_be16(out.data() + 2, d.index);
  store_be64(out.data() + 4, static_cast<uint64_t>(d.instance));
  store_be16(out.data() + 12, d.count);
  store_be16(out.data() + 14, 0);
  return kOtfpDataHeader;
}

bool VoteList::parse(std::span<const uint8_t> body, size_t header_bytes) {
  count_ = 0;
  // Plain lists carry their count at offset 0, phase 1b at offset 6 of its header.
  const size_t count_at = header_bytes == kOtfpListHeader ? 0 : 6;
  if (header_bytes < count_at + 2 || body.size() < header_bytes) return false;
  const size_t count = load_be16(body.data() + count_at);
  if (!list_fits(body, header_bytes, kOtfpVoteBytes, count)) return false;
  entries_ = body.subspan(header_bytes);
  count_ = count;
  return true;
}

OtfpVote read_vote(const uint8_t* p) {
  return {static_cast<int64_t>(load_be64(p)), load_be32(p + 8), {load_be64(p + 12), load_be64(p + 20)}};
}

OtfpVote VoteList::at(size_t k) const {
  TOB_ASSERT(k < count_);
  return read_vote(entries_.data() + k * kOtfpVoteBytes);
}

bool read_requests(std::span<const uint8_t> body, size_t& count, std::span<const uint8_t>& entries) {
  if (body.size() < kOtfpListHeader) return false;
  count = load_be16(body.data());
  if (!list_fits(body, kOtfpListHeader, kOtfpRequestBytes, count)) return false;
  entries = body.subspan(kOtfpListHeader);
  return true;
}

OtfpRequest request_at(std::span<const uint8_t> entries, size_t k) {
  TOB_ASSERT((k + 1) * kOtfpRequestBytes <= entries.size());
  const uint8_t* p = entries.data() + k * kOtfpRequestBytes;
  return {static_cast<int64_t>(load_be64(p)), p[8], p[9], p[10], load_be16(p + 12), load_be16(p + 14)};
}

bool read_state(std::span<const uint8_t> body, int64_t& low, uint32_t& ballot_seen) {
  if (body.size() != kOtfpStateBytes) return false;
  low = static_cast<int64_t>(load_be64(body.data()));
  ballot_seen = load_be32(body.data() + 8);
  return true;
}

bool read_ballot_instance(std::span<const uint8_t> body, uint32_t& ballot, int64_t& instance) {
  if (body.size() != kOtfpPhase1aBytes) return false;
  ballot = load_be32(body.data());
  instance = static_cast<int64_t>(load_be64(body.data() + 4));
  return true;
}

bool read_phase1b(std::span<const uint8_t> body, Phase1b& out) {
  if (body.size() < kOtfpPhase1bHeader) return false;
  Phase1bPart& p = out.part;
  p.ballot = load_be32(body.data());
  p.last = body[4] != 0;
  p.highest = static_cast<int64_t>(load_be64(body.data() + 8));
  p.from = static_cast<int64_t>(load_be64(body.data() + 16));
  p.to = static_cast<int64_t>(load_be64(body.data() + 24));
  if (body[4] > 1 || p.from < 0 || p.to <= p.from || p.highest < -1) return false;
  if (p.last != (p.to == kOtfpRangeOpen)) return false;
  if (!out.votes.parse(body, kOtfpPhase1bHeader)) return false;
  int64_t prev = p.from - 1;
  for (size_t k = 0; k < out.votes.size(); ++k) {
    const OtfpVote v = out.votes.at(k);
    if (v.instance <= prev || v.instance >= p.to || v.instance > p.highest || v.ballot == 0) return false;
    prev = v.instance;
  }
  return true;
}

bool read_data(std::span<const uint8_t> body, OtfpData& d, std::span<const uint8_t>& batch) {
  if (body.size() < kOtfpDataHeader) return false;
  d.sender = body[0];
  d.index = load_be16(body.data() + 2);
  d.instance = static_cast<int64_t>(load_be64(body.data() + 4));
  d.count = load_be16(body.data() + 12);
  batch = body.subspan(kOtfpDataHeader);
  return d.sender < kMaxNodes && d.count > 0 && d.index < d.count;
}

}  // namespace tob::core
