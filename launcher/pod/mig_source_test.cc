// Tests of a MIG slice as a pod source against a stand-in gcloud (a shell script that answers
// each kind of command from files and logs what it was asked): what a stopped VM means by the
// group's repair policy; a failed create deletes only what it made.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "launcher/pod/cloud_api_access.h"
#include "launcher/pod/gcloud_run.h"
#include "launcher/pod/mig_gcloud.h"
#include "launcher/pod/mig_parts.h"
#include "launcher/pod/pod_source.h"

namespace podrun {
namespace {

class MigSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("mig-source-test-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ / "answers");
    // Each command is a key (list, group-describe, template-create, ...); its answer is
    // answers/KEY.N.{out,err,rc} for its Nth call when there is one, else answers/KEY.{out,err,rc}
    // (and KEY.sleep: seconds it takes first).
    const std::filesystem::path gcloud = dir_ / "gcloud";
    std::ofstream(gcloud) << "#!/bin/sh\n"
                          << "d='" << (dir_ / "answers").string() << "'\n"
                          << R"sh(echo "$*" >> "$d/calls"
case "$*" in
  *"instance-groups managed list-instances"*) k=list ;;
  *"instance-groups managed describe"*) k=group-describe ;;
  *"instance-groups managed resize-requests create"*) k=resize ;;
  *"instance-groups managed create"*) k=group-create ;;
  *"instance-groups managed delete"*) k=group-delete ;;
  *"instance-templates describe"*) k=template-describe ;;
  *"instance-templates create"*) k=template-create ;;
  *"instance-templates delete"*) k=template-delete ;;
  *"resource-policies describe"*) k=policy-describe ;;
  *"resource-policies create"*) k=policy-create ;;
  *"resource-policies delete"*) k=policy-delete ;;
  *"instances list"*) k=instances ;;
  *) k=other ;;
esac
n=$(( $(cat "$d/$k.n" 2>/dev/null || echo 0) + 1 )); echo $n > "$d/$k.n"
f="$d/$k"; ls "$d/$k.$n".* >/dev/null 2>&1 && f="$d/$k.$n"
[ -f "$f.sleep" ] && sleep "$(cat "$f.sleep")"
[ -f "$f.err" ] && cat "$f.err" >&2
[ -f "$f.out" ] && cat "$f.out"
exit $(cat "$f.rc" 2>/dev/null || echo 0)
)sh";
    ::chmod(gcloud.c_str(), 0700);
    ::setenv("PODRUN_GCLOUD", gcloud.c_str(), 1);
    ::unsetenv("PODRUN_GCLOUD_TIMEOUT_SECONDS");
    source_ = MakePodSource({PodSourceKind::kMig, query_}, dir_ / "cache");
    ForgetMigParts(query_);    // what an earlier test's creates remembered
    ForgetGcloudApiAccess();  // this stand-in gcloud has no config-helper: gcloud does the reads
  }
  void TearDown() override {
    ::unsetenv("PODRUN_GCLOUD");
    std::filesystem::remove_all(dir_);
  }

  // The answer of `key`'s calls (or of its `nth` call only).
  void Answer(const std::string& key, const std::string& out, int rc = 0,
              const std::string& err = "", int nth = 0) {
    const std::string base =
        (dir_ / "answers" / key).string() + (nth > 0 ? "." + std::to_string(nth) : std::string());
    std::ofstream(base + ".out") << out;
    std::ofstream(base + ".err") << err;
    std::ofstream(base + ".rc") << rc;
  }
  // gcloud's NOT_FOUND for `key`'s calls (or its `nth` call only).
  void NotFound(const std::string& key, int nth = 0) {
    Answer(key, "", 1,
           "ERROR: (gcloud.compute) Could not fetch resource:\n - The resource "
           "'projects/p/x/y' was not found\n",
           nth);
  }
  // No answer and no call so far; nothing remembered of the parts (another process) unless
  // `same_process`.
  void Fresh(bool same_process = false) {
    std::filesystem::remove_all(dir_ / "answers");
    std::filesystem::create_directories(dir_ / "answers");
    if (!same_process) ForgetMigParts(query_);
  }
  // The commands gcloud was asked, one a line.
  std::vector<std::string> Calls() const {
    std::ifstream in(dir_ / "answers" / "calls");
    std::vector<std::string> out;
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  }
  // How many of the calls hold `words`.
  size_t CallsWith(const std::string& words) const {
    size_t n = 0;
    for (const std::string& call : Calls()) n += call.find(words) != std::string::npos;
    return n;
  }

  // The workload policy and the template exist: made by podrun for this group before.
  void PartsExist() {
    Answer("policy-describe", PolicyJson());
    Answer("template-describe", TemplateJson());
  }
  // Neither exists: this create makes them.
  void PartsMissing() {
    NotFound("policy-describe");
    NotFound("template-describe");
    Answer("policy-create", PolicyJson());
    Answer("template-create", "[" + TemplateJson() + "]");
  }
  // As podrun makes them now for Spot(), or with the description `description`.
  std::string PolicyJson(const std::string& description = "") const {
    return R"({"name": "slice-1-podrun", "description": ")" +
           (description.empty() ? "podrun: workload policy of MIG slice-1 (settings " +
                                      MigPolicyDigest(query_, Spot()) + ")"
                                : description) +
           R"(", "selfLink": "https://www.googleapis.com/compute/v1/projects/proj-1/regions/)"
           R"(us-central1/resourcePolicies/slice-1-podrun"})";
  }
  std::string TemplateJson(const std::string& description = "") const {
    return R"({"name": "slice-1-podrun", "description": ")" +
           (description.empty() ? "podrun: instance template of MIG slice-1 (settings " +
                                      MigTemplateDigest(Spot()) + ")"
                                : description) +
           R"("})";
  }
  static TpuCreate Spot() {
    TpuCreate c;
    c.machine_type = "tpu7x-standard-4t";
    c.topology = "2x2x4";
    c.image_family = "fam";
    c.image_project = "img";
    c.provisioning = "spot";
    return c;
  }

  static std::string Instances(const std::string& status, const std::string& action) {
    return R"([{"name": "slice-1-a", "instanceStatus": "RUNNING", "currentAction": "NONE"},
               {"name": "slice-1-b", "instanceStatus": ")" +
           status + R"(", "currentAction": ")" + action + R"("}])";
  }

  std::filesystem::path dir_;
  SliceRef query_{"slice-1", "us-central1-a", std::string("proj-1")};
  std::unique_ptr<PodSource> source_;
};

