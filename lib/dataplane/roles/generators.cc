#include "dataplane/roles/generators.h"

#include <algorithm>
#include <cstdio>

#include "core/bytes.h"
#include "core/ic_reduce.h"

namespace tob::dataplane {

namespace {
constexpr unsigned kGeneratedPerStep = 64;
constexpr int64_t kGeneratorLagMaxNs = 100'000'000;  // a generator held back longer skips ahead
}  // namespace

MessageGenerator::MessageGenerator(const DaemonOptions& options, core::NodeId self) : o_(options), self_(self) {
  if (o_.gen_rate_per_s > 0) interval_ns_ = std::max<int64_t>(1, static_cast<int64_t>(1e9 / o_.gen_rate_per_s));
}

int64_t MessageGenerator::next_due_ns() const {
  const bool done = o_.gen_count_max != 0 && count_ >= o_.gen_count_max;
  return interval_ns_ == 0 || done || blocked_ ? INT64_MAX : next_ns_;
}

unsigned MessageGenerator::generate(core::Engine& engine, int64_t now_ns, ControlStats& stats) {
  if (interval_ns_ == 0 || (o_.gen_count_max != 0 && count_ >= o_.gen_count_max)) return 0;
  if (next_ns_ == 0 || now_ns - next_ns_ > kGeneratorLagMaxNs) next_ns_ = now_ns;
  const size_t size = o_.gen_size_bytes;
  unsigned n = 0;
  while (next_ns_ <= now_ns && n < kGeneratedPerStep && (o_.gen_count_max == 0 || count_ < o_.gen_count_max)) {
    // Readable payload: "n<node> #<count>" then a byte pattern a receiver can check.
    const int head = std::snprintf(reinterpret_cast<char*>(payload_), sizeof payload_, "n%u #%llu ",
                                   static_cast<unsigned>(self_), static_cast<unsigned long long>(count_));
    for (size_t k = static_cast<size_t>(std::max(head, 0)); k < size; ++k)
      payload_[k] = static_cast<uint8_t>('a' + (count_ + k) % 26);
    const core::SubmitResult r = engine.submit(0, std::span<const uint8_t>(payload_, size), now_ns);
    blocked_ = r.status != core::SubmitStatus::ok;
    if (blocked_) {
      stats.submit_backpressure.add();
      break;  // retried at the next step with the same count
    }
    stats.generated.add();
    ++count_;
    next_ns_ += interval_ns_;
    ++n;
  }
  return n;
}

std::string ic_gen_key(const core::IcConfig& c, size_t i) {
  const size_t k = i % (c.key_classes.size() + 1);
  return (k < c.key_classes.size() ? c.key_classes[k].prefix : std::string()) + "gen" + std::to_string(i);
}

IcKeyGenerator::IcKeyGenerator(const core::IcConfig& c, size_t keys, core::NodeId self) : self_(self) {
  for (size_t i = 0; i < keys; ++i) {
    const std::string key = ic_gen_key(c, i);
    TOB_ASSERT(key.size() <= c.key_bytes_max);  // checked at start (daemon.cc)
    keys_.push_back(key);
    reductions_.push_back(core::reduction_for({reinterpret_cast<const uint8_t*>(key.data()), key.size()}, c.key_classes,
                                              c.default_reduction));
  }
}

unsigned IcKeyGenerator::generate(core::IcNode& ic, const core::Schedule& schedule, int64_t now_ns, ControlStats& stats) {
  if (keys_.empty() || schedule.cycle_of(now_ns) < 0) return 0;
  const uint64_t instance = ic.instance_of(now_ns);
  if (static_cast<int64_t>(instance) == last_instance_) return 0;
  last_instance_ = static_cast<int64_t>(instance);
  const int64_t t_pub = ic.finish_ns(instance);
  const uint64_t base = instance % 100'000;  // keeps the f64 values exact to the node's share
  uint8_t value[8];
  for (size_t i = 0; i < keys_.size(); ++i) {
    size_t len = 8;
    switch (reductions_[i]) {
      case core::Reduction::majority:
        core::store_be64(value, instance * 1000 + i);
        len = std::min<size_t>(8, ic.config().value_bytes_max);
        break;
      case core::Reduction::median_f64:
      case core::Reduction::midpoint_f64:
        core::encode_f64(1000.0 * static_cast<double>(i) + static_cast<double>(base) + 0.001 * self_, value);
        break;
      case core::Reduction::median_i64:
      case core::Reduction::midpoint_i64:
        core::encode_i64(static_cast<int64_t>((base * 1000 + i) * 100 + self_), value);
        break;
    }
    const std::string& key = keys_[i];
    const core::KvWriteResult r =
        ic.kv_write({reinterpret_cast<const uint8_t*>(key.data()), key.size()}, t_pub, {value, len}, now_ns);
    (r.status == core::KvWriteStatus::ok ? stats.ic_gen_writes : stats.ic_gen_refused).add();
  }
  return static_cast<unsigned>(keys_.size());
}

}  // namespace tob::dataplane
