#include "daemon.h"

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_pdump.h>
#include <rte_ring.h>
#include <unistd.h>
#include <x86intrin.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>

#include "core/engine_factory.h"
#include "core/otfp_limits.h"
#include "core/otfp_node.h"
#include "core/slot_budget.h"
#include "dataplane/observe/log.h"
#include "dataplane/observe/stats.h"
#include "dataplane/roles/generators.h"

namespace tob::app {

using namespace tob::dataplane;
using core::Order;

namespace {

constexpr unsigned kSubmitRingSize = 256;
constexpr unsigned kSubmitPoolSize = kSubmitRingSize * 2 - 1;
constexpr int64_t kRefitIntervalNs = 100'000'000;
constexpr int64_t kClockStepNs = 1'000'000;

std::atomic<bool>* g_quit = nullptr;
std::atomic<bool>* g_reload_keys = nullptr;

void on_signal(int) {
  if (g_quit != nullptr) g_quit->store(true, std::memory_order_relaxed);
}

// SIGHUP: the key file is re-read by the I/O thread (never in the handler, never on an lcore).
void on_sighup(int) {
  if (g_reload_keys != nullptr) g_reload_keys->store(true, std::memory_order_relaxed);
}

// Where each frame one sender sends in a cycle gets its bit in the replay window: the engine's
// copies of its segments, otfp's retransmission frames (as many as OtfpNode provisions), the IC
// frames per copy.
security::FrameIdLayout frame_id_layout(const ClusterConfig& cfg, const core::NodeConfig& n) {
  security::FrameIdLayout l;
  l.copies = n.schedule.sends_per_slot;
  const core::NodeConfig otfp = core::OtfpNode::budget_config(n);
  for (size_t k = 0; k < n.schedule.slots.size(); ++k) {
    const auto id = static_cast<core::NodeId>(k);
    l.segments = std::max({l.segments, n.frames_per_copy(id), cfg.order == Order::otfp ? otfp.frames_per_copy(id) : 1});
  }
  if (cfg.order == Order::otfp) l.aux_frames = core::otfp::kAuxFramesMin + l.copies * (l.segments / 2);
  if (cfg.ic) {
    l.ic_copies = cfg.ic->copies;
    l.ic_frames_per_copy = static_cast<int>(cfg.ic_frames_per_slot / static_cast<size_t>(cfg.ic->copies));
  }
  return l;
}

int fail(int code, const std::string& message) {
  std::fprintf(stderr, "dpdk-tob: %s\n", message.c_str());
  return code;
}

ClockSample sample_nic_clock(const void* arg) {
  const auto port = *static_cast<const uint16_t*>(arg);
  ClockSample best{0, 0};
  uint64_t best_width = UINT64_MAX;
  for (int i = 0; i < 3; ++i) {
    uint64_t clk = 0;
    const uint64_t a = __rdtsc();
    rte_eth_read_clock(port, &clk);
    const uint64_t b = __rdtsc();
    if (b - a < best_width) {
      best_width = b - a;
      best = {a + (b - a) / 2, static_cast<int64_t>(clk)};
    }
  }
  return best;
}

// Ring sizes from the configuration: each ring holds what its consumer may fall behind by.
struct RingSizes {
  unsigned rx;   // frames: every copy of every node for 20 ms (control lcore stalls), >= 1024
  unsigned tx;   // own frames: the copies of 8 own turns
  unsigned log;  // deliveries and events: 200 ms of the largest batches (the I/O thread sleeps)
};

// ic_frames: IC frames a node sends per slot, every copy (0 without [ic]). The engine's frames
// count one more per slot for otfp's retransmission frame.
RingSizes ring_sizes(const core::NodeConfig& n, size_t ic_frames) {
  const auto nodes = static_cast<uint64_t>(n.schedule.slots.size());
  // A node's frames per cycle: its copies of every segment, a retransmission frame, IC frames.
  int segments = 1;
  for (size_t k = 0; k < n.schedule.slots.size(); ++k) segments = std::max(segments, n.frames_per_copy(static_cast<core::NodeId>(k)));
  const auto copies = static_cast<uint64_t>(n.schedule.sends_per_slot) * static_cast<uint64_t>(segments) + 1 + ic_frames;
  const double cycles_per_s = 1e9 / static_cast<double>(n.schedule.cycle_ns);
  const auto per = [&](double seconds, uint64_t per_cycle) {
    return static_cast<uint64_t>(std::ceil(seconds * cycles_per_s + 1)) * per_cycle;
  };
  const auto fit = [](uint64_t want, uint64_t lo, uint64_t hi) {
    return static_cast<unsigned>(rte_align64pow2(std::clamp(want, lo, hi)));
  };
  // The log ring (deliveries and events for the I/O thread): 0.2 s of full batches, and at least
  // a burst of the whole tempo window decided at once (an otfp activation or recovery decides
  // every instance it covers together: 32 cycles of four 512-message batches overflowed a ring of
  // 0.2 s at a 100 ms cycle, control_log_ring_full).
  const uint64_t per_cycle = nodes * n.batch_msgs_max + 4 * nodes;
  const uint64_t burst = static_cast<uint64_t>(std::max(n.otfp_window, 1) + 2) * per_cycle;
  return {fit(per(0.02, nodes * copies), 1024, 1 << 20), fit(8 * copies, 64, 8192),
          fit(std::max(per(0.2, per_cycle), burst), 4096, 262144)};
}

class TextReport final : public StatsVisitor {
 public:
  void u64(const std::string& n, uint64_t x) override { line(n, std::to_string(x)); }
  void i64(const std::string& n, int64_t x) override { line(n, std::to_string(x)); }
  void real(const std::string& n, double x) override {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.6g", x);
    line(n, buf);
  }

