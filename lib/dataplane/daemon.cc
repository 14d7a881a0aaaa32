#include "dataplane/daemon.h"

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <x86intrin.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/engine_factory.h"
#include "dataplane/storage/acceptor_log.h"
#include "dataplane/clients/client_hub.h"
#include "dataplane/config/cluster_config.h"
#include "dataplane/context.h"
#include "dataplane/roles/control_role.h"
#include "dataplane/roles/generators.h"
#include "dataplane/time/global_clock.h"
#include "dataplane/observe/io_thread.h"
#include "dataplane/clients/kv_hub.h"
#include "dataplane/roles/lcore_loop.h"
#include "dataplane/observe/log.h"
#include "dataplane/config/options.h"
#include "dataplane/port/port.h"
#include "dataplane/port/port_profile.h"
#include "dataplane/roles/rx_role.h"
#include "dataplane/observe/stats.h"
#include "dataplane/observe/telemetry.h"
#include "dataplane/roles/tx_role.h"

namespace tob::dataplane {

namespace {

constexpr int kExitOk = 0;
constexpr int kExitRuntime = 1;
constexpr int kExitUsage = 2;

constexpr unsigned kSubmitRingSize = 256;
constexpr unsigned kSubmitPoolSize = kSubmitRingSize * 2 - 1;
constexpr int64_t kRefitIntervalNs = 100'000'000;
constexpr int64_t kClockStepNs = 1'000'000;

std::atomic<bool>* g_quit = nullptr;

void on_signal(int) {
  if (g_quit != nullptr) g_quit->store(true, std::memory_order_relaxed);
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
  const auto copies = static_cast<uint64_t>(n.schedule.sends_per_slot) + 1 + ic_frames;
  const double cycles_per_s = 1e9 / static_cast<double>(n.schedule.cycle_ns);
  const auto per = [&](double seconds, uint64_t per_cycle) {
    return static_cast<uint64_t>(std::ceil(seconds * cycles_per_s + 1)) * per_cycle;
  };
  const auto fit = [](uint64_t want, uint64_t lo, uint64_t hi) {
    return static_cast<unsigned>(rte_align64pow2(std::clamp(want, lo, hi)));
  };
  return {fit(per(0.02, nodes * copies), 1024, 1 << 20), fit(8 * copies, 64, 8192),
          fit(per(0.2, nodes * n.batch_msgs_max + 4 * nodes), 4096, 262144)};
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

int run_daemon(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);  // status lines reach log files as they happen
  // 1. Options and configuration, before the EAL: a mistake costs nothing.
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
        return kExitOk;
      }
  }
  auto parsed = parse_daemon_options(app_args);
  if (!parsed) return fail(kExitUsage, parsed.error().message);
  DaemonOptions opt = std::move(parsed.value());
  if (opt.help) {
    std::fputs(daemon_help(argv[0]).c_str(), stdout);
    return kExitOk;
  }
  auto loaded = load_cluster_config(opt.config_path, opt.overrides);
  if (!loaded) return fail(kExitUsage, loaded.error().message);
  const ClusterConfig cfg = std::move(loaded.value());
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
  const auto self = static_cast<core::NodeId>(opt.node_id);
  core::NodeConfig node_config = cfg.for_node(self);
  // Best effort: frames leave when the control role builds them, at the membership point, not
  // at the transmit instant; receivers then accept a sender's frames from its slot's start.
  if (opt.transport == Transport::best_effort)
    node_config.schedule.precision_ns = node_config.schedule.decision_margin_ns;
  auto schedule = core::Schedule::create(node_config.schedule);
  if (!schedule) return fail(kExitUsage, cfg.path + ": " + schedule.error().message);
  auto clock_source = GlobalClockSource::open(cfg.clock, cfg.ptp_device);
  if (!clock_source) return fail(kExitUsage, cfg.path + ": [timing] " + clock_source.error().message);
  // otfp: the acceptor log, and what an earlier life of this node left in it (replayed below).
  std::unique_ptr<AcceptorLog> acceptor_log;
  std::vector<uint8_t> earlier_log;
  if (cfg.order == Order::otfp) {
    auto log = AcceptorLog::open(cfg.log_path_for(self), cfg.log_sync, earlier_log);
    if (!log) return fail(kExitUsage, cfg.path + ": [storage] path: " + log.error().message);
    acceptor_log = std::move(log.value());
  }

