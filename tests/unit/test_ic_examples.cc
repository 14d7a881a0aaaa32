// The pure C parts of the key-value store's example applications (seed 004 §V): the inverted
// pendulum of tob-pendulum (plant, PID, the 19-value state, replicas with a liar behind a median)
// and the label sets of tob-labels (the benchmark's composition, seeds, ticks, values). No daemon:
// what these show is that the controller works and the workload is the one described, so a
// failure on the cluster is the store's, not the example's.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "label_set.h"
#include "pendulum_model.h"

namespace {

struct LoopResult {
  bool fell = false;
  int fell_at = -1;
  double max_angle = 0;
  double final_angle = 0;
  ivp_state state{};
};

// One replica on its own: control, then advance, every period, for `seconds` of simulated time.
LoopResult closed_loop(ivp_params p, double seconds) {
  ivp_state s;
  ivp_init(&s, &p);
  LoopResult r;
  const int periods = static_cast<int>(std::lround(seconds / p.step_s));
  for (int k = 0; k < periods; k++) {
    ivp_control(&s);
    ivp_advance(&s);
    r.max_angle = std::max(r.max_angle, std::fabs(s.v[IVP_AP]));
    if (ivp_fallen(&s)) {
      r.fell = true;
      r.fell_at = k;
      break;
    }
  }
  r.final_angle = s.v[IVP_AP];
  r.state = s;
  return r;
}

ivp_params defaults_with(double step_s, double angle_rad) {
  ivp_params p;
  ivp_default_params(&p);
  p.step_s = step_s;
  p.initial_angle_rad = angle_rad;
  return p;
}

// The lower median of copies, as the store's median-f64 reduction publishes it
// (docs/protocol-ic.md: "the lower median (an actual copy)").
double lower_median(std::vector<double> copies) {
  std::sort(copies.begin(), copies.end());
  return copies[(copies.size() - 1) / 2];
}

}  // namespace

TEST_CASE("the default PID keeps the pole up from 0.2 rad at control periods of 10 to 100 ms",
          "[pendulum]") {
  for (double step_s : {0.01, 0.02, 0.05, 0.1}) {
    INFO("control period " << step_s * 1000 << " ms");
    const LoopResult r = closed_loop(defaults_with(step_s, 0.2), 30.0);
    CHECK_FALSE(r.fell);
    CHECK(r.max_angle <= 0.2 + 1e-9);       // the first swing goes back towards upright
    CHECK(std::fabs(r.final_angle) < 1e-3);  // and it settles
    CHECK(r.state.v[IVP_TT] == Approx(30.0).epsilon(1e-9));
  }
}

TEST_CASE("broken gains let the pole fall", "[pendulum]") {
  struct Broken {
    const char* what;
    double kp, ki, kd;
  };
  // kp = 100 is below the gravity term (M + m) g / l = 107.8 N/rad of this plant.
  for (const Broken& b : {Broken{"signs flipped", -400, -50, -80}, Broken{"no derivative", 400, 50, 0},
                          Broken{"kp below gravity", 100, 50, 80}, Broken{"no control", 0, 0, 0}}) {
    INFO(b.what);
    ivp_params p = defaults_with(0.05, 0.2);
    p.kp = b.kp;
    p.ki = b.ki;
    p.kd = b.kd;
    const LoopResult r = closed_loop(p, 30.0);
    CHECK(r.fell);
  }
}

TEST_CASE("the uncontrolled pole falls at the rate of the linearised plant", "[pendulum]") {
  // Near upright θ̈ ≈ (M + m) g / (M l) θ, so from rest θ(t) = θ0 cosh(λ t).
  ivp_params p = defaults_with(0.1, 0.001);
  p.kp = p.ki = p.kd = 0;
  ivp_state s;
  ivp_init(&s, &p);
  s.v[IVP_PE] = 0;
  for (int k = 0; k < 5; k++) ivp_advance(&s);  // no control: D:CF stays 0
  const double lambda = std::sqrt((p.cart_mass_kg + p.pole_mass_kg) * p.gravity_m_s2 /
                                  (p.cart_mass_kg * p.rod_length_m));
  CHECK(s.v[IVP_AP] == Approx(0.001 * std::cosh(lambda * 0.5)).epsilon(0.01));
  CHECK(s.v[IVP_AP] > 0.001);  // θ > 0 leans towards -x and keeps falling that way
  CHECK(s.v[IVP_CP] > 0);      // the cart recoils towards +x
}

