// RT-EIGByz: one instance of interactive consistency as an EIG tree in flat arrays (seed 004
// §III-B, docs/protocol-ic.md). N > 3f nodes, R = f + 1 rounds.
//
// The tree has R + 1 levels; level x holds N^x entries of `entry_bytes` each, and
//   EIG[x+1][z * N^x + y]  is the z-th child of  EIG[x][y]          (seed 004, optimisation 2)
// so the index of a level-x entry, written in base N, is its path a_1 .. a_x with a_1 the least
// significant digit: "a_x told me that ... a_2 told it that a_1's value is v". Only cycle-free
// paths (no repeated node id) are valid; entries at other paths are never read.
//
// An entry is `length u32 | value[value_bytes_max]`; a length above value_bytes_max (the
// sentinel 0xFFFFFFFF included) is the default value ⊥. Round r: every node sends its level
// r-1 (one contiguous message of N^(r-1) entries) to every node including itself; the message of
// node j lands whole at EIG[r][j * N^(r-1)]. A message that is missing, late, incomplete or of
// the wrong length counts as all ⊥ (seed 004: data that does not arrive in time has no utility).
// Reduction replaces every valid entry of levels R-1 .. 1 by the strict majority of its valid
// children (⊥ when there is none); level 1 is then the decision vector.
//
// Everything is allocated in create(); start/accept/reduce never allocate.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/result.h"
#include "core/schedule.h"

namespace tob::core {

inline constexpr size_t kEigEntryHeaderBytes = 4;
inline constexpr uint32_t kEigBottom = 0xFFFFFFFFu;  // entry length of ⊥
inline constexpr int kEigRoundsMax = 22;              // f <= 21 (N <= 64 and N > 3f)

class EigTree {
 public:
  // Sizes the tree for `nodes` nodes tolerating `f` faults (R = f + 1 rounds) and values of at
  // most `value_bytes_max` bytes; refuses N <= 3f and trees larger than `tree_bytes_limit`.
  static Result<EigTree> create(int nodes, int f, size_t value_bytes_max, size_t tree_bytes_limit);
  // Bytes the tree would take, or 0 when that overflows or exceeds `limit`.
  static size_t tree_bytes(int nodes, int f, size_t value_bytes_max, size_t limit);

  int nodes() const { return n_; }
  int rounds() const { return rounds_; }
  size_t entry_bytes() const { return entry_bytes_; }
  size_t value_bytes_max() const { return value_max_; }
  size_t level_entries(int level) const { return level_size_[static_cast<size_t>(level)]; }
  // What each node sends in round r (1..R): N^(r-1) entries.
  size_t round_message_bytes(int round) const { return level_entries(round - 1) * entry_bytes_; }
  size_t total_bytes() const { return bytes_.size(); }

  // Initialisation stage: the own value goes into the root. Every entry of levels 1..R must then
  // be filled, once per round and sender, by accept, round_slot + mark_received, or set_default.
  void start(std::span<const uint8_t> own_value);
  // Level r-1: the message this node sends in round r.
  std::span<const uint8_t> round_message(int round) const;
  // Where `sender`'s round-r message goes (the caller copies chunks into it, then marks it).
  std::span<uint8_t> round_slot(int round, NodeId sender);
  void mark_received(int round, NodeId sender);
  // A whole message: copied into place when its length is right, else the slot becomes ⊥.
  bool accept(int round, NodeId sender, std::span<const uint8_t> message);
  // Missing, late or incomplete: every entry of the sender's slot becomes ⊥.
  void set_default(int round, NodeId sender);
  bool round_filled(int round) const;

  // Reduction stage; every round must have been filled for every sender.
  void reduce();
  // Decision vector entry of node a after reduce(): false for ⊥.
  bool decision(NodeId a, std::span<const uint8_t>& value) const;
  // Level 1 as a whole (N entries), for copying the decision vector out.
  std::span<const uint8_t> decision_entries() const;

  // Entry access for tests and the fault injectors.
  bool valid_path(int level, size_t index) const { return valid_[level_base_[static_cast<size_t>(level)] + index] != 0; }
  std::span<const uint8_t> entry(int level, size_t index) const;
  // The value of an entry, or false for ⊥ (any length above value_bytes_max).
  static bool entry_value(std::span<const uint8_t> entry, size_t value_bytes_max, std::span<const uint8_t>& value);
  static void write_entry(std::span<uint8_t> entry, std::span<const uint8_t> value);
  static void write_bottom(std::span<uint8_t> entry);

 private:
  EigTree() = default;
  uint8_t* entry_ptr(int level, size_t index);
  const uint8_t* entry_ptr(int level, size_t index) const;
  bool same(const uint8_t* a, const uint8_t* b) const;

  int n_ = 0;
  int rounds_ = 0;
  size_t value_max_ = 0;
  size_t entry_bytes_ = 0;
  std::vector<size_t> level_size_;    // N^x
  std::vector<size_t> level_offset_;  // byte offset of level x in bytes_
  std::vector<size_t> level_base_;    // offset of level x in valid_
  std::vector<uint8_t> valid_;        // 1: cycle-free path
  std::vector<uint8_t> bytes_;
  std::vector<uint64_t> filled_;      // per round (index r): senders whose slot is filled
  bool started_ = false;
};

}  // namespace tob::core