 private:
  void line(const std::string& n, const std::string& v) { std::printf("  %-36s %s\n", n.c_str(), v.c_str()); }
};

std::string method_list(const DaemonContext& ctx) {
  std::string s;
  for (int i = 0; i < ctx.method_count; ++i) s += (i ? "," : "") + std::string(to_string(ctx.methods[i]));
  return s;
}

}  // namespace

// --- 1. Options and configuration, before the EAL: a mistake costs nothing -------------------

int Daemon::configure(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);  // status lines reach log files as they happen
  int split = argc;
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--") == 0) {
      split = i;
      break;
    }
  std::vector<std::string> app_args(argv + std::min(split + 1, argc), argv + argc);
  if (split == argc) {
    for (int i = 1; i < argc; ++i)
      if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
        std::fputs(daemon_help(argv[0]).c_str(), stdout);
        done_ = true;
        return kExitOk;
      }
  }
  auto parsed = parse_daemon_options(app_args);
  if (!parsed) return fail(kExitUsage, parsed.error().message);
  opt_ = std::move(parsed.value());
  if (opt_.help) {
    std::fputs(daemon_help(argv[0]).c_str(), stdout);
    done_ = true;
    return kExitOk;
  }
  auto loaded = load_cluster_config(opt_.config_path, opt_.overrides);
  if (!loaded) return fail(kExitUsage, loaded.error().message);
  cfg_.emplace(std::move(loaded.value()));
  if (const int rc = check_options(); rc != kExitOk) return rc;
  const ClusterConfig& cfg = *cfg_;
  self_ = static_cast<core::NodeId>(opt_.node_id);
  node_config_ = cfg.for_node(self_);
  // Best effort: frames leave when the control role builds them, at the membership point, not
  // at the transmit instant; receivers then accept a sender's frames from its slot's start.
  if (opt_.transport == Transport::best_effort) node_config_.schedule.precision_ns = node_config_.schedule.decision_margin_ns;
  auto schedule = core::Schedule::create(node_config_.schedule);
  if (!schedule) return fail(kExitUsage, cfg.path + ": " + schedule.error().message);
  schedule_.emplace(std::move(schedule.value()));
  auto clock_source = GlobalClockSource::open(cfg.clock, cfg.ptp_device);
  if (!clock_source) return fail(kExitUsage, cfg.path + ": [timing] " + clock_source.error().message);
  clock_source_.emplace(std::move(clock_source.value()));
  // otfp: the acceptor log, and what an earlier life of this node left in it (replayed later).
  if (cfg.order == Order::otfp) {
    auto log = AcceptorLog::open(cfg.log_path_for(self_), cfg.log_sync, earlier_log_);
    if (!log) return fail(kExitUsage, cfg.path + ": [storage] path: " + log.error().message);
    acceptor_log_ = std::move(log.value());
  }
  eal_argc_ = split;
  eal_argv_.assign(argv, argv + split);
  eal_argv_.push_back(nullptr);
  return kExitOk;
}

