// The otfp acceptor log's writer (lib/dataplane/storage/acceptor_log, docs/protocol-otfp.md
// "Durability"): records are written as they come, synced only when something awaits them, and
// the ring's room is free once written. Needs DPDK's EAL for the writer's control thread; main()
// starts it without hugepages, devices or shared files.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <rte_eal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "dataplane/storage/acceptor_log.h"

using tob::dataplane::AcceptorLog;

namespace {

struct TempLog {
  std::string path;
  TempLog() {
    char tmpl[] = "/tmp/acceptor-log-test-XXXXXX";
    const int fd = mkstemp(tmpl);
    REQUIRE(fd >= 0);
    ::close(fd);
    ::unlink(tmpl);  // open() creates it
    path = tmpl;
  }
  ~TempLog() { ::unlink(path.c_str()); }
  off_t size() const {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 ? st.st_size : -1;
  }
};

std::unique_ptr<AcceptorLog> open_log(const std::string& path, bool sync) {
  std::vector<uint8_t> existing;
  auto r = AcceptorLog::open(path, sync, existing);
  REQUIRE(r);
  REQUIRE(existing.empty());
  auto log = std::move(r.value());
  REQUIRE(log->start());
  return log;
}

// Waits up to 5 s for `done` (the writer thread is asynchronous; a loaded machine is slow).
template <class Fn>
bool eventually(Fn&& done) {
  for (int i = 0; i < 5000; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return done();
}

}  // namespace

TEST_CASE("acceptor log: records nobody awaits are written but not synced; an awaited one syncs them all") {
  TempLog t;
  auto log = open_log(t.path, true);
  const std::vector<uint8_t> batch(1000, 0xab), vote(40, 0xcd);
  REQUIRE(log->append(batch, false));
  REQUIRE(log->append(batch, false));
  CHECK(eventually([&] { return t.size() == 2000; }));  // written to the file
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(log->durable() == 0);  // ... but never synced for themselves
  CHECK(log->syncs() == 0);
  REQUIRE(log->append(vote, true));  // a vote awaits: one sync makes everything before it durable
  CHECK(eventually([&] { return log->durable() == 2040; }));
  CHECK(log->syncs() >= 1);
  CHECK(log->awaited() == 2040);
  log->stop();
}

TEST_CASE("acceptor log: stop makes every record durable, awaited or not") {
  TempLog t;
  auto log = open_log(t.path, true);
  const std::vector<uint8_t> batch(300, 1);
  REQUIRE(log->append(batch, false));
  log->stop();
  CHECK(log->durable() == 300);
  CHECK(t.size() == 300);
}

TEST_CASE("acceptor log: without sync a record is durable once written") {
  TempLog t;
  auto log = open_log(t.path, false);
  const std::vector<uint8_t> batch(500, 2);
  REQUIRE(log->append(batch, false));
  CHECK(eventually([&] { return log->durable() == 500; }));
  CHECK(log->syncs() == 0);
  log->stop();
}

TEST_CASE("acceptor log: the ring's room is free once written, synced or not") {
  // More than the ring holds, in records nobody awaits: the writer frees room as it writes, so
  // the appender never finds the ring full for long.
  TempLog t;
  auto log = open_log(t.path, true);
  const std::vector<uint8_t> chunk(size_t{1} << 20, 3);
  const size_t chunks = AcceptorLog::kRingBytes / chunk.size() + 8;
  for (size_t i = 0; i < chunks; ++i) CHECK(eventually([&] { return log->append(chunk, false); }));
  CHECK(log->durable() == 0);
  log->stop();
  CHECK(log->durable() == chunks * chunk.size());
}

int main(int argc, char** argv) {
  const char* eal[] = {"acceptor-log-tests", "--no-huge", "--no-shconf", "--no-pci", "-l", "0",
                       "--log-level", "lib.*:error", "-m", "128"};
  if (rte_eal_init(static_cast<int>(sizeof eal / sizeof eal[0]), const_cast<char**>(eal)) < 0) {
    std::fprintf(stderr, "acceptor-log-tests: EAL initialisation failed\n");
    return 1;
  }
  const int rc = Catch::Session().run(argc, argv);
  rte_eal_cleanup();
  return rc;
}
