// The cluster keys of a running daemon (docs/operations.md "Rotating the cluster key"): the key
// file, one KeyBank per lcore that authenticates (the RX role verifies, the control role seals),
// and the rotation: reload() re-reads the file and hands its keys to both lcores. Reloads run on
// control threads (telemetry's /tob/keys/reload, or the I/O thread after SIGHUP), never on an
// lcore; they are serialized by a mutex that no lcore ever takes.
#pragma once

#include <cstdint>
#include <mutex>
#include <utility>
#include <string>

#include "core/result.h"
#include "dataplane/security/key_bank.h"
#include "dataplane/security/key_file.h"

namespace tob::dataplane::security {

class ClusterKeys {
 public:
  ClusterKeys(std::string path, const KeyFile& f) : path_(std::move(path)), rx_(f), tx_(f), file_(f) {}

  KeyBank& rx() { return rx_; }  // the RX lcore's
  KeyBank& tx() { return tx_; }  // the control lcore's

  // Re-reads the key file; on success both lcores use its keys from their next frame. Refused
  // (nothing changes) when the file is bad, or when an lcore has not yet taken the keys of the
  // reload before within wait_ms (it takes them at its next frame). Returns a one-line account.
  core::Result<std::string> reload(int wait_ms = 1000);

  struct Status {
    KeyFile file;              // the keys in use (ids only are ever shown)
    uint64_t reloads = 0;      // successful
    uint64_t refused = 0;
    std::string last_error;
  };
  Status status() const;
  const std::string& path() const { return path_; }

  // "sending with key 0x1234, also accepting 0xabcd"
  static std::string describe(const KeyFile& f);

 private:
  std::string path_;
  KeyBank rx_;
  KeyBank tx_;
  mutable std::mutex mutex_;  // control threads only
  KeyFile file_;
  uint64_t reloads_ = 0;
  uint64_t refused_ = 0;
  std::string last_error_;
};

}  // namespace tob::dataplane::security