int Daemon::check_options() const {
  const ClusterConfig& cfg = *cfg_;
  const DaemonOptions& opt = opt_;
  if (opt.node_id >= cfg.nodes)
    return fail(kExitUsage, "--node-id " + std::to_string(opt.node_id) + ": not in the cluster (" + cfg.path +
                                ": [cluster] nodes = " + std::to_string(cfg.nodes) + ", ids 0.." +
                                std::to_string(cfg.nodes - 1) + ")");
  if (opt.gen_rate_per_s > 0 && opt.gen_size_bytes > cfg.node.payload_bytes_max)
    return fail(kExitUsage, "--gen-size " + std::to_string(opt.gen_size_bytes) + ": above [limits] payload_bytes = " +
                                std::to_string(cfg.node.payload_bytes_max));
  if (!cfg.ic && (!opt.published_path.empty() || opt.ic_fault != core::IcFaultMode::none || opt.ic_gen_keys > 0))
    return fail(kExitUsage, std::string(!opt.published_path.empty() ? "--published"
                                        : opt.ic_gen_keys > 0       ? "--ic-gen-keys"
                                                                    : "--ic-fault") +
                                ": the cluster runs no interactive consistency (" + cfg.path + " has no [ic] section)");
  if (cfg.ic && opt.ic_gen_keys > cfg.ic->keys_per_period_max)
    return fail(kExitUsage, "--ic-gen-keys " + std::to_string(opt.ic_gen_keys) + ": above [ic] keys_per_period = " +
                                std::to_string(cfg.ic->keys_per_period_max));
  if (cfg.ic) {
    // The generator's keys must fit [ic] key_bytes (numeric classes have 8-byte values already:
    // IcConfig::validate).
    for (size_t i = 0; i < opt.ic_gen_keys; ++i) {
      const size_t len = ic_gen_key(*cfg.ic, i).size();
      if (len > cfg.ic->key_bytes_max)
        return fail(kExitUsage, "--ic-gen-keys " + std::to_string(opt.ic_gen_keys) + ": key " + std::to_string(i) + " needs " +
                                    std::to_string(len) + " bytes, above [ic] key_bytes = " +
                                    std::to_string(cfg.ic->key_bytes_max));
    }
  }
  return kExitOk;
}

// --- 2. EAL, port, clocks, pools and rings, the applications' memory, the engines -------------

void Daemon::release_eal() {
  // The applications' side first: it holds rings and memzones of the EAL.
  kv_hub_.reset();
  client_hub_.reset();
  if (pdump_started_) rte_pdump_uninit();
  pdump_started_ = false;
  if (eal_started_) rte_eal_cleanup();
  eal_started_ = false;
}

int Daemon::fail_started(int code, const std::string& message) {
  if (port_started_) stop_port(opt_.port_id);
  port_started_ = false;
  release_eal();
  return fail(code, message);
}

int Daemon::start() {
  if (rte_eal_init(eal_argc_, eal_argv_.data()) < 0)
    return fail(kExitRuntime, std::string("EAL initialisation failed: ") + rte_strerror(rte_errno));
  eal_started_ = true;
  register_log_type();
  // DPDK's packet capture (dpdk-dumpcap, dpdk-pdump as secondary processes; docs/operations.md
  // "Capturing and reading frames"): this only answers their requests on the EAL's
  // multi-process channel. The RX/TX callbacks that copy frames exist only while a capture
  // runs, so the lcores pay nothing otherwise.
  if (rte_pdump_init() != 0)
    return fail_started(kExitRuntime, std::string("packet capture initialisation failed: ") + rte_strerror(rte_errno));
  pdump_started_ = true;
  ctx_ = std::make_unique<DaemonContext>();
  auto port_info = probe_port(opt_.port_id);
  if (!port_info) return fail_started(kExitUsage, port_info.error().message);
  port_info_.emplace(std::move(port_info.value()));
  auto profile = opt_.profile.empty() ? profile_for_driver(port_info_->driver, default_profile_dir())
                                      : find_port_profile(opt_.profile, default_profile_dir());
  if (!profile) return fail_started(kExitUsage, profile.error().message);
  profile_.emplace(std::move(profile.value()));
  port_info_->frame.profile_frame_max = profile_->frame_bytes_max;
  if (profile_->driver != port_info_->driver)
    TOB_LOG(RTE_LOG_WARNING, "profile %s is for driver %s, the port's driver is %s\n", profile_->name.c_str(),
            profile_->driver.c_str(), port_info_->driver.c_str());
  if (const int rc = pick_tx_methods(); rc != kExitOk) return rc;
  const ClusterConfig& cfg = *cfg_;
  DaemonContext& ctx = *ctx_;
  ctx.options = &opt_;
  ctx.config = &cfg;
  ctx.self = self_;
  ctx.schedule = &*schedule_;
  ctx.port_id = opt_.port_id;
  ctx.rx_burst = profile_->rx_burst;
  ctx.ether.dst = cfg.multicast_mac;
  ctx.ether.src = cfg.node_macs[self_];
  ctx.ether.vlan = cfg.vlan;
  ctx.ether.pcp = cfg.pcp;
  ctx.ether_bytes = ether_header_bytes(ctx.ether);
  // Global time: calibrate the TSC against the source before anything is timed.
  ctx.clock.set_knobs(opt_.clock_offset_ns, opt_.clock_drift_ppm);
  calibrator_.emplace(*clock_source_, ctx.clock, kRefitIntervalNs, kClockStepNs);
  if (!calibrator_->initial_fit(8, 2'000'000)) return fail_started(kExitRuntime, "cannot calibrate the TSC against the clock source");
  // In-band synchronisation ([timing] sync): with inband | both its map corrects global time
  // from the start (the identity until the first round closes), before anything reads it.
  auto discipline = ClockDiscipline::create(cfg, node_config_.schedule, self_, ctx.clock);
  if (!discipline) return fail_started(kExitUsage, cfg.path + ": " + discipline.error().message);
  clock_discipline_.emplace(std::move(discipline.value()));
  if (clock_discipline_->applied()) ctx.clock.apply_map();
  ctx.clock_gap_max_ns = clock_discipline_->gap_max_ns();
  if (!cfg.ptp4l_socket.empty()) {
    // ptp4l's offset, reported beside the in-band estimate (/tob/clock); a socket of our own for
    // its answers, as pmc binds /var/run/pmc.<pid>.
    auto ptp = Ptp4lClient::open(cfg.ptp4l_socket_for(self_), "/var/run/dpdk-tob-ptp4l." + std::to_string(getpid()));
    if (!ptp) return fail_started(kExitUsage, cfg.path + ": [timing] " + ptp.error().message);
    ptp4l_.emplace(std::move(ptp.value()));
  }
  if (const int rc = create_pools_and_rings(); rc != kExitOk) return rc;
  if (const int rc = start_port_and_clocks(); rc != kExitOk) return rc;
  // Applications (include/tob.h): the shared memzone, the delivery pool and the client rings.
  auto hub = ClientHub::create(cfg, self_, ctx.clock);
  if (!hub) return fail_started(kExitRuntime, hub.error().message);
  client_hub_ = std::move(hub.value());
  if (const int rc = create_engines(); rc != kExitOk) return rc;
  io_.emplace(ctx);
  io_->watch_clients(client_hub_->shared());
  if (auto files = io_->open_files(); !files) return fail_started(kExitUsage, files.error().message);
  return kExitOk;
}

