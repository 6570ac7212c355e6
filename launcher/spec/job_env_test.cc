// Tests of the run process's environment: every contract variable, precedence, secrets, `-e`.
#include "launcher/spec/job_env.h"

#include <gtest/gtest.h>

#include "launcher/base/error.h"

namespace podrun {
namespace {

JobEnvParams FourWorkers(int index) {
  JobEnvParams p;
  p.job_id = "20240102-030405-abcd";
  p.attempt = 2;
  p.worker_index = index;
  p.worker_addresses = {"10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5"};
  p.coordinator_port = 8476;
  return p;
}

TEST(JobEnv, EveryContractVariable) {
  JobEnv env = BuildJobEnv(FourWorkers(2));
  const std::map<std::string, std::string> expected = {
      {"PODRUN_JOB_ID", "20240102-030405-abcd"},
      {"PODRUN_ATTEMPT", "2"},
      {"PODRUN_WORKER_ID", "2"},
      {"PODRUN_NUM_WORKERS", "4"},
      {"PODRUN_WORKER_HOSTS", "10.0.0.2,10.0.0.3,10.0.0.4,10.0.0.5"},
      {"PODRUN_COORDINATOR", "10.0.0.2:8476"},
      {"MASTER_ADDR", "10.0.0.2"},
      {"MASTER_PORT", "8476"},
      {"RANK", "2"},
      {"WORLD_SIZE", "4"},
      {"LOCAL_RANK", "0"},
      {"LOCAL_WORLD_SIZE", "1"},
      {"JAX_COORDINATOR_ADDRESS", "10.0.0.2:8476"},
      {"JAX_NUM_PROCESSES", "4"},
      {"JAX_PROCESS_ID", "2"},
      {"TPU_WORKER_ID", "2"},
      {"TPU_WORKER_HOSTNAMES", "10.0.0.2,10.0.0.3,10.0.0.4,10.0.0.5"},
      {"SKYPILOT_NODE_RANK", "2"},
      {"SKYPILOT_NUM_NODES", "4"},
      {"SKYPILOT_NODE_IPS", "10.0.0.2\n10.0.0.3\n10.0.0.4\n10.0.0.5"},
  };
  EXPECT_EQ(expected, env.vars);
  EXPECT_TRUE(env.secret_names.empty());
}

TEST(JobEnv, CoordinatorPortAndWorkerZero) {
  JobEnvParams p = FourWorkers(0);
  p.coordinator_port = 9000;
  p.attempt = 1;
  JobEnv env = BuildJobEnv(p);
  EXPECT_EQ("10.0.0.2:9000", env.vars["PODRUN_COORDINATOR"]);
  EXPECT_EQ("10.0.0.2:9000", env.vars["JAX_COORDINATOR_ADDRESS"]);
  EXPECT_EQ("9000", env.vars["MASTER_PORT"]);
  EXPECT_EQ("0", env.vars["RANK"]);
  EXPECT_EQ("1", env.vars["PODRUN_ATTEMPT"]);
  EXPECT_EQ(0u, env.vars.count("PODRUN_RESUMED_FROM"));  // a first attempt resumes nothing
}

TEST(JobEnv, ALaterAttemptSaysWhyItRuns) {
  JobEnvParams p = FourWorkers(0);
  p.attempt = 3;
  p.resumed_from = "preemption";
  p.overrides = {};
  JobEnv env = BuildJobEnv(p);
  EXPECT_EQ("3", env.vars["PODRUN_ATTEMPT"]);
  EXPECT_EQ("preemption", env.vars["PODRUN_RESUMED_FROM"]);
}

TEST(JobEnv, Ipv6CoordinatorIsBracketed) {
  JobEnvParams p = FourWorkers(1);
  p.worker_addresses = {"fd00::2", "fd00::3"};
  JobEnv env = BuildJobEnv(p);
  EXPECT_EQ("[fd00::2]:8476", env.vars["PODRUN_COORDINATOR"]);
  EXPECT_EQ("fd00::2", env.vars["MASTER_ADDR"]);
}

TEST(JobEnv, CloudTpuLeavesTpuVariablesToTheRuntime) {
  JobEnvParams p = FourWorkers(1);
  p.discovered_cloud_tpu = true;
  JobEnv env = BuildJobEnv(p);
  EXPECT_EQ(0u, env.vars.count("TPU_WORKER_ID"));
  EXPECT_EQ(0u, env.vars.count("TPU_WORKER_HOSTNAMES"));
  EXPECT_EQ("1", env.vars["RANK"]);
}

TEST(JobEnv, MultisliceGetsTheMegascaleVariables) {
  JobEnvParams p = FourWorkers(3);
  p.discovered_cloud_tpu = true;
  p.worker_slices = {0, 0, 1, 1};  // two nodes of two workers
  p.megascale_port = 9000;
  JobEnv env = BuildJobEnv(p);
  EXPECT_EQ("10.0.0.2:9000", env.vars["MEGASCALE_COORDINATOR_ADDRESS"]);
  EXPECT_EQ("9000", env.vars["MEGASCALE_PORT"]);
  EXPECT_EQ("2", env.vars["MEGASCALE_NUM_SLICES"]);
  EXPECT_EQ("1", env.vars["MEGASCALE_SLICE_ID"]);
  // Ranks and the JAX variables span every slice.
  EXPECT_EQ("3", env.vars["JAX_PROCESS_ID"]);
  EXPECT_EQ("4", env.vars["JAX_NUM_PROCESSES"]);
  // One slice: no MEGASCALE variables at all.
  p.worker_slices = {0, 0, 0, 0};
  EXPECT_EQ(0u, BuildJobEnv(p).vars.count("MEGASCALE_SLICE_ID"));
  p.worker_slices = {};
  EXPECT_EQ(0u, BuildJobEnv(p).vars.count("MEGASCALE_PORT"));
}

TEST(JobEnv, WholePodEvenWhenOneWorkerIsSelected) {
  // The caller builds worker 3's environment alone (--workers 3): counts describe the pod.
  JobEnv env = BuildJobEnv(FourWorkers(3));
  EXPECT_EQ("4", env.vars["WORLD_SIZE"]);
  EXPECT_EQ("3", env.vars["PODRUN_WORKER_ID"]);
}

TEST(JobEnv, Precedence) {
  JobEnvParams p = FourWorkers(1);
  p.spec_env = {{"A", "spec"}, {"B", "spec"}, {"MASTER_ADDR", "eth1-addr"}};
  p.overrides = {{"B", "cli"}, {"C", "cli"}};
  JobEnv env = BuildJobEnv(p);
  EXPECT_EQ("spec", env.vars["A"]);
  EXPECT_EQ("cli", env.vars["B"]);
  EXPECT_EQ("cli", env.vars["C"]);
  EXPECT_EQ("eth1-addr", env.vars["MASTER_ADDR"]);  // the user may override framework vars
  // ... but never podrun's own, even when a caller slips one in.
  p.overrides = {{"PODRUN_WORKER_ID", "7"}, {"PODRUN_OTHER", "x"}};
  env = BuildJobEnv(p);
  EXPECT_EQ("1", env.vars["PODRUN_WORKER_ID"]);
  EXPECT_EQ(0u, env.vars.count("PODRUN_OTHER"));
}

TEST(JobEnv, SecretsAreMarked) {
  JobEnvParams p = FourWorkers(0);
  p.spec_env = {{"PROJECT", "bert"}};
  p.secrets = ReadSecrets({"WANDB_API_KEY"}, [](const std::string& name) {
    return name == "WANDB_API_KEY" ? std::optional<std::string>("s3cret") : std::nullopt;
  });
  p.overrides = {{"EPOCHS", "3"}};
  JobEnv env = BuildJobEnv(p);
  EXPECT_EQ("s3cret", env.vars["WANDB_API_KEY"]);
  EXPECT_EQ(std::set<std::string>{"WANDB_API_KEY"}, env.secret_names);
  EXPECT_EQ("bert", env.vars["PROJECT"]);
  EXPECT_EQ(0u, env.secret_names.count("PROJECT"));
}

TEST(JobEnv, MissingSecretIsAUsageErrorNamingIt) {
  try {
    ReadSecrets({"PRESENT", "GONE_1", "GONE_2"}, [](const std::string& name) {
      return name == "PRESENT" ? std::optional<std::string>("") : std::nullopt;
    });
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(ExitCode::kUsage, e.code());
    EXPECT_STREQ("secret_env: GONE_1, GONE_2 are not set in the launcher's environment", e.what());
  }
  setenv("PODRUN_JOB_ENV_TEST_SECRET", "from-env", 1);
  EXPECT_EQ("from-env", ReadSecrets({"PODRUN_JOB_ENV_TEST_SECRET"})["PODRUN_JOB_ENV_TEST_SECRET"]);
}

TEST(JobEnv, OverridingASecretWithDashEIsAnError) {
  JobEnvParams p = FourWorkers(0);
  p.secrets = {{"TOKEN", "t"}};
  p.overrides = {{"TOKEN", "other"}};
  EXPECT_THROW(BuildJobEnv(p), Error);
}

TEST(JobEnv, BadWorkerIndex) {
  EXPECT_THROW(BuildJobEnv(FourWorkers(4)), Error);
  EXPECT_THROW(BuildJobEnv(FourWorkers(-1)), Error);
  JobEnvParams empty = FourWorkers(0);
  empty.worker_addresses.clear();
  EXPECT_THROW(BuildJobEnv(empty), Error);
}

TEST(JobEnv, ParseEnvAssignments) {
  EXPECT_EQ((std::pair<std::string, std::string>{"A", "b=c"}), ParseEnvAssignment("A=b=c"));
  EXPECT_EQ((std::pair<std::string, std::string>{"_X1", ""}), ParseEnvAssignment("_X1="));
  auto all = ParseEnvAssignments({"A=1", "B=2", "A=3"});
  EXPECT_EQ((std::map<std::string, std::string>{{"A", "3"}, {"B", "2"}}), all);
  for (const char* bad : {"NOVALUE", "=x", "1A=x", "A-B=x", "PODRUN_JOB_ID=x"}) {
    try {
      ParseEnvAssignment(bad);
      ADD_FAILURE() << "no error for " << bad;
    } catch (const Error& e) {
      EXPECT_EQ(ExitCode::kUsage, e.code()) << bad;
    }
  }
  try {
    ParseEnvAssignment("BAD-NAME=hunter2");
  } catch (const Error& e) {
    EXPECT_EQ(std::string::npos, std::string(e.what()).find("hunter2")) << e.what();
  }
}

}  // namespace
}  // namespace podrun
