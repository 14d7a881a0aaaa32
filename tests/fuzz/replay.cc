// Runs LLVMFuzzerTestOneInput over every file in a directory (the committed corpus), so the
// fuzz properties are checked by `meson test --suite fuzz` without clang or libFuzzer.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  std::error_code ec;
  std::filesystem::directory_iterator it(argv[1], ec);
  if (ec) {
    std::fprintf(stderr, "cannot read %s: %s\n", argv[1], ec.message().c_str());
    return 2;
  }
  size_t n = 0;
  for (const auto& entry : it) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "cannot open %s\n", entry.path().c_str());
      return 2;
    }
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                     std::istreambuf_iterator<char>());
    // A copy of exactly the file's size, so reads past the end are caught under ASan.
    const std::vector<uint8_t> exact(bytes.begin(), bytes.end());
    LLVMFuzzerTestOneInput(exact.data(), exact.size());
    ++n;
  }
  std::printf("replayed %zu inputs\n", n);
  return n > 0 ? 0 : 1;  // an empty corpus checks nothing
}