int Daemon::pick_tx_methods() {
  const PortInfo& pi = *port_info_;
  const bool can_launch = pi.launch_time && pi.read_clock;
  for (size_t i = 0; i < opt_.tx_methods.size(); ++i) {
    // auto: launch time when the port offers it, else the profile's software method (hybrid for
    // spin when cores are shared), else spin.
    TxMethod r = resolve_tx_method(opt_.tx_methods[i], can_launch, profile_->tx_method, opt_.idle);
    if (r == TxMethod::nic && !can_launch)
      return fail_started(kExitUsage, "--tx-method nic: port " + std::to_string(opt_.port_id) + " (" + pi.driver + ") " +
                                          (pi.launch_time ? "cannot read its clock (rte_eth_read_clock)"
                                                          : "does not offer RTE_ETH_TX_OFFLOAD_SEND_ON_TIMESTAMP") +
                                          "; use spin, sleep or hybrid");
    ctx_->methods[i] = r;
  }
  ctx_->method_count = static_cast<int>(opt_.tx_methods.size());
  use_nic_ = std::find(ctx_->methods, ctx_->methods + ctx_->method_count, TxMethod::nic) != ctx_->methods + ctx_->method_count;
  return kExitOk;
}

int Daemon::create_pools_and_rings() {
  const ClusterConfig& cfg = *cfg_;
  const PortProfile& prof = *profile_;
  DaemonContext& ctx = *ctx_;
  const int socket = std::max(0, rte_eth_dev_socket_id(opt_.port_id));
  // The largest frame with its Ethernet header and FCS, and what the port's RX queue insists on
  // (net_af_packet: its ring slot, framesz - 32).
  const size_t frame_room = std::max({size_t{2048}, ctx.ether_bytes + cfg.frame_bytes_on_wire + 4,
                                      rx_data_room_min(port_info_->frame)});
  const RingSizes rings = ring_sizes(node_config_, cfg.ic_frames_per_slot);
  // + IC frames held for the engine's (two slots' worth, control_role.h).
  const unsigned pkt_count = prof.rx_desc + prof.tx_desc + rings.rx + rings.tx + 4u * prof.rx_burst + 512u +
                             2u * static_cast<unsigned>(cfg.ic_frames_per_slot);
  ctx.pkt_pool = rte_pktmbuf_pool_create("tob_pkt", rte_align32pow2(pkt_count) - 1, 64, 0,
                                         static_cast<uint16_t>(RTE_PKTMBUF_HEADROOM + frame_room), socket);
  ctx.msg_bytes = sizeof(SubmitMsg) + cfg.node.payload_bytes_max;
  ctx.msg_pool = rte_mempool_create(kMsgPoolName, kSubmitPoolSize, static_cast<unsigned>(ctx.msg_bytes), 0, 0, nullptr,
                                    nullptr, nullptr, nullptr, socket, 0);
  ctx.rx_ring = rte_ring_create_elem("tob_rx", sizeof(RxItem), rings.rx, socket, RING_F_SP_ENQ | RING_F_SC_DEQ);
  ctx.tx_ring = rte_ring_create_elem("tob_tx", sizeof(TxItem), rings.tx, socket, RING_F_SP_ENQ | RING_F_SC_DEQ);
  ctx.log_ring = rte_ring_create_elem("tob_log", sizeof(LogRecord), rings.log, socket, RING_F_SP_ENQ | RING_F_SC_DEQ);
  ctx.submit_ring = rte_ring_create(kSubmitRingName, kSubmitRingSize, socket, RING_F_SC_DEQ);
  if (clock_discipline_->active()) {
    // Clock readings: the first copy of every node's frame, as many cycles' worth as the rx ring.
    ctx.clock_ring = rte_ring_create_elem("tob_clock", sizeof(ClockReading), rings.rx, socket,
                                          RING_F_SP_ENQ | RING_F_SC_DEQ);
    if (ctx.clock_ring == nullptr)
      return fail_started(kExitRuntime, std::string("cannot create the clock readings ring: ") + rte_strerror(rte_errno));
  }
  if (cfg.ic && !opt_.published_path.empty()) {
    // Publications for the --published file: 8 periods of every (key, t_pub) any node may write.
    ctx.ic_pub_bytes = (sizeof(IcPubRecord) + cfg.ic->key_bytes_max + cfg.ic->value_bytes_max + 7) / 8 * 8;
    const uint64_t per_period = static_cast<uint64_t>(cfg.nodes) * cfg.ic->keys_per_period_max;
    const auto count = static_cast<unsigned>(rte_align64pow2(std::clamp<uint64_t>(8 * per_period, 1024, 1 << 20)));
    ctx.ic_pub_ring = rte_ring_create_elem("tob_ic_pub", static_cast<unsigned>(ctx.ic_pub_bytes), count, socket,
                                           RING_F_SP_ENQ | RING_F_SC_DEQ);
    if (ctx.ic_pub_ring == nullptr)
      return fail_started(kExitRuntime, "cannot create the ring of publications for --published (" + std::to_string(count) +
                                            " x " + std::to_string(ctx.ic_pub_bytes) + " bytes): " + rte_strerror(rte_errno));
  }
  if (ctx.pkt_pool == nullptr || ctx.msg_pool == nullptr || ctx.rx_ring == nullptr || ctx.tx_ring == nullptr ||
      ctx.log_ring == nullptr || ctx.submit_ring == nullptr)
    return fail_started(kExitRuntime, std::string("cannot create pools and rings (hugepages reserved?): ") + rte_strerror(rte_errno));
  return kExitOk;
}

