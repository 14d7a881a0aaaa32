#include "dataplane/observe/io_thread.h"

#include <rte_lcore.h>
#include <signal.h>
#include <rte_log.h>
#include <x86intrin.h>

#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstring>
#include <thread>

#include "core/ic_reduce.h"
#include "dataplane/observe/log.h"

namespace tob::dataplane {

namespace {

constexpr unsigned kDrainBurst = 256;
constexpr unsigned kPublicationBurst = 64;

std::string members_text(uint64_t members) {
  std::string s = "{";
  for (int k = 0; k < core::kMaxNodes; ++k)
    if ((members >> k) & 1u) s += (s.size() > 1 ? "," : "") + std::to_string(k);
  return s + "}";
}

std::string dashed(const char* text) {
  std::string s = text;
  for (char& c : s)
    if (c == ' ') c = '-';
  return s;
}

std::string micros(int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", static_cast<double>(ns) / 1000.0);
  return buf;
}

}  // namespace

IoThread::IoThread(DaemonContext& ctx) : ctx_(ctx) {}

IoThread::~IoThread() {
  if (deliveries_ != nullptr) std::fclose(deliveries_);
  if (events_ != nullptr) std::fclose(events_);
  if (published_ != nullptr) std::fclose(published_);
}

core::Result<bool> IoThread::open_files() {
  const DaemonOptions& o = *ctx_.options;
  const auto open = [](const std::string& path, std::FILE*& f) -> core::Result<bool> {
    if (path.empty()) return true;
    f = std::fopen(path.c_str(), "a");
    if (f == nullptr) return core::Error{path + ": cannot open for writing: " + std::strerror(errno)};
    return true;
  };
  if (auto r = open(o.deliveries_path, deliveries_); !r) return r;
  if (deliveries_ != nullptr) {
    DeliveriesFormat format{};
    parse_deliveries_format(o.deliveries_format, &format);  // checked with the options
    // Appending to a file of the other format would leave one that neither reader takes.
    char magic[sizeof kDeliveriesMagic] = {};
    std::FILE* in = std::fopen(o.deliveries_path.c_str(), "r");
    const size_t got = in != nullptr ? std::fread(magic, 1, sizeof magic, in) : 0;
    if (in != nullptr) std::fclose(in);
    const bool bin = got == sizeof magic && std::memcmp(magic, kDeliveriesMagic, sizeof magic) == 0;
    if (got > 0 && bin != (format == DeliveriesFormat::bin))
      return core::Error{o.deliveries_path + ": holds deliveries in the " + (bin ? "bin" : "text") +
                         " format, --deliveries-format is " + o.deliveries_format + ": remove the file or use that format"};
    dlv_ = std::make_unique<DeliveriesWriter>(format, ctx_.self, kDrainBurst);
    if (got == 0) dlv_->header();
  }
  if (auto r = open(o.events_path, events_); !r) return r;
  if (ctx_.ic_pub_ring != nullptr) {
    if (auto r = open(o.published_path, published_); !r) return r;
    pub_batch_.assign(kPublicationBurst * ctx_.ic_pub_bytes, 0);
    if (std::fprintf(published_, "# dpdk-tob node %u: instance node key value\n", static_cast<unsigned>(ctx_.self)) < 0)
      return core::Error{o.published_path + ": cannot write: " + std::strerror(errno)};
  }
  return true;
}

bool IoThread::start() {
  started_ = rte_ctrl_thread_create(&thread_, "tob-io", nullptr, &IoThread::entry, this) == 0;
  return started_;
}

void* IoThread::entry(void* self) {
  static_cast<IoThread*>(self)->run();
  return nullptr;
}

std::string IoThread::describe(const LogRecord& r) {
  char buf[256];
  if (r.kind == LogKind::undelivered) {
    std::snprintf(buf, sizeof buf, "%" PRId64 " %" PRId64 " undelivered %u %s msg %" PRIu64 " client %u", r.at_ns,
                  r.cycle, r.node, dashed(core::to_string(static_cast<core::Reason>(r.reason))).c_str(), r.msg_id,
                  r.client);
  } else {
    const auto reason = static_cast<core::Reason>(r.reason);
    std::snprintf(buf, sizeof buf, "%" PRId64 " %" PRId64 " %s %u %s %s", r.at_ns, r.cycle,
                  core::to_string(static_cast<core::EventKind>(r.event)), r.node,
                  reason == core::Reason::none ? "-" : dashed(core::to_string(reason)).c_str(),
                  members_text(r.msg_id).c_str());
  }
  return buf;
}

void IoThread::write(const LogRecord& r) {
  if (r.kind == LogKind::delivery) {
    if (dlv_ != nullptr) dlv_->add(r);  // written once per drain
    return;
  }
  const std::string line = describe(r);
  if (events_ != nullptr && std::fprintf(events_, "%s\n", line.c_str()) < 0)
    ctx_.io_write_errors.fetch_add(1, std::memory_order_relaxed);
  // Routine chatter at debug level: suspicions, and a lone node's join attempts that nobody answers.
  const auto kind = static_cast<core::EventKind>(r.event);
  const auto reason = static_cast<core::Reason>(r.reason);
  const bool quiet = r.kind == LogKind::event &&
                     (kind == core::EventKind::suspicion_raised || kind == core::EventKind::suspicion_cleared ||
                      kind == core::EventKind::rejoin_started ||
                      (kind == core::EventKind::self_shutdown && reason == core::Reason::not_admitted));
  TOB_LOG(quiet ? RTE_LOG_DEBUG : RTE_LOG_NOTICE, "node %u: %s\n", static_cast<unsigned>(ctx_.self), line.c_str());
  std::lock_guard<std::mutex> lock(mu_);
  recent_events_.push_back(line);
  if (recent_events_.size() > kRecent) recent_events_.pop_front();
}

std::string IoThread::describe_publication(const IcPubRecord& r, std::span<const uint8_t> key,
                                           std::span<const uint8_t> value, unsigned node) {
  static const char* hex = "0123456789abcdef";
  std::string line = std::to_string(r.instance) + " " + std::to_string(node) + " ";
  for (uint8_t b : key) {
    if (b > 0x20 && b < 0x7F && b != '%') {
      line.push_back(static_cast<char>(b));
    } else {
      line.push_back('%');
      line.push_back(hex[b >> 4]);
      line.push_back(hex[b & 15]);
    }
  }
  line.push_back(' ');
  if (r.ok == 0) return line + "-";
  char buf[64];
  switch (static_cast<core::Reduction>(r.reduction)) {
    case core::Reduction::median_f64:
    case core::Reduction::midpoint_f64: {
      double d = 0;
      if (core::decode_f64(value, d)) {
        std::snprintf(buf, sizeof buf, "%.17g", d);
        return line + buf;
      }
      break;
    }
    case core::Reduction::median_i64:
    case core::Reduction::midpoint_i64: {
      int64_t x = 0;
      if (core::decode_i64(value, x)) {
        std::snprintf(buf, sizeof buf, "%" PRId64, x);
        return line + buf;
      }
      break;
    }
    case core::Reduction::majority: break;
  }
  line += "0x";
  for (uint8_t b : value) {
    line.push_back(hex[b >> 4]);
    line.push_back(hex[b & 15]);
  }
  return line;
}

size_t IoThread::drain_publications() {
  if (ctx_.ic_pub_ring == nullptr) return 0;
  const auto bytes = static_cast<unsigned>(ctx_.ic_pub_bytes);
  size_t total = 0;
  for (;;) {
    const unsigned n = rte_ring_dequeue_burst_elem(ctx_.ic_pub_ring, pub_batch_.data(), bytes, kPublicationBurst, nullptr);
    for (unsigned i = 0; i < n; ++i) {
      const uint8_t* e = pub_batch_.data() + size_t{i} * bytes;
      IcPubRecord r;
      std::memcpy(&r, e, sizeof r);
      const std::span<const uint8_t> key(e + sizeof r, r.key_len);
      const std::span<const uint8_t> value(e + sizeof r + r.key_len, r.value_len);
      if (published_ != nullptr && r.defaulted != 0 && r.instance != commented_instance_) {
        // Which senders' round data this node took as ⊥ for the instance (check_published.py
        // skips comments; tests/integration/ic_test.py judges agreement with it).
        commented_instance_ = r.instance;
        std::string senders;
        for (unsigned s = 0; s < 64; ++s)
          if ((r.defaulted >> s) & 1) senders += " " + std::to_string(s);
        if (std::fprintf(published_, "# defaulted %" PRIu64 ":%s\n", r.instance, senders.c_str()) < 0)
          ctx_.io_write_errors.fetch_add(1, std::memory_order_relaxed);
      }
      if (published_ != nullptr &&
          std::fprintf(published_, "%s\n", describe_publication(r, key, value, ctx_.self).c_str()) < 0)
        ctx_.io_write_errors.fetch_add(1, std::memory_order_relaxed);
    }
    total += n;
    if (n < kPublicationBurst) break;
  }
  if (total > 0 && published_ != nullptr) std::fflush(published_);
  return total;
}

size_t IoThread::drain() {
  LogRecord batch[kDrainBurst];
  size_t total = 0;
  for (;;) {
    const unsigned n = rte_ring_dequeue_burst_elem(ctx_.log_ring, batch, sizeof(LogRecord), kDrainBurst, nullptr);
    for (unsigned i = 0; i < n; ++i) write(batch[i]);
    keep_recent(std::span<const LogRecord>(batch, n));
    if (dlv_ != nullptr && !dlv_->flush(deliveries_)) ctx_.io_write_errors.fetch_add(1, std::memory_order_relaxed);
    total += n;
    if (n < kDrainBurst) break;
  }
  ctx_.io_records.fetch_add(total, std::memory_order_relaxed);
  if (total > 0 && events_ != nullptr) std::fflush(events_);
  return total;
}

std::string IoThread::status_line() const {
  const NodeStatus s = ctx_.status.read();
  const HistogramSummary lat = ctx_.control.delivery_latency.summary();
  // Second copies of send-twice pairs are duplicates by design; the rest were refused.
  const uint64_t duplicates = s.counters.frames_rx[static_cast<int>(core::FrameVerdict::duplicate)];
  uint64_t rejected = 0;
  for (int k = 1; k < core::kFrameVerdictCount; ++k) rejected += s.counters.frames_rx[k];
  rejected -= duplicates;
  const RxStats& rx = ctx_.rx;
  const uint64_t foreign = rx.other_ethertype.get() + rx.wrong_vlan.get() + rx.runt.get() + rx.wrong_cluster.get() +
                           rx.unknown_sender.get();
  uint64_t bad = 0;
  for (int k = 1; k < core::kDecodeErrorCount; ++k) bad += rx.decode_error[k].get();
  std::string tx_err;
  for (int m = 0; m < ctx_.method_count; ++m) {
    const auto method = ctx_.methods[m];
    bool seen = false;
    for (int j = 0; j < m; ++j) seen = seen || ctx_.methods[j] == method;
    if (seen || method == TxMethod::nic) continue;
    const HistogramSummary t = ctx_.tx.tx_error[static_cast<int>(method)].summary();
    tx_err += std::string(" txerr[") + to_string(method) + "] p50 " + micros(t.p50) + " p99 " + micros(t.p99) +
              " max " + micros(t.max) + " us";
  }
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "node %u cycle %" PRId64 " %s members %s | rx ok %" PRIu64 " dup %" PRIu64 " rejected %" PRIu64 " early %" PRIu64
                " late %" PRIu64 " malformed %" PRIu64 " foreign %" PRIu64 " overflow %" PRIu64 " | tx %" PRIu64 " late %" PRIu64
                " missed %" PRIu64 " |%s | msgs queued %" PRIu64 " delivered %" PRIu64 " latency p50 %s p99 %s us",
                static_cast<unsigned>(s.self), s.cycle, core::to_string(s.state), members_text(s.members).c_str(),
                s.counters.frames_rx[0], duplicates, rejected, rx.early.get(), rx.late.get(), bad, foreign, rx.ring_full.get(),
                ctx_.tx.frames.get(),
                ctx_.tx.late.get(), ctx_.tx.missed.get(), tx_err.c_str(), s.queued, s.counters.msgs_delivered,
                micros(lat.p50).c_str(), micros(lat.p99).c_str());
  std::string line = buf;
  if (ctx_.log != nullptr) {  // otfp: instances, recovery, retransmission, window, log
    const core::NodeCounters& c = s.counters;
    const HistogramSummary sync = ctx_.log->sync_latency().summary();
    std::snprintf(buf, sizeof buf,
                  " | otfp decided %" PRIu64 " fast %" PRIu64 " recovered %" PRIu64 " collisions %" PRIu64
                  " retx req %" PRIu64 " served %" PRIu64 " window %" PRIu64 " | log sync p99 %s us",
                  c.instances_decided, c.instances_fast, c.instances_recovered, c.collisions, c.retransmit_requests,
                  c.retransmit_served, c.window_now, micros(sync.p99).c_str());
    line += buf;
  }
  if (ctx_.ic && ctx_.ic_status.published()) {  // instances, publications, round data, writes, store
    const IcStatus ic = ctx_.ic_status.read();
    const core::IcCounters& c = ic.counters;
    uint64_t ic_rejected = 0;
    for (int k = 0; k < core::kIcFrameVerdictCount; ++k)
      if (k != static_cast<int>(core::IcFrameVerdict::accepted) && k != static_cast<int>(core::IcFrameVerdict::duplicate))
        ic_rejected += c.frames_rx[k];
    std::snprintf(buf, sizeof buf,
                  " | ic instance %" PRIu64 " finished %" PRIu64 " published %" PRIu64 " failed %" PRIu64 " rx ok %" PRIu64
                  " rejected %" PRIu64 " defaulted %" PRIu64 " tx %" PRIu64 " missed %" PRIu64 " | kv writes %" PRIu64
                  " refused %" PRIu64 " keys %" PRIu64,
                  ic.last_instance, c.instances_finished, c.publications_ok, c.publications_failed,
                  c.frames_rx[static_cast<int>(core::IcFrameVerdict::accepted)], ic_rejected, c.messages_default, c.frames_tx,
                  c.rounds_missed, c.writes_accepted, c.writes_refused, ic.store_keys);
    line += buf;
  }
  return line;
}