// A Spot slice's group leaves a preempted VM TERMINATED (do-nothing on failure): only a
// recreation brings the slice back. A standard or flex-start slice's group repairs it: the
// slice is busy, never deleted for it.
TEST_F(MigSourceTest, ATerminatedVmIsPreemptedOnlyWhereTheGroupDoesNotRepairIt) {
  Answer("list", Instances("TERMINATED", "NONE"));
  Answer("group-describe",
         R"({"name": "slice-1", "instanceLifecyclePolicy": {"defaultActionOnFailure": "REPAIR"}})");
  SourceNow now = source_->Now();
  EXPECT_EQ(SourceCondition::kBusy, now.condition) << now.why;
  EXPECT_EQ("repairing", now.state);
  EXPECT_NE(std::string::npos, now.why.find("slice-1-b is TERMINATED")) << now.why;
  // A group that does not say (Compute Engine's default) repairs too; the answer is kept.
  Answer("group-describe", R"({"name": "slice-1"})");
  EXPECT_EQ(SourceCondition::kBusy, source_->Now().condition);
  EXPECT_EQ(1u, CallsWith("instance-groups managed describe"));

  const std::unique_ptr<PodSource> spot = MakePodSource({PodSourceKind::kMig, query_}, dir_);
  Answer("group-describe", R"({"name": "slice-1", "instanceLifecyclePolicy":
                                {"defaultActionOnFailure": "DO_NOTHING"}})");
  now = spot->Now();
  EXPECT_EQ(SourceCondition::kPreempted, now.condition) << now.why;
  EXPECT_EQ("TERMINATED", now.state);

  // Gone between the two calls: gone.
  const std::unique_ptr<PodSource> gone = MakePodSource({PodSourceKind::kMig, query_}, dir_);
  NotFound("group-describe");
  EXPECT_EQ(SourceCondition::kGone, gone->Now().condition);

  // A VM the group is acting on asks nothing more.
  const size_t asked = CallsWith("instance-groups managed describe");
  Answer("list", Instances("STOPPING", "RECREATING"));
  EXPECT_EQ(SourceCondition::kBusy, gone->Now().condition);
  EXPECT_EQ(asked, CallsWith("instance-groups managed describe"));
}

