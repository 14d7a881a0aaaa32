#include "noise.h"

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <x86intrin.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>

namespace tob::load {

int run_noise(const LoadOptions& o, const volatile std::sig_atomic_t* stop) {
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
  while (*stop == 0) {
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

}  // namespace tob::load