int Daemon::start_port_and_clocks() {
  const ClusterConfig& cfg = *cfg_;
  DaemonContext& ctx = *ctx_;
  auto port = start_port(opt_.port_id, *profile_, ctx.pkt_pool, cfg.node_macs[self_], port_info_->frame, ctx.ether_bytes,
                         cfg.frame_bytes_on_wire, use_nic_);
  if (!port) return fail_started(kExitRuntime, port.error().message);
  port_started_ = true;
  // The NIC clock is fitted once the port runs (mlx5 switches clocks when Tx scheduling starts).
  if (use_nic_) {
    nic_calibrator_.emplace(&sample_nic_clock, &ctx.port_id, ctx.nic_clock, kRefitIntervalNs, kClockStepNs);
    if (!nic_calibrator_->initial_fit(8, 2'000'000))
      return fail_started(kExitRuntime, "cannot calibrate the NIC clock (rte_eth_read_clock)");
  }
  ctx.nic_launch = port.value().launch_time;
  ctx.ts_offset = port.value().ts_offset;
  ctx.ts_flag = port.value().ts_flag;
  if (!port.value().mac_set)
    TOB_LOG(RTE_LOG_WARNING, "port %u keeps its own MAC %s (config says %s); frames still carry the configured one\n",
            opt_.port_id, port_info_->mac.c_str(), format_mac(cfg.node_macs[self_]).c_str());
  return kExitOk;
}

