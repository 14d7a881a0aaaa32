// Errors from outside the process (configuration, frames, applications) are values.
// Result<T> carries either a value or an Error with a message a person can act on.
#pragma once

#include <cassert>
#include <cstdint>
#include <string>
#include <utility>
#include <variant>

namespace tob::core {

// What kind of error, for callers that react to it; `message` says it to a person.
enum class Errc : uint8_t {
  invalid = 0,           // any other invalid input
  no_slots,
  too_many_nodes,
  bad_cycle,
  bad_margin,
  bad_precision,
  bad_sends_per_slot,
  bad_copy_gap,
  zero_slot_length,
  negative_slot_offset,
  slot_beyond_cycle,
  slot_too_short,        // decision margin and copies do not fit
  slots_overlap,
  node_not_in_schedule,
  bad_node_config,
};

struct Error {
  std::string message;
  Errc code = Errc::invalid;
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}            // NOLINT: implicit on purpose
  Result(Error error) : v_(std::move(error)) {}        // NOLINT: implicit on purpose

  bool ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return ok(); }

  T& value() & {
    assert(ok());
    return std::get<T>(v_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<T>(v_);
  }
  T&& value() && {
    assert(ok());
    return std::get<T>(std::move(v_));
  }
  const Error& error() const {
    assert(!ok());
    return std::get<Error>(v_);
  }

 private:
  std::variant<T, Error> v_;
};

// Assertions for our own bugs stay on in release builds (TigerBeetle style).
[[noreturn]] void assert_fail(const char* expr, const char* file, int line);

}  // namespace tob::core

#define TOB_ASSERT(expr) \
  ((expr) ? static_cast<void>(0) : ::tob::core::assert_fail(#expr, __FILE__, __LINE__))
