#include "dataplane/security/key_set.h"

#include "core/result.h"

namespace tob::dataplane::security {

KeySet::KeySet(const KeyFile& f) : count_(f.count) {
  TOB_ASSERT(f.count >= 1 && f.count <= kKeysMax);
  for (size_t i = 0; i < f.count; ++i) {
    macs_[i] = Gmac(f.keys[i].bytes);
    ids_[i] = f.keys[i].id;
  }
}

}  // namespace tob::dataplane::security
