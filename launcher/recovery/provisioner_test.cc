// Tests of the provisioning engine (Provisioner over a TPU node's PodSource) with an injected
// gcloud (tests/fake-gcloud in a temporary state directory; no pod needed) and a clock its `wait`
// moves on instead of sleeping: stockouts waited out until capacity_wait, a node stuck in CREATING
// deleted and created again, and a queued resource podrun created never left behind when the wait
// fails or is given up.
#include "launcher/recovery/provisioner.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "launcher/base/error.h"
#include "proto/run_program.h"

namespace podrun {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;

const PodSourceRef kNode{PodSourceKind::kTpuNode, {"node-1", "zone-a", std::nullopt}};

class ProvisionerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("tpu-provisioner-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "home");
    fs::permissions(dir_ / "home", fs::perms::owner_all);  // podrun keeps its state private
    ::setenv("PODRUN_GCLOUD", (fs::path(PODRUN_SOURCE_DIR) / "tests/fake-gcloud").c_str(), 1);
    ::setenv("FAKE_GCLOUD_STATE", dir_.c_str(), 1);
    ::setenv("PODRUN_HOME", (dir_ / "home").c_str(), 1);
    Configure({});
  }
  void TearDown() override {
    ::unsetenv("PODRUN_GCLOUD");
    ::unsetenv("FAKE_GCLOUD_STATE");
    ::unsetenv("PODRUN_HOME");
    fs::remove_all(dir_);
  }

  // fake-gcloud's config: 4 addresses, nodes READY at once, plus `extra`.
  void Configure(const nlohmann::json& extra) {
    nlohmann::json config = {{"pool", {"10.9.0.1", "10.9.0.2", "10.9.0.3", "10.9.0.4"}},
                             {"create_seconds", 0},
                             {"queue_seconds", 0},
                             {"delete_seconds", 0}};
    if (extra.is_object()) config.update(extra);
    std::ofstream(dir_ / "config.json") << config.dump();
  }

  // A provisioner of node-1 in zone-a whose waits move clock_ on (never sleep) and are recorded;
  // the wait numbered `give_up_at` (1-based) is given up (Ctrl-C). With `real_time` its clock
  // also moves as the real one does (gcloud's calls take time).
  std::unique_ptr<Provisioner> Make(const TpuCreate& create, ProvisionerOptions options = {},
                                    int give_up_at = 0, bool real_time = false) {
    options.on_wait = [this](const std::string& what) { told_.push_back(what); };
    const auto began = std::chrono::steady_clock::now();
    options.clock = [this, began, real_time] {
      return real_time ? clock_ + (std::chrono::steady_clock::now() - began) : clock_;
    };
    options.first_capacity_backoff = seconds(30);
    return MakeProvisioner(
        kNode, create, dir_ / "home" / "cache", seconds(10),
        [this, give_up_at](std::chrono::milliseconds ms) {
          if (ms == ms.zero()) return true;  // "given up already?" before a create: no
          waits_.push_back(ms);
          clock_ += ms;
          return static_cast<int>(waits_.size()) != give_up_at;
        },
        std::move(options));
  }

  // How many gcloud calls of `verb` ("create", "delete") calls.log holds.
  int Calls(const std::string& verb) const {
    std::ifstream log(dir_ / "calls.log");
    int n = 0;
    for (std::string line; std::getline(log, line);) {
      nlohmann::json argv = nlohmann::json::parse(line);
      if (argv.size() > 3 && argv[3] == verb) ++n;
    }
    return n;
  }
  nlohmann::json State() const {
    ProgramResult r = RunProgram(
        {(fs::path(PODRUN_SOURCE_DIR) / "tests/fake-gcloud").string(), "--admin", "state"});
    EXPECT_EQ(0, r.exit_code) << r.err;
    return nlohmann::json::parse(r.out);
  }
  static std::string Joined(const std::vector<std::string>& lines) {
    std::string out;
    for (const std::string& l : lines) out += l + "\n";
    return out;
  }

  fs::path dir_;
  std::chrono::steady_clock::time_point clock_{};
  std::vector<std::chrono::milliseconds> waits_;
  std::vector<std::string> told_;
  const TpuCreate spot_{.accelerator_type = "v4-16", .version = "base", .spot = true};
};

