#include "load_options.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <optional>

namespace tob::load {

namespace {

std::optional<double> number(const std::string& s, double lo, double hi) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || !std::isfinite(v) || v < lo || v > hi) return std::nullopt;
  return v;
}

std::string bounds(double lo, double hi) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "a number in [%g, %g]", lo, hi);
  return buf;
}

}  // namespace

core::Result<LoadOptions> parse_load_options(const std::vector<std::string>& args) {
  LoadOptions o;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const auto value = [&]() -> std::optional<std::string> {
      if (i + 1 >= args.size()) return std::nullopt;
      return args[++i];
    };
    const auto num = [&](double lo, double hi, double& out) -> std::optional<std::string> {
      auto v = value();
      if (!v) return a + ": missing value";
      auto x = number(*v, lo, hi);
      if (!x) return a + " '" + *v + "': expected " + bounds(lo, hi);
      out = *x;
      return std::nullopt;
    };
    std::optional<std::string> err;
    double d = 0;
    if (a == "--help" || a == "-h") {
      o.help = true;
    } else if (a == "--noise") {
      o.noise = true;
    } else if (a == "--release") {
      o.release = true;
    } else if (a == "--saturate") {
      o.saturate = true;
    } else if (a == "--start-at") {
      auto v = value();
      char* end = nullptr;
      errno = 0;
      const long long ns = v ? std::strtoll(v->c_str(), &end, 10) : 0;
      if (!v || v->empty() || *end != '\0' || errno != 0 || ns <= 0)
        err = a + ": expected a positive instant in nanoseconds of the cluster's global time";
      else
        o.start_at_ns = ns;
    } else if (a == "--cluster" || a == "--out" || a == "--summary" || a == "--label" || a == "--records" ||
               a == "--compare-summary") {
      auto v = value();
      if (!v || v->empty()) err = a + ": missing value";
      else if (a == "--cluster") o.cluster = *v;
      else if (a == "--out") o.out_path = *v;
      else if (a == "--summary") o.summary_path = *v;
      else if (a == "--records") o.records_path = *v;
      else if (a == "--compare-summary") o.compare_summary_path = *v;
      else o.label = *v;
    } else if (a == "--duration") {
      err = num(0.001, 1e6, o.duration_s);
    } else if (a == "--drain") {
      err = num(0, 3600, o.drain_s);
    } else if (a == "--drain-max") {
      err = num(0.001, 3600, o.drain_max_s);
    } else if (a == "--rate") {
      err = num(0, 1e7, o.rate_per_s);
    } else if (a == "--progress") {
      err = num(0, 3600, o.progress_s);
    } else if (a == "--idle-sleep-us") {
      if (!(err = num(0, 100000, d))) o.idle_sleep_us = static_cast<uint32_t>(d);
    } else if (a == "--burst") {
      if (!(err = num(1, 4096, d))) o.burst = static_cast<uint32_t>(d);
    } else if (a == "--submit-burst") {
      if (!(err = num(1, 512, d))) o.submit_burst = static_cast<uint32_t>(d);
    } else if (a == "--seed") {
      if (!(err = num(0, 1e15, d))) o.seed = static_cast<uint64_t>(d);
    } else if (a == "--pattern") {
      auto v = value();
      if (!v) err = a + ": missing value";
      else if (*v == "constant") o.pattern = Pattern::constant;
      else if (*v == "poisson") o.pattern = Pattern::poisson;
      else if (*v == "burst") o.pattern = Pattern::burst;
      else err = a + " '" + *v + "': expected constant, poisson or burst";
    } else if (a == "--size") {
      // B, uniform:MIN:MAX or exp:MEAN
      auto v = value();
      unsigned lo = 0, hi = 0;
      char tail = 0;
      if (!v) {
        err = a + ": missing value";
      } else if (std::sscanf(v->c_str(), "uniform:%u:%u%c", &lo, &hi, &tail) == 2 && lo >= 1 && hi >= lo && hi <= 65535) {
        o.size_dist = SizeDist::uniform;
        o.size_bytes = lo;
        o.size_max_bytes = hi;
      } else if (std::sscanf(v->c_str(), "exp:%u%c", &lo, &tail) == 1 && lo >= 1 && lo <= 65535) {
        o.size_dist = SizeDist::exponential;
        o.size_bytes = lo;
      } else if (auto x = number(*v, 1, 65535)) {
        o.size_dist = SizeDist::fixed;
        o.size_bytes = static_cast<uint32_t>(*x);
      } else {
        err = a + " '" + *v + "': expected BYTES, uniform:MIN:MAX or exp:MEAN (1..65535)";
      }
    } else if (a == "--pause-poll-at") {
      err = num(0, 1e6, o.pause_poll_at_s);
    } else if (a == "--pause-poll-for") {
      err = num(0, 1e6, o.pause_poll_for_s);
    } else if (a == "--reattach-at") {
      err = num(0, 1e6, o.reattach_at_s);
    } else if (a == "--noise-mbps") {
      err = num(0.001, 100000, o.noise_mbps);
    } else if (a == "--noise-dst") {
      auto v = value();
      unsigned b[6];
      char tail = 0;
      if (!v || std::sscanf(v->c_str(), "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &tail) != 6)
        err = a + ": expected a MAC address like 02:00:00:00:00:01";
      else
        for (int k = 0; k < 6; ++k) o.noise_dst[k] = static_cast<uint8_t>(b[k]);
    } else if (a == "--noise-frame") {
      if (!(err = num(60, 9000, d))) o.noise_frame_bytes = static_cast<uint32_t>(d);
    } else if (a == "--port") {
      if (!(err = num(0, 1023, d))) o.port_id = static_cast<uint16_t>(d);
    } else {
      err = "unknown option '" + a + "' (see --help)";
    }
    if (err) return core::Error{*err};
  }
  if (o.help) return o;
  if (o.duration_s <= 0) return core::Error{"--duration S is required (every run is bounded)"};
  if (o.noise) {
    if (o.noise_mbps <= 0) return core::Error{"--noise needs --noise-mbps M"};
    return o;
  }
  if (o.cluster.empty()) return core::Error{"--cluster NAME is required (the [cluster] name of cluster.ini)"};
  if (o.saturate && o.rate_per_s > 0) return core::Error{"--saturate and --rate R exclude each other"};
  if (o.drain_max_s > 0 && o.drain_max_s < o.drain_s) return core::Error{"--drain-max must be at least --drain"};
  if (o.pattern == Pattern::burst && o.rate_per_s > 0 && o.burst / o.rate_per_s > o.duration_s)
    return core::Error{"--burst " + std::to_string(o.burst) + " at --rate " + std::to_string(o.rate_per_s) +
                       " leaves fewer than one burst in --duration"};
  return o;
}

std::string load_help(const char* p) {
  return std::string("usage:\n  ") + p +
         " --proc-type=secondary --file-prefix PREFIX [EAL] -- --cluster NAME --duration S [options]\n  " + p +
         " --no-pci --file-prefix P --vdev net_af_packet0,iface=IF -- --noise --noise-mbps M --duration S\n\n"
         "client mode (attached to the node's dpdk-tob through tob.h):\n"
         "  --rate R                 messages per second submitted (0: receive only; default 0)\n"
         "  --saturate               submit as many as the node takes, every round (instead of --rate)\n"
         "  --start-at NS            first submission at this instant of the cluster's global time\n"
         "                           (nanoseconds, CLOCK_TAI by default); receiving starts at once\n"
         "  --pattern P              constant | poisson | burst (default constant)\n"
         "  --burst N                messages per burst for --pattern burst (default 16)\n"
         "  --submit-burst N         messages handed over per tob_submit_burst call at most, 1..512\n"
         "                           (default 64; 1 calls tob_submit per message)\n"
         "  --size S                 BYTES | uniform:MIN:MAX | exp:MEAN (default 64; at least 24 are used\n"
         "                           for the load header, at most [limits] payload_bytes)\n"
         "  --seed N                 random seed of poisson gaps and sizes (default 1)\n"
         "  --duration S             seconds of submissions (required)\n"
         "  --drain S                keep receiving this long after (default 1)\n"
         "  --drain-max S            with it, --drain is a quiet period: receive until --drain seconds\n"
         "                           pass without a delivery and every own message came back, at most\n"
         "                           --drain-max after the last submission\n"
         "  --release                wait for every delivery's release instant; records the wake-up\n"
         "  --out FILE               CSV, one row per delivery: seq,sender,client,msg_id,load_node,\n"
         "                           load_seq,bytes,submit_ns,deliver_ns,release_ns,received_ns,woke_ns,\n"
         "                           woke_tai_ns (--release: CLOCK_TAI at the wake-up)\n"
         "  --summary FILE           JSON summary (also printed as a table)\n"
         "  --records FILE           perf/compare's records: sender,seq,send_ns,recv_ns per load message\n"
         "  --compare-summary FILE   perf/compare's summary JSON (perf/compare/README.md)\n"
         "  --label TEXT             name of this run in the summary\n"
         "  --progress S             seconds between progress lines, 0 = none (default 1)\n"
         "  --idle-sleep-us US       sleep when a round found nothing to do, 0 = busy poll (default 50)\n"
         "  --pause-poll-at S --pause-poll-for S   stop polling for a while (backpressure test)\n"
         "  --reattach-at S          detach and attach again, resuming after the last seq (resume test)\n"
         "                           (both S seconds after --start-at, or after attaching without it)\n"
         "noise mode (a DPDK primary with its own port; frames flood the bridge):\n"
         "  --noise --noise-mbps M   best-effort frames at M Mbit/s (Ethernet frame bits)\n"
         "  --noise-frame B          frame size, 60..9000 (default 1500)\n"
         "  --noise-dst MAC          destination (default broadcast: the bridge floods every port)\n"
         "  --port ID                DPDK port (default 0)\n"
         "  --duration S             seconds (required)\n";
}

}  // namespace tob::load