void IoThread::reclaim_dead_clients() {
  if (shm_ == nullptr) return;
  for (uint32_t i = 0; i < shm_->clients_max; ++i) {
    ClientSlot& s = shm_->slots[i];
    const uint32_t pid = s.pid.load(std::memory_order_relaxed);
    if (pid == 0 || ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    // Its process is gone: detach it as if it had called tob_detach (the control role drains).
    uint32_t attached = static_cast<uint32_t>(SlotState::attached);
    uint32_t refused = static_cast<uint32_t>(SlotState::refused);
    if (s.state.compare_exchange_strong(attached, static_cast<uint32_t>(SlotState::leaving)) ||
        s.state.compare_exchange_strong(refused, static_cast<uint32_t>(SlotState::free))) {
      TOB_LOG(RTE_LOG_NOTICE, "node %u: client slot %u: process %u exited without detaching; slot freed\n",
              static_cast<unsigned>(ctx_.self), i, pid);
    }
  }
}

void IoThread::run() {
  using clock = std::chrono::steady_clock;
  const DaemonOptions& o = *ctx_.options;
  const auto start = clock::now();
  const auto interval = std::chrono::duration<double>(o.status_interval_s);
  auto next_status = start + std::chrono::duration_cast<clock::duration>(interval);
  auto next_reclaim = start + std::chrono::seconds(1);
  const auto end = start + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(o.duration_s));
  while (!finishing_.load(std::memory_order_acquire)) {
    if (drain() + drain_publications() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    const auto now = clock::now();
    if (o.status_interval_s > 0 && now >= next_status && ctx_.status.published()) {
      std::printf("%s\n", status_line().c_str());
      std::fflush(stdout);
      next_status += std::chrono::duration_cast<clock::duration>(interval);
    }
    if (now >= next_reclaim) {
      reclaim_dead_clients();
      next_reclaim = now + std::chrono::seconds(1);
    }
    if (o.duration_s > 0 && now >= end) ctx_.quit.store(true, std::memory_order_relaxed);
    // SIGHUP (docs/operations.md "Rotating the cluster key"): re-read off the lcores, here.
    if (ctx_.keys != nullptr && ctx_.reload_keys.exchange(false, std::memory_order_relaxed)) {
      const auto r = ctx_.keys->reload();
      std::printf("dpdk-tob: SIGHUP: %s\n", r ? ("keys reloaded from " + r.value()).c_str()
                                               : ("key reload refused: " + r.error().message).c_str());
      std::fflush(stdout);
    }
  }
  drain();
  drain_publications();
}

void IoThread::finish() {
  if (started_) {
    finishing_.store(true, std::memory_order_release);
    pthread_join(thread_, nullptr);
    started_ = false;
  } else {
    drain();
    drain_publications();
  }
  if (deliveries_ != nullptr) std::fclose(deliveries_);
  if (events_ != nullptr) std::fclose(events_);
  if (published_ != nullptr) std::fclose(published_);
  deliveries_ = events_ = published_ = nullptr;
}

void IoThread::keep_recent(std::span<const LogRecord> records) {
  // The latest deliveries of a burst, under one lock (telemetry reads them).
  size_t first = records.size();
  for (size_t kept = 0; first > 0 && kept < kRecent; --first)
    if (records[first - 1].kind == LogKind::delivery) ++kept;
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = first; i < records.size(); ++i) {
    if (records[i].kind != LogKind::delivery) continue;
    recent_deliveries_.push_back(records[i]);
    if (recent_deliveries_.size() > kRecent) recent_deliveries_.pop_front();
  }
}

std::vector<LogRecord> IoThread::recent_deliveries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {recent_deliveries_.begin(), recent_deliveries_.end()};
}

std::vector<std::string> IoThread::recent_events() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {recent_events_.begin(), recent_events_.end()};
}

}  // namespace tob::dataplane
