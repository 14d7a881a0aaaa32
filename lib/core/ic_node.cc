#include "core/ic_node.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "core/bytes.h"

namespace tob::core {
namespace {

// Finished instances reported per take_actions; more only after a driver stall of several cycles.
constexpr size_t kDecisionsReported = 4;

std::string num(size_t v) { return std::to_string(v); }

}  // namespace

const char* to_string(KvWriteStatus s) {
  switch (s) {
    case KvWriteStatus::ok: return "ok";
    case KvWriteStatus::too_late: return "too late: the carrying instance finishes after the publishing time";
    case KvWriteStatus::too_many_keys: return "too many keys written in this period";
    case KvWriteStatus::empty_key: return "empty key";
    case KvWriteStatus::key_too_long: return "key longer than the configured maximum";
    case KvWriteStatus::value_too_long: return "value longer than the configured maximum";
    case KvWriteStatus::bad_number: return "the key's reduction is numeric: the value must be 8 bytes (a finite f64)";
    case KvWriteStatus::before_epoch: return "written before the schedule's epoch";
    case KvWriteStatus::stopped: return "interactive consistency is stopped";
  }
  return "unknown";
}

const char* to_string(IcFrameVerdict v) {
  switch (v) {
    case IcFrameVerdict::accepted: return "accepted";
    case IcFrameVerdict::not_ic: return "not an ic frame";
    case IcFrameVerdict::wrong_cluster: return "wrong cluster";
    case IcFrameVerdict::unknown_sender: return "unknown sender";
    case IcFrameVerdict::own_frame: return "own frame";
    case IcFrameVerdict::outside_window: return "outside the sender's window";
    case IcFrameVerdict::stale: return "no instance in flight for it";
    case IcFrameVerdict::malformed: return "malformed round data";
    case IcFrameVerdict::duplicate: return "duplicate";
    case IcFrameVerdict::stopped: return "stopped";
  }
  return "unknown";
}

Result<bool> IcConfig::validate(int nodes, size_t frame_bytes_max) const {
  if (f < 0) return Error{"[ic] f must not be negative"};
  if (nodes <= 3 * f)
    return Error{"[ic] f = " + std::to_string(f) + " needs more than " + std::to_string(3 * f) + " nodes (N > 3f), the cluster has " +
                 std::to_string(nodes)};
  if (period_cycles < 1 || period_cycles > 1'000'000) return Error{"[ic] period must be 1..1000000 cycles"};
  if (keys_per_period_max < 1 || keys_per_period_max > kKvKeysMax)
    return Error{"[ic] keys per period must be 1..65535, got " + num(keys_per_period_max)};
  if (key_bytes_max < 1 || key_bytes_max > kKvKeyBytesMax)
    return Error{"[ic] key size must be 1..255 bytes, got " + num(key_bytes_max)};
  if (value_bytes_max < 1 || value_bytes_max > kKvValueBytesMax)
    return Error{"[ic] value size must be 1..65535 bytes, got " + num(value_bytes_max)};
  bool numeric = is_numeric(default_reduction);
  for (const IcKeyClass& c : key_classes) {
    if (c.prefix.empty() || c.prefix.size() > key_bytes_max)
      return Error{"[ic] key class prefix '" + c.prefix + "' must be 1.." + num(key_bytes_max) + " bytes"};
    numeric = numeric || is_numeric(c.reduction);
  }
  if (numeric && value_bytes_max < kNumericValueBytes)
    return Error{"[ic] numeric reductions need values of 8 bytes; value size is " + num(value_bytes_max)};
  const size_t batch = limits().batch_bytes_max();
  if (batch >= kEigBottom) return Error{"[ic] a batch of " + num(batch) + " bytes is too large: fewer keys or smaller values"};
  if (store_keys_max < 1 || store_keys_max > (1u << 24)) return Error{"[ic] store keys must be 1..16777216"};
  if (versions_per_key < 1 || versions_per_key > 1024) return Error{"[ic] versions per key must be 1..1024"};
  if (copies < 1 || copies > 4) return Error{"[ic] copies must be 1..4"};
  if (frame_bytes_max < kIcFrameOverheadBytes + 1)
    return Error{"frame size " + num(frame_bytes_max) + " cannot carry ic round data"};
  const size_t chunk_max = std::min(frame_bytes_max - kIcFrameOverheadBytes, kMaxSectionBody - kIcChunkHeaderBytes);
  if (chunk_bytes < 1 || chunk_bytes > chunk_max)
    return Error{"[ic] chunk size must be 1.." + num(chunk_max) + " bytes for frames of " + num(frame_bytes_max) + " bytes, got " +
                 num(chunk_bytes)};
  if (EigTree::tree_bytes(nodes, f, batch, tree_bytes_max) == 0)
    return Error{"[ic] the EIG tree for " + std::to_string(nodes) + " nodes, f = " + std::to_string(f) + " and batches of " +
                 num(batch) + " bytes exceeds " + num(tree_bytes_max) + " bytes: lower f, the key count or the value size"};
  // Every round message of an instance may be in flight in one cycle (P = 1): bound the frames.
  size_t frames = 0;
  size_t level = 1;
  for (int r = 1; r <= f + 1; ++r) {
    frames += ic_chunk_count(level * (kEigEntryHeaderBytes + batch), chunk_bytes);
    level *= static_cast<size_t>(nodes);
  }
  if (frames > 0xFFFF)
    return Error{"[ic] round data needs " + num(frames) + " frames per slot (at most 65535): larger chunks or smaller batches"};
  return true;
}

bool IcDecision::value(NodeId a, std::span<const uint8_t>& out) const {
  TOB_ASSERT(a < nodes);
  return EigTree::entry_value(entries.subspan(a * entry_bytes, entry_bytes), entry_bytes - kEigEntryHeaderBytes, out);
}

Result<IcNode> IcNode::create(const NodeConfig& node, const IcConfig& ic) {
  auto ok = node.validate();
  if (!ok) return ok.error();
  auto sched = Schedule::create(node.schedule);
  if (!sched) return sched.error();
  auto valid = ic.validate(sched.value().node_count(), node.frame_bytes_max);
  if (!valid) return valid.error();
  auto store = KvStore::create({ic.store_keys_max, ic.versions_per_key, ic.key_bytes_max, ic.value_bytes_max});
  if (!store) return store.error();
  IcNode x(node, ic, std::move(sched.value()), std::move(store.value()));

  const size_t batch = ic.limits().batch_bytes_max();
  const auto n = static_cast<size_t>(x.n_);
  const auto trees = static_cast<size_t>((x.rounds_ + x.period_ - 1) / x.period_);
  size_t frames = 0;
  size_t scratch = 0;
  for (size_t t = 0; t < trees; ++t) {
    auto tree = EigTree::create(x.n_, ic.f, batch, ic.tree_bytes_max);
    if (!tree) return tree.error();
    TreeSlot slot{std::move(tree.value()), -1, 0, 0, {}, {}};
    const size_t chunks = ic_chunk_count(slot.tree.round_message_bytes(x.rounds_), ic.chunk_bytes);
    slot.bits.assign(n * ((chunks + 63) / 64), 0);
    slot.got.assign(n, 0);
    x.trees_.push_back(std::move(slot));
  }
  const EigTree& t0 = x.trees_.front().tree;
  for (int r = 1; r <= x.rounds_; ++r) {
    frames += ic_chunk_count(t0.round_message_bytes(r), ic.chunk_bytes);
    scratch += t0.round_message_bytes(r);
  }
  const size_t groups = n * ic.keys_per_period_max;
  x.decisions_.resize(kDecisionsReported);
  for (DecisionSlot& d : x.decisions_) {
    d.entries.assign(n * t0.entry_bytes(), 0);
    d.pubs.assign(groups, IcPublication{});
    d.values.assign(groups * ic.value_bytes_max, 0);
  }
  x.refs_.assign(groups, Ref{});
  x.root_.assign(batch, 0);
  x.frames_max_ = frames;
  x.tx_bytes_.assign(static_cast<size_t>(ic.copies) * frames * node.frame_bytes_max, 0);
  x.tx_lengths_.assign(frames, 0);
  x.round_data_bytes_max_ = scratch;
  x.actions_.tx.reserve(static_cast<size_t>(ic.copies) * frames);
  x.actions_.rounds.reserve(trees);
  x.actions_.decisions.reserve(kDecisionsReported);
  return x;
}

IcNode::IcNode(const NodeConfig& node, const IcConfig& ic, Schedule sched, KvStore store)
    : node_config_(node),
      config_(ic),
      sched_(std::move(sched)),
      store_(std::move(store)),
      self_(node.self),
      n_(sched_.node_count()),
      rounds_(ic.f + 1),
      period_(ic.period_cycles),
      pending_(ic.limits()) {}

uint64_t IcNode::instance_of(int64_t write_ns) const {
  const int64_t c = sched_.cycle_of(write_ns);
  TOB_ASSERT(c >= 0);
  return static_cast<uint64_t>(c / period_);
}

int64_t IcNode::start_cycle(uint64_t instance) const { return (static_cast<int64_t>(instance) + 1) * period_; }

int64_t IcNode::finish_ns(uint64_t instance) const { return sched_.cycle_start_ns(start_cycle(instance) + rounds_); }

int64_t IcNode::next_deadline_ns() const {
  if (stopped_) return INT64_MAX;
  if (!started_) return INT64_MIN;
  return sched_.cycle_start_ns(next_cycle_);
}

void IcNode::clear_if_taken() { core::clear_if_taken(actions_, taken_); }

const IcActions& IcNode::take_actions() { return core::take_actions(actions_, taken_); }

void IcNode::stop() {
  clear_if_taken();
  stopped_ = true;
}

void IcNode::on_time(int64_t now_ns) {
  clear_if_taken();
  if (stopped_) return;
  advance(now_ns);
}

// Processes every cycle boundary up to now, in order. Time never goes back: an earlier instant is
// taken as the latest one seen.
void IcNode::advance(int64_t now_ns) {
  if (!started_) {
    started_ = true;
    last_now_ns_ = now_ns;
    // The first boundary at or after now: instances that started earlier are not this node's.
    const int64_t c = sched_.cycle_of(now_ns);
    next_cycle_ = sched_.cycle_start_ns(c) == now_ns ? c : c + 1;
  }
  now_ns = std::max(now_ns, last_now_ns_);
  last_now_ns_ = now_ns;
  while (sched_.cycle_start_ns(next_cycle_) <= now_ns) {
    boundary(next_cycle_, now_ns);
    ++next_cycle_;
  }
}

IcNode::TreeSlot* IcNode::slot_of(uint64_t instance) {
  TreeSlot& t = trees_[instance % trees_.size()];
  return t.instance == static_cast<int64_t>(instance) ? &t : nullptr;
}

// At the start of cycle c: rounds received in cycle c-1 are final; instances whose last round
// that was finish; the instance of the period that just ended starts; then this node's round
// data for cycle c goes out in its slot.
void IcNode::boundary(int64_t cycle, int64_t now_ns) {
  for (TreeSlot& t : trees_) {
    if (t.instance < 0) continue;
    const int64_t done = cycle - start_cycle(static_cast<uint64_t>(t.instance));
    if (done >= 1 && done <= rounds_) finalize_round(t, static_cast<int>(done));
    if (done == rounds_) finish(t, cycle);
  }
  if (cycle >= period_ && cycle % period_ == 0) begin_instance(static_cast<uint64_t>(cycle / period_ - 1));

  IcMessage messages[kEigRoundsMax];
  size_t count = 0;
  for (TreeSlot& t : trees_) {
    if (t.instance < 0) continue;
    const auto p = static_cast<uint64_t>(t.instance);
    const int64_t r = cycle - start_cycle(p) + 1;
    if (r < 1 || r > rounds_) continue;
    const int round = static_cast<int>(r);
    // Receive state for this round; this node's own message goes into its tree directly.
    t.round = round;
    t.chunks = ic_chunk_count(t.tree.round_message_bytes(round), config_.chunk_bytes);
    std::fill(t.bits.begin(), t.bits.end(), uint64_t{0});
    std::fill(t.got.begin(), t.got.end(), 0u);
    const bool own_ok = t.tree.accept(round, self_, t.tree.round_message(round));
    TOB_ASSERT(own_ok);
    TOB_ASSERT(count < static_cast<size_t>(kEigRoundsMax));
    messages[count++] = {p, static_cast<uint8_t>(round), t.tree.round_message(round)};
  }
  if (count > 0) transmit(cycle, now_ns, {messages, count});
}

void IcNode::begin_instance(uint64_t instance) {
  TreeSlot& t = trees_[instance % trees_.size()];
  // ceil(R / P) trees: the instance that used this one finished at this boundary or before.
  TOB_ASSERT(t.instance < 0);
  const size_t len = pending_.encode(root_);
  pending_.clear();
  t.tree.start({root_.data(), len});
  t.instance = static_cast<int64_t>(instance);
  t.round = 0;
  t.defaulted = 0;
  ++counters_.instances_started;
}

void IcNode::finalize_round(TreeSlot& t, int round) {
  TOB_ASSERT(t.round == round);
  for (int s = 0; s < n_; ++s) {
    if (s == self_) continue;
    const auto sender = static_cast<size_t>(s);
    if (t.got[sender] == t.chunks) {
      t.tree.mark_received(round, static_cast<NodeId>(s));
    } else {
      // Missing, late or incomplete round data is the default value (seed 004 §III-B).
      t.tree.set_default(round, static_cast<NodeId>(s));
      t.defaulted |= uint64_t{1} << s;
      ++counters_.messages_default;
    }
  }
  TOB_ASSERT(t.tree.round_filled(round));
}

void IcNode::transmit(int64_t cycle, int64_t now_ns, std::span<const IcMessage> messages) {
  const int64_t tx_ns =
      std::min(sched_.transmit_ns(cycle, self_, sched_.sends_per_slot()), sched_.slot_end_ns(cycle, self_) - 1);
  if (tx_ns < now_ns) {  // called too late for this slot: the round data would miss the window
    ++counters_.rounds_missed;
    return;
  }
  // Only the boundary whose slot is still ahead gets here, so at most one cycle's round data
  // (ceil(R / P) messages) per call: the reserved capacity holds.
  for (const IcMessage& m : messages) actions_.rounds.push_back({m.instance, m.round, cycle, tx_ns, m.bytes});
  IcFrameParams p;
  p.cluster_id = node_config_.cluster_id;
  p.sender = self_;
  p.cycle = static_cast<uint64_t>(cycle);
  p.chunk_bytes = config_.chunk_bytes;
  p.frame_bytes_max = node_config_.frame_bytes_max;
  p.flags = node_config_.frame_flags;
  const size_t frames = emit_ic_copies(messages, p, config_.copies, frames_max_, tx_ns, tx_bytes_, tx_lengths_, actions_.tx);
  TOB_ASSERT(frames > 0);  // the buffers are sized for every round message at once
  counters_.frames_tx += frames * static_cast<uint64_t>(config_.copies);
}

IcFrameVerdict IcNode::on_frame(const FrameView& frame, int64_t rx_ns) {
  clear_if_taken();
  const auto verdict = [&](IcFrameVerdict v) {
    ++counters_.frames_rx[static_cast<int>(v)];
    return v;
  };
  if (stopped_) return verdict(IcFrameVerdict::stopped);
  const FrameHeader& h = frame.header;
  if (h.kind != FrameKind::ic) return verdict(IcFrameVerdict::not_ic);
  if (h.cluster_id != node_config_.cluster_id) return verdict(IcFrameVerdict::wrong_cluster);
  if (h.sender >= n_) return verdict(IcFrameVerdict::unknown_sender);
  if (h.sender == self_) return verdict(IcFrameVerdict::own_frame);
  advance(rx_ns);
  if (h.cycle > static_cast<uint64_t>(INT64_MAX / 2)) return verdict(IcFrameVerdict::outside_window);
  const auto cycle = static_cast<int64_t>(h.cycle);
  // Only round data of the cycle now running, inside the sender's window: late data is default.
  if (cycle != next_cycle_ - 1 || !sched_.reception_window(cycle, h.sender).contains(rx_ns))
    return verdict(IcFrameVerdict::outside_window);

  size_t accepted = 0, stale = 0, malformed = 0, duplicate = 0;
  SectionView s;
  for (size_t off = 0; frame.next_section(off, s);) {
    if (s.type != SectionType::ic_round) continue;
    IcChunk c;
    if (!parse_ic_chunk(s.body, c)) {
      ++malformed;
      continue;
    }
    TreeSlot* t = slot_of(c.instance);
    if (t == nullptr || t->round == 0) {
      ++stale;
      continue;
    }
    const size_t expect = c.round >= 1 && c.round <= rounds_ ? t->tree.round_message_bytes(c.round) : 0;
    if (c.round != t->round || start_cycle(c.instance) + c.round - 1 != cycle || c.message_bytes != expect ||
        c.index >= t->chunks || c.data.size() != ic_chunk_length(expect, config_.chunk_bytes, c.index)) {
      ++malformed;
      continue;
    }
    uint64_t& word = t->bits[h.sender * ((t->bits.size() / static_cast<size_t>(n_))) + c.index / 64];
    const uint64_t bit = uint64_t{1} << (c.index % 64);
    if (word & bit) {
      ++duplicate;
      continue;
    }
    word |= bit;
    // Chunks land where the whole message goes: EIG[r][sender * N^(r-1)] (seed 004 ④).
    std::span<uint8_t> slot = t->tree.round_slot(c.round, h.sender);
    std::memcpy(slot.data() + size_t{c.index} * config_.chunk_bytes, c.data.data(), c.data.size());
    ++t->got[h.sender];
    ++accepted;
  }
  counters_.chunks_rx += accepted;
  counters_.chunks_duplicate += duplicate;
  counters_.chunks_malformed += malformed;
  if (accepted > 0) return verdict(IcFrameVerdict::accepted);
  if (malformed > 0) return verdict(IcFrameVerdict::malformed);
  if (duplicate > 0) return verdict(IcFrameVerdict::duplicate);
  if (stale > 0) return verdict(IcFrameVerdict::stale);
  return verdict(IcFrameVerdict::malformed);  // an ic frame without round data
}

Reduction IcNode::reduction_of(std::span<const uint8_t> key) const {
  return reduction_for(key, config_.key_classes, config_.default_reduction);
}

KvWriteResult IcNode::kv_write(std::span<const uint8_t> key, int64_t t_pub_ns, std::span<const uint8_t> value,
                               int64_t now_ns) {
  clear_if_taken();
  KvWriteResult r;
  const auto refuse = [&](KvWriteStatus s) {
    ++counters_.writes_refused;
    r.status = s;
    return r;
  };
  if (stopped_) return refuse(KvWriteStatus::stopped);
  advance(now_ns);
  if (key.empty()) return refuse(KvWriteStatus::empty_key);
  if (key.size() > config_.key_bytes_max) return refuse(KvWriteStatus::key_too_long);
  if (value.size() > config_.value_bytes_max) return refuse(KvWriteStatus::value_too_long);
  if (sched_.cycle_of(last_now_ns_) < 0) return refuse(KvWriteStatus::before_epoch);
  r.instance = instance_of(last_now_ns_);
  r.finish_ns = finish_ns(r.instance);
  // seed 004 §IV-B: accepted only if interactive consistency can finish by t_pub; a late
  // write is refused at once instead of confusing readers later.
  if (r.finish_ns > t_pub_ns) return refuse(KvWriteStatus::too_late);
  if (!valid_value(reduction_of(key), value)) return refuse(KvWriteStatus::bad_number);
  if (pending_.add(key, t_pub_ns, value) == KvPending::Add::full) return refuse(KvWriteStatus::too_many_keys);
  ++counters_.writes_accepted;
  r.status = KvWriteStatus::ok;
  return r;
}

KvRead IcNode::kv_read(std::span<const uint8_t> key, int64_t t_min_ns, int64_t now_ns) {
  clear_if_taken();
  // Boundaries up to now first: a version published at or before now is visible to this read
  // however late the driver called on_time.
  if (!stopped_) advance(now_ns);
  return store_.read(key, t_min_ns, now_ns);
}

void IcNode::finish(TreeSlot& t, int64_t cycle) {
  t.tree.reduce();
  DecisionSlot& ds = decisions_[finished_ % decisions_.size()];
  ++finished_;
  ++counters_.instances_finished;
  if (actions_.decisions.size() == decisions_.size()) {  // the oldest report's slot is reused now
    actions_.decisions.erase(actions_.decisions.begin());
    ++counters_.decisions_dropped;
  }
  // A canonical copy of the decision vector: ⊥ as the sentinel, the bytes after each value zero,
  // so that equal decisions are equal bytes.
  const size_t eb = t.tree.entry_bytes();
  for (int a = 0; a < n_; ++a) {
    std::span<uint8_t> e(ds.entries.data() + static_cast<size_t>(a) * eb, eb);
    std::fill(e.begin(), e.end(), uint8_t{0});
    std::span<const uint8_t> v;
    if (t.tree.decision(static_cast<NodeId>(a), v)) {
      EigTree::write_entry(e, v);
    } else {
      EigTree::write_bottom(e);
    }
  }
  ds.d.instance = static_cast<uint64_t>(t.instance);
  ds.d.finish_ns = sched_.cycle_start_ns(cycle);
  ds.d.nodes = n_;
  ds.d.entry_bytes = t.tree.entry_bytes();
  ds.d.entries = ds.entries;
  ds.d.defaulted = t.defaulted;
  t.instance = -1;
  t.round = 0;
  publish(ds, ds.d.finish_ns);
  actions_.decisions.push_back(ds.d);
}

// Un-batches the decision vector and reduces every (key, t_pub) over the nodes' copies (seed 004
// §IV-C). Runs on identical decision vectors at every correct node, so everything it does is
// the same there: the order of the publications, the quorums, the store's evictions.
void IcNode::publish(DecisionSlot& ds, int64_t finish_ns) {
  const size_t refs = collect_copies(ds);
  sort_copies(ds.entries.data(), refs);
  size_t pubs = 0;
  for (size_t i = 0; i < refs;) i = publish_group(ds, refs, i, finish_ns, pubs);
  ds.d.publications = {ds.pubs.data(), pubs};
}

size_t IcNode::collect_copies(const DecisionSlot& ds) {
  // Every key entry of every node's decided batch; a ⊥ or malformed value holds no copies.
  const KvLimits limits = config_.limits();
  const uint8_t* base = ds.entries.data();
  size_t refs = 0;
  for (int a = 0; a < n_; ++a) {
    std::span<const uint8_t> v;
    if (!ds.d.value(static_cast<NodeId>(a), v)) {
      ++counters_.decisions_bottom;
      continue;
    }
    if (!validate_kv_batch(v, limits)) {
      ++counters_.batches_malformed;  // a faulty node's value: it holds no copies
      continue;
    }
    KvBatchReader reader(v);
    for (KvEntry e;;) {
      const size_t at = reader.offset();
      if (!reader.next(e)) break;
      TOB_ASSERT(refs < refs_.size());
      uint8_t head[8] = {};
      std::memcpy(head, e.key.data(), std::min<size_t>(8, e.key.size()));
      refs_[refs++] = {load_be64(head), e.t_pub_ns, static_cast<uint32_t>(v.data() + at - base), static_cast<uint8_t>(a)};
    }
  }
  return refs;
}

void IcNode::sort_copies(const uint8_t* base, size_t refs) {
  // Group by (key, t_pub); within a group one copy per node, in node order. By key (bytes, then
  // length), t_pub, node, place. The cached first 8 bytes decide most pairs without touching the
  // entries: the same order as comparing the keys themselves.
  const auto less = [&](const Ref& a, const Ref& b) {
    if (a.prefix != b.prefix) return a.prefix < b.prefix;
    const auto ka = key_at(base, a);
    const auto kb = key_at(base, b);
    const int c = std::memcmp(ka.data(), kb.data(), std::min(ka.size(), kb.size()));
    if (c != 0) return c < 0;
    if (ka.size() != kb.size()) return ka.size() < kb.size();
    if (a.t_pub != b.t_pub) return a.t_pub < b.t_pub;
    if (a.node != b.node) return a.node < b.node;
    return a.offset < b.offset;
  };
  std::sort(refs_.begin(), refs_.begin() + static_cast<std::ptrdiff_t>(refs), less);
}

size_t IcNode::publish_group(DecisionSlot& ds, size_t refs, size_t i, int64_t finish_ns, size_t& pubs) {
  // The copies of the (key, t_pub) group starting at i, one per node; returns where the next
  // group starts.
  const uint8_t* base = ds.entries.data();
  const auto key = key_at(base, refs_[i]);
  const int64_t t_pub = refs_[i].t_pub;
  std::span<const uint8_t>* const copies = group_copies_.data();  // not a local: kMaxNodes spans cleared per group
  size_t m = 0;
  int last_node = -1;
  size_t j = i;
  for (; j < refs; ++j) {
    const auto kj = key_at(base, refs_[j]);
    if (refs_[j].t_pub != t_pub || kj.size() != key.size() || std::memcmp(kj.data(), key.data(), key.size()) != 0) break;
    if (refs_[j].node == last_node) continue;  // a faulty batch with the same (key, t_pub) twice
    last_node = refs_[j].node;
    const uint8_t* e = base + refs_[j].offset;
    copies[m++] = {e + kKvEntryHeaderBytes + e[8], load_be16(e + 10)};
  }
  // Fewer than f + 1 copies: no correct node wrote it. Before the finish: no correct node could
  // have written it (kv_write refuses that), and publishing it would change the past.
  if (m < static_cast<size_t>(config_.f) + 1 || t_pub < finish_ns) {
    ++counters_.groups_ignored;
    return j;
  }
  TOB_ASSERT(pubs < ds.pubs.size());
  IcPublication& p = ds.pubs[pubs];
  std::span<uint8_t> out(ds.values.data() + pubs * config_.value_bytes_max, config_.value_bytes_max);
  ++pubs;
  p.instance = ds.d.instance;
  p.key = key;
  p.t_pub_ns = t_pub;
  p.reduction = reduction_of(key);
  p.copies = static_cast<int>(m);
  const ReduceOutcome o = reduce_copies(p.reduction, n_, config_.f, {copies, m}, out);
  p.status = o.status;
  p.value = o.status == ReduceStatus::ok ? out.first(o.value_bytes) : std::span<const uint8_t>{};
  p.stored = store_.publish(key, t_pub, p.instance, o.status == ReduceStatus::ok, p.value);
  switch (p.stored) {
    case KvPublish::stored: ++(o.status == ReduceStatus::ok ? counters_.publications_ok : counters_.publications_failed); break;
    case KvPublish::duplicate: ++counters_.publications_conflict; break;
    case KvPublish::too_old:
    case KvPublish::store_full: ++counters_.publications_dropped; break;
  }
  return j;
}

}  // namespace tob::core
