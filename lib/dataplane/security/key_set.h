// The keys one lcore authenticates with: a GMAC context per key of the key file (key_file.h),
// made on a control thread, used by one lcore only. keys[0] seals; every key verifies.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "dataplane/security/gmac.h"
#include "dataplane/security/key_file.h"

namespace tob::dataplane::security {

class KeySet {
 public:
  KeySet() = default;
  explicit KeySet(const KeyFile& f);  // allocates the contexts: control threads only

  size_t count() const { return count_; }
  uint16_t send_id() const { return ids_[0]; }
  uint16_t id(size_t i) const { return ids_[i]; }
  Gmac& sender() { return macs_[0]; }
  // The context for a key id, or nullptr when this set does not hold that key.
  Gmac* find(uint16_t key_id) {
    for (size_t i = 0; i < count_; ++i)
      if (ids_[i] == key_id) return &macs_[i];
    return nullptr;
  }

 private:
  std::array<Gmac, kKeysMax> macs_{};
  std::array<uint16_t, kKeysMax> ids_{};
  size_t count_ = 0;
};

}  // namespace tob::dataplane::security