TEST_F(ProvisionerTest, AStockoutTwiceIsWaitedOutThenTheNodeIsCreated) {
  Configure({{"capacity_failures", 2}});
  TpuCreate create = spot_;
  create.capacity_wait = "6h";
  SliceReady ready = Make(create)->Ensure();
  EXPECT_EQ(SliceAction::kCreated, ready.action);
  EXPECT_EQ("READY", ready.state.state);
  EXPECT_EQ(3, Calls("create"));
  // Backing off: 30 s, then twice that.
  ASSERT_EQ(2u, waits_.size());
  EXPECT_EQ(seconds(30), waits_[0]);
  EXPECT_EQ(seconds(60), waits_[1]);
  ASSERT_GE(told_.size(), 2u) << Joined(told_);
  EXPECT_EQ(
      "tpu node-1: no capacity in zone-a (RESOURCE_EXHAUSTED): trying again in 30s "
      "(waited 0s of 6h)",
      told_[0]);
  EXPECT_EQ(
      "tpu node-1: no capacity in zone-a (RESOURCE_EXHAUSTED): trying again in 1m "
      "(waited 30s of 6h)",
      told_[1]);
}

TEST_F(ProvisionerTest, PastCapacityWaitTheStockoutIsNamedWithTheTimeWaited) {
  Configure({{"capacity_failures", 100}});
  TpuCreate create = spot_;
  create.capacity_wait = "1m";
  try {
    Make(create)->Ensure();
    FAIL() << "created despite the stockout";
  } catch (const Error& e) {
    EXPECT_EQ(ExitCode::kUnreachable, e.code());
    const std::string what = e.what();
    EXPECT_NE(std::string::npos, what.find("no capacity in zone-a: gave up after waiting 1m "
                                           "(capacity_wait: 1m"))
        << what;
    EXPECT_NE(std::string::npos, what.find("There is no more capacity in the zone")) << what;
  }
  // 0 s, 30 s (the second wait cut to the deadline), 60 s: three tries.
  EXPECT_EQ(3, Calls("create"));
  EXPECT_EQ(0u, State()["nodes"].size());
}

TEST_F(ProvisionerTest, CapacityWaitZeroAndQuotaErrorsFailAtOnce) {
  Configure({{"capacity_failures", 1}});
  TpuCreate create = spot_;
  create.capacity_wait = "0";
  EXPECT_THROW(Make(create)->Ensure(), Error);
  EXPECT_EQ(1, Calls("create"));
  // A quota is not raised by waiting: gcloud's words, at once, whatever capacity_wait says.
  Configure({{"create_error",
              "ERROR: (gcloud.compute.tpus.tpu-vm.create) RESOURCE_EXHAUSTED: Quota "
              "'TPUV4sPreemptiblePodPerProjectPerZoneForTPUAPI' exhausted."}});
  try {
    Make(spot_)->Ensure();
    FAIL() << "created despite the quota";
  } catch (const Error& e) {
    EXPECT_NE(std::string::npos, std::string(e.what()).find("Quota")) << e.what();
  }
  EXPECT_EQ(2, Calls("create"));
  EXPECT_TRUE(waits_.empty());
}

TEST_F(ProvisionerTest, CtrlCWhileQueuedDeletesTheQueuedResourceItCreated) {
  Configure({{"queue_seconds", 100000}});
  TpuCreate queued = spot_;
  queued.queued = true;
  try {
    Make(queued, {}, /*give_up_at=*/2)->Ensure();
    FAIL() << "the queued resource was never waited for";
  } catch (const Error& e) {
    EXPECT_EQ(ExitCode::kInterrupted, e.code());
    EXPECT_NE(std::string::npos, std::string(e.what()).find("tpu node-1 (zone zone-a) deleted"))
        << e.what();
  }
  EXPECT_EQ(0u, State()["qrs"].size()) << State().dump();
  EXPECT_EQ(1, Calls("delete"));
}

