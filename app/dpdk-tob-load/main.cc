// dpdk-tob-load: pktgen-style load, latency and noise experiments for dpdk-tob (issue: ring API
// and load tool). See load_options.cc --help. One instance per node in client mode; the noise
// mode is a separate DPDK primary with its own port.
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <x86intrin.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "dataplane/observe/histogram.h"
#include "load_options.h"
#include "tob.h"

namespace {

using tob::dataplane::Histogram;
using tob::dataplane::HistogramSummary;
using tob::load::LoadOptions;

volatile std::sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

constexpr uint32_t kLoadMagic = 0x544F424C;  // "TOBL"
constexpr size_t kLoadHeader = 24;           // magic u32, node u16, pad u16, load_seq u64, pad u64

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
};

struct Totals {
  uint64_t submitted = 0;
  uint64_t refused = 0;
  uint64_t delivered = 0;
  uint64_t delivered_bytes = 0;
  uint64_t own = 0;
  uint64_t delivered_in_window = 0;  // received while submissions ran: the throughput
  uint64_t reattaches = 0;
  int error = 0;
};

std::string micros(int64_t ns) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", static_cast<double>(ns) / 1e3);
  return b;
}

class Sizes {
 public:
  Sizes(const LoadOptions& o, uint32_t max) : o_(o), max_(max), rng_(o.seed * 7919 + 17) {}
  uint32_t next() {
    uint32_t s = o_.size_bytes;
    if (o_.size_dist == tob::load::SizeDist::uniform) {
      s = std::uniform_int_distribution<uint32_t>(o_.size_bytes, o_.size_max_bytes)(rng_);
    } else if (o_.size_dist == tob::load::SizeDist::exponential) {
      s = static_cast<uint32_t>(std::lround(std::exponential_distribution<double>(1.0 / o_.size_bytes)(rng_)));
    }
    return std::clamp<uint32_t>(s, static_cast<uint32_t>(kLoadHeader), max_);
  }

 private:
  const LoadOptions& o_;
  uint32_t max_;
  std::mt19937_64 rng_;
};