TEST_CASE("a positive force moves the cart to +x and tips the pole towards -x", "[pendulum]") {
  ivp_params p = defaults_with(0.05, 0.0);
  ivp_state s;
  ivp_init(&s, &p);
  s.v[IVP_CF] = 10.0;
  ivp_advance(&s);
  CHECK(s.v[IVP_CV] > 0);
  CHECK(s.v[IVP_AP] > 0);
  // The sign convention the controller relies on: leaning towards -x (θ > 0) asks for F < 0.
  ivp_state t;
  ivp_init(&t, &p);
  t.v[IVP_AP] = 0.1;
  t.v[IVP_PE] = -0.1;
  CHECK(ivp_control(&t) < 0);
  CHECK(t.v[IVP_PF] == 0.0);
  CHECK(t.v[IVP_CF] < 0);
}

TEST_CASE("the plant and the controller are deterministic to the bit", "[pendulum]") {
  const LoopResult a = closed_loop(defaults_with(0.05, 0.15), 10.0);
  const LoopResult b = closed_loop(defaults_with(0.05, 0.15), 10.0);
  CHECK(ivp_state_equal(&a.state, &b.state));
  const LoopResult c = closed_loop(defaults_with(0.05, 0.1500001), 10.0);
  CHECK_FALSE(ivp_state_equal(&a.state, &c.state));
}

TEST_CASE("states that cannot drive the plant are refused", "[pendulum]") {
  ivp_params p = defaults_with(0.05, 0.1);
  ivp_state s;
  ivp_init(&s, &p);
  CHECK(ivp_state_invalid(&s) == -1);
  ivp_state bad = s;
  bad.v[IVP_CM] = 0;
  CHECK(ivp_state_invalid(&bad) == IVP_CM);
  bad = s;
  bad.v[IVP_AV] = NAN;
  CHECK(ivp_state_invalid(&bad) == IVP_AV);
  bad = s;
  bad.v[IVP_TS] = 1.5;
  CHECK(ivp_state_invalid(&bad) == IVP_TS);
  bad = s;
  bad.v[IVP_LF] = -1;
  CHECK(ivp_state_invalid(&bad) == IVP_LF);
  bad = s;
  bad.v[IVP_G] = -9.8;
  CHECK(ivp_state_invalid(&bad) == IVP_G);

  char err[128];
  CHECK(ivp_params_check(&p, err, sizeof err) == 0);
  p.step_s = 2.0;
  CHECK(ivp_params_check(&p, err, sizeof err) == -1);
  CHECK(std::string(err).find("step") != std::string::npos);
  p = defaults_with(0.05, 2.0);
  CHECK(ivp_params_check(&p, err, sizeof err) == -1);
  CHECK(std::string(err).find("initial angle") != std::string::npos);
}

TEST_CASE("the state is 19 keys named as the seed's IvPSim, under a prefix", "[pendulum]") {
  std::set<std::string> keys;
  char key[32];
  for (int i = 0; i < IVP_VAR_COUNT; i++) {
    REQUIRE(ivp_key(key, sizeof key, "ivp0/", i) > 0);
    keys.insert(key);
  }
  CHECK(keys.size() == 19);
  CHECK(keys.count("ivp0/D:AP") == 1);
  CHECK(keys.count("ivp0/I:KP") == 1);
  CHECK(keys.count("ivp0/D:TT") == 1);
  CHECK(ivp_key(key, sizeof key, "ivp0/", IVP_VAR_COUNT) == -1);
  CHECK(ivp_key(key, 8, "ivp0/", IVP_AP) == -1);  // "ivp0/D:AP" needs 10 bytes
  CHECK(ivp_var_name(-1) == nullptr);
}

TEST_CASE("one lying replica behind a lower median leaves the correct replicas identical and the pole up",
          "[pendulum][replicas]") {
  // Four replicas, the last one lies by +0.3 on every value plus noise, as `--lie 0.3
  // --lie-noise 0.05` does. Each period every replica controls and advances from the agreed
  // state, offers its copy, and the agreed state of the next period is the per-key lower median.
  constexpr int kReplicas = 4;
  const ivp_params p = defaults_with(0.05, 0.2);
  ivp_state agreed;
  ivp_init(&agreed, &p);
  uint64_t rng = 42;
  double max_angle = 0;
  for (int k = 0; k < 400; k++) {
    std::array<ivp_state, kReplicas> copies;
    for (int r = 0; r < kReplicas; r++) {
      ivp_state own = agreed;
      ivp_control(&own);
      ivp_advance(&own);
      copies[r] = own;
      if (r == kReplicas - 1) ivp_lie(&own, &copies[r], 0.3, 0.05, &rng);
    }
    for (int r = 1; r < kReplicas - 1; r++) REQUIRE(ivp_state_equal(&copies[0], &copies[r]));
    REQUIRE_FALSE(ivp_state_equal(&copies[0], &copies[kReplicas - 1]));
    for (int i = 0; i < IVP_VAR_COUNT; i++) {
      std::vector<double> v;
      for (const ivp_state& c : copies) v.push_back(c.v[i]);
      agreed.v[i] = lower_median(v);
    }
    REQUIRE(ivp_state_equal(&agreed, &copies[0]));  // the lie never gets through
    REQUIRE(ivp_state_invalid(&agreed) == -1);
    max_angle = std::max(max_angle, std::fabs(agreed.v[IVP_AP]));
  }
  CHECK(max_angle <= 0.2 + 1e-9);
  CHECK(std::fabs(agreed.v[IVP_AP]) < 1e-3);
}

