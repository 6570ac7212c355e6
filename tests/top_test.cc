// Integration test of `podrun top` on a real 3-worker testpod: a detached job (with restarts, so
// a keeper drives it) in which w1 prints one line and then sleeps, w0 prints a step five times a
// second and w2 the same while it burns a CPU. With the keeper SIGKILLed, `top --once --json`
// (and `status --json`) still show w0's and w2's steps advancing: the workers read them
// (docs/design.md decision 19). `top --once --json` gives every worker's state, pid, CPU, memory
// and silence, the silent w1 first with its last line; `top --once` into a pipe prints a row per
// worker; `top` without
// --once into a pipe prints a snapshot per second and exits 0 on Ctrl-C (SIGINT); a worker cut
// off the network is an "unreachable" row, first (exit 3); after `podrun stop`, top shows the
// workers stopped and nothing of the job is left running.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

#include "tests/run_command.h"
#include "tests/testpod.h"

namespace podrun::testing {
namespace {

constexpr int kWorkers = 3;
constexpr int kPodId = 25;
constexpr char kMarker[] = "podrun-top-test";

std::string Dir() { return ::testing::TempDir() + "/podrun-top-test"; }

std::string Podrun() { return "env PODRUN_HOME=" + Dir() + "/home " + std::string(PODRUN_BINARY); }

// The objects of `top --json`'s output, by worker; fails the test on a line that is not one.
std::map<int, nlohmann::json> ByWorker(const std::string& output, std::vector<int>* order) {
  std::map<int, nlohmann::json> objects;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    EXPECT_TRUE(j.is_object()) << line;
    if (!j.is_object()) continue;
    order->push_back(j["worker"].get<int>());
    objects[j["worker"].get<int>()] = j;
  }
  return objects;
}

TEST(TopTest, EveryWorkersUsageAndSilenceTheSilentFirst) {
  RunCommand("rm -rf " + Dir());
  std::filesystem::create_directories(Dir());
  TestPod pod(kWorkers, kPodId);
  const std::string spec = Dir() + "/top.yaml";
  std::ofstream(spec)
      << "name: toptest\nrestarts: 1\nrun: |\n"
         "  if [ $PODRUN_WORKER_ID = 1 ]; then\n"
         "    echo 'hello from 1'; exec -a "
      << kMarker
      << "-quiet sleep 600\n"
         "  fi\n"
         "  if [ $PODRUN_WORKER_ID = 2 ]; then (while :; do :; done) & fi\n"
         "  i=0\n"
         "  while :; do i=$((i+1)); echo \"tick from $PODRUN_WORKER_ID $i: step $i\"; "
         "sleep 0.2; done\n";
  const std::string launch = Podrun() + " launch " + spec + " -d --hosts @" + pod.host_file() +
                             " -i " + pod.identity() + " --known-hosts " + pod.known_hosts();
  CommandResult launched = RunCommand(launch);
  ASSERT_EQ(0, launched.exit_code) << launched.output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(launched.output, m, std::regex("job: ([0-9a-f-]+)")))
      << launched.output;
  const std::string job = m[1];
  EXPECT_TRUE(WaitUntil(
      [&] {
        const std::string logs = RunCommand(Podrun() + " logs " + job).output;
        return logs.find("[w1] hello from 1") != std::string::npos &&
               logs.find("[w0] tick from 0 5") != std::string::npos &&
               logs.find("[w2] tick from 2 5") != std::string::npos;
      },
      std::chrono::seconds(30)));

  // The keeper gone (SIGKILL: it records nothing more), the steps still advance in top and
  // status: the workers read them, and the launcher's record is refreshed from them.
  auto status_json = [&] {
    CommandResult r = RunCommand(Podrun() + " status " + job + " --json", /*merge_stderr=*/false);
    return nlohmann::json::parse(r.output, nullptr, /*allow_exceptions=*/false);
  };
  // The keeper drives the job (it has heartbeated since it started) before it is killed.
  nlohmann::json job_status;
  ASSERT_TRUE(WaitUntil(
      [&] {
        job_status = status_json();
        return job_status["keeper"]["state"] == "running" &&
               job_status["keeper"]["heartbeat"] != job_status["keeper"]["started"];
      },
      std::chrono::seconds(30)))
      << job_status.dump();
  ASSERT_EQ(0, ::kill(job_status["keeper"]["pid"].get<int>(), SIGKILL));
  ASSERT_TRUE(WaitUntil([&] { return status_json()["keeper"]["state"] == "gone"; },
                        std::chrono::seconds(10)))
      << status_json().dump();
  auto top_steps = [&](std::map<int, int64_t>* steps) {
    std::vector<int> ignored;
    CommandResult r =
        RunCommand(Podrun() + " top " + job + " --once --json", /*merge_stderr=*/false);
    for (auto& [worker, j] : ByWorker(r.output, &ignored)) {
      if (j["step"].is_number_integer()) (*steps)[worker] = j["step"].get<int64_t>();
    }
  };
  std::map<int, int64_t> first, later;
  top_steps(&first);
  ASSERT_TRUE(first.count(0) && first.count(2)) << "no steps in top";
  EXPECT_FALSE(first.count(1));  // w1 prints none
  EXPECT_TRUE(WaitUntil(
      [&] {
        later.clear();
        top_steps(&later);
        return later.count(0) && later.count(2) && later[0] > first[0] && later[2] > first[2];
      },
      std::chrono::seconds(20)))
      << "w0 at " << first[0] << " then " << later[0] << ", w2 at " << first[2] << " then "
      << later[2];
  job_status = status_json();
  ASSERT_EQ(job_status["workers"].size(), static_cast<size_t>(kWorkers)) << job_status.dump();
  ASSERT_TRUE(job_status["workers"][0]["step"].is_number_integer()) << job_status.dump();
  EXPECT_GE(job_status["workers"][0]["step"].get<int64_t>(), later[0]) << job_status.dump();
  std::this_thread::sleep_for(std::chrono::seconds(2));  // w1's silence grows