int run_client(const LoadOptions& o) {
  tob_client* c = nullptr;
  int rc = tob_attach(o.cluster.c_str(), nullptr, &c);
  if (rc < 0) {
    std::fprintf(stderr, "dpdk-tob-load: attach to cluster '%s': %s\n", o.cluster.c_str(), tob_strerror(rc));
    return 1;
  }
  const uint16_t node = tob_node_id(c);
  uint16_t client = tob_client_id(c);
  std::printf("dpdk-tob-load: node %u client %u, rate %g/s %s, duration %g s%s\n", node, client, o.rate_per_s,
              o.pattern == tob::load::Pattern::constant ? "constant"
              : o.pattern == tob::load::Pattern::poisson ? "poisson" : "burst",
              o.duration_s, o.release ? ", waiting for release instants" : "");
  std::vector<Row> rows;
  rows.reserve(static_cast<size_t>(std::min(5e6, (o.duration_s + o.drain_s) * std::max(1000.0, o.rate_per_s * 8))));
  Histogram latency;
  Histogram release_late;
  Totals t;
  Sizes sizes(o, 65535);
  std::mt19937_64 rng(o.seed);
  std::vector<uint8_t> payload(65536, 0);
  tob_delivery batch[256];

  const int64_t t0 = tob_now_ns(c);
  const int64_t submit_end = t0 + static_cast<int64_t>(o.duration_s * 1e9);
  const int64_t end = submit_end + static_cast<int64_t>(o.drain_s * 1e9);
  const double gap_ns = o.rate_per_s > 0 ? 1e9 / o.rate_per_s : 0;
  double next_submit = static_cast<double>(t0);
  uint64_t load_seq = 0;
  int64_t next_progress = t0 + static_cast<int64_t>(o.progress_s * 1e9);
  bool reattached = false;
  uint64_t last_progress_delivered = 0;

  for (int64_t now = t0; now < end && g_stop == 0; now = tob_now_ns(c)) {
    const double at_s = static_cast<double>(now - t0) / 1e9;
    // Submissions on schedule; backpressure delays them (never skipped, never dropped).
    const uint64_t submitted_before = t.submitted;
    while (gap_ns > 0 && now < submit_end && next_submit <= static_cast<double>(now)) {
      uint32_t len = sizes.next();
      tob_client_stats cs{};
      len = std::min<uint32_t>(len, 65535);
      uint8_t* p = payload.data();
      std::memcpy(p, &kLoadMagic, 4);
      std::memcpy(p + 4, &node, 2);
      std::memcpy(p + 8, &load_seq, 8);
      rc = tob_submit(c, p, len);
      if (rc == TOB_ETOOLARGE) {
        std::fprintf(stderr, "dpdk-tob-load: %u-byte messages exceed the cluster's payload limit\n", len);
        t.error = rc;
        break;
      }
      if (rc == TOB_EAGAIN) {
        ++t.refused;
        (void)cs;
        break;
      }
      if (rc < 0) {
        t.error = rc;
        break;
      }
      ++t.submitted;
      ++load_seq;
      if (o.pattern == tob::load::Pattern::poisson) {
        next_submit += std::exponential_distribution<double>(1.0 / gap_ns)(rng);
      } else if (o.pattern == tob::load::Pattern::burst) {
        if (load_seq % o.burst == 0) next_submit += gap_ns * o.burst;
      } else {
        next_submit += gap_ns;
      }
    }
    if (t.error != 0) break;
    // A test behaviour: detach and attach again, resuming right after the last seq handled.
    if (o.reattach_at_s >= 0 && !reattached && at_s >= o.reattach_at_s) {
      reattached = true;
      tob_client_stats cs{};
      tob_get_stats(c, &cs);
      const uint64_t last = cs.last_seq;
      tob_detach(c);
      tob_attach_options ao{last};
      rc = tob_attach(o.cluster.c_str(), &ao, &c);
      if (rc < 0) {
        std::fprintf(stderr, "dpdk-tob-load: reattach after seq %" PRIu64 ": %s\n", last, tob_strerror(rc));
        t.error = rc;
        c = nullptr;
        break;
      }
      client = tob_client_id(c);
      ++t.reattaches;
      std::printf("dpdk-tob-load: reattached as client %u, resuming after seq %" PRIu64 "\n", client, last);
    }
    const bool paused = o.pause_poll_at_s >= 0 && at_s >= o.pause_poll_at_s && at_s < o.pause_poll_at_s + o.pause_poll_for_s;
    bool idle_round = submitted_before == t.submitted;  // nothing went out (none due, or refused)
    if (!paused) {
      const int n = tob_poll(c, batch, 256);
      if (n < 0) {
        std::fprintf(stderr, "dpdk-tob-load: poll: %s\n", tob_strerror(n));
        t.error = n;
        break;
      }
      const int64_t received = n > 0 ? tob_now_ns(c) : 0;
      if (n > 0) idle_round = false;
      for (int i = 0; i < n; ++i) {
        const tob_delivery& d = batch[i];
        Row r{d.seq, d.sender, d.client, d.length, d.msg_id, -1, 0, d.submit_ns, d.deliver_ns, d.release_ns, received, 0};
        uint32_t magic = 0;
        if (d.length >= kLoadHeader) std::memcpy(&magic, d.payload, 4);
        if (magic == kLoadMagic) {
          uint16_t from = 0;
          std::memcpy(&from, d.payload + 4, 2);
          std::memcpy(&r.load_seq, d.payload + 8, 8);
          r.load_node = from;
          latency.record(received - d.submit_ns);
        }
        if (o.release) {
          const int64_t late = tob_wait_release(c, &d);
          r.woke_ns = d.release_ns + late;
          release_late.record(late);
        }
        if (d.sender == node && d.client == client) ++t.own;
        if (received < submit_end) ++t.delivered_in_window;
        ++t.delivered;
        t.delivered_bytes += d.length;
        rows.push_back(r);
      }
    }
    if (idle_round && o.idle_sleep_us > 0) {
      // Nothing due and nothing delivered: give the core away briefly (the daemons share it).
      const timespec ts{0, static_cast<long>(o.idle_sleep_us) * 1000};
      nanosleep(&ts, nullptr);
    }
    if (o.progress_s > 0 && now >= next_progress) {
      const HistogramSummary l = latency.summary();
      std::printf("  %5.1f s  submitted %" PRIu64 " refused %" PRIu64 "  delivered %" PRIu64 " (+%" PRIu64
                  ")  latency p50 %s p99 %s us%s\n",
                  at_s, t.submitted, t.refused, t.delivered, t.delivered - last_progress_delivered,
                  micros(l.p50).c_str(), micros(l.p99).c_str(), paused ? "  [not polling]" : "");
      std::fflush(stdout);
      last_progress_delivered = t.delivered;
      next_progress += static_cast<int64_t>(o.progress_s * 1e9);
    }
  }
  tob_client_stats cs{};
  if (c != nullptr) {
    tob_get_stats(c, &cs);
    tob_detach(c);
  }

  if (!o.out_path.empty()) {
    std::FILE* f = std::fopen(o.out_path.c_str(), "w");
    if (f == nullptr) {
      std::fprintf(stderr, "dpdk-tob-load: %s: %s\n", o.out_path.c_str(), std::strerror(errno));
      return 1;
    }
    std::fprintf(f, "seq,sender,client,msg_id,load_node,load_seq,bytes,submit_ns,deliver_ns,release_ns,received_ns,woke_ns\n");
    for (const Row& r : rows)
      std::fprintf(f, "%" PRIu64 ",%u,%u,%" PRIu64 ",%d,%" PRIu64 ",%u,%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 "\n",
                   r.seq, r.sender, r.client, r.msg_id, r.load_node, r.load_seq, r.bytes, r.submit_ns, r.deliver_ns,
                   r.release_ns, r.received_ns, r.woke_ns);
    std::fclose(f);
  }
  const double window_s = o.duration_s + o.drain_s;
  const HistogramSummary l = latency.summary();
  const HistogramSummary rl = release_late.summary();
  std::printf("dpdk-tob-load summary (node %u%s%s):\n", node, o.label.empty() ? "" : ", ", o.label.c_str());
  std::printf("  submitted %" PRIu64 ", refused (backpressure) %" PRIu64 ", lagging events %" PRIu64 "\n", t.submitted,
              t.refused, cs.lagging_events);
  std::printf("  delivered %" PRIu64 " (%.0f msgs/s while submitting, %.3f Mbit/s of payload overall), own %" PRIu64
              "\n", t.delivered, t.delivered_in_window / o.duration_s, t.delivered_bytes * 8 / window_s / 1e6, t.own);
  std::printf("  latency submit->delivery (us): p50 %s p90 %s p99 %s p99.9 %s max %s (%" PRIu64 " msgs)\n",
              micros(l.p50).c_str(), micros(l.p90).c_str(), micros(l.p99).c_str(), micros(l.p999).c_str(),
              micros(l.max).c_str(), l.count);
  if (o.release)
    std::printf("  release wake-up late by (us): p50 %s p99 %s max %s\n", micros(rl.p50).c_str(), micros(rl.p99).c_str(),
                micros(rl.max).c_str());
  if (!o.summary_path.empty()) {
    std::FILE* f = std::fopen(o.summary_path.c_str(), "w");
    if (f != nullptr) {
      std::fprintf(f,
                   "{\"label\": \"%s\", \"node\": %u, \"rate\": %g, \"duration_s\": %g, \"submitted\": %" PRIu64
                   ", \"refused\": %" PRIu64 ", \"lagging_events\": %" PRIu64 ", \"delivered\": %" PRIu64
                   ", \"own\": %" PRIu64 ", \"reattaches\": %" PRIu64 ", \"throughput_msgs_s\": %.1f"
                   ", \"latency_ns\": {\"count\": %" PRIu64 ", \"p50\": %" PRId64 ", \"p90\": %" PRId64 ", \"p99\": %" PRId64
                   ", \"p999\": %" PRId64 ", \"max\": %" PRId64 "}, \"release_late_ns\": {\"p50\": %" PRId64
                   ", \"p99\": %" PRId64 ", \"max\": %" PRId64 "}, \"error\": %d}\n",
                   o.label.c_str(), node, o.rate_per_s, o.duration_s, t.submitted, t.refused, cs.lagging_events,
                   t.delivered, t.own, t.reattaches, t.delivered_in_window / o.duration_s, l.count, l.p50, l.p90, l.p99, l.p999,
                   l.max, rl.p50, rl.p99, rl.max, t.error);
      std::fclose(f);
    }
  }
  if (t.error != 0) {
    std::fprintf(stderr, "dpdk-tob-load: stopped on error: %s\n", tob_strerror(t.error));
    return 1;
  }
  return 0;
}

