#include "dataplane/security/cluster_keys.h"

#include <chrono>
#include <cstdio>
#include <thread>

namespace tob::dataplane::security {

std::string ClusterKeys::describe(const KeyFile& f) {
  char buf[96];
  if (f.count > 1)
    std::snprintf(buf, sizeof buf, "sending with key 0x%04x, also accepting 0x%04x", f.keys[0].id, f.keys[1].id);
  else
    std::snprintf(buf, sizeof buf, "sending with key 0x%04x, accepting no other", f.keys[0].id);
  return buf;
}

core::Result<std::string> ClusterKeys::reload(int wait_ms) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto f = read_key_file(path_);
  if (!f) {
    ++refused_;
    last_error_ = f.error().message;
    return core::Error{last_error_ + " (the keys in use stay: " + describe(file_) + ")"};
  }
  // Both lcores must be ready, so that they switch together: never one sealing with a key the
  // other does not accept yet. An lcore takes the published keys at its next frame.
  for (int waited = 0; !(rx_.ready() && tx_.ready()); ++waited) {
    if (waited >= wait_ms) {
      ++refused_;
      last_error_ = "an lcore has not taken the keys of the previous reload yet (no frames for " +
                    std::to_string(wait_ms) + " ms?): try again";
      return core::Error{last_error_};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const bool rx_ok = rx_.publish(f.value());
  const bool tx_ok = tx_.publish(f.value());
  TOB_ASSERT(rx_ok && tx_ok);  // both were ready, and only reload() publishes, under the mutex
  file_ = f.value();
  ++reloads_;
  last_error_.clear();
  return path_ + ": " + describe(file_);
}

ClusterKeys::Status ClusterKeys::status() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return {file_, reloads_, refused_, last_error_};
}

}  // namespace tob::dataplane::security
