#include "dataplane/observe/telemetry.h"

#include <rte_mempool.h>
#include <rte_telemetry.h>
#include <x86intrin.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace tob::dataplane {

namespace {

// Telemetry callbacks take no user argument: the one daemon of this process.
DaemonContext* g_ctx = nullptr;
IoThread* g_io = nullptr;
const ClientHub* g_hub = nullptr;
// /tob/submit's buffer whose enqueue failed (telemetry answers on a thread per connection).
std::atomic<void*> g_submit_spare{nullptr};
const KvHub* g_kv = nullptr;
TelemetryInfo g_info;

int clamp_int(int64_t v) { return static_cast<int>(std::clamp<int64_t>(v, INT_MIN, INT_MAX)); }

// Snapshots of what the lcores publish, for one command.
struct Snapshot {
  NodeStatus node;
  IcStatus ic;
  KvHubStats kv;
  StatsSources sources() const {
    return StatsSources{g_ctx->rx,
                        g_ctx->tx,
                        g_ctx->control,
                        node,
                        g_ctx->io_records.load(std::memory_order_relaxed),
                        g_ctx->io_write_errors.load(std::memory_order_relaxed),
                        g_ctx->log,
                        g_ctx->ic ? &ic : nullptr,
                        g_kv != nullptr ? &kv : nullptr};
  }
};

Snapshot snapshot() {
  Snapshot s;
  s.node = g_ctx->status.read();
  if (g_ctx->ic) s.ic = g_ctx->ic_status.read();
  if (g_kv != nullptr) s.kv = g_kv->stats();
  return s;
}

class TelemetryDict final : public StatsVisitor {
 public:
  explicit TelemetryDict(rte_tel_data* d) : d_(d) {}
  void u64(const std::string& n, uint64_t x) override { rte_tel_data_add_dict_u64(d_, n.c_str(), x); }
  void i64(const std::string& n, int64_t x) override { rte_tel_data_add_dict_int(d_, n.c_str(), clamp_int(x)); }
  void real(const std::string& n, double x) override {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.6g", x);
    rte_tel_data_add_dict_string(d_, n.c_str(), buf);
  }

