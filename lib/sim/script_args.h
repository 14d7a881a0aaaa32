// The words of a scenario file (docs/simulator.md "Scenario files"), shared by the otfp and mars
// runners: a failure names the line's problem, numbers are whole, options are key=value, nodes
// are `K`, `A-B`, `A,B,...` or `all` / `*`.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace tob::sim::script {

struct Failure {
  std::string message;
};

[[noreturn]] inline void fail(const std::string& why) { throw Failure{why}; }

inline int64_t to_int(const std::string& s, const char* what) {
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || end == s.c_str() || *end != '\0') fail(std::string("not a number for ") + what + ": '" + s + "'");
  return v;
}

// A line's words, without its comment (from `#` on).
inline std::vector<std::string> words_of(std::string line) {
  const size_t hash = line.find('#');
  if (hash != std::string::npos) line.resize(hash);
  std::stringstream ws(line);
  std::vector<std::string> words;
  for (std::string w; ws >> w;) words.push_back(w);
  return words;
}

// key=value words from w[from] on.
inline std::map<std::string, std::string> options(const std::vector<std::string>& w, size_t from) {
  std::map<std::string, std::string> o;
  for (size_t i = from; i < w.size(); ++i) {
    const size_t eq = w[i].find('=');
    if (eq == std::string::npos) fail("expected key=value, got '" + w[i] + "'");
    o[w[i].substr(0, eq)] = w[i].substr(eq + 1);
  }
  return o;
}

inline int node_arg(const std::string& v, int nodes) {
  const int64_t k = to_int(v, "a node");
  if (k < 0 || k >= nodes) fail("no node " + v + " in this " + std::to_string(nodes) + "-node cluster");
  return static_cast<int>(k);
}

inline std::vector<int> nodes_arg(const std::string& v, int nodes) {
  std::vector<int> out;
  if (v == "all" || v == "*") {
    for (int k = 0; k < nodes; ++k) out.push_back(k);
    return out;
  }
  std::stringstream ss(v);
  for (std::string part; std::getline(ss, part, ',');) {
    const size_t dash = part.find('-');
    if (dash == std::string::npos) {
      out.push_back(node_arg(part, nodes));
    } else {
      const int a = node_arg(part.substr(0, dash), nodes);
      const int b = node_arg(part.substr(dash + 1), nodes);
      for (int k = a; k <= b; ++k) out.push_back(k);
    }
  }
  if (out.empty()) fail("no nodes in '" + v + "'");
  return out;
}

}  // namespace tob::sim::script