  CommandResult json = RunCommand(Podrun() + " top " + job + " --once --json",
                                  /*merge_stderr=*/false);
  EXPECT_EQ(0, json.exit_code) << json.output;
  std::vector<int> order;
  std::map<int, nlohmann::json> top = ByWorker(json.output, &order);
  ASSERT_EQ(top.size(), static_cast<size_t>(kWorkers)) << json.output;
  EXPECT_EQ(order.front(), 1) << json.output;  // silent longest: first
  for (auto& [worker, j] : top) {
    SCOPED_TRACE(j.dump());
    EXPECT_EQ(j["state"], "running");
    EXPECT_EQ(j["host"], pod.address(worker));
    EXPECT_GT(j["pid"].get<int>(), 0);
    EXPECT_GE(j["processes"].get<int>(), 1);
    EXPECT_GT(j["rss_bytes"].get<uint64_t>(), 0u);
    EXPECT_TRUE(j["cpu_percent"].is_number());
    EXPECT_TRUE(j["silent_seconds"].is_number());
    EXPECT_TRUE(j["output_bytes_per_second"].is_number());
    EXPECT_TRUE(j["accelerators"].is_array());
    EXPECT_TRUE(j["error"].is_null());
  }
  EXPECT_GE(top[1]["silent_seconds"].get<double>(), 2.0);
  EXPECT_LT(top[0]["silent_seconds"].get<double>(), 1.5);
  EXPECT_LT(top[2]["silent_seconds"].get<double>(), 1.5);
  EXPECT_EQ(top[1]["last_line"], "hello from 1");
  EXPECT_EQ(top[1]["processes"], 1);  // the sleep, exec'd in place of the shell
  EXPECT_EQ(top[1]["output_bytes"], 13);
  EXPECT_TRUE(std::regex_match(top[0]["last_line"].get<std::string>(),
                               std::regex("tick from 0 [0-9]+: step [0-9]+")))
      << top[0]["last_line"];
  EXPECT_GT(top[0]["output_bytes"].get<uint64_t>(), 13u * 5);
  // w2's busy loop shows; w1's sleep does not.
  EXPECT_GT(top[2]["cpu_percent"].get<double>(), 20.0);
  EXPECT_LT(top[1]["cpu_percent"].get<double>(), 5.0);
  EXPECT_GT(top[2]["cpu_seconds"].get<double>(), 0.5);

  // The table into a pipe: a heading, the column header and a row per worker, w1 first.
  CommandResult table = RunCommand(Podrun() + " top " + job + " --once", /*merge_stderr=*/false);
  EXPECT_EQ(0, table.exit_code) << table.output;
  std::istringstream lines(table.output);
  std::vector<std::string> rows;
  for (std::string line; std::getline(lines, line);) rows.push_back(line);
  ASSERT_EQ(rows.size(), 2u + kWorkers) << table.output;
  EXPECT_NE(rows[0].find(job), std::string::npos) << rows[0];
  EXPECT_EQ(rows[1].rfind("WORKER", 0), 0u) << rows[1];
  EXPECT_TRUE(std::regex_search(rows[2], std::regex("^w1 .* running .*hello from 1$"))) << rows[2];
  for (int i = 0; i < kWorkers; ++i) {
    const std::regex row("^w" + std::to_string(i) + "\\s+" + pod.address(i) +
                         "\\s+running\\s+[0-9]+\\s");
    EXPECT_EQ(1, std::count_if(rows.begin() + 2, rows.end(),
                               [&](const std::string& r) { return std::regex_search(r, row); }))
        << "w" << i << "\n"
        << table.output;
  }
  EXPECT_EQ(table.output.find('\x1b'), std::string::npos);  // plain: not a terminal

  // Live into a pipe: a snapshot per second until Ctrl-C, which ends it with 0.
  const std::string out = Dir() + "/live.out";
  const pid_t live = StartCommand(Podrun() + " top > " + out + " 2>&1");  // the latest job
  std::this_thread::sleep_for(std::chrono::milliseconds(3500));
  ::kill(live, SIGINT);
  int status = 0;
  ::waitpid(live, &status, 0);
  const std::string text = ReadTextFile(out);
  ASSERT_TRUE(WIFEXITED(status)) << text;
  EXPECT_EQ(0, WEXITSTATUS(status)) << text;
  size_t snapshots = 0;
  for (size_t at = text.find("\nWORKER"); at != std::string::npos;
       at = text.find("\nWORKER", at + 1)) {
    ++snapshots;
  }
  EXPECT_GE(snapshots, 2u) << text;
  EXPECT_LE(snapshots, 5u) << text;