int run_noise(const LoadOptions& o) {
  if (!rte_eth_dev_is_valid_port(o.port_id)) {
    std::fprintf(stderr, "dpdk-tob-load --noise: port %u does not exist (give --vdev)\n", o.port_id);
    return 2;
  }
  rte_mempool* pool = rte_pktmbuf_pool_create("noise_pkt", 8191, 256, 0,
                                              static_cast<uint16_t>(RTE_PKTMBUF_HEADROOM + std::max(2048u, o.noise_frame_bytes)),
                                              static_cast<int>(rte_socket_id()));
  rte_eth_conf conf{};
  if (pool == nullptr || rte_eth_dev_configure(o.port_id, 1, 1, &conf) != 0 ||
      rte_eth_rx_queue_setup(o.port_id, 0, 512, rte_socket_id(), nullptr, pool) != 0 ||
      rte_eth_tx_queue_setup(o.port_id, 0, 1024, rte_socket_id(), nullptr) != 0 || rte_eth_dev_start(o.port_id) != 0) {
    std::fprintf(stderr, "dpdk-tob-load --noise: port set-up failed: %s\n", rte_strerror(rte_errno));
    return 1;
  }
  // Best-effort frames (EtherType 0x88B6, IEEE local experimental: the daemons drop them as
  // foreign) to --noise-dst: broadcast floods every port of a bridge, a node's MAC loads its link.
  const double hz = static_cast<double>(rte_get_tsc_hz());
  const double bits = o.noise_frame_bytes * 8.0;
  const double ticks_per_frame = hz * bits / (o.noise_mbps * 1e6);
  const uint64_t t0 = __rdtsc();
  const uint64_t end = t0 + static_cast<uint64_t>(o.duration_s * hz);
  double next = static_cast<double>(t0);
  uint64_t sent = 0, refused = 0;
  uint64_t next_progress = t0 + static_cast<uint64_t>(hz);
  std::printf("dpdk-tob-load: noise %g Mbit/s of %u-byte frames for %g s\n", o.noise_mbps, o.noise_frame_bytes,
              o.duration_s);
  while (g_stop == 0) {
    const uint64_t now = __rdtsc();
    if (now >= end) break;
    rte_mbuf* burst[32];
    unsigned due = 0;
    while (due < 32 && next <= static_cast<double>(now)) {
      next += ticks_per_frame;
      ++due;
    }
    if (due == 0) {
      _mm_pause();
      continue;
    }
    if (rte_pktmbuf_alloc_bulk(pool, burst, due) != 0) {
      refused += due;
      continue;
    }
    for (unsigned i = 0; i < due; ++i) {
      auto* p = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(burst[i], static_cast<uint16_t>(o.noise_frame_bytes)));
      std::memcpy(p, o.noise_dst, 6);
      const uint8_t src[6] = {0x02, 0, 0, 0, 0, 0xfe};
      std::memcpy(p + 6, src, 6);
      p[12] = 0x88;
      p[13] = 0xB6;
      std::memset(p + 14, 0, o.noise_frame_bytes - 14);
    }
    const uint16_t n = rte_eth_tx_burst(o.port_id, 0, burst, static_cast<uint16_t>(due));
    sent += n;
    if (n < due) {
      refused += due - n;
      rte_pktmbuf_free_bulk(burst + n, due - n);
    }
    if (now >= next_progress) {
      const double s = static_cast<double>(now - t0) / hz;
      std::printf("  %5.1f s  %.1f Mbit/s offered, %" PRIu64 " frames refused by the port\n", s,
                  static_cast<double>(sent) * bits / s / 1e6, refused);
      std::fflush(stdout);
      next_progress += static_cast<uint64_t>(hz);
    }
  }
  const double s = static_cast<double>(__rdtsc() - t0) / hz;
  std::printf("dpdk-tob-load noise: %" PRIu64 " frames, %.1f Mbit/s achieved, %" PRIu64 " refused by the port\n", sent,
              static_cast<double>(sent) * bits / s / 1e6, refused);
  rte_eth_dev_stop(o.port_id);
  rte_eth_dev_close(o.port_id);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  int split = argc;
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--") == 0) {
      split = i;
      break;
    }
  std::vector<std::string> args(argv + std::min(split + 1, argc), argv + argc);
  for (int i = 1; i < split; ++i)
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) args.push_back("--help");
  auto parsed = tob::load::parse_load_options(args);
  if (!parsed) {
    std::fprintf(stderr, "dpdk-tob-load: %s\n", parsed.error().message.c_str());
    return 2;
  }
  const LoadOptions o = parsed.value();
  if (o.help) {
    std::fputs(tob::load::load_help(argv[0]).c_str(), stdout);
    return 0;
  }
  if (rte_eal_init(split, argv) < 0) {
    std::fprintf(stderr, "dpdk-tob-load: EAL initialisation failed: %s\n", rte_strerror(rte_errno));
    return 1;
  }
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  const int rc = o.noise ? run_noise(o) : run_client(o);
  rte_eal_cleanup();
  return rc;
}
