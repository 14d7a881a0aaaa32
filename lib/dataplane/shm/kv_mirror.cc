#include "dataplane/shm/kv_mirror.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <new>

#include "core/kv_batch.h"
#include "core/result.h"

namespace tob::dataplane {

struct KvMirror::Header {
  uint64_t magic;
  uint64_t cells;
  uint64_t keys_max;
  uint64_t versions_per_key;
  uint64_t key_bytes_max;
  uint64_t value_bytes_max;
  uint64_t cell_words;
  std::atomic<uint64_t> keys;
  std::atomic<int64_t> complete_below_ns;
  std::atomic<uint64_t> versions_stored;
  std::atomic<uint64_t> duplicates;
  std::atomic<uint64_t> evictions;
  std::atomic<uint64_t> store_full;
};

namespace {

constexpr size_t kHeaderBytes = 128;
static_assert(sizeof(std::atomic<uint64_t>) == 8 && std::atomic<uint64_t>::is_always_lock_free,
              "shared words must be plain lock-free 64-bit atomics (address-free across processes)");

// Cell word 1: key length (0: empty), version count, whether any version was evicted.
constexpr uint64_t state_word(size_t key_len, size_t versions, bool evicted_any) {
  return static_cast<uint64_t>(key_len) | static_cast<uint64_t>(versions) << 8 | (evicted_any ? uint64_t{1} << 24 : 0);
}
// Version word 2: value length, value slot, ok.
constexpr uint64_t meta_word(size_t value_len, size_t slot, bool ok) {
  return static_cast<uint64_t>(value_len) | static_cast<uint64_t>(slot) << 32 | (ok ? uint64_t{1} << 63 : 0);
}

void store_bytes(std::atomic<uint64_t>* w, const uint8_t* p, size_t n) {
  for (size_t i = 0; i * 8 < n; ++i) {
    uint64_t x = 0;
    std::memcpy(&x, p + i * 8, std::min<size_t>(8, n - i * 8));
    w[i].store(x, std::memory_order_relaxed);
  }
}

void load_bytes(const std::atomic<uint64_t>* w, uint8_t* p, size_t n) {
  for (size_t i = 0; i * 8 < n; ++i) {
    const uint64_t x = w[i].load(std::memory_order_relaxed);
    std::memcpy(p + i * 8, &x, std::min<size_t>(8, n - i * 8));
  }
}

size_t cell_words_for(const core::KvStoreConfig& c) {
  return 3 + (c.key_bytes_max + 7) / 8 + c.versions_per_key * (3 + (c.value_bytes_max + 7) / 8);
}

}  // namespace

const char* to_string(KvMirrorStatus s) {
  switch (s) {
    case KvMirrorStatus::ok: return "ok";
    case KvMirrorStatus::never_written: return "never written";
    case KvMirrorStatus::not_fresh: return "no value published in [t_min, now]";
    case KvMirrorStatus::evicted: return "evicted";
    case KvMirrorStatus::reduction_failed: return "reduction failed";
    case KvMirrorStatus::too_small: return "buffer too small";
    case KvMirrorStatus::busy: return "busy (concurrent updates)";
    case KvMirrorStatus::behind: return "the daemon has not published up to now yet";
  }
  return "unknown";
}

size_t KvMirror::bytes_for(const core::KvStoreConfig& c) {
  if (c.keys_max < 1 || c.keys_max > (size_t{1} << 24) || c.versions_per_key < 1 || c.versions_per_key > 1024 ||
      c.key_bytes_max < 1 || c.key_bytes_max > core::kKvKeyBytesMax || c.value_bytes_max < 1 ||
      c.value_bytes_max > core::kKvValueBytesMax)
    return 0;
  const size_t cells = std::bit_ceil(2 * c.keys_max);
  const size_t words = cell_words_for(c);  // at most 3 + 32 + 1024 * 8195: no overflow below
  if (words > kBytesMax / 8 / cells) return 0;
  return kHeaderBytes + cells * words * 8;
}

KvMirror KvMirror::format(void* mem, size_t bytes, const core::KvStoreConfig& c) {
  const size_t need = bytes_for(c);
  TOB_ASSERT(need != 0 && bytes >= need && reinterpret_cast<uintptr_t>(mem) % 8 == 0);
  static_assert(sizeof(Header) <= kHeaderBytes);
  auto* h = new (mem) Header{};
  h->magic = kMagic;
  h->cells = std::bit_ceil(2 * c.keys_max);
  h->keys_max = c.keys_max;
  h->versions_per_key = c.versions_per_key;
  h->key_bytes_max = c.key_bytes_max;
  h->value_bytes_max = c.value_bytes_max;
  h->cell_words = cell_words_for(c);
  h->complete_below_ns.store(INT64_MIN, std::memory_order_relaxed);
  auto* words = reinterpret_cast<Word*>(static_cast<uint8_t*>(mem) + kHeaderBytes);
  const size_t total = h->cells * h->cell_words;
  for (size_t i = 0; i < total; ++i) new (words + i) Word(0);
  KvMirror m;
  const bool ok = attach(mem, bytes, m);
  TOB_ASSERT(ok);
  return m;
}

bool KvMirror::attach(void* mem, size_t bytes, KvMirror& out) {
  if (mem == nullptr || bytes < kHeaderBytes) return false;
  auto* h = static_cast<Header*>(mem);
  if (h->magic != kMagic) return false;
  core::KvStoreConfig c;
  c.keys_max = h->keys_max;
  c.versions_per_key = h->versions_per_key;
  c.key_bytes_max = h->key_bytes_max;
  c.value_bytes_max = h->value_bytes_max;
  const size_t need = bytes_for(c);
  if (need == 0 || bytes < need || h->cells != std::bit_ceil(2 * c.keys_max) || h->cell_words != cell_words_for(c))
    return false;
  out.header_ = h;
  out.cells_ = reinterpret_cast<Word*>(static_cast<uint8_t*>(mem) + kHeaderBytes);
  out.cells_count_ = h->cells;
  out.cell_words_ = h->cell_words;
  out.config_ = c;
  return true;
}

int64_t KvMirror::complete_below_ns() const { return header_->complete_below_ns.load(std::memory_order_acquire); }

void KvMirror::set_complete_below(int64_t ns) { header_->complete_below_ns.store(ns, std::memory_order_release); }

KvMirrorCounters KvMirror::counters() const {
  const Header& h = *header_;
  return {h.keys.load(std::memory_order_relaxed), h.versions_stored.load(std::memory_order_relaxed),
          h.duplicates.load(std::memory_order_relaxed), h.evictions.load(std::memory_order_relaxed),
          h.store_full.load(std::memory_order_relaxed)};
}

bool KvMirror::key_equals(const Word* c, std::span<const uint8_t> key) const {
  for (size_t i = 0; i * 8 < key.size(); ++i) {
    uint64_t want = 0;
    std::memcpy(&want, key.data() + i * 8, std::min<size_t>(8, key.size() - i * 8));
    if (c[3 + i].load(std::memory_order_relaxed) != want) return false;
  }
  return true;
}

size_t KvMirror::find_for_write(std::span<const uint8_t> key, uint64_t hash) const {
  const size_t mask = cells_count_ - 1;
  // At most keys_max of the >= 2 x keys_max cells are taken: the probe always ends.
  for (size_t at = static_cast<size_t>(hash) & mask;; at = (at + 1) & mask) {
    const Word* c = cell(at);
    const size_t len = c[1].load(std::memory_order_relaxed) & 0xFF;
    if (len == 0) return at;
    if (len == key.size() && key_equals(c, key)) return at;
  }
}

void KvMirror::begin_write(Word* c) const {
  const uint64_t s = c[0].load(std::memory_order_relaxed);
  c[0].store(s + 1, std::memory_order_relaxed);  // odd: readers retry
  std::atomic_thread_fence(std::memory_order_release);
}

void KvMirror::end_write(Word* c) const {
  const uint64_t s = c[0].load(std::memory_order_relaxed);
  c[0].store(s + 1, std::memory_order_release);
}

core::KvPublish KvMirror::publish(std::span<const uint8_t> key, int64_t t_pub_ns, uint64_t instance, bool ok,
                                  std::span<const uint8_t> value) {
  TOB_ASSERT(!key.empty() && key.size() <= config_.key_bytes_max);
  TOB_ASSERT(value.size() <= config_.value_bytes_max);
  Header& h = *header_;
  const auto bump = [](std::atomic<uint64_t>& x) { x.store(x.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed); };
  Word* c = cell(find_for_write(key, core::fnv1a64(key)));
  const uint64_t state = c[1].load(std::memory_order_relaxed);
  const bool fresh = (state & 0xFF) == 0;
  if (fresh && h.keys.load(std::memory_order_relaxed) == h.keys_max) {
    bump(h.store_full);
    return core::KvPublish::store_full;
  }
  const size_t n = fresh ? 0 : (state >> 8) & 0xFFFF;
  const size_t v_max = config_.versions_per_key;
  for (size_t i = 0; i < n; ++i)
    if (static_cast<int64_t>(version_at(c, i)[0].load(std::memory_order_relaxed)) == t_pub_ns) {
      bump(h.duplicates);
      return core::KvPublish::duplicate;
    }
  begin_write(c);
  if (fresh) {
    store_bytes(c + 3, key.data(), key.size());
    c[2].store(0, std::memory_order_relaxed);
    bump(h.keys);
  }
  bool evicted_any = !fresh && ((state >> 24) & 1) != 0;
  auto evicted_max = static_cast<int64_t>(c[2].load(std::memory_order_relaxed));
  const auto t_of = [&](size_t i) { return static_cast<int64_t>(version_at(c, i)[0].load(std::memory_order_relaxed)); };
  const auto copy_version = [&](size_t from, size_t to) {
    for (size_t w = 0; w < 3; ++w)
      version_at(c, to)[w].store(version_at(c, from)[w].load(std::memory_order_relaxed), std::memory_order_relaxed);
  };
  size_t slot = n;
  size_t count = n;
  if (n == v_max) {
    // Bounded retention, as core::KvStore: the oldest publishing time goes, this one or a kept one.
    bump(h.evictions);
    const int64_t oldest = t_of(0);
    if (t_pub_ns < oldest) {
      evicted_max = evicted_any ? std::max(evicted_max, t_pub_ns) : t_pub_ns;
      c[1].store(state_word(key.size(), n, true), std::memory_order_relaxed);
      c[2].store(static_cast<uint64_t>(evicted_max), std::memory_order_relaxed);
      end_write(c);
      return core::KvPublish::too_old;
    }
    evicted_max = evicted_any ? std::max(evicted_max, oldest) : oldest;
    evicted_any = true;
    slot = (version_at(c, 0)[2].load(std::memory_order_relaxed) >> 32) & 0xFFFF;
    for (size_t i = 1; i < n; ++i) copy_version(i, i - 1);
    count = n - 1;
  }
  size_t at = count;
  while (at > 0 && t_of(at - 1) > t_pub_ns) {
    copy_version(at - 1, at);
    --at;
  }
  version_at(c, at)[0].store(static_cast<uint64_t>(t_pub_ns), std::memory_order_relaxed);
  version_at(c, at)[1].store(instance, std::memory_order_relaxed);
  version_at(c, at)[2].store(meta_word(ok ? value.size() : 0, slot, ok), std::memory_order_relaxed);
  if (ok && !value.empty()) store_bytes(value_at(c, slot), value.data(), value.size());
  c[1].store(state_word(key.size(), count + 1, evicted_any), std::memory_order_relaxed);
  c[2].store(static_cast<uint64_t>(evicted_max), std::memory_order_relaxed);
  end_write(c);
  bump(h.versions_stored);
  return core::KvPublish::stored;
}

KvMirrorRead KvMirror::read(std::span<const uint8_t> key, int64_t t_min_ns, int64_t now_ns, std::span<uint8_t> out) const {
  KvMirrorRead r;
  if (now_ns >= complete_below_ns()) {
    r.status = KvMirrorStatus::behind;
    return r;
  }
  if (key.empty() || key.size() > config_.key_bytes_max) return r;  // never written: too long to be stored
  enum class Cell { empty, other, found, torn };
  // One attempt at one cell; the caller validates the sequence afterwards.
  const auto look = [&](const Word* c, KvMirrorRead& res) {
    const uint64_t state = c[1].load(std::memory_order_relaxed);
    const size_t len = state & 0xFF;
    if (len == 0) return Cell::empty;
    if (len > config_.key_bytes_max) return Cell::torn;
    if (len != key.size() || !key_equals(c, key)) return Cell::other;
    const size_t n = (state >> 8) & 0xFFFF;
    if (n > config_.versions_per_key) return Cell::torn;
    Word* w = const_cast<Word*>(c);
    for (size_t i = n; i-- > 0;) {
      const auto t = static_cast<int64_t>(version_at(w, i)[0].load(std::memory_order_relaxed));
      if (t > now_ns) continue;   // not visible yet
      if (t < t_min_ns) break;    // the latest visible one is too old
      const uint64_t meta = version_at(w, i)[2].load(std::memory_order_relaxed);
      const size_t vlen = meta & 0xFFFFFFFFu;
      const size_t slot = (meta >> 32) & 0xFFFF;
      if (vlen > config_.value_bytes_max || slot >= config_.versions_per_key) return Cell::torn;
      res.t_pub_ns = t;
      res.instance = version_at(w, i)[1].load(std::memory_order_relaxed);
      res.value_bytes = 0;
      if ((meta >> 63) == 0) {
        res.status = KvMirrorStatus::reduction_failed;
      } else if (vlen > out.size()) {
        res.status = KvMirrorStatus::too_small;
        res.value_bytes = vlen;
      } else {
        load_bytes(value_at(w, slot), out.data(), vlen);
        res.status = KvMirrorStatus::ok;
        res.value_bytes = vlen;
      }
      return Cell::found;
    }
    // Every kept version is newer than every evicted one (core::KvStore::read).
    const bool evicted_any = ((state >> 24) & 1) != 0;
    const auto evicted_max = static_cast<int64_t>(c[2].load(std::memory_order_relaxed));
    res.status = evicted_any && t_min_ns <= evicted_max ? KvMirrorStatus::evicted : KvMirrorStatus::not_fresh;
    return Cell::found;
  };
  const size_t mask = cells_count_ - 1;
  size_t at = static_cast<size_t>(core::fnv1a64(key)) & mask;
  int attempts = 0;
  for (size_t probes = 0; probes < cells_count_;) {
    const Word* c = cell(at);
    const uint64_t s1 = c[0].load(std::memory_order_acquire);
    KvMirrorRead res;
    Cell got = Cell::torn;
    if ((s1 & 1) == 0) {
      got = look(c, res);
      std::atomic_thread_fence(std::memory_order_acquire);
    }
    if ((s1 & 1) != 0 || c[0].load(std::memory_order_relaxed) != s1) {
      if (++attempts >= kReadAttempts) {
        r.status = KvMirrorStatus::busy;
        return r;
      }
      __builtin_ia32_pause();
      continue;  // the same cell again
    }
    switch (got) {
      case Cell::empty: r.status = KvMirrorStatus::never_written; return r;
      case Cell::other:
        at = (at + 1) & mask;
        ++probes;
        continue;
      case Cell::found: return res;
      case Cell::torn: r.status = KvMirrorStatus::busy; return r;  // an intact mirror never gets here
    }
  }
  return r;
}

}  // namespace tob::dataplane
