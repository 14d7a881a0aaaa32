// Frame authentication without the EAL: GMAC tags, the trailer, sealing and verifying frames of
// every kind, replay windows and the key bank's rotation hand-over.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <set>
#include <thread>
#include <vector>

#include "core/engine_factory.h"
#include "core/wire.h"
#include "dataplane/security/auth_trailer.h"
#include "dataplane/security/cluster_keys.h"
#include "dataplane/security/frame_auth.h"
#include "dataplane/security/replay_window.h"

using namespace tob;
using namespace tob::dataplane::security;

namespace {

KeyFile keys_of(std::initializer_list<uint8_t> fills) {
  KeyFile f;
  for (uint8_t b : fills) {
    f.keys[f.count].bytes.fill(b);
    f.keys[f.count].id = key_id(f.keys[f.count].bytes);
    ++f.count;
  }
  return f;
}

// A frame as the engines build it, with room for the trailer after it.
std::vector<uint8_t> frame(core::NodeId sender, uint64_t cycle, uint8_t flags = 0, uint16_t segment = 0,
                           core::FrameKind kind = core::FrameKind::slot, size_t body = 100) {
  std::vector<uint8_t> buf(1600, 0);
  core::FrameWriter w(buf);
  core::FrameHeader h;
  h.kind = kind;
  h.cluster_id = 7;
  h.sender = sender;
  h.flags = flags;
  h.cycle = cycle;
  h.segment_index = segment;
  h.segment_count = static_cast<uint16_t>(segment + 1);
  w.begin(h);
  std::vector<uint8_t> b(body, 0x5A);
  w.add_section(core::SectionType::app_batch, 0, b);
  const size_t n = w.finish();
  REQUIRE(n > 0);
  buf.resize(n + kAuthTrailerBytes);
  return buf;
}

struct Sealed {
  std::vector<uint8_t> bytes;
  core::FrameView view;
};

Sealed seal(KeySet& ks, std::vector<uint8_t> f, uint8_t copy = 0) {
  const size_t n = f.size() - kAuthTrailerBytes;
  REQUIRE(seal_frame(f, n, copy, ks) == f.size());
  auto d = core::decode_frame(f);
  REQUIRE(d.ok());  // the CRC still holds: the flag was set before it was resealed
  return {f, d.view};
}

}  // namespace

TEST_CASE("GMAC verifies its own tag and refuses any changed byte, tag or IV") {
  const KeyFile kf = keys_of({1});
  Gmac mac(kf.keys[0].bytes);
  std::vector<uint8_t> a(1500, 3), b{1, 2, 3, 4};
  Iv iv{};
  iv[11] = 9;
  Tag t;
  REQUIRE(mac.tag(iv, a, b, t));
  CHECK(mac.verify(iv, a, b, t));
  a[700] ^= 1;
  CHECK_FALSE(mac.verify(iv, a, b, t));
  a[700] ^= 1;
  b[0] ^= 0x80;
  CHECK_FALSE(mac.verify(iv, a, b, t));
  b[0] ^= 0x80;
  iv[0] = 1;
  CHECK_FALSE(mac.verify(iv, a, b, t));
  iv[0] = 0;
  t[15] ^= 1;
  CHECK_FALSE(mac.verify(iv, a, b, t));
  Gmac other(keys_of({2}).keys[0].bytes);
  t[15] ^= 1;
  CHECK_FALSE(other.verify(iv, a, b, t));
}

TEST_CASE("the IV is distinct for every frame one sender sends in a cycle, and across senders and cycles") {
  std::set<Iv> seen;
  size_t made = 0;
  for (core::NodeId s : {0, 1, 63})
    for (uint64_t c : {uint64_t{0}, uint64_t{1}, uint64_t{1} << 40, UINT64_MAX})
      for (auto kind : {core::FrameKind::slot, core::FrameKind::ic})
        for (uint8_t copy = 0; copy <= 4; ++copy)
          for (uint16_t seg : {0, 1, 4095, 65535}) {
            // what the engines set: second copy for copies > 0, aux for otfp retransmissions
            const uint8_t flags = copy == 4 ? core::kFlagAux : copy > 0 ? core::kFlagSecondCopy : 0;
            seen.insert(make_iv({s, kind, flags, copy, seg, c}));
            ++made;
          }
  CHECK(seen.size() == made);
}

