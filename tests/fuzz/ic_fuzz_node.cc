#include "ic_fuzz_node.h"

#include <string>

namespace tob::fuzz {

core::IcConfig fuzz_ic_config() {
  core::IcConfig c;
  c.f = 1;
  c.period_cycles = 1;
  c.keys_per_period_max = 8;
  c.key_bytes_max = 16;
  c.value_bytes_max = 8;
  c.store_keys_max = 32;
  c.versions_per_key = 4;
  c.key_classes = {{"m/", core::Reduction::median_f64}};
  return c;
}

void IcFuzzNode::collect(std::vector<SentFrame>& out) {
  const core::IcActions& a = node_.take_actions();
  for (const core::TxFrame& tx : a.tx) {
    check(tx.bytes.size() >= core::kMinFrameBytes && tx.bytes.size() <= core::kMaxFrameBytes,
          "an ic frame has a length within the frame bound");
    out.push_back({tx.tx_ns, node_.self(), std::vector<uint8_t>(tx.bytes.begin(), tx.bytes.end())});
  }
  check(a.tx.size() <= 4 * node_.frames_per_slot_max() + 4, "ic frames per call bounded");
  for (const core::IcDecision& d : a.decisions) check_decision(d);
}

void IcFuzzNode::check_decision(const core::IcDecision& d) {
  const core::IcConfig& c = node_.config();
  check(static_cast<int64_t>(d.instance) > last_instance_, "instances finish in order, once each");
  last_instance_ = static_cast<int64_t>(d.instance);
  check(d.finish_ns == node_.finish_ns(d.instance), "an instance finishes at its finish instant");
  check(d.nodes == node_.nodes(), "a decision vector has one entry per node");
  check(d.entries.size() == static_cast<size_t>(d.nodes) * node_.entry_bytes(), "decision entries of the entry size");
  check(d.publications.size() <= static_cast<size_t>(d.nodes) * c.keys_per_period_max,
        "publications within the batches' bound");
  for (const core::IcPublication& p : d.publications) {
    check(p.instance == d.instance, "a publication belongs to its instance");
    check(!p.key.empty() && p.key.size() <= c.key_bytes_max, "a published key within the key bound");
    check(p.value.size() <= c.value_bytes_max, "a published value within the value bound");
    check(p.copies >= c.f + 1 && p.copies <= d.nodes, "a publication has f + 1 to N copies");
    check(p.t_pub_ns >= d.finish_ns, "nothing is published for an instant already past");
  }
}

void IcFuzzNode::load(FuzzInput& in, int64_t now_ns) {
  const uint8_t sel = in.u8();
  std::string key = (sel & 1) != 0 ? "m/" : "k";
  key += static_cast<char>('a' + sel / 2 % 8);
  if ((sel & 0x80) != 0) key.append(in.u8() % 24, 'x');  // some beyond key_bytes_max
  const int64_t t_pub = now_ns + in.u16() * int64_t{1000};
  const std::span<const uint8_t> value = in.take(in.u8() % 12);
  node_.kv_write({reinterpret_cast<const uint8_t*>(key.data()), key.size()}, t_pub, value, now_ns);
}

void IcFuzzNode::check_state() {
  check(node_.store().keys() <= node_.config().store_keys_max, "the store within its key capacity");
  const core::IcCounters& c = node_.counters();
  check(c.instances_finished <= c.instances_started, "instances finished were started");
}

}  // namespace tob::fuzz
