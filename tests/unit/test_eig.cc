// RT-EIGByz in flat arrays (seed 004 §III-B): layout, cycle-free paths, whole-message copies,
// defaults for missing and malformed data, and interactive consistency (agreement and integrity
// among correct nodes) against liars that tell each receiver something else, omitters and crashed
// nodes, up to f of them; and a demonstration that f + 1 colluding liars do break agreement.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include "core/bytes.h"
#include "core/eig.h"

namespace tob::core {
namespace {

using Bytes = std::vector<uint8_t>;

EigTree make(int n, int f, size_t value_max = 16) {
  auto t = EigTree::create(n, f, value_max, 64u << 20);
  REQUIRE(t.ok());
  return std::move(t.value());
}

Bytes value_of(int node, int variant = 0) {
  return Bytes{static_cast<uint8_t>(0xA0 + node), static_cast<uint8_t>(variant), 7};
}

// How a node's round-r message to one receiver is altered: the default is the honest message.
using Behaviour = std::function<void(int sender, int receiver, int round, Bytes& message, bool& send)>;

struct Outcome {
  std::vector<std::vector<Bytes>> decision;  // [node][a], empty = ⊥
  std::vector<std::vector<bool>> has;
};

// Runs one instance on N trees with a perfect network except for what `behave` changes.
Outcome run(int n, int f, const std::vector<Bytes>& values, const Behaviour& behave, size_t value_max = 16) {
  std::vector<EigTree> trees;
  for (int i = 0; i < n; ++i) {
    trees.push_back(make(n, f, value_max));
    trees.back().start(values[static_cast<size_t>(i)]);
  }
  for (int r = 1; r <= f + 1; ++r) {
    std::vector<Bytes> sent;
    for (int j = 0; j < n; ++j) {
      const auto m = trees[static_cast<size_t>(j)].round_message(r);
      sent.emplace_back(m.begin(), m.end());
    }
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) {
        Bytes m = sent[static_cast<size_t>(j)];
        bool send = true;
        if (behave) behave(j, i, r, m, send);
        if (send) {
          trees[static_cast<size_t>(i)].accept(r, static_cast<NodeId>(j), m);
        } else {
          trees[static_cast<size_t>(i)].set_default(r, static_cast<NodeId>(j));
        }
      }
  }
  Outcome o;
  for (int i = 0; i < n; ++i) {
    EigTree& t = trees[static_cast<size_t>(i)];
    t.reduce();
    o.decision.emplace_back();
    o.has.emplace_back();
    for (int a = 0; a < n; ++a) {
      std::span<const uint8_t> v;
      const bool h = t.decision(static_cast<NodeId>(a), v);
      o.has.back().push_back(h);
      o.decision.back().emplace_back(h ? Bytes(v.begin(), v.end()) : Bytes{});
    }
  }
  return o;
}

std::vector<Bytes> values_for(int n) {
  std::vector<Bytes> v;
  for (int i = 0; i < n; ++i) v.push_back(value_of(i));
  return v;
}

// Agreement: correct nodes have identical decision vectors. Integrity: a correct node's entry is
// its own value everywhere.
void check_ic(const Outcome& o, const std::vector<bool>& faulty, const std::vector<Bytes>& values) {
  const auto n = faulty.size();
  size_t first = 0;
  while (faulty[first]) ++first;
  for (size_t i = 0; i < n; ++i) {
    if (faulty[i]) continue;
    INFO("node " << i);
    CHECK(o.has[i] == o.has[first]);
    CHECK(o.decision[i] == o.decision[first]);
    for (size_t a = 0; a < n; ++a) {
      if (faulty[a]) continue;
      INFO("entry of correct node " << a);
      CHECK(o.has[i][a]);
      CHECK(o.decision[i][a] == values[a]);
    }
  }
}

}  // namespace

TEST_CASE("EIG tree: level x has N^x entries and the cycle-free paths are the valid ones", "[eig]") {
  const EigTree t = make(4, 1, 10);
  CHECK(t.rounds() == 2);
  CHECK(t.entry_bytes() == 14);
  CHECK(t.level_entries(0) == 1);
  CHECK(t.level_entries(1) == 4);
  CHECK(t.level_entries(2) == 16);
  CHECK(t.round_message_bytes(1) == 14);
  CHECK(t.round_message_bytes(2) == 56);
  CHECK(t.total_bytes() == 21 * 14);
  // Level 2 index z * 4 + y is the path y -> z: valid unless y == z.
  for (size_t y = 0; y < 4; ++y)
    for (size_t z = 0; z < 4; ++z) CHECK(t.valid_path(2, z * 4 + y) == (y != z));

  const EigTree u = make(7, 2, 4);
  size_t valid3 = 0;
  for (size_t i = 0; i < u.level_entries(3); ++i) valid3 += u.valid_path(3, i) ? 1 : 0;
  CHECK(u.level_entries(3) == 343);
  CHECK(valid3 == 7 * 6 * 5);  // N! / (N - 3)!
  // Path 1 -> 2 -> 1 (index 1 + 2*7 + 1*49) repeats node 1.
  CHECK_FALSE(u.valid_path(3, 1 + 2 * 7 + 1 * 49));
  CHECK(u.valid_path(3, 1 + 2 * 7 + 3 * 49));
}