// Two drivers (or `up` beside a launch) make one slice: the second create finds the group made.
// It is waited for as this call's own, and never deleted by it.
TEST_F(MigSourceTest, AGroupAnotherPodrunMadeIsWaitedForNeverDeleted) {
  PartsExist();
  Answer("group-create", "", 1,
         "ERROR: (gcloud.compute.instance-groups.managed.create) Could not fetch resource:\n - "
         "The resource 'projects/proj-1/zones/us-central1-a/instanceGroupManagers/slice-1' already "
         "exists\n");
  Answer("group-describe", R"({"name": "slice-1"})");
  EXPECT_NO_THROW(source_->Create(Spot()));
  EXPECT_EQ(1u, CallsWith("instance-groups managed describe slice-1"));
  EXPECT_EQ(0u, CallsWith(" delete ")) << ::testing::PrintToString(Calls());
  // Gone again by the time it is described: the create's error stands, and still nothing of
  // another's is deleted.
  NotFound("group-describe");
  EXPECT_THROW(source_->Create(Spot()), GcloudError);
  EXPECT_EQ(0u, CallsWith(" delete ")) << ::testing::PrintToString(Calls());
}

// A failed create deletes what it made (here the policy and the template), not a group it did
// not make, nor parts it found made.
TEST_F(MigSourceTest, AFailedCreateDeletesOnlyWhatItMade) {
  PartsMissing();
  Answer("group-create", "", 1,
         "ERROR: (gcloud.compute.instance-groups.managed.create) PERMISSION_DENIED: no\n");
  EXPECT_THROW(source_->Create(Spot()), GcloudError);
  EXPECT_EQ(0u, CallsWith("instance-groups managed delete"));
  EXPECT_EQ(1u, CallsWith("instance-templates delete slice-1-podrun"));
  EXPECT_EQ(1u, CallsWith("resource-policies delete slice-1-podrun"));

  Fresh();
  PartsExist();  // reused: not this call's
  Answer("group-create", "", 1,
         "ERROR: (gcloud.compute.instance-groups.managed.create) PERMISSION_DENIED: no\n");
  EXPECT_THROW(source_->Create(Spot()), GcloudError);
  EXPECT_EQ(0u, CallsWith(" delete ")) << ::testing::PrintToString(Calls());

  // A group create stopped at its deadline may have reached the API: that group is deleted.
  Fresh();
  PartsExist();
  Answer("group-create", "");
  std::ofstream(dir_ / "answers" / "group-create.sleep") << "30";
  ::setenv("PODRUN_GCLOUD_TIMEOUT_SECONDS", "2", 1);
  try {
    source_->Create(Spot());
    ADD_FAILURE() << "a create past its deadline returned";
  } catch (const GcloudError& e) {
    EXPECT_EQ(GcloudFailure::kTimedOut, e.failure()) << e.what();
  }
  ::unsetenv("PODRUN_GCLOUD_TIMEOUT_SECONDS");
  EXPECT_EQ(1u, CallsWith("instance-groups managed delete slice-1"))
      << ::testing::PrintToString(Calls());
}

// A template or policy podrun made for this group is reused while its settings are the spec's;
// made with others (a changed image_family, or by an older podrun, which wrote no digest) it is
// made again, so that the change reaches the new VMs; one podrun made for another group (two
// long names shortened alike) is never taken.
TEST_F(MigSourceTest, APartMadeWithOtherSettingsIsMadeAgain) {
  PartsExist();
  source_->Create(Spot());
  EXPECT_EQ(0u, CallsWith(" delete ")) << ::testing::PrintToString(Calls());
  EXPECT_EQ(0u, CallsWith("instance-templates create"));

  Fresh();
  PartsExist();
  Answer("template-create", "[" + TemplateJson() + "]");
  TpuCreate changed = Spot();
  changed.image_family = "tpu-vm-v2";
  source_->Create(changed);
  EXPECT_EQ(1u, CallsWith("instance-templates delete slice-1-podrun"));
  EXPECT_EQ(1u, CallsWith("instance-templates create slice-1-podrun --machine-type="
                          "tpu7x-standard-4t --image-family=tpu-vm-v2"));
  EXPECT_EQ(0u, CallsWith("resource-policies delete"));  // the policy's settings are the same

  Fresh();
  PartsExist();
  Answer("policy-describe", PolicyJson("podrun: workload policy of MIG slice-1"));
  Answer("policy-create", PolicyJson());
  source_->Create(Spot());
  EXPECT_EQ(1u, CallsWith("resource-policies delete slice-1-podrun"));
  EXPECT_EQ(1u, CallsWith("resource-policies create workload-policy slice-1-podrun"));
  EXPECT_EQ(0u, CallsWith("instance-templates delete"));

  Fresh();
  PartsExist();
  Answer(
      "template-describe",
      TemplateJson("podrun: instance template of MIG slice-1-other (settings 0123456789abcdef)"));
  try {
    source_->Create(Spot());
    ADD_FAILURE() << "another group's template was taken";
  } catch (const Error& e) {
    EXPECT_EQ(ExitCode::kUsage, e.code());
    EXPECT_NE(std::string::npos, std::string(e.what()).find("podrun made for MIG slice-1-other"))
        << e.what();
  }
  EXPECT_EQ(0u, CallsWith(" delete ")) << ::testing::PrintToString(Calls());
}

