#include "core/eig.h"

#include <cstring>
#include <string>

#include "core/bytes.h"

namespace tob::core {

size_t EigTree::tree_bytes(int nodes, int f, size_t value_bytes_max, size_t limit) {
  if (nodes < 1 || f < 0 || f + 1 > kEigRoundsMax) return 0;
  const size_t entry = kEigEntryHeaderBytes + value_bytes_max;
  if (value_bytes_max > limit || entry > limit) return 0;
  size_t level = 1;  // N^x
  size_t total = 0;
  for (int x = 0; x <= f + 1; ++x) {
    if (level > limit / entry) return 0;
    total += level * entry;
    if (total > limit) return 0;
    if (x <= f && level > limit / static_cast<size_t>(nodes)) return 0;
    level *= static_cast<size_t>(nodes);
  }
  return total;
}

Result<EigTree> EigTree::create(int nodes, int f, size_t value_bytes_max, size_t tree_bytes_limit) {
  if (nodes < 1 || nodes > kMaxNodes)
    return Error{"interactive consistency needs 1..64 nodes, got " + std::to_string(nodes)};
  if (f < 0) return Error{"f must not be negative"};
  if (nodes <= 3 * f)
    return Error{"RT-EIGByz needs N > 3f: " + std::to_string(nodes) + " nodes tolerate at most f = " +
                 std::to_string((nodes - 1) / 3) + ", not " + std::to_string(f)};
  if (value_bytes_max == 0 || value_bytes_max >= kEigBottom)
    return Error{"EIG value size must be 1..4294967294 bytes"};
  const size_t bytes = tree_bytes(nodes, f, value_bytes_max, tree_bytes_limit);
  if (bytes == 0)
    return Error{"the EIG tree for N = " + std::to_string(nodes) + ", f = " + std::to_string(f) +
                 " and values of " + std::to_string(value_bytes_max) + " bytes exceeds the limit of " +
                 std::to_string(tree_bytes_limit) + " bytes (level f+1 has N^(f+1) entries): lower f, " +
                 "the key count or value size, or raise the tree limit"};
  EigTree t;
  t.n_ = nodes;
  t.rounds_ = f + 1;
  t.value_max_ = value_bytes_max;
  t.entry_bytes_ = kEigEntryHeaderBytes + value_bytes_max;
  size_t size = 1;
  size_t offset = 0;
  size_t base = 0;
  for (int x = 0; x <= t.rounds_; ++x) {
    t.level_size_.push_back(size);
    t.level_offset_.push_back(offset);
    t.level_base_.push_back(base);
    offset += size * t.entry_bytes_;
    base += size;
    size *= static_cast<size_t>(nodes);
  }
  TOB_ASSERT(offset == bytes);
  t.bytes_.assign(bytes, 0);
  t.filled_.assign(static_cast<size_t>(t.rounds_) + 1, 0);
  // Cycle-free paths: the base-N digits of the index are distinct (seed 004: a ~> b ~> a is
  // invalid; a node never informs itself indirectly about its own value).
  t.valid_.assign(base, 0);
  for (int x = 0; x <= t.rounds_; ++x) {
    for (size_t y = 0; y < t.level_size_[static_cast<size_t>(x)]; ++y) {
      uint64_t seen = 0;
      bool ok = true;
      size_t rest = y;
      for (int d = 0; d < x && ok; ++d) {
        const size_t digit = rest % static_cast<size_t>(nodes);
        rest /= static_cast<size_t>(nodes);
        if ((seen >> digit) & 1u) ok = false;
        seen |= uint64_t{1} << digit;
      }
      t.valid_[t.level_base_[static_cast<size_t>(x)] + y] = ok ? 1 : 0;
    }
  }
  return t;
}

uint8_t* EigTree::entry_ptr(int level, size_t index) {
  return bytes_.data() + level_offset_[static_cast<size_t>(level)] + index * entry_bytes_;
}
const uint8_t* EigTree::entry_ptr(int level, size_t index) const {
  return bytes_.data() + level_offset_[static_cast<size_t>(level)] + index * entry_bytes_;
}

std::span<const uint8_t> EigTree::entry(int level, size_t index) const {
  TOB_ASSERT(level >= 0 && level <= rounds_ && index < level_entries(level));
  return {entry_ptr(level, index), entry_bytes_};
}

bool EigTree::entry_value(std::span<const uint8_t> e, size_t value_bytes_max, std::span<const uint8_t>& value) {
  TOB_ASSERT(e.size() >= kEigEntryHeaderBytes);
  const uint32_t len = load_be32(e.data());
  if (len > value_bytes_max || len > e.size() - kEigEntryHeaderBytes) return false;
  value = e.subspan(kEigEntryHeaderBytes, len);
  return true;
}

void EigTree::write_entry(std::span<uint8_t> e, std::span<const uint8_t> value) {
  TOB_ASSERT(e.size() >= kEigEntryHeaderBytes + value.size());
  store_be32(e.data(), static_cast<uint32_t>(value.size()));
  if (!value.empty()) std::memcpy(e.data() + kEigEntryHeaderBytes, value.data(), value.size());
}

void EigTree::write_bottom(std::span<uint8_t> e) {
  TOB_ASSERT(e.size() >= kEigEntryHeaderBytes);
  store_be32(e.data(), kEigBottom);
}

void EigTree::start(std::span<const uint8_t> own_value) {
  TOB_ASSERT(own_value.size() <= value_max_);
  write_entry({entry_ptr(0, 0), entry_bytes_}, own_value);
  for (uint64_t& f : filled_) f = 0;
  started_ = true;
}

std::span<const uint8_t> EigTree::round_message(int round) const {
  TOB_ASSERT(started_ && round >= 1 && round <= rounds_);
  return {entry_ptr(round - 1, 0), round_message_bytes(round)};
}

std::span<uint8_t> EigTree::round_slot(int round, NodeId sender) {
  TOB_ASSERT(started_ && round >= 1 && round <= rounds_ && sender < n_);
  const size_t per_sender = level_entries(round - 1);
  return {entry_ptr(round, size_t{sender} * per_sender), per_sender * entry_bytes_};
}

void EigTree::mark_received(int round, NodeId sender) {
  TOB_ASSERT(round >= 1 && round <= rounds_ && sender < n_);
  filled_[static_cast<size_t>(round)] |= uint64_t{1} << sender;
}

bool EigTree::accept(int round, NodeId sender, std::span<const uint8_t> message) {
  std::span<uint8_t> slot = round_slot(round, sender);
  if (message.size() != slot.size()) {
    set_default(round, sender);
    return false;
  }
  std::memcpy(slot.data(), message.data(), slot.size());  // whole message into place (seed 004 ④)
  mark_received(round, sender);
  return true;
}

void EigTree::set_default(int round, NodeId sender) {
  std::span<uint8_t> slot = round_slot(round, sender);
  for (size_t off = 0; off < slot.size(); off += entry_bytes_) write_bottom(slot.subspan(off, entry_bytes_));
  mark_received(round, sender);
}

bool EigTree::round_filled(int round) const {
  const uint64_t all = n_ == 64 ? ~uint64_t{0} : (uint64_t{1} << n_) - 1;
  return filled_[static_cast<size_t>(round)] == all;
}

bool EigTree::same(const uint8_t* a, const uint8_t* b) const {
  std::span<const uint8_t> va;
  std::span<const uint8_t> vb;
  const bool ha = entry_value({a, entry_bytes_}, value_max_, va);
  const bool hb = entry_value({b, entry_bytes_}, value_max_, vb);
  if (ha != hb) return false;
  if (!ha) return true;  // both ⊥
  return va.size() == vb.size() && (va.empty() || std::memcmp(va.data(), vb.data(), va.size()) == 0);
}

void EigTree::reduce() {
  TOB_ASSERT(started_);
  for (int r = 1; r <= rounds_; ++r) TOB_ASSERT(round_filled(r));
  const auto n = static_cast<size_t>(n_);
  size_t children[kMaxNodes];
  for (int x = rounds_ - 1; x >= 1; --x) {
    const size_t stride = level_entries(x);  // child z of y is at z * N^x + y
    for (size_t y = 0; y < stride; ++y) {
      if (!valid_path(x, y)) continue;
      size_t k = 0;
      for (size_t z = 0; z < n; ++z) {
        const size_t c = z * stride + y;
        if (valid_path(x + 1, c)) children[k++] = c;
      }
      // A valid level-x path has N - x valid children, and x <= f < N - 2f.
      TOB_ASSERT(k >= 1);
      // Boyer-Moore majority vote, then a count: a strict majority of the valid children or ⊥.
      size_t cand = children[0];
      size_t votes = 0;
      for (size_t i = 0; i < k; ++i) {
        if (votes == 0) {
          cand = children[i];
          votes = 1;
        } else if (same(entry_ptr(x + 1, children[i]), entry_ptr(x + 1, cand))) {
          ++votes;
        } else {
          --votes;
        }
      }
      size_t count = 0;
      for (size_t i = 0; i < k; ++i) count += same(entry_ptr(x + 1, children[i]), entry_ptr(x + 1, cand)) ? size_t{1} : size_t{0};
      uint8_t* dst = entry_ptr(x, y);
      std::span<const uint8_t> v;
      if (2 * count > k && entry_value({entry_ptr(x + 1, cand), entry_bytes_}, value_max_, v)) {
        write_entry({dst, entry_bytes_}, v);
      } else {
        write_bottom({dst, entry_bytes_});
      }
    }
  }
  started_ = false;
}

bool EigTree::decision(NodeId a, std::span<const uint8_t>& value) const {
  TOB_ASSERT(a < n_);
  return entry_value({entry_ptr(1, size_t{a}), entry_bytes_}, value_max_, value);
}

std::span<const uint8_t> EigTree::decision_entries() const {
  return {entry_ptr(1, 0), level_entries(1) * entry_bytes_};
}

}  // namespace tob::core