TEST_CASE("EIG tree: N <= 3f and oversized trees are refused with a reason", "[eig]") {
  auto a = EigTree::create(3, 1, 16, 1u << 20);
  REQUIRE_FALSE(a.ok());
  CHECK(a.error().message.find("N > 3f") != std::string::npos);
  auto b = EigTree::create(64, 21, 16, 1u << 30);
  REQUIRE_FALSE(b.ok());
  CHECK(b.error().message.find("exceeds the limit") != std::string::npos);
  CHECK(EigTree::tree_bytes(64, 21, 16, SIZE_MAX) == 0);  // 64^22 entries overflow
  CHECK_FALSE(EigTree::create(4, -1, 16, 1u << 20).ok());
  CHECK_FALSE(EigTree::create(4, 1, 0, 1u << 20).ok());
  CHECK(EigTree::create(1, 0, 8, 1u << 20).ok());
}

TEST_CASE("EIG round r message of node j lands whole at EIG[r][j * N^(r-1)]", "[eig]") {
  EigTree t = make(4, 1, 6);
  t.start(value_of(0));
  Bytes msg(t.round_message_bytes(2));
  for (size_t k = 0; k < msg.size(); ++k) msg[k] = static_cast<uint8_t>(k);
  for (int j = 0; j < 4; ++j) t.accept(1, static_cast<NodeId>(j), Bytes(t.round_message_bytes(1), 0));
  CHECK(t.accept(2, 3, msg));
  for (size_t y = 0; y < 4; ++y) {
    const auto e = t.entry(2, 3 * 4 + y);
    CHECK(std::equal(e.begin(), e.end(), msg.begin() + static_cast<std::ptrdiff_t>(y * t.entry_bytes())));
  }
  // A message of the wrong length is the default value, never a partial copy.
  CHECK_FALSE(t.accept(2, 2, Bytes(msg.size() - 1, 0x11)));
  std::span<const uint8_t> v;
  for (size_t y = 0; y < 4; ++y) CHECK_FALSE(EigTree::entry_value(t.entry(2, 2 * 4 + y), 6, v));
}

TEST_CASE("EIG entries with a length above the value bound read as the default", "[eig]") {
  Bytes e(4 + 8, 0);
  std::span<const uint8_t> v;
  store_be32(e.data(), 8);
  CHECK(EigTree::entry_value(e, 8, v));
  CHECK(v.size() == 8);
  store_be32(e.data(), 0);
  CHECK(EigTree::entry_value(e, 8, v));
  CHECK(v.empty());
  for (uint32_t len : {9u, 1000u, kEigBottom}) {
    store_be32(e.data(), len);
    CHECK_FALSE(EigTree::entry_value(e, 8, v));
  }
}

TEST_CASE("EIG without faults: every node decides every value", "[eig]") {
  for (int n : {1, 4, 5, 7}) {
    for (int f = 0; 3 * f < n; ++f) {
      INFO("N " << n << " f " << f);
      const auto values = values_for(n);
      const Outcome o = run(n, f, values, nullptr);
      check_ic(o, std::vector<bool>(static_cast<size_t>(n), false), values);
    }
  }
}

TEST_CASE("EIG: a crashed node is the default at every correct node; omissions to some are masked",
          "[eig]") {
  const auto values = values_for(4);
  SECTION("node 2 sends nothing") {
    const Outcome o = run(4, 1, values, [](int s, int, int, Bytes&, bool& send) { send = s != 2; });
    check_ic(o, {false, false, true, false}, values);
    for (int i : {0, 1, 3}) CHECK_FALSE(o.has[static_cast<size_t>(i)][2]);
  }
  SECTION("node 1 omits to node 3 in both rounds (seed 004 Fig. 2b)") {
    const Outcome o = run(4, 1, values, [](int s, int r, int, Bytes&, bool& send) { send = !(s == 1 && r == 3); });
    check_ic(o, {false, true, false, false}, values);
    // Node 3 learns node 1's value through the others in round 2.
    CHECK(o.decision[3][1] == values[1]);
  }
  SECTION("node 0 crashes after round 1") {
    const Outcome o = run(4, 1, values, [](int s, int, int round, Bytes&, bool& send) { send = !(s == 0 && round == 2); });
    check_ic(o, {true, false, false, false}, values);
  }
}

