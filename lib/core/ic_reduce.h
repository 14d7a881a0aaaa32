// Per-key reduction of a decision vector into one value (seed 004 §II, §IV-C: interactive
// consistency makes every correct node know every node's copy; choosing one copy is a separate
// voting step whose rule depends on the data). docs/protocol-ic.md, "Reductions".
//
//   majority      exact bytes: the value held by more than N/2 copies
//   median_*      fault-tolerant median: the lower median of >= 2f+1 copies
//   midpoint_*    fault-tolerant midpoint (MAFT): drop the f lowest and f highest of >= 2f+1
//                 copies, the midpoint of what remains
//
// Numeric values are 8 bytes, big-endian: `f64` an IEEE-754 binary64 bit pattern (finite only),
// `i64` two's complement. A copy that is not a valid number counts as missing. A reduction that
// cannot reach its quorum reports no_quorum and no value: never a value that f faulty copies
// could have chosen.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace tob::core {

enum class Reduction : uint8_t { majority = 0, median_f64, midpoint_f64, median_i64, midpoint_i64 };
inline constexpr int kReductionCount = 5;
const char* to_string(Reduction r);
bool parse_reduction(std::string_view name, Reduction& out);
bool is_numeric(Reduction r);

inline constexpr size_t kNumericValueBytes = 8;

enum class ReduceStatus : uint8_t { ok = 0, no_quorum };
const char* to_string(ReduceStatus s);

struct ReduceOutcome {
  ReduceStatus status = ReduceStatus::no_quorum;
  size_t value_bytes = 0;  // of the result written to `out`
  int copies_used = 0;     // copies that were well-formed for the reduction
};

// `copies`: at most one value per node (the nodes whose decided batch held the key at that
// publishing time). `out` must hold the largest copy (8 bytes for numeric reductions).
ReduceOutcome reduce_copies(Reduction r, int nodes, int f, std::span<const std::span<const uint8_t>> copies,
                            std::span<uint8_t> out);

// Whether a written value suits the reduction (numeric: 8 bytes, f64 finite).
bool valid_value(Reduction r, std::span<const uint8_t> value);

void encode_f64(double v, std::span<uint8_t> out);
bool decode_f64(std::span<const uint8_t> in, double& v);  // false unless 8 bytes and finite
void encode_i64(int64_t v, std::span<uint8_t> out);
bool decode_i64(std::span<const uint8_t> in, int64_t& v);  // false unless 8 bytes

// Reduction by key class: the longest prefix in `classes` that the key starts with.
struct IcKeyClass {
  std::string prefix;
  Reduction reduction = Reduction::majority;
};
Reduction reduction_for(std::span<const uint8_t> key, std::span<const IcKeyClass> classes, Reduction fallback);

}  // namespace tob::core
