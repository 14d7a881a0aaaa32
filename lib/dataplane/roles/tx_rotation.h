// --tx-method a,b,...: the TX method of each own turn, in rotation (docs/operations.md "TX
// methods"), so that the methods are compared in one run under the same conditions. All the
// frames of one turn leave by the same method.
#pragma once

#include <cstdint>

#include "dataplane/config/options.h"

namespace tob::dataplane {

class TxRotation {
 public:
  TxRotation(const TxMethod* methods, int count) : methods_(methods), count_(count) {}
  // The method for a frame of `cycle` (the cycle of this node's turn); *new_turn: the first frame
  // of a new turn.
  TxMethod method_for(int64_t cycle, bool* new_turn) {
    *new_turn = cycle != last_cycle_;
    if (*new_turn) {
      last_cycle_ = cycle;
      turn_ = (turn_ + 1) % count_;
    }
    return methods_[turn_];
  }

 private:
  const TxMethod* methods_;
  int count_;
  int turn_ = 0;
  int64_t last_cycle_ = -1;
};

}  // namespace tob::dataplane
