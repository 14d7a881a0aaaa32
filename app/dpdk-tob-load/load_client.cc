#include "load_client.h"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>

namespace tob::load {

namespace {

using dataplane::HistogramSummary;

std::string micros(int64_t ns) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", static_cast<double>(ns) / 1e3);
  return b;
}

const char* pattern_name(Pattern p) {
  return p == Pattern::constant ? "constant" : p == Pattern::poisson ? "poisson" : "burst";
}

}  // namespace

LoadClient::LoadClient(const LoadOptions& o, tob_client* c)
    : o_(o), c_(c), node_(tob_node_id(c)), client_(tob_client_id(c)), rng_(o.seed), size_rng_(o.seed * 7919 + 17),
      payload_(65536 * static_cast<size_t>(o.submit_burst), 0), burst_(o.submit_burst), burst_next_(o.submit_burst) {
  const double rate_for_rows = o.saturate ? 50000.0 : std::max(1000.0, o.rate_per_s * 8);
  rows_.reserve(static_cast<size_t>(std::min(5e6, (o.duration_s + o.drain_s) * rate_for_rows)));
  t0_ = tob_now_ns(c);
  start_ = t0_;
  if (o.start_at_ns > 0) {
    if (o.start_at_ns < t0_)
      std::fprintf(stderr, "dpdk-tob-load: --start-at is %.3f s in the past: starting now\n",
                   static_cast<double>(t0_ - o.start_at_ns) / 1e9);
    start_ = std::max(o.start_at_ns, t0_);
  }
  submit_end_ = start_ + static_cast<int64_t>(o.duration_s * 1e9);
  end_ = submit_end_ + static_cast<int64_t>((o.drain_max_s > 0 ? o.drain_max_s : o.drain_s) * 1e9);
  gap_ns_ = o.rate_per_s > 0 ? 1e9 / o.rate_per_s : 0;
  next_submit_ = static_cast<double>(start_);
  next_progress_ = t0_ + static_cast<int64_t>(o.progress_s * 1e9);
  char rate[48];
  if (o.saturate) std::snprintf(rate, sizeof rate, "saturating");
  else std::snprintf(rate, sizeof rate, "rate %g/s %s", o.rate_per_s, pattern_name(o.pattern));
  std::printf("dpdk-tob-load: node %u client %u, %s, duration %g s%s%s\n", node_, client_, rate, o.duration_s, o.start_at_ns > 0 ? ", from --start-at" : "",
              o.release ? ", waiting for release instants" : "");
}

uint32_t LoadClient::next_size() {
  uint32_t s = o_.size_bytes;
  if (o_.size_dist == SizeDist::uniform) {
    s = std::uniform_int_distribution<uint32_t>(o_.size_bytes, o_.size_max_bytes)(size_rng_);
  } else if (o_.size_dist == SizeDist::exponential) {
    s = static_cast<uint32_t>(std::lround(std::exponential_distribution<double>(1.0 / o_.size_bytes)(size_rng_)));
  }
  return std::clamp<uint32_t>(s, static_cast<uint32_t>(kLoadHeader), 65535);
}

