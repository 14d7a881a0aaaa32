// Command line of dpdk-tob-load (after the EAL arguments and "--"). Two modes:
//   client (default): a DPDK secondary process of one node's daemon, attached through tob.h;
//   --noise: a DPDK primary with its own port that sends best-effort frames at a bit rate.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"

namespace tob::load {

enum class Pattern : uint8_t { constant, poisson, burst };
enum class SizeDist : uint8_t { fixed, uniform, exponential };

struct LoadOptions {
  bool noise = false;
  std::string cluster;
  double duration_s = 0;        // required: every run is bounded
  double drain_s = 1.0;         // client: keep receiving after the last submission
  double drain_max_s = 0;       // > 0: --drain is a quiet period (no delivery for drain_s), at most this
  // Submissions.
  double rate_per_s = 0;        // 0: receive only
  bool saturate = false;        // submit as many as the node takes (perf/compare's rate 0)
  int64_t start_at_ns = 0;      // the first submission at this global instant (0: at once)
  Pattern pattern = Pattern::constant;
  uint32_t burst = 16;          // messages per burst (pattern burst)
  uint32_t submit_burst = 64;   // messages per tob_submit_burst call at most (1: tob_submit)
  SizeDist size_dist = SizeDist::fixed;
  uint32_t size_bytes = 64;     // fixed size, or uniform min / exponential mean
  uint32_t size_max_bytes = 64; // uniform max
  uint64_t seed = 1;
  // Receiving.
  bool release = false;         // wait for each delivery's release instant and record the wake-up
  std::string out_path;         // CSV, one row per delivery
  std::string summary_path;     // JSON summary
  std::string records_path;     // perf/compare's records CSV (sender,seq,send_ns,recv_ns)
  std::string compare_summary_path;  // perf/compare's summary JSON
  double progress_s = 1.0;
  uint32_t idle_sleep_us = 50;  // sleep when a round found nothing to do; 0: busy poll
  std::string label;
  // Test behaviours (integration tests).
  double pause_poll_at_s = -1;  // stop polling at this second ...
  double pause_poll_for_s = 0;  // ... for this long
  double reattach_at_s = -1;    // detach and attach again, resuming after the last seq seen
  // Noise mode.
  double noise_mbps = 0;
  uint32_t noise_frame_bytes = 1500;
  uint8_t noise_dst[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};  // broadcast unless --noise-dst
  uint16_t port_id = 0;
  bool help = false;
};

core::Result<LoadOptions> parse_load_options(const std::vector<std::string>& args);
std::string load_help(const char* program);

}  // namespace tob::load