 private:
  rte_tel_data* d_;
};

int cmd_info(const char*, const char*, rte_tel_data* d) {
  const DaemonContext& c = *g_ctx;
  const ClusterConfig& cfg = *c.config;
  const core::ScheduleConfig& sc = c.schedule->config();
  const core::SlotConfig& slot = sc.slots[c.self];
  rte_tel_data_start_dict(d);
  rte_tel_data_add_dict_string(d, "cluster", cfg.name.c_str());
  rte_tel_data_add_dict_int(d, "cluster_id", cfg.cluster_id);
  rte_tel_data_add_dict_int(d, "node_id", c.self);
  rte_tel_data_add_dict_int(d, "nodes", cfg.nodes);
  rte_tel_data_add_dict_string(d, "order", core::to_string(cfg.order));
  rte_tel_data_add_dict_u64(d, "epoch_ns", static_cast<uint64_t>(sc.epoch_ns));
  rte_tel_data_add_dict_u64(d, "cycle_ns", static_cast<uint64_t>(sc.cycle_ns));
  rte_tel_data_add_dict_u64(d, "slot_offset_ns", static_cast<uint64_t>(slot.offset_ns));
  rte_tel_data_add_dict_u64(d, "slot_length_ns", static_cast<uint64_t>(slot.length_ns));
  rte_tel_data_add_dict_u64(d, "decision_margin_ns", static_cast<uint64_t>(sc.decision_margin_ns));
  rte_tel_data_add_dict_u64(d, "precision_ns", static_cast<uint64_t>(sc.precision_ns));
  rte_tel_data_add_dict_int(d, "sends_per_slot", sc.sends_per_slot);
  rte_tel_data_add_dict_string(d, "transport", to_string(c.options->transport));
  rte_tel_data_add_dict_string(d, "idle", to_string(c.options->idle));
  rte_tel_data_add_dict_string(d, "tx_methods", g_info.tx_methods.c_str());
  rte_tel_data_add_dict_string(d, "clock", g_info.clock.c_str());
  rte_tel_data_add_dict_string(d, "driver", g_info.driver.c_str());
  rte_tel_data_add_dict_string(d, "profile", g_info.profile.c_str());
  rte_tel_data_add_dict_string(d, "mac", g_info.mac.c_str());
  rte_tel_data_add_dict_string(d, "lcores", g_info.lcores.c_str());
  return 0;
}

int cmd_stats(const char*, const char*, rte_tel_data* d) {
  rte_tel_data_start_dict(d);
  const Snapshot snap = snapshot();
  TelemetryDict dict(d);
  visit_stats(snap.sources(), dict);
  return 0;
}

// The clock (time/clock_discipline.h, docs/operations.md "The clock: /tob/clock"): the snapshot the
// control lcore publishes once per round, and the clock source beside it.
int cmd_clock(const char*, const char*, rte_tel_data* d) {
  const ClockStatus s = g_ctx->clock_status.read();
  const ClusterConfig& cfg = *g_ctx->config;
  rte_tel_data_start_dict(d);
  TelemetryDict dict(d);  // its i64 clamps to +-2^31 ns (DPDK 22.11 has no 64-bit signed dict values)
  rte_tel_data_add_dict_string(d, "sync", to_string(cfg.sync));
  rte_tel_data_add_dict_string(d, "source", g_info.clock.c_str());
  // The test knobs (--clock-offset-ns, --clock-drift-ppm): the drift counts from drift_ref_ns
  // (global time of the first fit), so a test can predict the offset they build up.
  const ClockKnobs& k = g_ctx->clock.knobs();
  rte_tel_data_add_dict_u64(d, "drift_ref_ns", static_cast<uint64_t>(std::max<int64_t>(0, k.drift_ref_ns)));
  dict.real("test_drift_ppm", k.drift_ppm);
  dict.i64("test_offset_ns", k.offset_ns);
  if (cfg.sync == ClockSyncMode::off) return 0;
  rte_tel_data_add_dict_int(d, "applied", s.applied);
  rte_tel_data_add_dict_int(d, "integrated", s.integrated);
  rte_tel_data_add_dict_int(d, "cold_start", s.cold_start);
  rte_tel_data_add_dict_int(d, "may_send", s.may_send);
  dict.i64("offset_ns", s.offset_ns);
  dict.i64("correction_ns", s.correction_ns);
  dict.i64("map_offset_ns", s.map_offset_ns);
  dict.real("rate_ppm", s.rate_ppm);
  dict.i64("precision_ns", s.precision_ns);
  dict.i64("spread_ns", s.spread_ns);
  dict.i64("spread_max_ns", s.spread_max_ns);
  dict.i64("offset_max_ns", s.offset_max_ns);
  dict.i64("delay_ns", cfg.delay_ns);
  dict.i64("delay_error_ns", s.delay_error_ns);
  dict.i64("common_step_ns", s.common_step_ns);
  rte_tel_data_add_dict_u64(d, "rate_windows", s.rate_windows);
  rte_tel_data_add_dict_u64(d, "rate_windows_unknown", s.rate_windows_unknown);
  rte_tel_data_add_dict_u64(d, "rate_windows_inexact", s.rate_windows_inexact);
  rte_tel_data_add_dict_u64(d, "rounds", s.rounds);
  rte_tel_data_add_dict_u64(d, "rounds_short", s.rounds_short);
  rte_tel_data_add_dict_u64(d, "rounds_clipped", s.rounds_clipped);
  rte_tel_data_add_dict_u64(d, "rounds_out", s.rounds_out);
  rte_tel_data_add_dict_u64(d, "readings", s.readings);
  rte_tel_data_add_dict_u64(d, "readings_ignored", s.readings_ignored);
  rte_tel_data_add_dict_u64(d, "integrations", s.integrations);
  rte_tel_data_add_dict_u64(d, "integrations_disagreed", s.integrations_disagreed);
  rte_tel_data_add_dict_u64(d, "tx_withheld", g_ctx->control.tx_withheld_clock.get());
  // The external source beside the in-band estimate: ptp4l's own measurement, asked now.
  if (g_info.ptp4l != nullptr) {
    rte_tel_data_add_dict_string(d, "ptp4l_socket", g_info.ptp4l->server_path().c_str());
    const auto ds = g_info.ptp4l->current_data_set(200);
    if (ds) {
      dict.i64("external_offset_ns", ds.value().offset_from_master_ns);
      dict.i64("external_path_delay_ns", ds.value().mean_path_delay_ns);
      rte_tel_data_add_dict_int(d, "external_steps_removed", ds.value().steps_removed);
    } else {
      rte_tel_data_add_dict_string(d, "external_error", ds.error().message.substr(0, RTE_TEL_MAX_STRING_LEN - 1).c_str());
    }
  }
  return 0;
}

int cmd_membership(const char*, const char*, rte_tel_data* d) {
  const NodeStatus s = g_ctx->status.read();
  rte_tel_data_start_dict(d);
  rte_tel_data_add_dict_string(d, "state", core::to_string(s.state));
  rte_tel_data_add_dict_u64(d, "cycle", static_cast<uint64_t>(std::max<int64_t>(s.cycle, 0)));
  rte_tel_data_add_dict_int(d, "member_count", s.member_count);
  rte_tel_data* members = rte_tel_data_alloc();
  rte_tel_data* stages = rte_tel_data_alloc();
  rte_tel_data* events = rte_tel_data_alloc();
  if (members == nullptr || stages == nullptr || events == nullptr) {
    rte_tel_data_free(members);
    rte_tel_data_free(stages);
    rte_tel_data_free(events);
    return -ENOMEM;
  }
  rte_tel_data_start_array(members, RTE_TEL_INT_VAL);
  rte_tel_data_start_array(stages, RTE_TEL_STRING_VAL);
  for (int k = 0; k < s.nodes; ++k) {
    if ((s.members >> k) & 1u) rte_tel_data_add_array_int(members, k);
    static const char* names[] = {"inactive", "active", "member"};
    rte_tel_data_add_array_string(stages, names[static_cast<int>(s.stages[k]) % 3]);
  }
  rte_tel_data_add_dict_container(d, "members", members, 0);
  rte_tel_data_add_dict_container(d, "stages", stages, 0);
  rte_tel_data_start_array(events, RTE_TEL_STRING_VAL);
  for (const std::string& e : g_io->recent_events()) rte_tel_data_add_array_string(events, e.substr(0, RTE_TEL_MAX_STRING_LEN - 1).c_str());
  rte_tel_data_add_dict_container(d, "recent_events", events, 0);
  return 0;
}

// Timed release (time/release_monitor.h, docs/operations.md "Release skew: /tob/release"): the
// cross-node wake-up skew this node estimates, its own clients' lateness, and the counters.
int cmd_release(const char*, const char*, rte_tel_data* d) {
  const ReleaseCounts c = g_ctx->release.counts.read();
  rte_tel_data_start_dict(d);
  const auto put = [d](const char* prefix, const Histogram& h) {
    const HistogramSummary s = h.summary();
    char name[64];
    const auto field = [&](const char* what, int64_t v) {
      std::snprintf(name, sizeof name, "%s_%s", prefix, what);
      rte_tel_data_add_dict_int(d, name, clamp_int(v));
    };
    std::snprintf(name, sizeof name, "%s_count", prefix);
    rte_tel_data_add_dict_u64(d, name, s.count);
    field("p50_ns", s.p50);
    field("p99_ns", s.p99);
    field("p999_ns", s.p999);
    field("max_ns", s.max);
  };
  rte_tel_data_add_dict_int(d, "estimating", c.estimating);
  put("skew", g_ctx->release.skew);
  put("own_late", g_ctx->release.own_late);
  rte_tel_data_add_dict_int(d, "close_after_ns", clamp_int(c.close_after_ns));
  const std::pair<const char*, uint64_t> counters[] = {
      {"instants_matched", c.skew.instants_matched}, {"instants_alone", c.skew.instants_alone},
      {"instants_early", c.skew.instants_early},     {"samples", c.skew.samples},
      {"samples_stale", c.skew.samples_stale},       {"client_wakeups", c.client_wakeups},
      {"client_wakeups_lost", c.client_wakeups_lost}, {"peer_samples", c.peer_samples},
      {"peer_samples_malformed", c.peer_samples_malformed}, {"implausible", c.implausible}, {"own_sent", c.own_sent},
      {"own_no_room", c.own_no_room}};
  for (const auto& [name, value] : counters) rte_tel_data_add_dict_u64(d, name, value);
  return 0;
}

int cmd_histogram(const char*, const char* params, rte_tel_data* d) {
  const Snapshot snap = snapshot();
  const StatsSources src = snap.sources();
  const Histogram* h = params == nullptr ? nullptr : find_histogram(src, params);
  rte_tel_data_start_dict(d);
  if (h == nullptr) {
    rte_tel_data_add_dict_string(d, "error", "usage: /tob/histogram,<name>");
    rte_tel_data_add_dict_string(d, "names", histogram_names().c_str());
    return 0;
  }
  rte_tel_data_add_dict_u64(d, "count", h->count());
  static const struct {
    const char* name;
    double q;
  } points[] = {{"min_ns", 0},       {"p1_ns", 0.01},    {"p10_ns", 0.1},    {"p50_ns", 0.5},
                {"p90_ns", 0.9},     {"p99_ns", 0.99},   {"p999_ns", 0.999}, {"p9999_ns", 0.9999},
                {"max_ns", 1.0}};
  for (const auto& p : points) rte_tel_data_add_dict_int(d, p.name, clamp_int(h->quantile(p.q)));
  return 0;
}

int cmd_deliveries(const char*, const char* params, rte_tel_data* d) {
  // Optional parameter: only this client's deliveries.
  int client = -1;
  if (params != nullptr && *params != '\0') {
    char* end = nullptr;
    const long v = std::strtol(params, &end, 10);
    if (*end != '\0' || v < 0 || v > 65535) return -EINVAL;
    client = static_cast<int>(v);
  }
  rte_tel_data_start_array(d, RTE_TEL_STRING_VAL);
  for (const LogRecord& r : g_io->recent_deliveries()) {
    if (client >= 0 && r.client != client) continue;
    char text[sizeof r.head + 1];
    const size_t n = std::min<size_t>(r.payload_bytes, sizeof r.head);
    for (size_t k = 0; k < n; ++k) text[k] = r.head[k] >= 32 && r.head[k] < 127 ? static_cast<char>(r.head[k]) : '.';
    text[n] = '\0';
    char line[RTE_TEL_MAX_STRING_LEN];
    std::snprintf(line, sizeof line, "cycle %lld from %u msg %llu client %u: %s", static_cast<long long>(r.cycle),
                  static_cast<unsigned>(r.node), static_cast<unsigned long long>(r.msg_id),
                  static_cast<unsigned>(r.client), text);
    rte_tel_data_add_array_string(d, line);
  }
  return 0;
}

int cmd_submit(const char*, const char* params, rte_tel_data* d) {
  rte_tel_data_start_dict(d);
  const size_t len = params == nullptr ? 0 : std::strlen(params);
  if (len == 0) {
    rte_tel_data_add_dict_string(d, "error", "usage: /tob/submit,<text>");
    return 0;
  }
  if (len > g_ctx->config->node.payload_bytes_max) {
    rte_tel_data_add_dict_string(d, "error", "message larger than [limits] payload_bytes");
    return 0;
  }
  // A buffer whose enqueue failed is kept, never put back: only the control lcore returns
  // buffers to msg_pool (docs/architecture.md "Dataplane": no put of ours can make it wait).
  void* obj = g_submit_spare.exchange(nullptr);
  if (obj == nullptr && rte_mempool_get(g_ctx->msg_pool, &obj) != 0) {
    rte_tel_data_add_dict_string(d, "error", "submit pool exhausted: try again");
    return 0;
  }
  auto* m = static_cast<SubmitMsg*>(obj);
  m->client = 1;
  m->bytes = static_cast<uint16_t>(len);
  m->submit_ns = g_ctx->clock.to_ns(__rdtsc());
  std::memcpy(m->payload, params, len);
  if (rte_ring_enqueue(g_ctx->submit_ring, m) != 0) {
    // Two connections refused at the same instant: one buffer goes back (a rare put).
    if (void* lost = g_submit_spare.exchange(m); lost != nullptr) rte_mempool_put(g_ctx->msg_pool, lost);
    rte_tel_data_add_dict_string(d, "error", "submit ring full: try again");
    return 0;
  }
  rte_tel_data_add_dict_string(d, "queued", "yes");
  rte_tel_data_add_dict_int(d, "bytes", static_cast<int>(len));
  return 0;
}

int cmd_clients(const char*, const char*, rte_tel_data* d) {
  const Shm& shm = g_hub->shm();
  const HubStats hs = g_hub->stats();
  rte_tel_data_start_dict(d);
  rte_tel_data_add_dict_u64(d, "deliveries", hs.deliveries);
  rte_tel_data_add_dict_u64(d, "attaches", hs.attaches);
  rte_tel_data_add_dict_u64(d, "refused_attaches", hs.refused_attaches);
  rte_tel_data_add_dict_u64(d, "detaches", hs.detaches);
  rte_tel_data_add_dict_u64(d, "overruns", hs.overruns);
  rte_tel_data_add_dict_u64(d, "ring_bytes", hs.ring_bytes);
  rte_tel_data_add_dict_u64(d, "oldest_seq", hs.oldest_seq);
  rte_tel_data* slots = rte_tel_data_alloc();
  if (slots == nullptr) return -ENOMEM;
  rte_tel_data_start_array(slots, RTE_TEL_STRING_VAL);
  static const char* states[] = {"free", "reserving", "claimed", "attached", "refused", "leaving"};
  for (uint32_t i = 0; i < shm.clients_max; ++i) {
    const ClientSlot& s = shm.slots[i];
    const uint32_t st = s.state.load(std::memory_order_relaxed);
    if (st == 0) continue;
    char line[RTE_TEL_MAX_STRING_LEN];
    std::snprintf(line, sizeof line,
                  "slot %u client %u %s pid %u submitted %llu refused %llu polled %llu pending %llu lagging %u%s",
                  i, kFirstSlotClientId + i, states[st % 6], s.pid.load(std::memory_order_relaxed),
                  static_cast<unsigned long long>(s.submitted.load(std::memory_order_relaxed)),
                  static_cast<unsigned long long>(s.refused.load(std::memory_order_relaxed)),
                  static_cast<unsigned long long>(s.polled.load(std::memory_order_relaxed)),
                  static_cast<unsigned long long>(s.pending.load(std::memory_order_relaxed)),
                  s.lagging.load(std::memory_order_relaxed), s.overrun.load(std::memory_order_relaxed) ? " OVERRUN" : "");
    rte_tel_data_add_array_string(slots, line);
  }
  rte_tel_data_add_dict_container(d, "slots", slots, 0);
  return 0;
}

// The IC configuration, instance progress, round data, publications, writes by status and the
// store (the ic_ and kv_ statistics of /tob/stats, with the configuration next to them).
int cmd_ic(const char*, const char*, rte_tel_data* d) {
  rte_tel_data_start_dict(d);
  const ClusterConfig& cfg = *g_ctx->config;
  if (!g_ctx->ic || !cfg.ic) {
    rte_tel_data_add_dict_string(d, "error", "this node runs no interactive consistency (no [ic] in its cluster.ini)");
    return 0;
  }
  const core::IcConfig& ic = *cfg.ic;
  rte_tel_data_add_dict_int(d, "f", ic.f);
  rte_tel_data_add_dict_int(d, "rounds", ic.f + 1);
  rte_tel_data_add_dict_int(d, "period_cycles", ic.period_cycles);
  rte_tel_data_add_dict_u64(d, "keys_per_period", ic.keys_per_period_max);
  rte_tel_data_add_dict_u64(d, "key_bytes", ic.key_bytes_max);
  rte_tel_data_add_dict_u64(d, "value_bytes", ic.value_bytes_max);
  rte_tel_data_add_dict_u64(d, "store_keys_max", ic.store_keys_max);
  rte_tel_data_add_dict_u64(d, "versions_per_key", ic.versions_per_key);
  rte_tel_data_add_dict_string(d, "test_fault", g_ctx->options->ic_fault == core::IcFaultMode::none ? "none"
                                                : g_ctx->options->ic_fault == core::IcFaultMode::lie  ? "lie"
                                                : g_ctx->options->ic_fault == core::IcFaultMode::omit ? "omit"
                                                                                                       : "garble");
  const Snapshot snap = snapshot();
  TelemetryDict dict(d);
  visit_ic_stats(snap.ic, g_kv != nullptr ? &snap.kv : nullptr, dict);
  return 0;
}

// [security]: which keys this node sends with and accepts (their ids, never the keys), and how
// its rotations went.
void add_keys(rte_tel_data* d) {
  if (g_ctx->keys == nullptr) {
    rte_tel_data_add_dict_string(d, "authentication", "off: frames are not authenticated (no [security] in cluster.ini)");
    return;
  }
  const security::ClusterKeys::Status s = g_ctx->keys->status();
  char id[8];
  rte_tel_data_add_dict_string(d, "authentication", "AES-256-GMAC");
  rte_tel_data_add_dict_string(d, "key_file", g_ctx->keys->path().c_str());
  std::snprintf(id, sizeof id, "0x%04x", s.file.keys[0].id);
  rte_tel_data_add_dict_string(d, "send_key_id", id);
  std::snprintf(id, sizeof id, "0x%04x", s.file.keys[1].id);
  rte_tel_data_add_dict_string(d, "other_key_id", s.file.count > 1 ? id : "none");
  rte_tel_data_add_dict_u64(d, "reloads", s.reloads);
  rte_tel_data_add_dict_u64(d, "reloads_refused", s.refused);
  rte_tel_data_add_dict_string(d, "last_error", s.last_error.c_str());
}

int cmd_keys(const char*, const char*, rte_tel_data* d) {
  rte_tel_data_start_dict(d);
  add_keys(d);
  return 0;
}

// Runs on the telemetry thread (a control thread): the lcores take the new keys at their next frame.
int cmd_keys_reload(const char*, const char*, rte_tel_data* d) {
  rte_tel_data_start_dict(d);
  if (g_ctx->keys != nullptr) {
    const auto r = g_ctx->keys->reload();
    rte_tel_data_add_dict_string(d, "result", r ? "reloaded" : "refused");
    rte_tel_data_add_dict_string(d, "detail", r ? r.value().c_str() : r.error().message.c_str());
  }
  add_keys(d);
  return 0;
}

}  // namespace