  // A worker out of reach is a row of its own, first, with the error; --once then exits 3.
  pod.Cut(2);
  CommandResult cut = RunCommand(Podrun() + " top " + job + " --once --json",
                                 /*merge_stderr=*/false);
  pod.Heal(2);
  EXPECT_EQ(3, cut.exit_code) << cut.output;
  order.clear();
  top = ByWorker(cut.output, &order);
  ASSERT_EQ(top.size(), static_cast<size_t>(kWorkers)) << cut.output;
  EXPECT_EQ(order.front(), 2) << cut.output;
  EXPECT_EQ(top[2]["state"], "unreachable") << cut.output;
  EXPECT_TRUE(top[2]["error"].is_string() && !top[2]["error"].get<std::string>().empty())
      << cut.output;
  EXPECT_EQ(top[0]["state"], "running") << cut.output;

  // Stopped: nothing is left, and top still shows every worker, stopped.
  CommandResult stop = RunCommand(Podrun() + " stop " + job);
  EXPECT_EQ(0, stop.exit_code) << stop.output;
  // The job's processes on every worker of this pod.
  EXPECT_TRUE(WaitUntil([&] { return pod.CountProcesses(kMarker) == 0; }, std::chrono::seconds(30)))
      << pod.CountProcesses(kMarker) << " processes of the job left";
  CommandResult after = RunCommand(Podrun() + " top " + job + " --once --json",
                                   /*merge_stderr=*/false);
  EXPECT_EQ(0, after.exit_code) << after.output;
  order.clear();
  top = ByWorker(after.output, &order);
  ASSERT_EQ(top.size(), static_cast<size_t>(kWorkers)) << after.output;
  for (auto& [worker, j] : top) {
    EXPECT_EQ(j["state"], "stopped") << j.dump();
    EXPECT_TRUE(j["cpu_percent"].is_null()) << j.dump();
    EXPECT_TRUE(j["rss_bytes"].is_null()) << j.dump();
  }
  EXPECT_EQ(top[1]["last_line"], "hello from 1");
}

// Unknown jobs are a usage error (2), as for status.
TEST(TopTest, AnUnknownJobIsAUsageError) {
  std::filesystem::create_directories(Dir());
  CommandResult r = RunCommand(Podrun() + " top no-such-job --once");
  EXPECT_EQ(2, r.exit_code) << r.output;
}

}  // namespace
}  // namespace podrun::testing

namespace podrun::testing {
namespace {

// A job nobody follows (`launch -d` with no restarts and no pod.create: no keeper) still has its
// stragglers named by status and top: worked out from the workers' own step records.
TEST(TopTest, AStragglerOfAJobNobodyFollowsIsNamedByStatusAndTop) {
  const std::string home = Dir() + "/straggler-home";
  RunCommand("rm -rf " + home);
  std::filesystem::create_directories(Dir());  // podrun makes its home, private
  const std::string podrun = "env PODRUN_HOME=" + home + " " + std::string(PODRUN_BINARY);
  const std::string spec = Dir() + "/straggler.yaml";
  std::ofstream(spec) << "name: straggler\npod: {local: 3}\nstraggler_seconds: 2\n"
                         "straggler_ratio: 0.5\nrun: |\n"
                         "  pause=0.05; if [ $PODRUN_WORKER_ID = 2 ]; then pause=0.5; fi\n"
                         "  i=0\n"
                         "  while [ $i -lt 1200 ]; do i=$((i+1)); echo \"step $i\"; sleep $pause; "
                         "done\n";
  CommandResult launched = RunCommand(podrun + " launch " + spec + " -d");
  ASSERT_EQ(0, launched.exit_code) << launched.output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(launched.output, m, std::regex("job: ([0-9a-f-]+)")));
  const std::string job = m[1];
  nlohmann::json status;
  ASSERT_TRUE(WaitUntil(
      [&] {
        status = nlohmann::json::parse(
            RunCommand(podrun + " status " + job + " --json", false).output, nullptr, false);
        return status.is_object() && status["workers"].size() == 3 &&
               status["workers"][2]["straggler"].is_string();
      },
      std::chrono::seconds(30)))
      << status.dump();
  EXPECT_TRUE(status["keeper"].is_null()) << status.dump();  // nobody follows it
  EXPECT_TRUE(status["workers"][0]["straggler"].is_null()) << status.dump();
  EXPECT_TRUE(status["workers"][1]["straggler"].is_null()) << status.dump();
  const std::string table = RunCommand(podrun + " status " + job, false).output;
  EXPECT_NE(std::string::npos, table.find("straggler: ")) << table;
  RunCommand(podrun + " stop " + job + " --grace 1");
  KillLocalAgents(home);
}

}  // namespace
}  // namespace podrun::testing