TEST_CASE("a sealed frame of every kind verifies, decodes and carries its copy") {
  KeySet ks(keys_of({1}));
  for (auto kind : {core::FrameKind::slot, core::FrameKind::ic})
    for (uint8_t copy = 0; copy < 4; ++copy) {
      const uint8_t flags = copy > 0 ? core::kFlagSecondCopy : 0;
      Sealed s = seal(ks, frame(2, 1000 + copy, flags, 3, kind), copy);
      CHECK((s.view.header.flags & core::kFlagAuthenticated) != 0);
      const AuthResult r = verify_frame(s.bytes, s.view, ks);
      CHECK(r.verdict == AuthVerdict::ok);
      CHECK(r.copy == copy);
    }
  Sealed aux = seal(ks, frame(2, 5, core::kFlagAux, 0), 2);
  CHECK(verify_frame(aux.bytes, aux.view, ks).verdict == AuthVerdict::ok);
}

TEST_CASE("byte-identical copies 1..3 of a slot still get distinct tags (the copy is authenticated)") {
  KeySet ks(keys_of({1}));
  Sealed c1 = seal(ks, frame(2, 9, core::kFlagSecondCopy), 1);
  Sealed c2 = seal(ks, frame(2, 9, core::kFlagSecondCopy), 2);
  CHECK(c1.bytes != c2.bytes);
  // A copy renumbered by an attacker no longer verifies.
  c1.bytes[c1.view.frame_bytes] = 2;
  CHECK(verify_frame(c1.bytes, c1.view, ks).verdict == AuthVerdict::failed);
}

TEST_CASE("frames without a tag, with a cut trailer, a wrong tag, an unknown key or a changed body are refused") {
  KeySet ks(keys_of({1}));
  std::vector<uint8_t> plain = frame(1, 7);
  plain.resize(plain.size() - kAuthTrailerBytes);
  auto d = core::decode_frame(plain);
  REQUIRE(d.ok());
  CHECK(verify_frame(plain, d.view, ks).verdict == AuthVerdict::missing);

  Sealed s = seal(ks, frame(1, 7));
  std::vector<uint8_t> cut(s.bytes.begin(), s.bytes.end() - 1);
  CHECK(verify_frame(cut, s.view, ks).verdict == AuthVerdict::failed);

  Sealed wrong = s;
  wrong.bytes.back() ^= 0x01;
  CHECK(verify_frame(wrong.bytes, wrong.view, ks).verdict == AuthVerdict::failed);

  KeySet others(keys_of({2}));
  CHECK(verify_frame(s.bytes, s.view, others).verdict == AuthVerdict::failed);

  // A forger who changes a section and fixes the CRC (what CRC32C alone let through): the
  // decoder takes it, the tag refuses it.
  Sealed forged = s;
  forged.bytes[core::kHeaderBytes + 10] ^= 0xFF;
  core::mark_authenticated(std::span<uint8_t>(forged.bytes).first(forged.view.frame_bytes));
  auto fd = core::decode_frame(forged.bytes);
  REQUIRE(fd.ok());
  CHECK(verify_frame(forged.bytes, fd.view, ks).verdict == AuthVerdict::failed);

  // The same frame claimed by another sender or for another cycle: header bytes are in the IV too.
  Sealed moved = s;
  moved.bytes[6] = 2;
  core::mark_authenticated(std::span<uint8_t>(moved.bytes).first(moved.view.frame_bytes));
  auto md = core::decode_frame(moved.bytes);
  REQUIRE(md.ok());
  CHECK(verify_frame(moved.bytes, md.view, ks).verdict == AuthVerdict::failed);
}

TEST_CASE("Ethernet padding after the trailer does not disturb verification") {
  KeySet ks(keys_of({1}));
  Sealed s = seal(ks, frame(1, 7, 0, 0, core::FrameKind::slot, 0));
  s.bytes.resize(s.bytes.size() + 30, 0);
  CHECK(verify_frame(s.bytes, s.view, ks).verdict == AuthVerdict::ok);
}