TEST_F(ProvisionerTest, KeepQueuedKeepsTheQueuedResourceAfterCtrlC) {
  Configure({{"queue_seconds", 100000}});
  TpuCreate queued = spot_;
  queued.queued = true;
  EXPECT_THROW(Make(queued, {.keep_queued = true}, /*give_up_at=*/2)->Ensure(), Error);
  EXPECT_EQ(1u, State()["qrs"].size()) << State().dump();
  EXPECT_EQ(0, Calls("delete"));
}

TEST_F(ProvisionerTest, AQueuedResourceThatExpiresIsDeleted) {
  Configure({{"queue_seconds", 100000}});
  TpuCreate queued = spot_;
  queued.queued = true;
  queued.valid_until = "1s";
  std::unique_ptr<Provisioner> provisioner = MakeProvisioner(
      kNode, queued, dir_ / "home" / "cache", seconds(1),
      [](std::chrono::milliseconds) {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the expiry is real time
        return true;
      },
      {});
  try {
    provisioner->Ensure();
    FAIL() << "an expired queued resource became READY";
  } catch (const Error& e) {
    EXPECT_EQ(ExitCode::kUnreachable, e.code());
    EXPECT_NE(std::string::npos, std::string(e.what()).find("is FAILED")) << e.what();
  }
  EXPECT_EQ(0u, State()["qrs"].size()) << State().dump();
}

TEST_F(ProvisionerTest, ANodeStuckInCreatingIsDeletedAndCreatedAgain) {
  Configure({{"stuck_creating", 1}});
  ProvisionerOptions options;
  options.creating_deadline = seconds(60);
  SliceReady ready = Make(spot_, options)->Ensure();
  EXPECT_EQ("READY", ready.state.state);
  EXPECT_EQ(2, Calls("create"));
  EXPECT_EQ(1, Calls("delete"));
  EXPECT_NE(std::string::npos, Joined(told_).find("still CREATING after 1m")) << Joined(told_);
}

TEST_F(ProvisionerTest, ANodeThatNeverLeavesCreatingIsGivenUpAndDeleted) {
  Configure({{"stuck_creating", -1}});
  ProvisionerOptions options;
  options.creating_deadline = seconds(60);
  try {
    Make(spot_, options)->Ensure();
    FAIL() << "a stuck node became READY";
  } catch (const Error& e) {
    EXPECT_EQ(ExitCode::kUnreachable, e.code());
    EXPECT_NE(std::string::npos, std::string(e.what()).find("never left CREATING")) << e.what();
  }
  EXPECT_EQ(kStuckCreateRetries + 1, Calls("create"));
  EXPECT_EQ(0u, State()["nodes"].size()) << State().dump();
}

// A slice being made is polled every poll interval from one question's start to the next: the
// time gcloud took is not waited again (each is a second or more of start-up), and at least a
// quarter of the interval is left between two.
TEST_F(ProvisionerTest, PollsBeginAPollIntervalApartWhateverGcloudTakes) {
  Configure({{"stuck_creating", -1}});
  try {
    Make(spot_, {}, /*give_up_at=*/2, /*real_time=*/true)->Ensure();
    FAIL() << "a stuck node became READY";
  } catch (const Error& e) {
    EXPECT_EQ(ExitCode::kInterrupted, e.code()) << e.what();
  }
  ASSERT_EQ(2u, waits_.size());
  for (const std::chrono::milliseconds wait : waits_) {
    EXPECT_LT(wait, seconds(10));  // the poll interval less what the question took
    EXPECT_GE(wait, std::chrono::milliseconds(2500));
  }
}

// Zone failover (create.fallback_zones): a stockout in the slice's own zone moves on to the
// next zone at once; the slice lives where it was made.
TEST_F(ProvisionerTest, AStockoutInTheOwnZoneMovesToTheNextZoneAtOnce) {
  Configure({{"stockout_zones", {"zone-a"}}});
  TpuCreate create = spot_;
  create.fallback_zones = {"zone-b", "zone-c"};
  SliceReady ready = Make(create)->Ensure();
  EXPECT_EQ(SliceAction::kCreated, ready.action);
  EXPECT_EQ("zone-b", ready.where.query.zone);
  EXPECT_EQ("READY", ready.state.state);
  EXPECT_EQ(2, Calls("create"));
  EXPECT_TRUE(waits_.empty()) << "no backoff before zone-b";
  ASSERT_EQ(1u, State()["nodes"].size()) << State().dump();
  EXPECT_EQ("zone-b", State()["nodes"].begin().value()["zone"]) << State().dump();
  EXPECT_NE(std::string::npos, Joined(told_).find("no capacity in zone-a: trying zone-b at once"))
      << Joined(told_);
}

