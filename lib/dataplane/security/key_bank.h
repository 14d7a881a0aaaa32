// Hands new keys from a control thread to one lcore without a lock (docs/operations.md "Rotating
// the cluster key"). Two KeySets: the lcore uses the published one; the control thread prepares
// the other (its contexts allocated off the lcore) and publishes it, but only once the lcore has
// taken the set published last, so it never writes a set the lcore may still be using. The lcore
// calls current() before each frame (or burst): one acquire load when nothing changed.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "dataplane/security/key_set.h"

namespace tob::dataplane::security {

class KeyBank {
 public:
  explicit KeyBank(const KeyFile& f) { sets_[0] = KeySet(f); }
  KeyBank(const KeyBank&) = delete;
  KeyBank& operator=(const KeyBank&) = delete;

  // --- the lcore
  KeySet& current() {
    const uint32_t p = published_.load(std::memory_order_acquire);
    if (p != used_) {
      used_ = p;  // from here on the lcore no longer touches the set before
      taken_.store(p, std::memory_order_release);
    }
    return sets_[p & 1u];
  }

  // --- control threads (one at a time: the caller serializes them)
  // True when the lcore has taken the last published set, so another may be published.
  bool ready() const { return taken_.load(std::memory_order_acquire) == published_.load(std::memory_order_relaxed); }
  // Prepares and publishes f. False (nothing changed) while the lcore has not taken the last one.
  bool publish(const KeyFile& f) {
    if (!ready()) return false;
    const uint32_t next = published_.load(std::memory_order_relaxed) + 1;
    sets_[next & 1u] = KeySet(f);
    published_.store(next, std::memory_order_release);
    return true;
  }
  uint32_t generation() const { return published_.load(std::memory_order_relaxed); }

 private:
  KeySet sets_[2];
  std::atomic<uint32_t> published_{0};
  std::atomic<uint32_t> taken_{0};
  uint32_t used_ = 0;  // the lcore's own copy of taken_
};

}  // namespace tob::dataplane::security