  // 2. EAL and resources.
  std::vector<char*> eal_argv(argv, argv + split);
  eal_argv.push_back(nullptr);
  if (rte_eal_init(split, eal_argv.data()) < 0)
    return fail(kExitRuntime, std::string("EAL initialisation failed: ") + rte_strerror(rte_errno));
  register_log_type();
  int code = kExitOk;
  auto ctx = std::make_unique<DaemonContext>();
  // The applications' side: released before the EAL, whose rings and memzones they hold.
  std::unique_ptr<ClientHub> client_hub;
  std::unique_ptr<KvHub> kv_hub;
  const auto release_eal = [&] {
    kv_hub.reset();
    client_hub.reset();
    rte_eal_cleanup();
  };
  const auto cleanup = [&](int rc, const std::string& message) {
    release_eal();
    return fail(rc, message);
  };

  auto port_info = probe_port(opt.port_id);
  if (!port_info) return cleanup(kExitUsage, port_info.error().message);
  const PortInfo& pi = port_info.value();
  auto profile = opt.profile.empty() ? profile_for_driver(pi.driver, default_profile_dir())
                                     : find_port_profile(opt.profile, default_profile_dir());
  if (!profile) return cleanup(kExitUsage, profile.error().message);
  const PortProfile& prof = profile.value();
  if (prof.driver != pi.driver)
    TOB_LOG(RTE_LOG_WARNING, "profile %s is for driver %s, the port's driver is %s\n", prof.name.c_str(),
            prof.driver.c_str(), pi.driver.c_str());
  const bool can_launch = pi.launch_time && pi.read_clock;
  for (size_t i = 0; i < opt.tx_methods.size(); ++i) {
    // auto: launch time when the port offers it, else the profile's software method, else spin.
    TxMethod r = opt.tx_methods[i];
    if (r == TxMethod::automatic && can_launch) r = TxMethod::nic;
    if (r == TxMethod::automatic && prof.tx_method != TxMethod::nic) r = prof.tx_method;
    if (r == TxMethod::automatic) r = TxMethod::spin;
    if (r == TxMethod::nic && !can_launch)
      return cleanup(kExitUsage, "--tx-method nic: port " + std::to_string(opt.port_id) + " (" + pi.driver + ") " +
                                     (pi.launch_time ? "cannot read its clock (rte_eth_read_clock)"
                                                     : "does not offer RTE_ETH_TX_OFFLOAD_SEND_ON_TIMESTAMP") +
                                     "; use spin, sleep or hybrid");
    ctx->methods[i] = r;
  }
  ctx->method_count = static_cast<int>(opt.tx_methods.size());
  const bool use_nic = std::find(ctx->methods, ctx->methods + ctx->method_count, TxMethod::nic) !=
                       ctx->methods + ctx->method_count;

  ctx->options = &opt;
  ctx->config = &cfg;
  ctx->self = self;
  ctx->schedule = &schedule.value();
  ctx->port_id = opt.port_id;
  ctx->rx_burst = prof.rx_burst;
  ctx->ether.dst = cfg.multicast_mac;
  ctx->ether.src = cfg.node_macs[self];
  ctx->ether.vlan = cfg.vlan;
  ctx->ether.pcp = cfg.pcp;
  ctx->ether_bytes = ether_header_bytes(ctx->ether);

  // Global time: calibrate the TSC against the source before anything is timed.
  ctx->clock.set_knobs(opt.clock_offset_ns, opt.clock_drift_ppm);
  Calibrator calibrator(clock_source.value(), ctx->clock, kRefitIntervalNs, kClockStepNs);
  if (!calibrator.initial_fit(8, 2'000'000))
    return cleanup(kExitRuntime, "cannot calibrate the TSC against the clock source");