// Submissions on schedule, up to --submit-burst per tob_submit_burst call; backpressure delays
// them (never skipped, never dropped). Saturating: as many as the node takes, until it refuses.
void LoadClient::submit_due(int64_t now) {
  if (now < start_ || now >= submit_end_) return;
  for (;;) {
    // The messages due now, each with the schedule as it stands after it.
    uint32_t n = 0;
    double next = next_submit_;
    while (n < o_.submit_burst && (o_.saturate || (gap_ns_ > 0 && next <= static_cast<double>(now)))) {
      const uint32_t len = next_size();
      uint8_t* p = payload_.data() + 65536 * static_cast<size_t>(n);
      const uint64_t seq = load_seq_ + n;
      std::memcpy(p, &kLoadMagic, 4);
      std::memcpy(p + 4, &node_, 2);
      std::memcpy(p + 8, &seq, 8);
      burst_[n] = {p, len};
      if (!o_.saturate) {
        if (o_.pattern == Pattern::poisson) next += std::exponential_distribution<double>(1.0 / gap_ns_)(rng_);
        else if (o_.pattern == Pattern::burst) next += (seq + 1) % o_.burst == 0 ? gap_ns_ * o_.burst : 0;
        else next += gap_ns_;
      }
      burst_next_[n++] = next;
    }
    if (n == 0) return;
    int taken = 0;  // how many were taken, or why none was
    if (n == 1) {
      const int rc = tob_submit(c_, burst_[0].payload, burst_[0].length);
      taken = rc == TOB_OK ? 1 : rc;
    } else {
      taken = tob_submit_burst(c_, burst_.data(), n);
    }
    if (taken > 0) {
      if (t_.submitted == 0) t_.first_submit_ns = now;
      t_.last_submit_ns = now;
      t_.submitted += static_cast<uint64_t>(taken);
      load_seq_ += static_cast<uint64_t>(taken);
      next_submit_ = burst_next_[static_cast<uint32_t>(taken) - 1];
      if (taken == static_cast<int>(n)) continue;
      return;  // stopped short: the rest waits for the next round, which says why if it is refused
    }
    if (taken == TOB_ETOOLARGE) {
      std::fprintf(stderr, "dpdk-tob-load: %u-byte messages exceed the cluster's payload limit\n",
                   static_cast<unsigned>(burst_[0].length));
      t_.error = taken;
    } else if (taken == TOB_EAGAIN) {
      ++t_.refused;
    } else {
      t_.error = taken;
    }
    return;
  }
}

// A test behaviour: detach and attach again, resuming right after the last seq handled.
bool LoadClient::reattach() {
  tob_client_stats cs{};
  tob_get_stats(c_, &cs);
  const uint64_t last = cs.last_seq;
  tob_detach(c_);
  tob_attach_options ao{last};
  const int rc = tob_attach(o_.cluster.c_str(), &ao, &c_);
  if (rc < 0) {
    std::fprintf(stderr, "dpdk-tob-load: reattach after seq %" PRIu64 ": %s\n", last, tob_strerror(rc));
    t_.error = rc;
    c_ = nullptr;
    return false;
  }
  client_ = tob_client_id(c_);
  ++t_.reattaches;
  std::printf("dpdk-tob-load: reattached as client %u, resuming after seq %" PRIu64 "\n", client_, last);
  return true;
}

// One poll of up to 256 deliveries, each recorded; true if any came.
bool LoadClient::poll_once() {
  const int n = tob_poll(c_, batch_, 256);
  if (n < 0) {
    std::fprintf(stderr, "dpdk-tob-load: poll: %s\n", tob_strerror(n));
    t_.error = n;
    return false;
  }
  const int64_t received = n > 0 ? tob_now_ns(c_) : 0;
  if (n > 0) last_delivery_ns_ = received;
  for (int i = 0; i < n; ++i) {
    const tob_delivery& d = batch_[i];
    Row r{d.seq, d.sender, d.client, d.length, d.msg_id, -1, 0, d.submit_ns, d.deliver_ns, d.release_ns, received, 0, 0};
    uint32_t magic = 0;
    if (d.length >= kLoadHeader) std::memcpy(&magic, d.payload, 4);
    if (magic == kLoadMagic) {
      uint16_t from = 0;
      std::memcpy(&from, d.payload + 4, 2);
      std::memcpy(&r.load_seq, d.payload + 8, 8);
      r.load_node = from;
      latency_.record(received - d.submit_ns);
    }
    if (o_.release) {
      const int64_t late = tob_wait_release(c_, &d);
      timespec tai{};
      clock_gettime(CLOCK_TAI, &tai);
      r.woke_ns = d.release_ns + late;
      r.woke_tai_ns = static_cast<int64_t>(tai.tv_sec) * 1'000'000'000 + tai.tv_nsec;
      release_late_.record(late);
    }
    if (d.sender == node_ && d.client == client_) ++t_.own;
    if (received >= start_ && received < submit_end_) ++t_.delivered_in_window;
    ++t_.delivered;
    t_.delivered_bytes += d.length;
    rows_.push_back(r);
  }
  return n > 0;
}