TEST_CASE("taking the liar's copy without agreement wrecks the controlled state", "[pendulum][replicas]") {
  // What the median prevents: a replica that simply uses the lying node's copy ends with a
  // fallen pole or a state the plant refuses (the lie also grows the step beyond 1 s).
  const ivp_params p = defaults_with(0.05, 0.2);
  ivp_state s;
  ivp_init(&s, &p);
  uint64_t rng = 42;
  bool failed = false;
  for (int k = 0; k < 400 && !failed; k++) {
    ivp_control(&s);
    ivp_advance(&s);
    ivp_state lied;
    ivp_lie(&s, &lied, 0.3, 0.05, &rng);
    s = lied;
    failed = ivp_fallen(&s) || ivp_state_invalid(&s) >= 0;
  }
  CHECK(failed);
}

TEST_CASE("a lie is reproducible from its seed and moves every value", "[pendulum]") {
  const ivp_params p = defaults_with(0.05, 0.1);
  ivp_state s, a, b;
  ivp_init(&s, &p);
  uint64_t r1 = 7, r2 = 7;
  ivp_lie(&s, &a, 0.5, 0.1, &r1);
  ivp_lie(&s, &b, 0.5, 0.1, &r2);
  CHECK(ivp_state_equal(&a, &b));
  for (int i = 0; i < IVP_VAR_COUNT; i++) {
    CHECK(a.v[i] - s.v[i] >= 0.4 - 1e-12);
    CHECK(a.v[i] - s.v[i] <= 0.6 + 1e-12);
  }
}

namespace {

std::vector<label> generate(uint32_t count, std::vector<uint32_t> periods, uint64_t seed) {
  label_set_spec spec{};
  spec.count = count;
  spec.period_count = periods.size();
  std::copy(periods.begin(), periods.end(), spec.periods_ms);
  spec.seed = seed;
  std::vector<label> out(count);
  char err[256];
  REQUIRE(label_set_generate(&spec, out.data(), err, sizeof err) == 0);
  return out;
}

std::string refusal(uint32_t count, std::vector<uint32_t> periods) {
  label_set_spec spec{};
  spec.count = count;
  spec.period_count = periods.size();
  std::copy(periods.begin(), periods.end(), spec.periods_ms);
  std::vector<label> out(std::max<uint32_t>(count, 1));
  char err[256] = "";
  if (label_set_generate(&spec, out.data(), err, sizeof err) == 0) return "";
  return err;
}

const std::vector<uint32_t> kSeedMix = {1, 2, 5, 10, 50, 100, 200, 1000};

}  // namespace

TEST_CASE("a label set has the benchmark's composition of periods and sizes", "[labels]") {
  // The seed's mix sums to 60% of Table III: 600 labels split exactly as the shares.
  const std::vector<label> set = generate(600, kSeedMix, 1);
  std::map<uint32_t, int> periods;
  for (const label& l : set) periods[l.period_ms]++;
  CHECK(periods == std::map<uint32_t, int>{{1, 30},  {2, 20},   {5, 20},  {10, 250},
                                           {50, 30}, {100, 200}, {200, 10}, {1000, 40}});
  // Table I up to 16 bytes sums to 99.1%: 991 labels split exactly as the shares.
  const std::vector<label> sized = generate(991, {100}, 1);
  int by_class[5] = {};
  for (const label& l : sized) {
    REQUIRE(l.size_bytes >= 1);
    REQUIRE(l.size_bytes <= 16);
    REQUIRE(l.size_bytes != 3);  // the table has 1, 2 and 4 bytes, then ranges from 5
    by_class[l.size_bytes == 1 ? 0 : l.size_bytes == 2 ? 1 : l.size_bytes == 4 ? 2 : l.size_bytes <= 8 ? 3 : 4]++;
  }
  CHECK(by_class[0] == 350);
  CHECK(by_class[1] == 490);
  CHECK(by_class[2] == 130);
  CHECK(by_class[3] == 8);
  CHECK(by_class[4] == 13);
  for (const label& l : sized) CHECK(l.period_ms == 100);
}