TEST_F(ProvisionerTest, ASliceInAFallbackZoneIsFoundThereAndDeletedThere) {
  Configure({{"stockout_zones", {"zone-a"}}});
  TpuCreate create = spot_;
  create.fallback_zones = {"zone-b"};
  ASSERT_EQ("zone-b", Make(create)->Ensure().where.query.zone);
  // A second Ensure (the next launch, `up` again) finds it where it lives: nothing created.
  Configure({});
  SliceReady again = Make(create)->Ensure();
  EXPECT_EQ(SliceAction::kExisted, again.action);
  EXPECT_EQ("zone-b", again.where.query.zone);
  EXPECT_EQ(2, Calls("create"));
  // `down` deletes it wherever it lives.
  EXPECT_TRUE(Make(create)->Delete());
  EXPECT_EQ(0u, State()["nodes"].size()) << State().dump();
  EXPECT_FALSE(Make(create)->Delete());
}

TEST_F(ProvisionerTest, ARecreationStartsAgainWithTheOwnZone) {
  Configure({{"stockout_zones", {"zone-a"}}});
  TpuCreate create = spot_;
  create.fallback_zones = {"zone-b"};
  ASSERT_EQ("zone-b", Make(create)->Ensure().where.query.zone);
  Configure({});  // capacity is back in zone-a
  SliceReady ready = Make(create)->Recreate();
  EXPECT_EQ(SliceAction::kRecreated, ready.action);
  EXPECT_EQ("zone-a", ready.where.query.zone);
  ASSERT_EQ(1u, State()["nodes"].size()) << State().dump();
  EXPECT_EQ("zone-a", State()["nodes"].begin().value()["zone"]) << State().dump();
}

TEST_F(ProvisionerTest, EveryZoneShortIsWaitedOutCyclingFromTheOwnZoneThenGivenUp) {
  Configure({{"stockout_zones", {"zone-a", "zone-b"}}});
  TpuCreate create = spot_;
  create.fallback_zones = {"zone-b"};
  create.capacity_wait = "1m";
  try {
    Make(create)->Ensure();
    FAIL() << "created despite the stockouts";
  } catch (const Error& e) {
    EXPECT_EQ(ExitCode::kUnreachable, e.code());
    EXPECT_NE(std::string::npos,
              std::string(e.what()).find("no capacity in zone-a, zone-b: gave up after waiting 1m"))
        << e.what();
  }
  // Both zones at once, then 30 s, both again, then 30 s (cut to the limit), both again.
  EXPECT_EQ(6, Calls("create"));
  ASSERT_EQ(2u, waits_.size());
  EXPECT_EQ(seconds(30), waits_[0]);
  EXPECT_EQ(seconds(30), waits_[1]);
  EXPECT_NE(std::string::npos, Joined(told_).find("trying again in 30s with zone-a"))
      << Joined(told_);
  EXPECT_EQ(0u, State()["nodes"].size()) << State().dump();
}

TEST_F(ProvisionerTest, ANodeOfAnotherTypeIsNeverReplaced) {
  TpuCreate other = spot_;
  other.accelerator_type = "v4-32";
  Make(other)->Ensure();
  try {
    Make(spot_)->Ensure();
    FAIL() << "a v4-32 node was taken for a v4-16";
  } catch (const Error& e) {
    EXPECT_EQ(ExitCode::kUsage, e.code());
    EXPECT_NE(std::string::npos, std::string(e.what()).find("exists as v4-32")) << e.what();
  }
  EXPECT_EQ(1, Calls("create"));
  EXPECT_EQ(0, Calls("delete"));
}

}  // namespace
}  // namespace podrun