  const int socket = std::max(0, rte_eth_dev_socket_id(opt.port_id));
  const size_t frame_room = std::max<size_t>(2048, ctx->ether_bytes + cfg.node.frame_bytes_max + 4);
  const RingSizes rings = ring_sizes(node_config, cfg.ic_frames_per_slot);
  // + IC frames held for the engine's (two slots' worth, control_role.h).
  const unsigned pkt_count = prof.rx_desc + prof.tx_desc + rings.rx + rings.tx + 4u * prof.rx_burst + 512u +
                             2u * static_cast<unsigned>(cfg.ic_frames_per_slot);
  ctx->pkt_pool = rte_pktmbuf_pool_create("tob_pkt", rte_align32pow2(pkt_count) - 1, 64, 0,
                                          static_cast<uint16_t>(RTE_PKTMBUF_HEADROOM + frame_room), socket);
  ctx->msg_bytes = sizeof(SubmitMsg) + cfg.node.payload_bytes_max;
  ctx->msg_pool = rte_mempool_create(kMsgPoolName, kSubmitPoolSize, static_cast<unsigned>(ctx->msg_bytes), 0, 0,
                                     nullptr, nullptr, nullptr, nullptr, socket, 0);
  ctx->rx_ring = rte_ring_create_elem("tob_rx", sizeof(RxItem), rings.rx, socket, RING_F_SP_ENQ | RING_F_SC_DEQ);
  ctx->tx_ring = rte_ring_create_elem("tob_tx", sizeof(TxItem), rings.tx, socket, RING_F_SP_ENQ | RING_F_SC_DEQ);
  ctx->log_ring =
      rte_ring_create_elem("tob_log", sizeof(LogRecord), rings.log, socket, RING_F_SP_ENQ | RING_F_SC_DEQ);
  ctx->submit_ring = rte_ring_create(kSubmitRingName, kSubmitRingSize, socket, RING_F_SC_DEQ);
  if (cfg.ic && !opt.published_path.empty()) {
    // Publications for the --published file: 8 periods of every (key, t_pub) any node may write.
    ctx->ic_pub_bytes = (sizeof(IcPubRecord) + cfg.ic->key_bytes_max + cfg.ic->value_bytes_max + 7) / 8 * 8;
    const uint64_t per_period = static_cast<uint64_t>(cfg.nodes) * cfg.ic->keys_per_period_max;
    const auto count = static_cast<unsigned>(rte_align64pow2(std::clamp<uint64_t>(8 * per_period, 1024, 1 << 20)));
    ctx->ic_pub_ring = rte_ring_create_elem("tob_ic_pub", static_cast<unsigned>(ctx->ic_pub_bytes), count, socket,
                                            RING_F_SP_ENQ | RING_F_SC_DEQ);
    if (ctx->ic_pub_ring == nullptr)
      return cleanup(kExitRuntime, "cannot create the ring of publications for --published (" + std::to_string(count) +
                                       " x " + std::to_string(ctx->ic_pub_bytes) + " bytes): " + rte_strerror(rte_errno));
  }
  if (ctx->pkt_pool == nullptr || ctx->msg_pool == nullptr || ctx->rx_ring == nullptr || ctx->tx_ring == nullptr ||
      ctx->log_ring == nullptr || ctx->submit_ring == nullptr)
    return cleanup(kExitRuntime, std::string("cannot create pools and rings (hugepages reserved?): ") +
                                     rte_strerror(rte_errno));

  auto port = start_port(opt.port_id, prof, ctx->pkt_pool, cfg.node_macs[self], cfg.node.frame_bytes_max, use_nic);
  if (!port) return cleanup(kExitRuntime, port.error().message);
  // The NIC clock is fitted once the port runs (mlx5 switches clocks when Tx scheduling starts).
  std::optional<Calibrator> nic_calibrator;
  if (use_nic) {
    nic_calibrator.emplace(&sample_nic_clock, &ctx->port_id, ctx->nic_clock, kRefitIntervalNs, kClockStepNs);
    if (!nic_calibrator->initial_fit(8, 2'000'000)) {
      stop_port(opt.port_id);
      return cleanup(kExitRuntime, "cannot calibrate the NIC clock (rte_eth_read_clock)");
    }
  }
  ctx->nic_launch = port.value().launch_time;
  ctx->ts_offset = port.value().ts_offset;
  ctx->ts_flag = port.value().ts_flag;
  if (!port.value().mac_set)
    TOB_LOG(RTE_LOG_WARNING, "port %u keeps its own MAC %s (config says %s); frames still carry the configured one\n",
            opt.port_id, pi.mac.c_str(), format_mac(cfg.node_macs[self]).c_str());