TEST_CASE("EIG: a liar telling each receiver something else cannot split correct nodes", "[eig][byzantine]") {
  const auto values = values_for(4);
  // "my sensor reads 0.15" to one, "35.33" to another (seed 004 §I), and lies about others.
  const Outcome o = run(4, 1, values, [](int s, int recv, int, Bytes& m, bool&) {
    if (s != 1) return;
    for (size_t off = 0; off + 20 <= m.size(); off += 20) {
      std::span<uint8_t> e(m.data() + off, 20);
      store_be32(e.data(), 3);
      e[4] = static_cast<uint8_t>(0x10 * recv);
    }
  });
  check_ic(o, {false, true, false, false}, values);
}

TEST_CASE("EIG: random Byzantine behaviour of up to f nodes keeps agreement and integrity", "[eig][byzantine]") {
  std::mt19937_64 rng(7);
  for (const auto& [n, f] : {std::pair{4, 1}, std::pair{5, 1}, std::pair{7, 2}}) {
    for (int trial = 0; trial < 300; ++trial) {
      std::vector<bool> faulty(static_cast<size_t>(n), false);
      const int k = static_cast<int>(rng() % static_cast<uint64_t>(f + 1));
      for (int c = 0; c < k;) {
        const auto who = static_cast<size_t>(rng() % static_cast<uint64_t>(n));
        if (!faulty[who]) {
          faulty[who] = true;
          ++c;
        }
      }
      const uint64_t seed = rng();
      const bool collude = (seed & 1) != 0;
      // Colluding liars tell receiver i the same fixed story; others do random things per entry.
      const auto behave = [&, seed, collude](int s, int recv, int round, Bytes& m, bool& send) {
        if (!faulty[static_cast<size_t>(s)]) return;
        std::mt19937_64 r(seed ^ (static_cast<uint64_t>(s) << 32) ^ (static_cast<uint64_t>(recv) << 16) ^
                          static_cast<uint64_t>(round));
        if (!collude && r() % 5 == 0) {
          send = false;
          return;
        }
        const size_t eb = 4 + 16;
        for (size_t off = 0; off < m.size(); off += eb) {
          std::span<uint8_t> e(m.data() + off, eb);
          const uint64_t x = collude ? 0 : r();
          switch (collude ? 0 : x % 4) {
            case 0: {
              store_be32(e.data(), 3);
              e[4] = static_cast<uint8_t>(0x55 + recv);
              e[5] = 0;
              e[6] = 0;
              break;
            }
            case 1: EigTree::write_bottom(e); break;
            case 2: store_be32(e.data(), static_cast<uint32_t>(17 + x % 100)); break;
            default: break;  // this entry honest
          }
        }
      };
      const auto values = values_for(n);
      INFO("N " << n << " f " << f << " trial " << trial << " faulty " << k << (collude ? " colluding" : " random"));
      check_ic(run(n, f, values, behave), faulty, values);
    }
  }
}

TEST_CASE("EIG: f + 1 colluding liars do break agreement (the bound N > 3f is tight)", "[eig][byzantine]") {
  // N = 4 run with f = 1 but nodes 2 and 3 lie: each tells receiver i that node 2's value is
  // L_i, in round 1 (node 2 itself) and round 2 (node 3 relaying). Receivers 0 and 1 then see a
  // majority for different values.
  const auto values = values_for(4);
  const Outcome o = run(4, 1, values, [](int s, int recv, int round, Bytes& m, bool&) {
    if (s < 2) return;
    const size_t eb = 20;
    const size_t entries = m.size() / eb;
    for (size_t y = 0; y < entries; ++y) {
      // The entry's path starts with node 2 when y % 4 == 2 (round 2) or it is node 2's root.
      if (round == 1 ? s != 2 : y != 2) continue;
      std::span<uint8_t> e(m.data() + y * eb, eb);
      store_be32(e.data(), 3);
      e[4] = static_cast<uint8_t>(0x70 + recv);
      e[5] = 0;
      e[6] = 0;
    }
  });
  CHECK(o.decision[0][2] != o.decision[1][2]);
}

}  // namespace tob::core
