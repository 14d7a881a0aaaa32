// printf into a std::string, for trace lines and messages of the simulator's tools.
#pragma once

#include <cstdarg>
#include <cstdio>
#include <string>

namespace tob::sim {

inline std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
inline std::string fmt(const char* f, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, f);
  std::vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return buf;
}

}  // namespace tob::sim
