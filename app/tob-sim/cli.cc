#include "cli.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace tob::simcli {
namespace {
const char* g_hint = "tob-sim --help";
}  // namespace

void set_help_hint(const char* hint) { g_hint = hint; }

void usage_error(const std::string& msg) {
  std::fprintf(stderr, "tob-sim: %s\nTry '%s'.\n", msg.c_str(), g_hint);
  std::exit(2);
}

int64_t parse_int(const char* flag, const char* v, int64_t lo, int64_t hi) {
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(v, &end, 10);
  if (errno != 0 || end == v || *end != '\0' || x < lo || x > hi)
    usage_error(std::string(flag) + " needs an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                "], got '" + v + "'");
  return x;
}

double parse_prob(const char* flag, const char* v) {
  char* end = nullptr;
  errno = 0;
  const double x = std::strtod(v, &end);
  if (errno != 0 || end == v || *end != '\0' || !(x >= 0.0 && x <= 1.0))
    usage_error(std::string(flag) + " needs a probability in [0, 1], got '" + v + "'");
  return x;
}

double parse_nonneg(const char* flag, const char* v) {
  char* end = nullptr;
  const double x = std::strtod(v, &end);
  if (end == v || *end != '\0' || !(x >= 0.0 && x < 1e6))
    usage_error(std::string(flag) + " needs a non-negative number, got '" + v + "'");
  return x;
}

void parse_range(const char* flag, const char* v, int64_t lo, int64_t hi, int64_t& min, int64_t& max) {
  long long a = 0;
  long long b = 0;
  int used = 0;
  if (std::sscanf(v, "%lld-%lld%n", &a, &b, &used) != 2 || v[used] != '\0' || a < lo || b < a || b > hi)
    usage_error(std::string(flag) + " needs MIN-MAX within " + std::to_string(lo) + "-" + std::to_string(hi) + ", got '" +
                v + "'");
  min = a;
  max = b;
}

}  // namespace tob::simcli
