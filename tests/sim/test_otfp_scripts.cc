// The otfp scenario files (tests/sim/testdata/otfp/*.txt, docs/simulator.md "Scenario files"):
// each one runs over real engines and must pass. And the interpreter must fail what is wrong:
// an expectation that does not hold, a step it does not know, a scenario that breaks an
// invariant (it says on which line).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "sim/otfp_script.h"
#include "sim_test_util.h"

using namespace tob::sim;

namespace {

std::string read(const std::filesystem::path& p) { return test::read_file(p); }
std::vector<std::filesystem::path> scenario_files() { return test::scenario_files(TOB_OTFP_TESTDATA); }

constexpr const char* kCluster = "cluster nodes=4 kappa=2\nrun to 6\nsubmit 1\nrun to 10\n";

}  // namespace

TEST_CASE("every otfp scenario file passes over the real engine") {
  const auto files = scenario_files();
  REQUIRE(files.size() >= 6);
  for (const auto& f : files) {
    DYNAMIC_SECTION(f.filename().string()) {
      const ScriptResult r = run_otfp_script(read(f));
      INFO(f.string() << ":" << r.line << ": " << r.message << "\n" << r.output);
      CHECK(r.ok);
      CHECK(r.expectations >= 5);  // a scenario says what it expects
    }
  }
}

TEST_CASE("the otfp scenario interpreter fails an expectation that does not hold, on its line") {
  const ScriptResult good = run_otfp_script(std::string(kCluster) + "expect decided 6 on=all value=1\n");
  INFO(good.message);
  CHECK(good.ok);
  const ScriptResult wrong_value = run_otfp_script(std::string(kCluster) + "expect decided 6 on=all value=0,1\n");
  CHECK_FALSE(wrong_value.ok);
  CHECK(wrong_value.line == 5);
  CHECK(wrong_value.message.find("decided instance 6 as 1, not 0,1") != std::string::npos);
  CHECK_FALSE(run_otfp_script(std::string(kCluster) + "expect undecided 6 on=2\n").ok);
  CHECK_FALSE(run_otfp_script(std::string(kCluster) + "expect decided 9 on=0\n").ok);  // not yet
  CHECK_FALSE(run_otfp_script(std::string(kCluster) + "expect voted 6 on=0 value=none\n").ok);
  CHECK_FALSE(run_otfp_script(std::string(kCluster) + "expect coordinator 1 on=0\n").ok);
  CHECK_FALSE(run_otfp_script(std::string(kCluster) + "expect delivered on=0 message=1/1\n").ok);
  CHECK_FALSE(run_otfp_script(std::string(kCluster) + "expect delivered on=0 count=2\n").ok);
  CHECK_FALSE(run_otfp_script(std::string(kCluster) + "expect activating on=0\n").ok);
  CHECK_FALSE(run_otfp_script(std::string(kCluster) + "crash 2\nexpect decided 6 on=2\n").ok);  // down
}

TEST_CASE("the otfp scenario interpreter refuses steps it does not know and bad arguments") {
  const char* bad[] = {
      "run 3\n",                                       // no cluster first
      "cluster nodes=2\n",                             // too small
      "cluster nodes=4 colour=blue\n",
      "cluster nodes=4 heard=0\n",                    // timeouts are 1..100 cycles
      "cluster nodes=4 recovery=fast\n",
      "cluster nodes=4\nfly 3\n",
      "cluster nodes=4\nrun to 5\nrun to 3\n",         // time does not go back
      "cluster nodes=4\ndrop 1-2\n",
      "cluster nodes=4\ndrop 1->9\n",
      "cluster nodes=4\ndrop 1->2 only=nothing\n",
      "cluster nodes=4\ncrash 1\ncrash 1\n",
      "cluster nodes=4\nrestart 1\n",                  // it is up
      "cluster nodes=4\nsync 1 maybe\n",
      "cluster nodes=4\nexpect decided x on=0\n",
      "cluster nodes=4\nexpect decided 3\n",           // on= missing
      "",                                              // empty
  };
  for (const char* text : bad) {
    INFO(text);
    const ScriptResult r = run_otfp_script(text);
    CHECK_FALSE(r.ok);
    CHECK_FALSE(r.message.empty());
  }
}

TEST_CASE("the otfp scenario interpreter checks durability: a vote leaves only once durable, never holding a frame") {
  // Node 3 is down: instance 6 needs all of 0, 1 and 2. Node 2 fixes its vote for instance 6 as
  // cycle 8 starts; its log held from before then, its slots of cycles 8 and 9 go out without the
  // vote (no frame waits: 0 frames waiting) and nobody decides, not even node 2 itself. Synced,
  // the vote leaves in its next slot.
  const std::string text = std::string("cluster nodes=4 kappa=2\nrun to 6\nsubmit 1\ncrash 3\nrun to 7\n") +
                           "sync 2 hold\nrun to 9.3\n" +
                           "expect voted 6 on=0-2 value=1\nexpect undecided 6 on=0-2\nshow 2\n" +
                           "sync 2 now\nrun to 10.1\nexpect undecided 6 on=0,1\nrun to 10.3\n" +
                           "expect decided 6 on=0-2 value=1\n";
  const ScriptResult r = run_otfp_script(text, true);
  INFO(r.line << ": " << r.message << "\n" << r.output);
  CHECK(r.ok);
  CHECK(r.output.find("0 frames waiting") != std::string::npos);
}
