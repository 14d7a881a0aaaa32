// libFuzzer entry point: arbitrary frames (valid CRC and MAC) into a running mars node at arbitrary
// instants (docs/fuzzing.md; the harness: fuzz_targets.h, the input's operations: fuzz_ops.h).
#include <cstddef>
#include <cstdint>

#include "fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tob::fuzz::run_target(tob::fuzz::Target::mars, data, size);
  return 0;
}