TEST_CASE("replay window: each frame is taken once, other copies and segments are fresh") {
  FrameIdLayout l{2, 2, 2, 2, 3};
  CHECK(l.bits() == 2 * 2 + 2 + 2 * 3);
  ReplayWindow w(4, l);
  using V = ReplayWindow::Verdict;
  const auto slot = core::FrameKind::slot;
  CHECK(w.admit(1, slot, 0, 0, 100) == V::fresh);
  CHECK(w.admit(1, slot, 0, 0, 100) == V::replayed);
  CHECK(w.admit(1, slot, 1, 0, 100) == V::fresh);      // second copy
  CHECK(w.admit(1, slot, 0, 1, 100) == V::fresh);      // second segment
  CHECK(w.admit(1, slot, 2, 1, 100) == V::fresh);      // aux frame 1
  CHECK(w.admit(1, core::FrameKind::ic, 1, 2, 100) == V::fresh);
  CHECK(w.admit(1, core::FrameKind::ic, 1, 2, 100) == V::replayed);
  CHECK(w.admit(2, slot, 0, 0, 100) == V::fresh);      // another sender
  CHECK(w.admit(1, slot, 0, 0, 101) == V::fresh);      // the next cycle
  CHECK(w.admit(1, slot, 0, 0, 100) == V::replayed);   // still remembered
}

TEST_CASE("replay window: frames no sender of this configuration sends are out of range") {
  ReplayWindow w(4, FrameIdLayout{2, 2, 1, 0, 0});
  using V = ReplayWindow::Verdict;
  CHECK(w.admit(1, core::FrameKind::slot, 0, 2, 5) == V::out_of_range);  // segment beyond
  CHECK(w.admit(1, core::FrameKind::slot, 2, 1, 5) == V::out_of_range);  // aux frame beyond
  CHECK(w.admit(1, core::FrameKind::slot, 3, 0, 5) == V::out_of_range);  // copy beyond aux
  CHECK(w.admit(1, core::FrameKind::ic, 0, 0, 5) == V::out_of_range);    // no [ic]
  CHECK(w.admit(4, core::FrameKind::slot, 0, 0, 5) == V::out_of_range);  // no such node
}

TEST_CASE("replay window: older than the window or the floor is refused, memory stays bounded") {
  ReplayWindow w(4, FrameIdLayout{2, 1, 0, 0, 0});
  using V = ReplayWindow::Verdict;
  const uint64_t W = ReplayWindow::kWindowCycles;
  w.set_floor(1000);
  CHECK(w.admit(0, core::FrameKind::slot, 0, 0, 999) == V::replayed);  // before this node started
  CHECK(w.admit(0, core::FrameKind::slot, 0, 0, 1000) == V::fresh);
  CHECK(w.admit(0, core::FrameKind::slot, 0, 0, 1000 + W) == V::fresh);  // the window moves on
  CHECK(w.admit(0, core::FrameKind::slot, 1, 0, 1000) == V::replayed);   // now older than it
  CHECK(w.admit(0, core::FrameKind::slot, 0, 0, 1001) == V::fresh);      // inside it: fresh once
  CHECK(w.admit(0, core::FrameKind::slot, 0, 0, 1001) == V::replayed);
  // A long run of cycles reuses the same slots: every frame fresh once, every replay refused.
  for (uint64_t c = 2000; c < 2000 + 5 * W; ++c) {
    REQUIRE(w.admit(3, core::FrameKind::slot, 0, 0, c) == V::fresh);
    REQUIRE(w.admit(3, core::FrameKind::slot, 0, 0, c) == V::replayed);
    if (c >= 2000 + W) REQUIRE(w.admit(3, core::FrameKind::slot, 1, 0, c - W) == V::replayed);
  }
}

TEST_CASE("rotation: the bank hands new keys to its lcore only once the lcore took the last ones") {
  const KeyFile old_only = keys_of({1});
  const KeyFile both = keys_of({1, 2});     // step 1: accept the new key, still send with the old
  const KeyFile new_first = keys_of({2, 1});  // step 2: send with the new, still accept the old
  const KeyFile new_only = keys_of({2});    // step 3: drop the old
  KeyBank bank(old_only);
  KeySet* s = &bank.current();
  CHECK(s->send_id() == old_only.keys[0].id);
  REQUIRE(bank.publish(both));
  CHECK_FALSE(bank.publish(new_first));  // the lcore has not taken `both` yet
  s = &bank.current();
  CHECK(s->count() == 2);
  CHECK(s->send_id() == old_only.keys[0].id);
  CHECK(s->find(new_only.keys[0].id) != nullptr);
  REQUIRE(bank.publish(new_first));
  s = &bank.current();
  CHECK(s->send_id() == new_only.keys[0].id);
  CHECK(s->find(old_only.keys[0].id) != nullptr);
  REQUIRE(bank.publish(new_only));
  s = &bank.current();
  CHECK(s->count() == 1);
  CHECK(s->find(old_only.keys[0].id) == nullptr);
}

