// Helpers for simulation tests: run a scenario, judge it, look up what nodes observed.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "sim/checker.h"
#include "sim/simulator.h"

namespace tob::sim::test {

struct Run {
  std::optional<Simulator> sim;
  CheckReport report;
  const Records& rec() const { return sim->records(); }
  const core::Schedule& sched() const { return sim->schedule(); }
  int64_t cycle_ns() const { return sched().cycle_ns(); }

  // First event of `kind` about `about` seen by `observer` (virtual time), or -1.
  int64_t event_ns(int observer, core::EventKind kind, int about, core::Reason* reason = nullptr) const {
    for (const EventRecord& e : rec().events)
      if (e.node == observer && e.event.kind == kind && e.event.node == about) {
        if (reason != nullptr) *reason = e.event.reason;
        return e.virtual_ns;
      }
    return -1;
  }
  bool delivered(int node, int sender, int64_t cycle) const {
    for (const DeliveryRecord& d : rec().deliveries)
      if (d.node == node && d.sender == sender && d.cycle == cycle) return true;
    return false;
  }
  bool sent_in(int sender, int64_t cycle) const {
    for (const SentRecord& s : rec().sent)
      if (s.sender == sender && s.cycle == cycle) return true;
    return false;
  }
  std::string violations() const {
    std::string out;
    for (const Violation& v : report.violations) out += v.property + ": " + v.detail + "\n";
    return out;
  }
};

inline Scenario quiet_scenario(int nodes, int64_t cycles) {
  Scenario s;
  s.nodes = nodes;
  s.cycles = cycles;
  s.cycle_ns = nodes * 250'000;
  s.load = 3;
  return s;
}

inline Run run(const Scenario& s) {
  Run r;
  auto sim = Simulator::create(s);
  REQUIRE(sim.ok());
  r.sim.emplace(std::move(sim.value()));
  r.sim->run();
  r.report = check(r.sim->schedule(), r.sim->records(), 2 * s.clock_offset_ns_max);
  return r;
}

// A scenario file's text.
inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The scenario files (*.txt) of a directory, sorted.
inline std::vector<std::filesystem::path> scenario_files(const char* dir) {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".txt") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace tob::sim::test
