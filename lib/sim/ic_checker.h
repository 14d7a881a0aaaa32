// Property checkers over an IC simulation's records (docs/protocol-ic.md, docs/protocol-ic.md). A
// node is correct when its role is `correct` (faulty nodes are faulty for the whole run). With at
// most f faulty nodes and N > 3f every property must hold:
//
//   ic-termination            every correct node finishes every instance that was run
//   ic-agreement              correct nodes have identical decision vectors (seed 004 §II)
//   ic-integrity              a correct node's entry is its own value at every correct node
//   ic-publication-agreement  correct nodes publish the same (key, t_pub, result, value) lists
//   ic-validity               a (key, t_pub) every correct node wrote in an instance is published
//                             with a value: the correct one (majority) or within the correct
//                             copies' range (median, midpoint)
//   ic-write-admission        a write is refused exactly when its instance finishes after t_pub,
//                             and a refused write is never published
//   ic-read-agreement         reads of the same key, freshness bound and instant agree
//   ic-read-semantics         every read equals a model of the store (latest version published in
//                             [t_min, now], visible exactly at t_pub, bounded retention, errors)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/checker.h"
#include "sim/ic_simulator.h"

namespace tob::sim {

struct IcCheckStats {
  int64_t instances = 0;           // instances run (the scenario's periods)
  int correct_nodes = 0;
  uint64_t decisions = 0;          // decision vectors of correct nodes
  uint64_t publications_ok = 0;    // correct nodes' publications with a value
  uint64_t reductions_failed = 0;  // correct nodes' publications without quorum
  uint64_t reads_ok = 0;           // correct nodes' reads that returned a value
  uint64_t reads_failed = 0;       // correct nodes' reads that returned an error
  uint64_t writes_refused = 0;     // correct nodes' refused writes
};

struct IcCheckReport {
  std::vector<Violation> violations;  // the first ones found, bounded
  uint64_t violation_count = 0;
  IcCheckStats stats;
  bool ok() const { return violation_count == 0; }
};

const std::vector<std::string>& ic_property_names();

IcCheckReport check_ic(const IcRecords& records);

}  // namespace tob::sim