TEST_CASE("rotation: frames sealed during each step verify at a node one step behind or ahead") {
  // Nodes reload one after the other; each step keeps every pair of neighbouring steps compatible.
  const std::vector<KeyFile> steps = {keys_of({1}), keys_of({1, 2}), keys_of({2, 1}), keys_of({2})};
  for (size_t a = 0; a < steps.size(); ++a)
    for (size_t b = 0; b < steps.size(); ++b) {
      if (a > b + 1 || b > a + 1) continue;
      KeySet sender(steps[a]), receiver(steps[b]);
      Sealed s = seal(sender, frame(1, 50 + a * 4 + b));
      INFO("sender at step " << a << ", receiver at step " << b);
      CHECK(verify_frame(s.bytes, s.view, receiver).verdict == AuthVerdict::ok);
    }
  // Two steps apart (a node skipped the middle step) does not verify: the procedure says why.
  KeySet old_sender(steps[0]), new_receiver(steps[3]);
  Sealed s = seal(old_sender, frame(1, 99));
  CHECK(verify_frame(s.bytes, s.view, new_receiver).verdict == AuthVerdict::failed);
}

TEST_CASE("rotation: ClusterKeys reloads the file for both lcores, and keeps its keys on a bad file") {
  const std::string path = "/tmp/tob-rotation-test-" + std::to_string(::getpid()) + ".key";
  const std::string a = std::string(64, 'a'), b = std::string(64, 'b');
  auto put = [&](const std::string& text) {
    std::FILE* f = std::fopen(path.c_str(), "w");
    std::fputs(text.c_str(), f);
    std::fclose(f);
  };
  put(a + "\n");
  auto first = read_key_file(path);
  REQUIRE(first.ok());
  ClusterKeys keys(path, first.value());
  // An lcore that takes what is published (as the RX and control roles do before each frame).
  put(a + "\n" + b + "\n");
  REQUIRE(keys.reload(10).ok());
  CHECK(keys.rx().current().count() == 2);
  CHECK(keys.tx().current().count() == 2);
  put(b + "\n" + a + "\n");
  auto r = keys.reload(10);
  REQUIRE(r.ok());
  CHECK(r.value().find("sending with key") != std::string::npos);
  Key kb{};
  kb.fill(0xbb);
  CHECK(keys.rx().current().send_id() == key_id(kb));
  CHECK(keys.tx().current().send_id() == key_id(kb));
  put(b + "\n");
  REQUIRE(keys.reload(10).ok());
  CHECK(keys.rx().current().count() == 1);
  CHECK(keys.tx().current().count() == 1);
  put("not a key\n");
  auto bad = keys.reload(10);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.find(path) != std::string::npos);
  CHECK(keys.status().refused == 1);
  CHECK(keys.status().file.count == 1);  // still the last good file
  // One lcore does not take the keys (no frames): the next reload is refused, nothing changes.
  put(a + "\n");
  REQUIRE(keys.reload(10).ok());
  keys.tx().current();  // only the control lcore takes them
  put(b + "\n");
  auto stuck = keys.reload(10);
  REQUIRE_FALSE(stuck.ok());
  CHECK(stuck.error().message.find("has not taken") != std::string::npos);
  std::remove(path.c_str());
}

TEST_CASE("with frame_flags the engines encode every frame authenticated: sealing reseals nothing") {
  for (core::Order order : {core::Order::mars, core::Order::otfp}) {
    core::NodeConfig c;
    c.schedule = core::ScheduleConfig::equal_slots(4, 10'000'000);
    c.self = 1;
    c.frame_flags = core::kFlagAuthenticated;
    auto engine = core::make_engine(order, c);
    REQUIRE(engine.ok());
    size_t frames = 0;
    for (int64_t t = 0; t < 40'000'000; t += 1'000'000) {
      engine.value()->on_time(t);
      for (const core::TxFrame& f : engine.value()->take_actions().tx) {
        auto d = core::decode_frame(f.bytes);
        REQUIRE(d.ok());
        CHECK((d.view.header.flags & core::kFlagAuthenticated) != 0);
        ++frames;
      }
    }
    INFO("order " << core::to_string(order));
    CHECK(frames > 0);
  }
}
