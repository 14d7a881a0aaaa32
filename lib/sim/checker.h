// Property checkers over a simulation's records (docs/protocol-mars.md): validity, uniform agreement,
// uniform integrity, uniform total order and FIFO of deliveries; membership agreement among
// correct members; detection of a failed member by all within two cycles; delivery within one
// cycle of sending. A node is *correct* if it never crashed and never shut itself down.
#pragma once

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "core/engine.h"
#include "core/schedule.h"
#include "sim/records.h"

namespace tob::sim {

struct Violation {
  std::string property;
  std::string detail;
};

struct CheckStats {
  uint64_t messages_delivered = 0;   // distinct messages delivered by at least one node
  uint64_t deliveries = 0;           // delivery events over all nodes
  uint64_t removals = 0;
  uint64_t admissions = 0;
  uint64_t self_shutdowns = 0;
  uint64_t sent = 0;
  uint64_t undelivered = 0;
  int correct_nodes = 0;
  int64_t detection_cycles_max_x1000 = 0;  // worst failure detection, in thousandths of a cycle
  int failures_checked = 0;
  // otfp
  uint64_t decisions = 0;                  // instance decisions recorded over all nodes
  int64_t latency_cycles_max_x1000 = 0;    // worst submit -> delivery at a correct node (liveness)
  uint64_t latency_judged = 0;             // messages the liveness bound judged
  // clocks (sim/clock_checker.h)
  int64_t clock_spread_ns_max = 0;         // worst precision sample after the warm-up
  int64_t clock_spread_cycle = -1;
  uint64_t clock_samples = 0;
  uint64_t clock_rounds_out = 0;
  uint64_t clock_rounds_beyond = 0;        // judged rounds beyond the hypothesis (not contracting)
  int64_t clock_bound_ns_max = 0;          // the largest bound a cycle was judged against
  int64_t release_skew_ns_max = 0;         // worst release instant skew among correct nodes
  uint64_t releases_judged = 0;
};

// Records a violation, printf-style, in a report with `violations` and `violation_count` (every
// checker's report): counts them all, keeps the text of the first kMaxReported.
template <class Report>
struct Reporter {
  static constexpr size_t kMaxReported = 20;
  Report& r;
  void operator()(const char* property, const char* f, ...) __attribute__((format(printf, 3, 4))) {
    ++r.violation_count;
    if (r.violations.size() >= kMaxReported) return;
    char buf[400];
    va_list ap;
    va_start(ap, f);
    std::vsnprintf(buf, sizeof buf, f, ap);
    va_end(ap);
    r.violations.push_back({property, buf});
  }
};

struct CheckReport {
  std::vector<Violation> violations;  // the first ones found, bounded
  uint64_t violation_count = 0;
  CheckStats stats;
  bool ok() const { return violation_count == 0; }
};

// The names of the properties, in the order they are reported.
const std::vector<std::string>& property_names();

// tolerance_ns: slack for clock offsets between nodes (virtual vs local time).
CheckReport check(const core::Schedule& schedule, const Records& records, int64_t tolerance_ns = 0);

// Liveness after a drain (mars, `membership-reformed`): with no fault in the last cycles of the
// run, the membership has formed again: every running node is a member and holds the set of
// exactly the running nodes. nodes[i]: node i's engine at the end, nullptr while it is down.
void check_reformed(const std::vector<const core::Engine*>& nodes, CheckReport& report);

}  // namespace tob::sim
