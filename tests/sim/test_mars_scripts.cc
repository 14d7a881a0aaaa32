// The mars scenario files (tests/sim/testdata/mars/*.txt, docs/simulator.md "Scenario files"):
// each one runs over real engines and must pass. And the interpreter must fail what is wrong:
// an expectation that does not hold, a step it does not know (it says on which line).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "sim/mars_script.h"
#include "sim_test_util.h"

using namespace tob::sim;

namespace {

std::string read(const std::filesystem::path& p) { return test::read_file(p); }
std::vector<std::filesystem::path> scenario_files() { return test::scenario_files(TOB_MARS_TESTDATA); }

// Nodes start together: listen in cycle 0, announce in 1, the membership forms in cycle 2.
constexpr const char* kCluster = "mars nodes=4 cycles=20\n";

}  // namespace

TEST_CASE("every mars scenario file passes over the real engine") {
  const auto files = scenario_files();
  REQUIRE(!files.empty());
  for (const auto& f : files) {
    DYNAMIC_SECTION(f.filename().string()) {
      const std::string text = read(f);
      CHECK(is_mars_script(text));
      const ScriptResult r = run_mars_script(text);
      INFO(f.string() << ":" << r.line << ": " << r.message << "\n" << r.output);
      CHECK(r.ok);
      CHECK(r.expectations >= 3);  // a scenario says what it expects
    }
  }
}

TEST_CASE("the mars scenario interpreter fails an expectation that does not hold, on its line") {
  const ScriptResult good = run_mars_script(std::string(kCluster) + "expect event on=0 membership-created node=0 cycle=2\n" +
                                            "expect event on=all admitted node=3 cycle=2\nexpect formed members=all by=2\n");
  INFO(good.message);
  CHECK(good.ok);
  CHECK(good.expectations == 3);
  const ScriptResult wrong = run_mars_script(std::string(kCluster) + "expect event on=1 membership-created node=1 cycle=2\n");
  CHECK_FALSE(wrong.ok);
  CHECK(wrong.line == 2);
  CHECK(wrong.message.find("node 1 records no membership-created of node 1 in cycle 2") != std::string::npos);
  // Node 2 is down from cycle 10 on: the membership of all never holds at the end.
  const ScriptResult down = run_mars_script(std::string(kCluster) + "crash 2 cycle=10\nexpect formed members=all by=5\n");
  CHECK_FALSE(down.ok);
  CHECK(down.message.find("never formed") != std::string::npos);
  // Node 2 misses two frames in cycle 10: it shuts down and is back by cycle 14, not by 11.
  const std::string omission = std::string(kCluster) + "receive-omission 2 from=0 cycle=10\nreceive-omission 2 from=1 cycle=10\n";
  const ScriptResult late = run_mars_script(omission + "expect formed members=all by=11\n");
  CHECK_FALSE(late.ok);
  CHECK(late.message.find("not by cycle 11") != std::string::npos);
  const ScriptResult back = run_mars_script(omission + "expect event on=2 self-shutdown node=2 reason=receiver-omission cycle=10\n" +
                                            "expect formed members=all by=14\n");
  INFO(back.message);
  CHECK(back.ok);
}

TEST_CASE("the mars scenario interpreter refuses steps it does not know and bad arguments") {
  const char* bad[] = {
      "link-down 0->1 cycle=3\n",                          // no cluster first
      "mars nodes=2\n",                                    // too small
      "mars nodes=4 colour=blue\n",
      "mars nodes=4\nfly 3\n",
      "mars nodes=4\nlink-down 1-2 cycle=3\n",
      "mars nodes=4\nlink-down 1->9 cycle=3\n",
      "mars nodes=4 cycles=20\nsend-omission 1 cycle=30\n",  // after the run
      "mars nodes=4\nreceive-omission 1 cycle=3\n",        // from= missing
      "mars nodes=4\nexpect event on=0 cycle=2\n",         // no kind
      "mars nodes=4\nexpect formed by=3\n",                // members= missing
      "mars nodes=4\nexpect nothing\n",
      "",                                                  // empty
  };
  for (const char* text : bad) {
    INFO(text);
    const ScriptResult r = run_mars_script(text);
    CHECK_FALSE(r.ok);
    CHECK_FALSE(r.message.empty());
  }
}