void register_telemetry(DaemonContext& ctx, IoThread& io, const ClientHub& hub, const KvHub* kv,
                        const TelemetryInfo& info) {
  g_ctx = &ctx;
  g_io = &io;
  g_hub = &hub;
  g_kv = kv;
  g_info = info;
  rte_telemetry_register_cmd("/tob/info", cmd_info, "Cluster, node, schedule, port and clock of this dpdk-tob node");
  rte_telemetry_register_cmd("/tob/stats", cmd_stats, "All counters and histogram summaries of this dpdk-tob node");
  rte_telemetry_register_cmd("/tob/membership", cmd_membership, "Membership state, members, stages, recent events");
  rte_telemetry_register_cmd("/tob/clock", cmd_clock,
                             "Clock synchronisation: offset to the ensemble, rate correction, precision estimate");
  rte_telemetry_register_cmd("/tob/release", cmd_release,
                             "Timed release: cross-node wake-up skew (p50, p99, max), own clients' lateness");
  rte_telemetry_register_cmd("/tob/histogram", cmd_histogram,
                             "Percentiles of one timing histogram. Parameter: its name (see /tob/histogram)");
  rte_telemetry_register_cmd("/tob/deliveries", cmd_deliveries,
                             "The latest deliveries with their payload's head. Parameter: a client id to filter");
  rte_telemetry_register_cmd("/tob/submit", cmd_submit, "Submit the parameter text as a message (client 1)");
  rte_telemetry_register_cmd("/tob/clients", cmd_clients, "Applications attached through tob.h, per slot");
  rte_telemetry_register_cmd("/tob/ic", cmd_ic,
                             "Interactive consistency and the key-value store: instances, round data, publications, writes");
  rte_telemetry_register_cmd("/tob/keys", cmd_keys, "Frame authentication: the ids of the keys sent with and accepted");
  rte_telemetry_register_cmd("/tob/keys/reload", cmd_keys_reload,
                             "Re-read the [security] key file: send with its first key, accept both (key rotation)");
}

}  // namespace tob::dataplane