void LoadClient::progress(int64_t now, bool paused) {
  if (o_.progress_s <= 0 || now < next_progress_) return;
  const HistogramSummary l = latency_.summary();
  std::printf("  %5.1f s  submitted %" PRIu64 " refused %" PRIu64 "  delivered %" PRIu64 " (+%" PRIu64
              ")  latency p50 %s p99 %s us%s\n",
              static_cast<double>(now - t0_) / 1e9, t_.submitted, t_.refused, t_.delivered,
              t_.delivered - last_progress_delivered_, micros(l.p50).c_str(), micros(l.p99).c_str(),
              paused ? "  [not polling]" : "");
  std::fflush(stdout);
  last_progress_delivered_ = t_.delivered;
  next_progress_ += static_cast<int64_t>(o_.progress_s * 1e9);
}

// With --drain-max, the drain ends once --drain seconds passed without a delivery (a backlog is
// still delivered; a quiet cluster has nothing more to give) and every own message accepted came
// back (a cluster that re-forms after a crash delivers them later).
bool LoadClient::drained(int64_t now) const {
  if (now >= end_) return true;
  if (o_.drain_max_s <= 0 || now < submit_end_ || t_.own < t_.submitted) return false;
  return now - std::max(last_delivery_ns_, submit_end_) >= static_cast<int64_t>(o_.drain_s * 1e9);
}

int LoadClient::run(const volatile std::sig_atomic_t* stop) {
  bool reattached = false;
  for (int64_t now = t0_; !drained(now) && *stop == 0; now = tob_now_ns(c_)) {
    const double at_s = static_cast<double>(now - start_) / 1e9;  // the test knobs' clock
    const uint64_t submitted_before = t_.submitted;
    submit_due(now);
    if (t_.error != 0) break;
    if (o_.reattach_at_s >= 0 && !reattached && at_s >= o_.reattach_at_s) {
      reattached = true;
      if (!reattach()) break;
    }
    const bool paused = o_.pause_poll_at_s >= 0 && at_s >= o_.pause_poll_at_s && at_s < o_.pause_poll_at_s + o_.pause_poll_for_s;
    bool idle_round = submitted_before == t_.submitted;  // nothing went out (none due, or refused)
    if (!paused) {
      if (poll_once()) idle_round = false;
      if (t_.error != 0) break;
    }
    if (idle_round && o_.idle_sleep_us > 0) {
      // Nothing due and nothing delivered: give the core away briefly (the daemons share it).
      const timespec ts{0, static_cast<long>(o_.idle_sleep_us) * 1000};
      nanosleep(&ts, nullptr);
    }
    progress(now, paused);
  }
  if (c_ != nullptr) {
    tob_get_stats(c_, &final_stats_);
    tob_detach(c_);
    c_ = nullptr;
  }
  return t_.error;
}

bool LoadClient::write_csv() const {
  if (o_.out_path.empty()) return true;
  std::FILE* f = std::fopen(o_.out_path.c_str(), "w");
  if (f == nullptr) {
    std::fprintf(stderr, "dpdk-tob-load: %s: %s\n", o_.out_path.c_str(), std::strerror(errno));
    return false;
  }
  std::fprintf(f, "seq,sender,client,msg_id,load_node,load_seq,bytes,submit_ns,deliver_ns,release_ns,received_ns,woke_ns,woke_tai_ns\n");
  for (const Row& r : rows_)
    std::fprintf(f, "%" PRIu64 ",%u,%u,%" PRIu64 ",%d,%" PRIu64 ",%u,%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 "\n",
                 r.seq, r.sender, r.client, r.msg_id, r.load_node, r.load_seq, r.bytes, r.submit_ns, r.deliver_ns,
                 r.release_ns, r.received_ns, r.woke_ns, r.woke_tai_ns);
  return std::fclose(f) == 0;
}

// perf/compare's records: the load messages only, `sender,seq,send_ns,recv_ns` in delivery order.
bool LoadClient::write_records() const {
  if (o_.records_path.empty()) return true;
  std::FILE* f = std::fopen(o_.records_path.c_str(), "w");
  if (f == nullptr) {
    std::fprintf(stderr, "dpdk-tob-load: %s: %s\n", o_.records_path.c_str(), std::strerror(errno));
    return false;
  }
  std::fprintf(f, "sender,seq,send_ns,recv_ns\n");
  for (const Row& r : rows_)
    if (r.load_node >= 0)
      std::fprintf(f, "%d,%" PRIu64 ",%" PRId64 ",%" PRId64 "\n", r.load_node, r.load_seq, r.submit_ns, r.received_ns);
  return std::fclose(f) == 0;
}