int Daemon::create_engines() {
  const ClusterConfig& cfg = *cfg_;
  DaemonContext& ctx = *ctx_;
  // The protocol core. Message ids continue across restarts: they start at the global time.
  node_config_.first_msg_id = static_cast<uint64_t>(std::max<int64_t>(0, ctx.clock.to_ns(__rdtsc())));
  auto engine = core::make_engine(cfg.order, node_config_, earlier_log_);
  if (!engine) return fail_started(kExitUsage, cfg.path + ": " + engine.error().message);
  engine_ = std::move(engine.value());
  replayed_bytes_ = earlier_log_.size();
  earlier_log_ = {};  // replayed
  ctx.log = acceptor_log_.get();
  ctx.lenient_windows = cfg.order == Order::otfp;
  ctx.late_frames = cfg.order == Order::otfp;
  // [security]: the keys of both lcores and the replay window, made here, off the lcores.
  if (cfg.keys) {
    keys_ = std::make_unique<security::ClusterKeys>(cfg.key_file, *cfg.keys);
    replay_ = std::make_unique<security::ReplayWindow>(cfg.nodes, frame_id_layout(cfg, node_config_));
    ctx.keys = keys_.get();
    ctx.replay = replay_.get();
  }
  // Interactive consistency next to the engine ([ic]), and the applications' side of its store.
  if (!cfg.ic) return kExitOk;
  auto ic = core::IcNode::create(node_config_, *cfg.ic);
  if (!ic) return fail_started(kExitUsage, cfg.path + ": " + ic.error().message);
  ic_node_.emplace(std::move(ic.value()));
  if (opt_.ic_fault != core::IcFaultMode::none)  // the test knob: this node misbehaves
    ic_faults_.emplace(*ic_node_, node_config_, core::IcTestFault{opt_.ic_fault, 0x1C0FFEEull + self_});
  auto kv = KvHub::create(cfg, *client_hub_->shared());
  if (!kv) return fail_started(kExitRuntime, kv.error().message);
  kv_hub_ = std::move(kv.value());
  ctx.ic = true;
  return kExitOk;
}

// --- 3. Roles to lcores, telemetry, signals ---------------------------------------------------

int Daemon::launch() {
  // One lcore runs all; two: control | RX+TX; three or more: control | RX | TX.
  DaemonContext& ctx = *ctx_;
  const unsigned lcores = opt_.single_lcore ? 1 : rte_lcore_count();
  std::vector<unsigned> workers;
  unsigned id;
  RTE_LCORE_FOREACH_WORKER(id) workers.push_back(id);
  rx_.emplace(ctx);
  tx_.emplace(ctx);
  control_.emplace(ctx, *engine_, *calibrator_, nic_calibrator_ ? &*nic_calibrator_ : nullptr, *clock_discipline_, *client_hub_,
                   ic_node_ ? &*ic_node_ : nullptr, kv_hub_.get(), ic_faults_ ? &*ic_faults_ : nullptr);
  std::string layout;
  const std::string main_lcore = "lcore " + std::to_string(rte_get_main_lcore());
  if (lcores <= 1) {
    main_loop_ = {&ctx, &*rx_, &*control_, &*tx_, "rx+control+tx"};
    layout = main_lcore + ": rx+control+tx";
  } else if (lcores == 2) {
    main_loop_ = {&ctx, nullptr, &*control_, nullptr, "control"};
    worker_loops_.push_back({workers[0], {&ctx, &*rx_, nullptr, &*tx_, "rx+tx"}});
    layout = main_lcore + ": control, lcore " + std::to_string(workers[0]) + ": rx+tx";
  } else {
    main_loop_ = {&ctx, nullptr, &*control_, nullptr, "control"};
    worker_loops_.push_back({workers[0], {&ctx, &*rx_, nullptr, nullptr, "rx"}});
    worker_loops_.push_back({workers[1], {&ctx, nullptr, nullptr, &*tx_, "tx"}});
    layout = main_lcore + ": control, lcore " + std::to_string(workers[0]) + ": rx, lcore " + std::to_string(workers[1]) +
             ": tx";
    if (lcores > 3) TOB_LOG(RTE_LOG_WARNING, "%u lcores given; only 3 are used\n", lcores);
  }
  ctx.split_rx = main_loop_.rx == nullptr;

  info_.driver = port_info_->driver;
  info_.profile = profile_->name + " (" + profile_->path + ")";
  info_.mac = format_mac(cfg_->node_macs[self_]);
  info_.clock = std::string(clock_source_->name()) +
                (opt_.clock_offset_ns != 0 || opt_.clock_drift_ppm != 0
                     ? " with test offset " + std::to_string(opt_.clock_offset_ns) + " ns, drift " +
                           std::to_string(opt_.clock_drift_ppm) + " ppm"
                     : "") +
                ", sync " + to_string(cfg_->sync) +
                (cfg_->sync != ClockSyncMode::off ? " (delay " + std::to_string(cfg_->delay_ns) + " ns)" : "");
  info_.lcores = layout;
  info_.tx_methods = method_list(ctx);
  info_.ptp4l = ptp4l_ ? &*ptp4l_ : nullptr;
  register_telemetry(ctx, *io_, *client_hub_, kv_hub_.get(), info_);

  g_quit = &ctx.quit;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  g_reload_keys = &ctx.reload_keys;
  struct sigaction hup {};
  hup.sa_handler = on_sighup;
  sigaction(SIGHUP, &hup, nullptr);
  print_start_report();
  if (!io_->start() || (acceptor_log_ != nullptr && !acceptor_log_->start()))
    return fail_started(kExitRuntime, "cannot start the I/O and log threads");
  return kExitOk;
}

