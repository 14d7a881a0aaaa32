#include "dataplane/observe/stats.h"

#include <cinttypes>
#include <cstdio>

namespace tob::dataplane {
namespace {

void visit_histogram(const std::string& name, const Histogram& h, StatsVisitor& v) {
  const HistogramSummary s = h.summary();
  v.u64(name + "_count", s.count);
  v.i64(name + "_min_ns", s.min);
  v.i64(name + "_p50_ns", s.p50);
  v.i64(name + "_p90_ns", s.p90);
  v.i64(name + "_p99_ns", s.p99);
  v.i64(name + "_p999_ns", s.p999);
  v.i64(name + "_max_ns", s.max);
  v.i64(name + "_mean_ns", s.mean);
}

// Every histogram, in report order.
constexpr const char* kHistogramNames[] = {"rx_arrival_offset", "tx_error_spin",  "tx_error_sleep",
                                           "tx_error_hybrid",   "tx_error_nic",   "control_delivery_latency",
                                           "control_turn_lateness", "rx_poll_gap"};
constexpr int kHistograms = sizeof kHistogramNames / sizeof kHistogramNames[0];
static_assert(kTxMethodCount == 4, "one tx.error histogram per concrete TX method");

const Histogram& histogram_at(const StatsSources& s, int i) {
  if (i == 0) return s.rx.arrival_offset;
  if (i <= kTxMethodCount) return s.tx.tx_error[i - 1];
  if (i == kTxMethodCount + 1) return s.control.delivery_latency;
  return i == kTxMethodCount + 2 ? s.control.turn_lateness : s.rx.poll_gap;
}

class JsonWriter final : public StatsVisitor {
 public:
  void u64(const std::string& n, uint64_t x) override { add(n, std::to_string(x)); }
  void i64(const std::string& n, int64_t x) override { add(n, std::to_string(x)); }
  void real(const std::string& n, double x) override {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", x);
    add(n, buf);
  }
  std::string done() { return out_ + "\n}\n"; }

