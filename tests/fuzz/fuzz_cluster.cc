#include "fuzz_cluster.h"

#include <algorithm>
#include <utility>

namespace tob::fuzz {

FuzzCluster::FuzzCluster(std::vector<std::unique_ptr<FuzzNode>> nodes, const core::Schedule& schedule)
    : nodes_(std::move(nodes)), sched_(schedule) {
  for (int i = 0; i < size(); ++i) {
    nodes_[static_cast<size_t>(i)]->on_time(0);
    collect(i);
  }
}

size_t FuzzCluster::earliest_inflight() const {
  size_t best = inflight_.size();
  for (size_t k = 0; k < inflight_.size(); ++k)
    if (best == inflight_.size() || inflight_[k].tx_ns < inflight_[best].tx_ns) best = k;
  return best;
}

void FuzzCluster::run_to(int64_t t) {
  t = std::max(t, now_);
  for (;;) {
    int64_t at = INT64_MAX;
    int who = -1;
    for (int i = 0; i < size(); ++i) {
      const int64_t due = i == 0 && stalled_until_ != INT64_MIN ? stalled_until_
                                                               : nodes_[static_cast<size_t>(i)]->next_deadline_ns();
      if (due < at) at = due, who = i;
    }
    const size_t f = earliest_inflight();
    const int64_t arrives = f < inflight_.size() ? inflight_[f].tx_ns + kDelayNs : INT64_MAX;
    if (std::min(at, arrives) > t) break;
    if (arrives < at) {
      now_ = std::max(now_, arrives);
      const SentFrame frame = std::move(inflight_[f]);
      inflight_.erase(inflight_.begin() + static_cast<std::ptrdiff_t>(f));
      deliver(frame, now_);
      continue;
    }
    now_ = std::max(now_, at);
    if (who == 0 && stalled_until_ != INT64_MIN) {
      thaw();
      continue;
    }
    nodes_[static_cast<size_t>(who)]->on_time(now_);
    collect(who);
    check(nodes_[static_cast<size_t>(who)]->next_deadline_ns() > now_, "the next deadline lies after now");
  }
  now_ = t;
  for (int i = 0; i < size(); ++i) {
    if (i == 0 && stalled_until_ != INT64_MIN) continue;
    nodes_[static_cast<size_t>(i)]->on_time(now_);  // an arbitrary instant, not only deadlines
    collect(i);
  }
}

void FuzzCluster::stall_target(int64_t until) {
  if (until <= now_) return;
  stalled_until_ = std::max(stalled_until_, until);
}

void FuzzCluster::thaw() {
  stalled_until_ = INT64_MIN;
  std::vector<SentFrame> frames = std::move(backlog_);
  backlog_.clear();
  for (const SentFrame& f : frames) deliver_to_target(f.bytes, now_);  // polled late: stamped now
}

void FuzzCluster::deliver(const SentFrame& f, int64_t at) {
  for (int i = 0; i < size(); ++i) {
    if (i == f.from) continue;
    if (i == 0) {
      if (recent_.size() == kRecent) recent_.erase(recent_.begin());
      recent_.push_back(f.bytes);
      if (stalled_until_ != INT64_MIN) {
        backlog_.push_back(f);
        continue;
      }
      deliver_to_target(f.bytes, at);
      continue;
    }
    const core::DecodeResult d = core::decode_frame(f.bytes);
    check(d.ok(), "a frame a node sent decodes");
    nodes_[static_cast<size_t>(i)]->on_frame(d.view, at);
    collect(i);
  }
}

void FuzzCluster::deliver_to_target(std::span<const uint8_t> bytes, int64_t rx_ns) {
  const core::FrameHeader h = core::peek_header(bytes);
  const uint8_t copy = (h.flags & core::kFlagSecondCopy) != 0 ? 1 : 0;
  gate_.pass(bytes, copy, [&](const core::FrameView& v) { target().on_frame(v, rx_ns); });
  collect(0);
}

void FuzzCluster::inject(std::span<const uint8_t> frame, uint8_t copy) {
  if (stalled_until_ != INT64_MIN) {
    backlog_.push_back({now_, -1, std::vector<uint8_t>(frame.begin(), frame.end())});
    return;
  }
  gate_.pass(frame, copy, [&](const core::FrameView& v) { target().on_frame(v, now_); });
  collect(0);
}

void FuzzCluster::assign(const FuzzCluster& other) {
  check(other.size() == size(), "assign: a cluster of the same size");
  for (size_t i = 0; i < nodes_.size(); ++i) nodes_[i]->assign(*other.nodes_[i]);
  now_ = other.now_;
  stalled_until_ = other.stalled_until_;
  inflight_ = other.inflight_;
  backlog_ = other.backlog_;
  recent_ = other.recent_;
  gate_.set_passed(other.gate_.passed());
}

void FuzzCluster::load(int node, FuzzInput& in) {
  nodes_[static_cast<size_t>(node)]->load(in, now_);
  collect(node);
}

void FuzzCluster::collect(int i) {
  out_.clear();
  nodes_[static_cast<size_t>(i)]->collect(out_);
  for (SentFrame& f : out_) {
    check(inflight_.size() < kInflightMax, "frames in flight bounded");
    inflight_.push_back(std::move(f));
  }
  if (i == 0) nodes_[0]->check_state();
}

}  // namespace tob::fuzz