TEST_CASE("the seed decides which label gets what, not how many", "[labels]") {
  const std::vector<label> a = generate(2000, kSeedMix, 1);
  const std::vector<label> b = generate(2000, kSeedMix, 1);
  const std::vector<label> c = generate(2000, kSeedMix, 2);
  auto same = [](const std::vector<label>& x, const std::vector<label>& y) {
    for (size_t i = 0; i < x.size(); i++) {
      if (x[i].id != y[i].id || x[i].period_ms != y[i].period_ms || x[i].size_bytes != y[i].size_bytes) return false;
    }
    return true;
  };
  CHECK(same(a, b));
  CHECK_FALSE(same(a, c));
  auto histogram = [](const std::vector<label>& x) {
    std::map<std::pair<uint32_t, int>, int> h;
    for (const label& l : x) h[{l.period_ms, 0}]++, h[{0, l.size_bytes <= 4 ? l.size_bytes : l.size_bytes <= 8 ? 8 : 16}]++;
    return h;
  };
  CHECK(histogram(a) == histogram(c));
  for (uint32_t i = 0; i < a.size(); i++) CHECK(a[i].id == i);
}

TEST_CASE("bad label set specifications are refused with the reason", "[labels]") {
  CHECK(refusal(0, {100}).find("label count 0") != std::string::npos);
  CHECK(refusal(LABEL_COUNT_MAX + 1, {100}).find("outside") != std::string::npos);
  CHECK(refusal(10, {}).find("periods given") != std::string::npos);
  CHECK(refusal(10, {0}).find("period 0 ms") != std::string::npos);
  CHECK(refusal(10, {10, 10}).find("named twice") != std::string::npos);
  CHECK(refusal(10, {10, 30}).find("not one of the benchmark's") != std::string::npos);
  CHECK(refusal(10, {30}) == "");  // a single period may be any
}

TEST_CASE("the tick is the gcd of the periods and labels are due when their period divides the instant",
          "[labels]") {
  const std::vector<label> mix = generate(600, kSeedMix, 3);
  CHECK(label_tick_ms(mix.data(), mix.size()) == 1);
  const std::vector<label> slow = generate(100, {100, 200, 1000}, 3);
  CHECK(label_tick_ms(slow.data(), slow.size()) == 100);
  const label l1000{0, 1000, 4};
  CHECK(label_due(&l1000, 0, 1));
  CHECK(label_due(&l1000, 5000, 1));
  CHECK_FALSE(label_due(&l1000, 500, 1));
  CHECK(label_due(&l1000, 30, 100));
  CHECK_FALSE(label_due(&l1000, 31, 100));
  // Every tick of the mix has its 1 ms labels due, and tick 0 has all of them.
  int due0 = 0, due7 = 0;
  for (const label& l : mix) {
    due0 += label_due(&l, 0, 1);
    due7 += label_due(&l, 7, 1);
  }
  CHECK(due0 == 600);
  CHECK(due7 == 30);
}

TEST_CASE("label values depend on the label and the tick only", "[labels]") {
  uint8_t a[LABEL_SIZE_MAX], b[LABEL_SIZE_MAX], c[LABEL_SIZE_MAX], d[LABEL_SIZE_MAX];
  label_value(12, 1000, a);
  label_value(12, 1000, b);
  label_value(12, 1001, c);
  label_value(13, 1000, d);
  CHECK(std::memcmp(a, b, sizeof a) == 0);
  CHECK(std::memcmp(a, c, sizeof a) != 0);
  CHECK(std::memcmp(a, d, sizeof a) != 0);
}

TEST_CASE("apportionment sums to the total and stays within one of each exact share", "[labels]") {
  uint64_t rng = 99;
  for (int round = 0; round < 500; round++) {
    const size_t n = 1 + label_rng_next(&rng) % LABEL_PERIODS_MAX;
    double shares[LABEL_PERIODS_MAX];
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
      shares[i] = 0.01 + static_cast<double>(label_rng_next(&rng) % 10000) / 100.0;
      sum += shares[i];
    }
    const uint32_t total = static_cast<uint32_t>(label_rng_next(&rng) % 5000);
    uint32_t counts[LABEL_PERIODS_MAX];
    label_apportion(shares, n, total, counts);
    uint32_t got = 0;
    for (size_t i = 0; i < n; i++) {
      const double exact = total * shares[i] / sum;
      REQUIRE(std::fabs(counts[i] - exact) < 1.0);
      got += counts[i];
    }
    REQUIRE(got == total);
  }
}

TEST_CASE("label keys are the prefix and the decimal id", "[labels]") {
  char key[16];
  CHECK(label_key(key, sizeof key, "lb/", 1234) == 7);
  CHECK(std::string(key) == "lb/1234");
  CHECK(label_key(key, 6, "lb/", 1234) == -1);
}