  // Applications (include/tob.h): the shared memzone, the delivery pool and the client rings.
  if (auto hub = ClientHub::create(cfg, self, ctx->clock); hub) {
    client_hub = std::move(hub.value());
  } else {
    stop_port(opt.port_id);
    return cleanup(kExitRuntime, hub.error().message);
  }

  // The protocol core. Message ids continue across restarts: they start at the global time.
  node_config.first_msg_id = static_cast<uint64_t>(std::max<int64_t>(0, ctx->clock.to_ns(__rdtsc())));
  auto node = core::make_engine(cfg.order, node_config, earlier_log);
  if (!node) {
    stop_port(opt.port_id);
    return cleanup(kExitUsage, cfg.path + ": " + node.error().message);
  }
  const size_t replayed_bytes = earlier_log.size();
  earlier_log = {};  // replayed
  ctx->log = acceptor_log.get();
  ctx->lenient_windows = cfg.order == Order::otfp;

  // Interactive consistency next to the engine ([ic]), and the applications' side of its store.
  std::optional<core::IcNode> ic_node;
  if (cfg.ic) {
    core::IcConfig ic_config = *cfg.ic;
    ic_config.test_fault = {opt.ic_fault, 0x1C0FFEEull + self};
    auto ic = core::IcNode::create(node_config, ic_config);
    if (!ic) {
      stop_port(opt.port_id);
      return cleanup(kExitUsage, cfg.path + ": " + ic.error().message);
    }
    ic_node.emplace(std::move(ic.value()));
    auto kv = KvHub::create(cfg, *client_hub->shared());
    if (!kv) {
      stop_port(opt.port_id);
      return cleanup(kExitRuntime, kv.error().message);
    }
    kv_hub = std::move(kv.value());
    ctx->ic = true;
  }

  IoThread io(*ctx);
  io.watch_clients(client_hub->shared());
  if (auto files = io.open_files(); !files) {
    stop_port(opt.port_id);
    return cleanup(kExitUsage, files.error().message);
  }

  // 3. Roles to lcores: one lcore runs all; two: control | RX+TX; three or more: control | RX | TX.
  const unsigned lcores = opt.single_lcore ? 1 : rte_lcore_count();
  std::vector<unsigned> workers;
  unsigned id;
  RTE_LCORE_FOREACH_WORKER(id) workers.push_back(id);
  RxRole rx(*ctx);
  TxRole tx(*ctx);
  ControlRole control(*ctx, *node.value(), calibrator, nic_calibrator ? &*nic_calibrator : nullptr, *client_hub,
                      ic_node ? &*ic_node : nullptr, kv_hub.get());
  LoopRoles main_loop{ctx.get(), nullptr, &control, nullptr, "control"};
  std::vector<std::pair<unsigned, LoopRoles>> worker_loops;
  std::string layout;
  if (lcores <= 1) {
    main_loop = {ctx.get(), &rx, &control, &tx, "rx+control+tx"};
    layout = "lcore " + std::to_string(rte_get_main_lcore()) + ": rx+control+tx";
  } else if (lcores == 2) {
    worker_loops.push_back({workers[0], {ctx.get(), &rx, nullptr, &tx, "rx+tx"}});
    layout = "lcore " + std::to_string(rte_get_main_lcore()) + ": control, lcore " + std::to_string(workers[0]) +
             ": rx+tx";
  } else {
    worker_loops.push_back({workers[0], {ctx.get(), &rx, nullptr, nullptr, "rx"}});
    worker_loops.push_back({workers[1], {ctx.get(), nullptr, nullptr, &tx, "tx"}});
    layout = "lcore " + std::to_string(rte_get_main_lcore()) + ": control, lcore " + std::to_string(workers[0]) +
             ": rx, lcore " + std::to_string(workers[1]) + ": tx";
    if (lcores > 3) TOB_LOG(RTE_LOG_WARNING, "%u lcores given; only 3 are used\n", lcores);
  }
  ctx->split_rx = main_loop.rx == nullptr;

