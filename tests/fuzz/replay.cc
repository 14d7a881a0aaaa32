// Runs LLVMFuzzerTestOneInput over every file in a directory (a committed corpus), or over the
// files named, so the fuzz properties are checked by `meson test --suite fuzz` without clang or
// libFuzzer, and an input libFuzzer reported can be run again under the normal build.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

bool run_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot open %s\n", path.c_str());
    return false;
  }
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // A copy of exactly the file's size, so reads past the end are caught under ASan.
  const std::vector<uint8_t> exact(bytes.begin(), bytes.end());
  LLVMFuzzerTestOneInput(exact.data(), exact.size());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR | FILE...\n", argv[0]);
    return 2;
  }
  size_t n = 0;
  for (int a = 1; a < argc; ++a) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(argv[a], ec)) {
      if (!run_file(argv[a])) return 2;
      ++n;
      continue;
    }
    std::filesystem::directory_iterator it(argv[a], ec);
    if (ec) {
      std::fprintf(stderr, "cannot read %s: %s\n", argv[a], ec.message().c_str());
      return 2;
    }
    for (const auto& entry : it) {
      if (!entry.is_regular_file()) continue;
      if (!run_file(entry.path())) return 2;
      ++n;
    }
  }
  std::printf("replayed %zu inputs\n", n);
  return n > 0 ? 0 : 1;  // an empty corpus checks nothing
}