void LoadClient::write_summary() const {
  if (o_.summary_path.empty()) return;
  std::FILE* f = std::fopen(o_.summary_path.c_str(), "w");
  if (f == nullptr) return;
  const HistogramSummary l = latency_.summary();
  const HistogramSummary rl = release_late_.summary();
  std::fprintf(f,
               "{\"label\": \"%s\", \"node\": %u, \"rate\": %g, \"duration_s\": %g, \"submitted\": %" PRIu64
               ", \"refused\": %" PRIu64 ", \"lagging_events\": %" PRIu64 ", \"delivered\": %" PRIu64
               ", \"own\": %" PRIu64 ", \"reattaches\": %" PRIu64 ", \"throughput_msgs_s\": %.1f"
               ", \"latency_ns\": {\"count\": %" PRIu64 ", \"p50\": %" PRId64 ", \"p90\": %" PRId64 ", \"p99\": %" PRId64
               ", \"p999\": %" PRId64 ", \"max\": %" PRId64 "}, \"release_late_ns\": {\"p50\": %" PRId64
               ", \"p99\": %" PRId64 ", \"max\": %" PRId64 "}, \"error\": %d}\n",
               o_.label.c_str(), node_, o_.rate_per_s, o_.duration_s, t_.submitted, t_.refused,
               final_stats_.lagging_events, t_.delivered, t_.own, t_.reattaches, t_.delivered_in_window / o_.duration_s,
               l.count, l.p50, l.p90, l.p99, l.p999, l.max, rl.p50, rl.p99, rl.max, t_.error);
  std::fclose(f);
}

// perf/compare's summary (README "The client contract"); instants on the cluster's global time.
void LoadClient::write_compare_summary() const {
  if (o_.compare_summary_path.empty()) return;
  std::FILE* f = std::fopen(o_.compare_summary_path.c_str(), "w");
  if (f == nullptr) return;
  uint64_t delivered = 0;
  for (const Row& r : rows_) delivered += r.load_node >= 0 ? 1 : 0;
  std::string error = "null";
  if (t_.error != 0) error = std::string("\"") + tob_strerror(t_.error) + "\"";
  std::fprintf(f,
               "{\"node\": %u, \"clock\": \"tai\", \"sent\": %" PRIu64 ", \"send_errors\": %d, \"retries\": %" PRIu64
               ", \"delivered\": %" PRIu64 ", \"first_send_ns\": %" PRId64 ", \"last_send_ns\": %" PRId64
               ", \"error\": %s}\n",
               node_, t_.submitted, t_.error != 0 ? 1 : 0, t_.refused, delivered, t_.first_submit_ns, t_.last_submit_ns,
               error.c_str());
  std::fclose(f);
}

void LoadClient::print_summary() const {
  const double window_s = o_.duration_s + o_.drain_s;
  const HistogramSummary l = latency_.summary();
  const HistogramSummary rl = release_late_.summary();
  std::printf("dpdk-tob-load summary (node %u%s%s):\n", node_, o_.label.empty() ? "" : ", ", o_.label.c_str());
  std::printf("  submitted %" PRIu64 ", refused (backpressure) %" PRIu64 ", lagging events %" PRIu64 "\n", t_.submitted,
              t_.refused, final_stats_.lagging_events);
  std::printf("  delivered %" PRIu64 " (%.0f msgs/s while submitting, %.3f Mbit/s of payload overall), own %" PRIu64
              "\n", t_.delivered, t_.delivered_in_window / o_.duration_s, t_.delivered_bytes * 8 / window_s / 1e6, t_.own);
  std::printf("  latency submit->delivery (us): p50 %s p90 %s p99 %s p99.9 %s max %s (%" PRIu64 " msgs)\n",
              micros(l.p50).c_str(), micros(l.p90).c_str(), micros(l.p99).c_str(), micros(l.p999).c_str(),
              micros(l.max).c_str(), l.count);
  if (o_.release)
    std::printf("  release wake-up late by (us): p50 %s p99 %s max %s\n", micros(rl.p50).c_str(), micros(rl.p99).c_str(),
                micros(rl.max).c_str());
}

}  // namespace tob::load
