// dpdk-tob-load in client mode: a DPDK secondary process attached to its node's daemon through
// tob.h that submits messages on a schedule, polls deliveries and records each one. Its outputs:
// the delivery CSV (--out), the JSON summary (--summary), and the files of perf/compare's client
// contract (--records, --compare-summary; perf/compare/README.md "The client contract").
#pragma once

#include <csignal>
#include <cstdint>
#include <random>
#include <vector>

#include "dataplane/observe/histogram.h"
#include "load_options.h"
#include "tob.h"

namespace tob::load {

// Every load message starts with this header: magic u32 "TOBL", node u16, pad u16, load_seq u64,
// pad u64 (the send instant travels in tob.h's submit_ns).
inline constexpr uint32_t kLoadMagic = 0x544F424C;
inline constexpr size_t kLoadHeader = 24;

struct Row {
  uint64_t seq;
  uint16_t sender;
  uint16_t client;
  uint32_t bytes;
  uint64_t msg_id;
  int32_t load_node;  // -1: not a dpdk-tob-load message
  uint64_t load_seq;
  int64_t submit_ns;
  int64_t deliver_ns;
  int64_t release_ns;
  int64_t received_ns;
  int64_t woke_ns;
  int64_t woke_tai_ns;  // --release: CLOCK_TAI when it woke (the true instant on one machine, whatever
                        // the daemon's clock synchronisation made of its global time)
};

struct Totals {
  uint64_t submitted = 0;
  uint64_t refused = 0;
  uint64_t delivered = 0;
  uint64_t delivered_bytes = 0;
  uint64_t own = 0;
  uint64_t delivered_in_window = 0;  // received while submissions ran: the throughput
  uint64_t reattaches = 0;
  int64_t first_submit_ns = 0;
  int64_t last_submit_ns = 0;
  int error = 0;
};

class LoadClient {
 public:
  LoadClient(const LoadOptions& o, tob_client* c);
  // Runs the schedule until its end or until *stop is set; then detaches. 0, or the tob.h error
  // that stopped it.
  int run(const volatile std::sig_atomic_t* stop);
  // Outputs, after run(): false if a file cannot be written.
  bool write_csv() const;
  bool write_records() const;
  void write_summary() const;
  void write_compare_summary() const;
  void print_summary() const;
  const Totals& totals() const { return t_; }

 private:
  uint32_t next_size();
  void submit_due(int64_t now);
  bool reattach();
  bool poll_once();
  void progress(int64_t now, bool paused);
  bool drained(int64_t now) const;

  const LoadOptions& o_;
  tob_client* c_;
  uint16_t node_;
  uint16_t client_;
  std::vector<Row> rows_;
  dataplane::Histogram latency_;
  dataplane::Histogram release_late_;
  Totals t_;
  std::mt19937_64 rng_;        // poisson gaps
  std::mt19937_64 size_rng_;   // message sizes
  std::vector<uint8_t> payload_;     // the messages of one submit burst, 64 KiB apart
  std::vector<tob_msg> burst_;        // ... and their descriptors
  std::vector<double> burst_next_;    // the schedule after each of them
  tob_delivery batch_[256];
  tob_client_stats final_stats_{};
  // The schedule, in global nanoseconds (tob_now_ns).
  int64_t t0_ = 0;             // attach
  int64_t start_ = 0;          // first submission
  int64_t submit_end_ = 0;
  int64_t end_ = 0;            // the drain's end at the latest
  int64_t last_delivery_ns_ = 0;
  double gap_ns_ = 0;
  double next_submit_ = 0;
  uint64_t load_seq_ = 0;
  int64_t next_progress_ = 0;
  uint64_t last_progress_delivered_ = 0;
};

}  // namespace tob::load