void Daemon::print_start_report() const {
  const ClusterConfig& cfg = *cfg_;
  const DaemonContext& ctx = *ctx_;
  const PortInfo& pi = *port_info_;
  const core::SlotConfig slot = node_config_.schedule.slots[self_];
  std::printf(
      "dpdk-tob: node %u of %d in cluster '%s' (id %u), order %s, cycle %" PRId64 " ns, slot %" PRId64 "+%" PRId64
      " ns\n"
      "dpdk-tob: port %u %s (profile %s), mac %s, %s%s, clock %s\n"
      "dpdk-tob: %s, idle %s, tx %s, transport %s\n",
      self_, cfg.nodes, cfg.name.c_str(), cfg.cluster_id, core::to_string(cfg.order), node_config_.schedule.cycle_ns,
      slot.offset_ns, slot.length_ns, opt_.port_id, pi.driver.c_str(), profile_->name.c_str(), info_.mac.c_str(),
      cfg.vlan != 0 ? ("vlan " + std::to_string(cfg.vlan) + " pcp " + std::to_string(cfg.pcp)).c_str() : "untagged",
      pi.launch_time ? ", launch time offered" : "", info_.clock.c_str(), info_.lcores.c_str(), to_string(opt_.idle),
      info_.tx_methods.c_str(), to_string(opt_.transport));
  if (acceptor_log_ != nullptr)
    std::printf("dpdk-tob: acceptor log %s, durability %s: replayed %zu bytes%s\n", acceptor_log_->path().c_str(),
                cfg.log_sync ? "sync" : "none", replayed_bytes_,
                acceptor_log_->discarded_on_open() > 0
                    ? (", cut off a damaged tail of " + std::to_string(acceptor_log_->discarded_on_open()) + " bytes")
                          .c_str()
                    : "");
  if (keys_ != nullptr)
    std::printf("dpdk-tob: frames authenticated (AES-256-GMAC, %s): %s; replay window %" PRIu64 " cycles x %zu frames per sender\n",
                cfg.key_file.c_str(), security::ClusterKeys::describe(*cfg.keys).c_str(),
                security::ReplayWindow::kWindowCycles, replay_->layout().bits());
  else
    std::printf("dpdk-tob: frames are NOT authenticated (no [security] in %s): any host on the segment can forge "
                "them (docs/configuration.md \"[security]\")\n", cfg.path.c_str());
  // With [timing] rate_mbps the slot budget was checked for every node when the configuration
  // was read (core/slot_budget.h): say what this node's slot carries.
  if (node_config_.rate_mbps > 0) {
    const core::NodeConfig nc = cfg.order == core::Order::otfp ? core::OtfpNode::budget_config(node_config_) : node_config_;
    if (auto b = core::slot_budget(nc.schedule, self_, nc.wire()))
      std::printf("dpdk-tob: slot budget at %" PRId64 " Mbit/s: %s; %s sends its batch in up to %d segments per copy\n",
                  nc.rate_mbps, core::describe(b.value(), self_, nc.schedule.sends_per_slot).c_str(),
                  cfg.order == core::Order::mars ? "mars" : "otfp", nc.frames_per_copy(self_));
  }
  // The own slot's airtime at the port's link speed (an upper bound: every frame full size, with
  // preamble, FCS and gap): the engine's copies, the retransmission frame and the IC frames.
  if (rte_eth_link link{}; node_config_.rate_mbps == 0 && rte_eth_link_get_nowait(opt_.port_id, &link) == 0 && link.link_speed != RTE_ETH_SPEED_NUM_NONE &&
                           link.link_speed != RTE_ETH_SPEED_NUM_UNKNOWN) {
    const auto frames = static_cast<uint64_t>(node_config_.schedule.sends_per_slot) + 1 + cfg.ic_frames_per_slot;
    const uint64_t wire_bits = frames * (ctx.ether_bytes + cfg.frame_bytes_on_wire + 24) * 8;
    const auto airtime_ns = static_cast<int64_t>(wire_bits * 1000 / link.link_speed);  // link_speed in Mbit/s
    const int64_t slot_ns = node_config_.schedule.slots[self_].length_ns;
    std::printf("dpdk-tob: link %u Mbit/s: %" PRIu64 " full frames per slot need %.1f us of the %.1f us slot\n",
                link.link_speed, frames, static_cast<double>(airtime_ns) / 1e3, static_cast<double>(slot_ns) / 1e3);
    if (airtime_ns > slot_ns)
      TOB_LOG(RTE_LOG_WARNING,
              "the slot of %.1f us cannot carry %" PRIu64 " full frames at %u Mbit/s (%.1f us): frames still queued at "
              "its end are not sent (tx_missed); shorten [ic] round data or lengthen the slot\n",
              static_cast<double>(slot_ns) / 1e3, frames, link.link_speed, static_cast<double>(airtime_ns) / 1e3);
  }
  if (ic_node_) {
    const core::IcConfig& ic = ic_node_->config();
    static const char* faults[] = {"none", "lie", "omit", "garble"};
    std::printf(
        "dpdk-tob: interactive consistency: f %d (%d rounds), period %d cycle%s, %zu IC frame%s per slot (%d cop%s), "
        "%zu keys of %zu + %zu bytes per period, store %zu keys x %zu versions, reductions: %s default, %zu class%s%s%s\n",
        ic.f, ic_node_->rounds(), ic.period_cycles, ic.period_cycles == 1 ? "" : "s", cfg.ic_frames_per_slot,
        cfg.ic_frames_per_slot == 1 ? "" : "s", ic.copies, ic.copies == 1 ? "y" : "ies", ic.keys_per_period_max,
        ic.key_bytes_max, ic.value_bytes_max, ic.store_keys_max, ic.versions_per_key, core::to_string(ic.default_reduction),
        ic.key_classes.size(), ic.key_classes.size() == 1 ? "" : "es",
        opt_.ic_fault != core::IcFaultMode::none ? ", TEST FAULT " : "",
        opt_.ic_fault != core::IcFaultMode::none ? faults[static_cast<int>(opt_.ic_fault)] : "");
  }
  std::fflush(stdout);
}