 private:
  void add(const std::string& n, const std::string& value) {
    out_ += (out_.size() > 1 ? ",\n  \"" : "\n  \"") + n + "\": " + value;
  }
  std::string out_ = "{";
};

// A statistic name from a protocol enum's text ("CRC mismatch" -> "CRC_mismatch").
std::string key(const char* prefix, const char* text) {
  std::string s = std::string(prefix) + text;
  for (char& ch : s)
    if (ch == ' ' || ch == '-') ch = '_';
  return s;
}

// Identifiers of the IC enums for statistic names (their to_string texts are sentences).
constexpr const char* kIcVerdictNames[] = {"accepted", "not_ic",         "wrong_cluster", "unknown_sender", "own_frame",
                                           "outside_window", "stale", "malformed",     "duplicate",      "stopped"};
static_assert(sizeof kIcVerdictNames / sizeof kIcVerdictNames[0] == core::kIcFrameVerdictCount);
constexpr const char* kKvWriteNames[] = {"ok",           "too_late",       "too_many_keys", "empty_key",
                                         "key_too_long", "value_too_long", "bad_number",    "before_epoch",
                                         "stopped"};
static_assert(sizeof kKvWriteNames / sizeof kKvWriteNames[0] == core::kKvWriteStatusCount);

}  // namespace

void visit_ic_stats(const IcStatus& ic, const KvHubStats* kv, StatsVisitor& v) {
  const core::IcCounters& c = ic.counters;
  v.u64("ic_frames_per_slot", ic.frames_per_slot);
  v.u64("ic_instances_started", c.instances_started);
  v.u64("ic_instances_finished", c.instances_finished);
  v.u64("ic_last_instance", ic.last_instance);
  v.u64("ic_frames_tx", c.frames_tx);
  for (int k = 0; k < core::kIcFrameVerdictCount; ++k) v.u64(std::string("ic_frames_rx_") + kIcVerdictNames[k], c.frames_rx[k]);
  v.u64("ic_chunks_rx", c.chunks_rx);
  v.u64("ic_chunks_duplicate", c.chunks_duplicate);
  v.u64("ic_chunks_malformed", c.chunks_malformed);
  v.u64("ic_messages_default", c.messages_default);
  v.u64("ic_rounds_missed", c.rounds_missed);
  v.u64("ic_decisions_bottom", c.decisions_bottom);
  v.u64("ic_decisions_dropped", c.decisions_dropped);
  v.u64("ic_batches_malformed", c.batches_malformed);
  v.u64("ic_groups_ignored", c.groups_ignored);
  v.u64("ic_publications_ok", c.publications_ok);
  v.u64("ic_publications_failed", c.publications_failed);
  v.u64("ic_publications_conflict", c.publications_conflict);
  v.u64("ic_publications_dropped", c.publications_dropped);
  v.u64("ic_writes_accepted", c.writes_accepted);
  v.u64("ic_writes_refused", c.writes_refused);
  v.u64("ic_store_keys", ic.store_keys);
  v.u64("ic_store_versions", ic.store_versions);
  v.u64("ic_store_evictions", ic.store_evictions);
  v.u64("ic_store_duplicates", ic.store_duplicates);
  v.u64("ic_store_full", ic.store_full);
  if (kv == nullptr) return;
  for (int k = 0; k < core::kKvWriteStatusCount; ++k) v.u64(std::string("kv_writes_") + kKvWriteNames[k], kv->writes[k]);
  v.u64("kv_mirror_keys", kv->mirror.keys);
  v.u64("kv_mirror_versions", kv->mirror.versions_stored);
  v.u64("kv_mirror_mismatches", kv->mirror_mismatches);
}

void visit_stats(const StatsSources& s, StatsVisitor& v) {
  const NodeStatus& n = s.node;
  v.u64("node_id", n.self);
  v.u64("node_nodes", n.nodes);
  v.i64("node_cycle", n.cycle);
  v.u64("node_members", n.members);
  v.u64("node_member_count", n.member_count);
  v.u64("node_queued", n.queued);
  const core::NodeCounters& c = n.counters;
  for (int k = 0; k < core::kFrameVerdictCount; ++k)
    v.u64(key("node_frames_rx_", core::to_string(static_cast<core::FrameVerdict>(k))), c.frames_rx[k]);
  // The name before the verdict covered membership and otfp sections too (kept for readers of it).
  v.u64("node_frames_rx_malformed_batch", c.frames_rx[static_cast<int>(core::FrameVerdict::malformed_section)]);
  v.u64("node_frames_tx", c.frames_tx);
  v.u64("node_msgs_submitted", c.msgs_submitted);
  v.u64("node_msgs_refused", c.msgs_refused);
  v.u64("node_msgs_sent", c.msgs_sent);
  v.u64("node_msgs_delivered", c.msgs_delivered);
  v.u64("node_msgs_undelivered", c.msgs_undelivered);
  v.u64("node_membership_points", c.membership_points);
  v.u64("node_admissions", c.admissions);
  v.u64("node_removals", c.removals);
  v.u64("node_self_shutdowns", c.self_shutdowns);
  v.u64("node_suspicions", c.suspicions);
  v.u64("node_events_dropped", c.events_dropped);
  v.u64("node_instances_decided", c.instances_decided);
  v.u64("node_instances_fast", c.instances_fast);
  v.u64("node_instances_recovered", c.instances_recovered);
  v.u64("node_collisions", c.collisions);
  v.u64("node_activations", c.activations);
  v.u64("node_retransmit_requests", c.retransmit_requests);
  v.u64("node_retransmit_served", c.retransmit_served);
  v.u64("node_tempo_holds", c.tempo_holds);
  v.u64("node_duplicates_dropped", c.duplicates_dropped);
  v.u64("node_window_now", c.window_now);
  v.u64("node_window_max", c.window_max);
  v.u64("node_gaps", c.gaps);
  v.u64("node_persist_records", c.persist_records);
  v.u64("node_votes_abstained", c.votes_abstained);
  v.u64("node_votes_not_durable", c.votes_not_durable);
  v.u64("node_votes_settled", c.votes_settled);
  v.u64("node_decision_conflicts", c.decision_conflicts);

  v.u64("rx_polls", s.rx.polls.get());
  v.u64("rx_frames", s.rx.frames.get());
  v.u64("rx_bytes", s.rx.bytes.get());
  v.u64("rx_accepted", s.rx.accepted.get());
  v.u64("rx_other_ethertype", s.rx.other_ethertype.get());
  v.u64("rx_wrong_vlan", s.rx.wrong_vlan.get());
  v.u64("rx_runt", s.rx.runt.get());
  for (int k = 1; k < core::kDecodeErrorCount; ++k)
    v.u64(key("rx_decode_", core::to_string(static_cast<core::DecodeError>(k))), s.rx.decode_error[k].get());
  v.u64("rx_wrong_cluster", s.rx.wrong_cluster.get());
  v.u64("rx_unknown_sender", s.rx.unknown_sender.get());
  v.u64("rx_own_frames", s.rx.own_frames.get());
  v.u64("rx_auth_missing", s.rx.auth_missing.get());
  v.u64("rx_auth_failed", s.rx.auth_failed.get());
  v.u64("rx_replayed", s.rx.replayed.get());
  v.u64("rx_auth_unexpected", s.rx.auth_unexpected.get());
  v.u64("rx_early", s.rx.early.get());
  v.u64("rx_late", s.rx.late.get());
  v.u64("rx_late_forgiven", s.rx.late_forgiven.get());
  v.u64("rx_ring_full", s.rx.ring_full.get());
  v.u64("rx_dropped_by_knob", s.rx.dropped_by_knob.get());
  v.u64("rx_clock_readings", s.rx.clock_readings.get());
  v.u64("rx_clock_readings_stalled", s.rx.clock_readings_stalled.get());
  v.u64("rx_clock_ring_full", s.rx.clock_ring_full.get());

  v.u64("tx_frames", s.tx.frames.get());
  v.u64("tx_bytes", s.tx.bytes.get());
  v.u64("tx_bursts", s.tx.bursts.get());
  v.u64("tx_late", s.tx.late.get());
  v.u64("tx_missed", s.tx.missed.get());
  v.u64("tx_sent_late", s.tx.sent_late.get());
  v.u64("tx_spin_gap_max_ns", s.tx.spin_gap_max_ns.get());
  v.u64("tx_failed", s.tx.tx_failed.get());
  v.u64("tx_nic_launch", s.tx.nic_launch.get());
  v.u64("tx_waited_for_log", s.tx.waited_for_log.get());
  v.u64("tx_log_late", s.tx.log_late.get());
  v.u64("tx_ic_frames", s.tx.ic_frames.get());
  v.u64("tx_ic_lag_max_us", s.tx.ic_lag_max_us.get());

  v.u64("control_loops", s.control.loops.get());
  v.u64("control_turns_late", s.control.turns_late.get());
  v.u64("control_mbuf_alloc_failed", s.control.mbuf_alloc_failed.get());
  v.u64("control_tx_ring_full", s.control.tx_ring_full.get());
  v.u64("control_tx_seal_failed", s.control.tx_seal_failed.get());
  v.u64("control_tx_start_cycle", s.control.tx_start_cycle.get());
  v.u64("control_tx_withheld_clock", s.control.tx_withheld_clock.get());
  v.u64("control_log_ring_full", s.control.log_ring_full.get());
  v.u64("control_acceptor_log_full", s.control.acceptor_log_full.get());
  v.u64("control_ic_frames_unused", s.control.ic_frames_unused.get());
  v.u64("control_ic_tx_hold_full", s.control.ic_tx_hold_full.get());
  v.u64("control_ic_pub_ring_full", s.control.ic_pub_ring_full.get());
  v.u64("control_ic_gen_writes", s.control.ic_gen_writes.get());
  v.u64("control_ic_gen_refused", s.control.ic_gen_refused.get());
  v.u64("control_submitted", s.control.submitted.get());
  v.u64("control_submit_backpressure", s.control.submit_backpressure.get());
  v.u64("control_submit_too_large", s.control.submit_too_large.get());
  v.u64("control_submit_abandoned", s.control.submit_abandoned.get());
  v.u64("control_generated", s.control.generated.get());
  v.u64("control_watermark_waits", s.control.watermark_waits.get());
  v.u64("control_watermark_timeouts", s.control.watermark_timeouts.get());

  v.u64("clock_samples", n.calibration.samples);
  v.u64("clock_steps", n.calibration.steps);
  v.i64("clock_residual_ns_last", n.calibration.residual_ns_last);
  v.i64("clock_residual_ns_max", n.calibration.residual_ns_max);
  v.real("clock_tsc_hz", n.calibration.tsc_hz);
  v.real("clock_drift_ppm", n.calibration.drift_ppm);

  v.u64("io_records", s.io_records);
  v.u64("io_write_errors", s.io_write_errors);
  if (s.log != nullptr) {
    v.u64("log_appended_bytes", s.log->appended());
    v.u64("log_durable_bytes", s.log->durable());
    v.u64("log_syncs", s.log->syncs());
    v.u64("log_write_errors", s.log->write_errors());
    visit_histogram("log_sync", s.log->sync_latency(), v);
  }
  if (s.ic != nullptr) visit_ic_stats(*s.ic, s.kv, v);

  for (int i = 0; i < kHistograms; ++i) visit_histogram(kHistogramNames[i], histogram_at(s, i), v);
}

const Histogram* find_histogram(const StatsSources& s, const std::string& name) {
  for (int i = 0; i < kHistograms; ++i)
    if (name == kHistogramNames[i]) return &histogram_at(s, i);
  if (name == "log_sync" && s.log != nullptr) return &s.log->sync_latency();
  return nullptr;
}

std::string histogram_names() {
  std::string names;
  for (const char* n : kHistogramNames) names += (names.empty() ? "" : ", ") + std::string(n);
  return names + ", log_sync (otfp)";
}

std::string stats_json(const StatsSources& s) {
  JsonWriter w;
  visit_stats(s, w);
  return w.done();
}

}  // namespace tob::dataplane