// A keeper remaking the group asks about its template and policy once: a second create in the
// same process with the same settings goes straight to the group. When one of them was deleted
// since (the group's create says NOT_FOUND), they are asked about and made again, once.
TEST_F(MigSourceTest, PartsCheckedOnceAreNotAskedAboutAgainUnlessOneWasDeleted) {
  PartsExist();
  source_->Create(Spot());
  EXPECT_EQ(1u, CallsWith("resource-policies describe"));
  EXPECT_EQ(1u, CallsWith("instance-templates describe"));

  Fresh(/*same_process=*/true);
  source_->Create(Spot());
  EXPECT_EQ(0u, CallsWith(" describe ")) << ::testing::PrintToString(Calls());
  EXPECT_EQ(1u, CallsWith("instance-groups managed create slice-1"));

  Fresh(/*same_process=*/true);  // the template was deleted meanwhile
  NotFound("group-create", 1);
  Answer("policy-describe", PolicyJson());
  NotFound("template-describe");
  Answer("template-create", "[" + TemplateJson() + "]");
  EXPECT_NO_THROW(source_->Create(Spot()));
  EXPECT_EQ(2u, CallsWith("instance-groups managed create slice-1"));
  EXPECT_EQ(1u, CallsWith("instance-templates create slice-1-podrun"));
  EXPECT_EQ(0u, CallsWith(" delete ")) << ::testing::PrintToString(Calls());

  // Another settings' digest is asked about; a NOT_FOUND with nothing remembered is the error.
  Fresh();
  PartsExist();
  NotFound("group-create");
  EXPECT_THROW(source_->Create(Spot()), GcloudError);
  EXPECT_EQ(1u, CallsWith("instance-groups managed create slice-1"));
  TpuCreate changed = Spot();
  changed.image_family = "tpu-vm-v2";
  Fresh(/*same_process=*/true);
  PartsExist();
  Answer("template-create", "[" + TemplateJson() + "]");
  source_->Create(changed);
  EXPECT_EQ(1u, CallsWith("instance-templates describe"));
}

// The cached answer is written whole (a scratch file of its own, renamed) and private.
TEST_F(MigSourceTest, TheCacheIsWrittenWholeAndPrivate) {
  Answer("list", Instances("RUNNING", "NONE"));
  Answer("instances", R"([
    {"name": "slice-1-a", "status": "RUNNING", "networkInterfaces": [{"networkIP": "10.0.0.1"}],
     "metadata": {"items": [{"key": "agent-worker-number", "value": "0"}]}},
    {"name": "slice-1-b", "status": "RUNNING", "networkInterfaces": [{"networkIP": "10.0.0.2"}],
     "metadata": {"items": [{"key": "agent-worker-number", "value": "1"}]}}])");
  const SourceState state = source_->Describe(/*refresh=*/true, nullptr);
  ASSERT_EQ("", state.not_ready);
  ASSERT_EQ(2u, state.workers.size());
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir_ / "cache")) files.push_back(e);
  ASSERT_EQ(1u, files.size()) << ::testing::PrintToString(files);
  EXPECT_EQ(std::filesystem::perms::owner_read | std::filesystem::perms::owner_write,
            std::filesystem::status(files[0]).permissions());
  bool cached = false;
  EXPECT_EQ("10.0.0.2", source_->Describe(/*refresh=*/false, &cached).workers[1].internal_ip);
  EXPECT_TRUE(cached);
}

}  // namespace
}  // namespace podrun