  TelemetryInfo info;
  info.driver = pi.driver;
  info.profile = prof.name + " (" + prof.path + ")";
  info.mac = format_mac(cfg.node_macs[self]);
  info.clock = std::string(clock_source.value().name()) +
               (opt.clock_offset_ns != 0 || opt.clock_drift_ppm != 0
                    ? " with test offset " + std::to_string(opt.clock_offset_ns) + " ns, drift " +
                          std::to_string(opt.clock_drift_ppm) + " ppm"
                    : "");
  info.lcores = layout;
  info.tx_methods = method_list(*ctx);
  register_telemetry(*ctx, io, *client_hub, kv_hub.get(), info);

  g_quit = &ctx->quit;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);

  const core::SlotConfig slot = node_config.schedule.slots[self];
  std::printf(
      "dpdk-tob: node %u of %d in cluster '%s' (id %u), order %s, cycle %" PRId64 " ns, slot %" PRId64 "+%" PRId64
      " ns\n"
      "dpdk-tob: port %u %s (profile %s), mac %s, %s%s, clock %s\n"
      "dpdk-tob: %s, idle %s, tx %s, transport %s\n",
      self, cfg.nodes, cfg.name.c_str(), cfg.cluster_id, core::to_string(cfg.order), node_config.schedule.cycle_ns,
      slot.offset_ns,
      slot.length_ns, opt.port_id, pi.driver.c_str(), prof.name.c_str(), info.mac.c_str(),
      cfg.vlan != 0 ? ("vlan " + std::to_string(cfg.vlan) + " pcp " + std::to_string(cfg.pcp)).c_str() : "untagged",
      pi.launch_time ? ", launch time offered" : "", info.clock.c_str(), layout.c_str(), to_string(opt.idle),
      info.tx_methods.c_str(), to_string(opt.transport));
  if (acceptor_log != nullptr)
    std::printf("dpdk-tob: acceptor log %s, durability %s: replayed %zu bytes%s\n", acceptor_log->path().c_str(),
                cfg.log_sync ? "sync" : "none", replayed_bytes,
                acceptor_log->discarded_on_open() > 0
                    ? (", cut off a damaged tail of " + std::to_string(acceptor_log->discarded_on_open()) + " bytes")
                          .c_str()
                    : "");
  // The own slot's airtime at the port's link speed (an upper bound: every frame full size, with
  // preamble, FCS and gap): the engine's copies, the retransmission frame and the IC frames.
  if (rte_eth_link link{}; rte_eth_link_get_nowait(opt.port_id, &link) == 0 && link.link_speed != RTE_ETH_SPEED_NUM_NONE &&
                           link.link_speed != RTE_ETH_SPEED_NUM_UNKNOWN) {
    const auto frames = static_cast<uint64_t>(node_config.schedule.sends_per_slot) + 1 + cfg.ic_frames_per_slot;
    const uint64_t wire_bits = frames * (ctx->ether_bytes + cfg.node.frame_bytes_max + 24) * 8;
    const auto airtime_ns = static_cast<int64_t>(wire_bits * 1000 / link.link_speed);  // link_speed in Mbit/s
    const int64_t slot_ns = node_config.schedule.slots[self].length_ns;
    std::printf("dpdk-tob: link %u Mbit/s: %" PRIu64 " full frames per slot need %.1f us of the %.1f us slot\n",
                link.link_speed, frames, static_cast<double>(airtime_ns) / 1e3, static_cast<double>(slot_ns) / 1e3);
    if (airtime_ns > slot_ns)
      TOB_LOG(RTE_LOG_WARNING,
              "the slot of %.1f us cannot carry %" PRIu64 " full frames at %u Mbit/s (%.1f us): frames still queued at "
              "its end are not sent (tx_missed); shorten [ic] round data or lengthen the slot\n",
              static_cast<double>(slot_ns) / 1e3, frames, link.link_speed, static_cast<double>(airtime_ns) / 1e3);
  }
  if (ic_node) {
    const core::IcConfig& ic = ic_node->config();
    static const char* faults[] = {"none", "lie", "omit", "garble"};
    std::printf(
        "dpdk-tob: interactive consistency: f %d (%d rounds), period %d cycle%s, %zu IC frame%s per slot (%d cop%s), "
        "%zu keys of %zu + %zu bytes per period, store %zu keys x %zu versions, reductions: %s default, %zu class%s%s%s\n",
        ic.f, ic_node->rounds(), ic.period_cycles, ic.period_cycles == 1 ? "" : "s", cfg.ic_frames_per_slot,
        cfg.ic_frames_per_slot == 1 ? "" : "s", ic.copies, ic.copies == 1 ? "y" : "ies", ic.keys_per_period_max,
        ic.key_bytes_max, ic.value_bytes_max, ic.store_keys_max, ic.versions_per_key, core::to_string(ic.default_reduction),
        ic.key_classes.size(), ic.key_classes.size() == 1 ? "" : "es",
        opt.ic_fault != core::IcFaultMode::none ? ", TEST FAULT " : "",
        opt.ic_fault != core::IcFaultMode::none ? faults[static_cast<int>(opt.ic_fault)] : "");
  }
  std::fflush(stdout);

  if (!io.start() || (acceptor_log != nullptr && !acceptor_log->start())) {
    stop_port(opt.port_id);
    return cleanup(kExitRuntime, "cannot start the I/O and log threads");
  }
  for (auto& [lcore, loop] : worker_loops) {
    if (rte_eal_remote_launch(run_lcore_loop, &loop, lcore) != 0) {
      ctx->quit.store(true);
      code = fail(kExitRuntime, "cannot launch a loop on lcore " + std::to_string(lcore));
    }
  }
  if (run_lcore_loop(&main_loop) != 0) code = kExitRuntime;
  for (auto& [lcore, loop] : worker_loops)
    if (rte_eal_wait_lcore(lcore) != 0) code = kExitRuntime;

  // 4. Stopped: the node is silent. Flush the files, report, release the port.
  io.finish();
  if (acceptor_log != nullptr) acceptor_log->stop();
  if (ctx->fatal.load() != 0)
    code = fail(kExitRuntime, "the acceptor log could not keep up with the engine (" + acceptor_log->path() +
                                  "): stopped rather than send votes it had not recorded");
  const NodeStatus final_status = ctx->status.read();
  const IcStatus final_ic = ctx->ic ? ctx->ic_status.read() : IcStatus{};
  const KvHubStats final_kv = kv_hub ? kv_hub->stats() : KvHubStats{};
  const StatsSources src{ctx->rx,
                         ctx->tx,
                         ctx->control,
                         final_status,
                         ctx->io_records.load(),
                         ctx->io_write_errors.load(),
                         acceptor_log.get(),
                         ctx->ic ? &final_ic : nullptr,
                         kv_hub ? &final_kv : nullptr};
  std::printf("dpdk-tob: stopped. %s\n", io.status_line().c_str());
  std::printf("dpdk-tob: statistics of node %u\n", self);
  TextReport report;
  visit_stats(src, report);
  if (!opt.stats_path.empty()) {
    std::FILE* f = std::fopen(opt.stats_path.c_str(), "w");
    if (f == nullptr || std::fputs(stats_json(src).c_str(), f) < 0) {
      code = fail(kExitRuntime, opt.stats_path + ": cannot write statistics: " + std::strerror(errno));
    }
    if (f != nullptr) std::fclose(f);
  }
  if (ctx->control.log_ring_full.get() != 0)
    code = fail(kExitRuntime, "the log ring overflowed: " + std::to_string(ctx->control.log_ring_full.get()) +
                                  " delivery/event records are missing from the output files");
  if (ctx->control.ic_pub_ring_full.get() != 0)
    code = fail(kExitRuntime, "the publication ring overflowed: " + std::to_string(ctx->control.ic_pub_ring_full.get()) +
                                  " publications are missing from " + opt.published_path);
  std::fflush(stdout);
  g_quit = nullptr;
  stop_port(opt.port_id);
  release_eal();
  return code;
}

}  // namespace tob::dataplane