// --- 4. The loops -----------------------------------------------------------------------------

int Daemon::run() {
  int code = kExitOk;
  for (auto& [lcore, loop] : worker_loops_) {
    if (rte_eal_remote_launch(run_lcore_loop, &loop, lcore) != 0) {
      ctx_->quit.store(true);
      code = fail(kExitRuntime, "cannot launch a loop on lcore " + std::to_string(lcore));
    }
  }
  if (run_lcore_loop(&main_loop_) != 0) code = kExitRuntime;
  for (auto& [lcore, loop] : worker_loops_)
    if (rte_eal_wait_lcore(lcore) != 0) code = kExitRuntime;
  return code;
}

// --- 5. Stopped: the node is silent. Flush the files, report, release the port -----------------

int Daemon::stop(int code) {
  io_->finish();
  if (acceptor_log_ != nullptr) acceptor_log_->stop();
  if (ctx_->fatal.load() != 0)
    code = fail(kExitRuntime, "the acceptor log could not keep up with the engine (" + acceptor_log_->path() +
                                  "): stopped rather than send votes it had not recorded");
  code = report_statistics(code);
  std::fflush(stdout);
  g_quit = nullptr;
  g_reload_keys = nullptr;
  if (port_started_) stop_port(opt_.port_id);
  port_started_ = false;
  release_eal();
  return code;
}

int Daemon::report_statistics(int code) {
  DaemonContext& ctx = *ctx_;
  const NodeStatus final_status = ctx.status.read();
  const IcStatus final_ic = ctx.ic ? ctx.ic_status.read() : IcStatus{};
  const KvHubStats final_kv = kv_hub_ ? kv_hub_->stats() : KvHubStats{};
  const StatsSources src{ctx.rx,
                         ctx.tx,
                         ctx.control,
                         final_status,
                         ctx.io_records.load(),
                         ctx.io_write_errors.load(),
                         acceptor_log_.get(),
                         ctx.ic ? &final_ic : nullptr,
                         kv_hub_ ? &final_kv : nullptr};
  std::printf("dpdk-tob: stopped. %s\n", io_->status_line().c_str());
  std::printf("dpdk-tob: statistics of node %u\n", self_);
  TextReport report;
  visit_stats(src, report);
  if (!opt_.stats_path.empty()) {
    std::FILE* f = std::fopen(opt_.stats_path.c_str(), "w");
    if (f == nullptr || std::fputs(stats_json(src).c_str(), f) < 0)
      code = fail(kExitRuntime, opt_.stats_path + ": cannot write statistics: " + std::strerror(errno));
    if (f != nullptr) std::fclose(f);
  }
  if (ctx.control.log_ring_full.get() != 0)
    code = fail(kExitRuntime, "the log ring overflowed: " + std::to_string(ctx.control.log_ring_full.get()) +
                                  " delivery/event records are missing from the output files");
  if (ctx.control.ic_pub_ring_full.get() != 0)
    code = fail(kExitRuntime, "the publication ring overflowed: " + std::to_string(ctx.control.ic_pub_ring_full.get()) +
                                  " publications are missing from " + opt_.published_path);
  return code;
}

int run_daemon(int argc, char** argv) {
  Daemon d;
  if (const int rc = d.configure(argc, argv); rc != kExitOk || d.done()) return rc;
  if (const int rc = d.start(); rc != kExitOk) return rc;
  if (const int rc = d.launch(); rc != kExitOk) return rc;
  return d.stop(d.run());
}

}  // namespace tob::app
