#include <cstdio>
#include <cstdlib>

#include "core/result.h"

namespace tob::core {

void assert_fail(const char* expr, const char* file, int line) {
  std::fprintf(stderr, "tob: assertion failed: %s at %s:%d\n", expr, file, line);
  std::abort();
}

}  // namespace tob::core
