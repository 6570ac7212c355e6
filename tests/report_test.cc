// Integration tests of `podrun report`: a store written with synthetic records (two attempts, a
// preemption between them) reported as text, JSON and an HTML page that a headless Chromium lays
// out (each phase where its times put it, proportional to its duration) and screenshots; and the
// phases a real launch on --local workers records.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "launcher/store/job_store.h"
#include "launcher/store/recovery_records.h"
#include "launcher/store/run_records.h"
#include "tests/run_command.h"

namespace podrun::testing {
namespace {

namespace fs = std::filesystem;

constexpr int kWorkers = 3;
constexpr int64_t kS = 1'000'000'000;

class ReportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("podrun-report-test-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "home");
    fs::permissions(dir_ / "home", fs::perms::owner_all);
  }
  void TearDown() override {
    KillLocalAgents(Home());
    fs::remove_all(dir_);
  }

  std::string Home() const { return (dir_ / "home").string(); }
  std::string Podrun() const {
    return "env PODRUN_HOME=" + ShellQuote(Home()) + " PODRUN_AGENT=" + PODRUN_AGENT + " " +
           PODRUN_BINARY;
  }

  fs::path dir_;
};

// Seconds after the synthetic run's start, as wall-clock ns.
struct Clock {
  int64_t base = NowUnixNs() - 3600 * kS;
  int64_t operator()(double s) const { return base + static_cast<int64_t>(s * 1e9); }
};

// Two attempts of three workers, preempted after the first; returns the job id.
std::string WriteSyntheticRun(const fs::path& db, const Clock& t) {
  JobStore store(db);
  JobRecord job;
  job.name = "train<&>";
  job.pod = "tpu:node-1";
  for (int k = 0; k < kWorkers; ++k) {
    job.hosts.push_back({k, "u", "10.0.0." + std::to_string(k), 22, "10.0.0." + std::to_string(k)});
  }
  job = store.CreateJob(job);
  RunRecords records(store);
  const std::vector<int> workers = {0, 1, 2};

  const int a1 = store.AddAttempt(job.id, workers, AttemptReason::kLaunch, t(0));
  std::vector<PhaseRecord> phases;
  for (int k = 0; k < kWorkers; ++k) {
    phases.push_back({k, "agents", t(0), t(4 + k), false});
    phases.push_back({k, "sync", t(6), t(9 + 0.5 * k), false});
    phases.push_back({k, "mounts", t(10.5), t(12), false});
    phases.push_back({k, "setup", t(12), t(30 + 2 * k), false});
    phases.push_back({k, "start", t(34), t(36), false});
  }
  records.SetPhases(job.id, a1, phases);
  std::vector<WorkerProgress> progress;
  std::vector<StepSamplesUpdate> samples;
  for (int k = 0; k < kWorkers; ++k) {
    const double rate = k == 2 ? 0.4 : 1.0;  // w2 is a straggler
    StepSamplesUpdate u{.worker = k, .replace = true, .samples = {}};
    for (double s = 45 + k; s <= 250; s += 20) {
      u.samples.push_back({t(s), static_cast<int64_t>((s - 45 - k) * rate)});
    }
    u.samples.push_back({t(250), static_cast<int64_t>((250 - 45 - k) * rate)});
    progress.push_back({.worker = k,
                        .step = u.samples.back().step,
                        .step_ns = t(250),
                        .first_step_ns = t(45 + k),
                        .steps_per_s = rate,
                        .straggler = k == 2 ? std::optional<StragglerNote>(StragglerNote{0.4, 1.0})
                                            : std::nullopt});
    samples.push_back(std::move(u));
    store.UpdateWorker(job.id, a1, k,
                       {.state = WorkerState::kLost,
                        .start_ns = t(36),
                        .end_ns = t(300),
                        .error = "node-1 is PREEMPTED <script>alert(1)</script>"});
  }
  records.SaveProgress(job.id, a1, progress, samples);
  store.SetAttemptEnd(job.id, a1, AttemptEnd::kPreemption, "w0: lost: node-1 is PREEMPTED");
  store.SetAttemptState(job.id, a1, AttemptState::kFailed, 1, t(300));
  RecoveryRecords recovery(store);
  PreemptionRecord preemption;
  preemption.attempt = a1;
  preemption.node = "node-1";
  preemption.state = "PREEMPTED";
  preemption.seen_ns = t(300);
  preemption.recreated = true;
  const int64_t id = recovery.AddPreemption(job.id, preemption);
  recovery.SetPreemptionBack(id, t(420));

  const int a2 = store.AddAttempt(job.id, workers, AttemptReason::kRecoveryAfterPreemption, t(420));
  phases.clear();
  progress.clear();
  for (int k = 0; k < kWorkers; ++k) {
    phases.push_back({k, "agents", t(420), t(425), false});
    phases.push_back({k, "sync", t(425), t(428), false});
    phases.push_back({k, "setup", t(428), t(430), false});
    phases.push_back({k, "start", t(431), t(432), false});
    progress.push_back({.worker = k,
                        .step = 450,
                        .step_ns = t(890),
                        .first_step_ns = t(440),
                        .steps_per_s = 1.0,
                        .straggler = std::nullopt});
    store.UpdateWorker(
        job.id, a2, k,
        {.state = WorkerState::kExited, .exit_code = 0, .start_ns = t(432), .end_ns = t(900)});
  }
  records.SetPhases(job.id, a2, phases);
  records.SaveProgress(job.id, a2, progress, {});
  store.SetAttemptState(job.id, a2, AttemptState::kSucceeded, 0, t(900));
  return job.id;
}

// The headless browser: Debian's chromium.
std::string Chromium() {
  for (const char* path : {"/usr/bin/chromium", "/usr/bin/chromium-browser"}) {
    if (::access(path, X_OK) == 0) return path;
  }
  return "";
}

TEST_F(ReportTest, TextAndJsonOfASyntheticRun) {
  const Clock t;
  const std::string job = WriteSyntheticRun(dir_ / "home" / "podrun.db", t);

  CommandResult text = RunCommand(Podrun() + " report " + job, /*merge_stderr=*/false);
  ASSERT_EQ(0, text.exit_code) << text.output;
  EXPECT_NE(std::string::npos, text.output.find("attempt 1 (launch)")) << text.output;
  EXPECT_NE(std::string::npos, text.output.find("attempt 2 (recovery-after-preemption)"));
  EXPECT_NE(std::string::npos, text.output.find("goodput 72.8%")) << text.output;
  EXPECT_NE(std::string::npos, text.output.find("preemption 3m10s")) << text.output;
  EXPECT_NE(std::string::npos, text.output.find("recreating, READY after 2m00s")) << text.output;
  EXPECT_NE(std::string::npos, text.output.find("w2   agents 6.0 s")) << text.output;

  CommandResult json = RunCommand(Podrun() + " report " + job + " --json", false);
  ASSERT_EQ(0, json.exit_code) << json.output;
  const nlohmann::json report = nlohmann::json::parse(json.output);
  // Steps 45 → 250 (205 s) and 440 → 890 (450 s) of 900 s.
  EXPECT_NEAR(655.0 / 900.0, report["goodput"].get<double>(), 1e-9);
  EXPECT_DOUBLE_EQ(900.0, report["wall_s"].get<double>());
  EXPECT_DOUBLE_EQ(190.0, report["lost_s"]["preemption"].get<double>());
  EXPECT_DOUBLE_EQ(0.0, report["lost_s"]["failure"].get<double>());
  EXPECT_DOUBLE_EQ(45.0, report["startup_s"].get<double>());
  ASSERT_EQ(2u, report["attempts"].size());
  EXPECT_EQ("preemption", report["attempts"][0]["ended_by"]);
  EXPECT_EQ(5u, report["attempts"][0]["workers"][1]["phases"].size());
  EXPECT_EQ(12u, report["attempts"][0]["workers"][0]["samples"].size());
  EXPECT_EQ("recreating", report["recoveries"][0]["what"]);

  // An unknown job is bad usage; a page that cannot be written fails.
  EXPECT_EQ(2, RunCommand(Podrun() + " report no-such-job").exit_code);
  EXPECT_EQ(1,
            RunCommand(Podrun() + " report " + job + " --html " + (dir_ / "no/dir/x.html").string())
                .exit_code);
}

TEST_F(ReportTest, HtmlTimelineLaidOutByAHeadlessBrowser) {
  const std::string chromium = Chromium();
  if (chromium.empty()) {
    if (std::getenv("CI") == nullptr) GTEST_SKIP() << "chromium is not installed";
    FAIL() << "chromium is not installed (scripts/install-deps installs it)";
  }
  const Clock t;
  const std::string job = WriteSyntheticRun(dir_ / "home" / "podrun.db", t);
  const fs::path page = dir_ / "report.html";
  CommandResult r = RunCommand(Podrun() + " report " + job + " --html " + page.string());
  ASSERT_EQ(0, r.exit_code) << r.output;
  const std::string html = ReadTextFile(page.string());
  EXPECT_EQ(std::string::npos, html.find("<script>alert")) << "a store text reached the page raw";
  EXPECT_NE(std::string::npos, html.find("&lt;script&gt;alert(1)"));
  EXPECT_NE(std::string::npos, html.find("train&lt;&amp;&gt;"));
  for (const char* external : {"src=", "href=", "url(", "@import", "http:", "https:"}) {
    EXPECT_EQ(std::string::npos, html.find(external)) << "the page refers outside: " << external;
  }

  // Chromium runs the page's own script, which writes each element's box into <pre id=layout>.
  const std::string browser = chromium +
                              " --headless=new --no-sandbox --disable-gpu --no-first-run "
                              "--user-data-dir=" +
                              (dir_ / "profile").string() + " --window-size=1400,900 ";
  const std::string browser_log = (dir_ / "chromium.log").string();
  CommandResult dom =
      RunCommand(browser + "--dump-dom " + ShellQuote("file://" + page.string() + "?measure") +
                     " 2>" + browser_log,
                 /*merge_stderr=*/false);
  ASSERT_EQ(0, dom.exit_code) << ReadTextFile(browser_log);
  // Found with find, not std::regex: libstdc++'s regex recurses once a character, and the
  // layout's JSON is long enough to overflow the stack of an ASan build.
  const size_t pre = dom.output.find("<pre id=\"layout\"");
  ASSERT_NE(std::string::npos, pre) << dom.output.substr(0, 2000);
  const size_t open = dom.output.find('>', pre);
  const size_t close = dom.output.find("</pre>", pre);
  ASSERT_TRUE(open != std::string::npos && close != std::string::npos && open < close)
      << dom.output.substr(pre, 2000);
  const nlohmann::json layout =
      nlohmann::json::parse(dom.output.substr(open + 1, close - open - 1));
  // The whole run (0 → 900 s), then each attempt from its start to its workers' first steps.
  const std::map<std::string, std::pair<int64_t, int64_t>> axes = {
      {"timeline", {t(0), t(900)}}, {"attempt-1", {t(0), t(47)}}, {"attempt-2", {t(420), t(440)}}};
  auto ns = [](const nlohmann::json& v) -> int64_t { return std::stoll(v.get<std::string>()); };
  using Row = std::pair<std::string, int>;                      // timeline, worker
  std::map<Row, std::vector<std::pair<int64_t, double>>> rows;  // (start_ns, x) along a row
  std::map<Row, double> row_y;
  std::map<std::string, int> phases;  // per timeline
  for (const auto& e : layout["elements"]) {
    const std::string timeline = e["timeline"];
    const int worker = std::stoi(e["worker"].get<std::string>());
    const std::string phase = e["phase"];
    SCOPED_TRACE(timeline + ": w" + std::to_string(worker) + " attempt " +
                 e["attempt"].get<std::string>() + " " + phase);
    ASSERT_TRUE(axes.count(timeline));
    const auto [a0, a1] = axes.at(timeline);
    EXPECT_EQ(a0, ns(e["axis_start_ns"]));
    EXPECT_EQ(a1, ns(e["axis_end_ns"]));
    const double track_x = e["track_x"], track_width = e["track_width"];
    EXPECT_GT(track_width, 1000);  // the window is 1400 px wide
    // Where its times put it on the axis (cut at the axis's edges), at least a pixel wide.
    const int64_t start = std::clamp(ns(e["start_ns"]), a0, a1);
    const int64_t end = std::clamp(ns(e["end_ns"]), a0, a1);
    const double scale = track_width / static_cast<double>(a1 - a0);
    const double x = e["x"], width = e["width"], y = e["y"];
    EXPECT_NEAR(track_x + static_cast<double>(start - a0) * scale, x, 2.0);
    EXPECT_NEAR(std::max(1.0, static_cast<double>(end - start) * scale), width, 2.0);
    const Row row{timeline, worker};
    if (row_y.count(row)) {
      EXPECT_NEAR(row_y[row], y, 2.0);
    }
    row_y[row] = y;
    rows[row].emplace_back(ns(e["start_ns"]), x);
    if (phase == "agents" || phase == "sync" || phase == "mounts" || phase == "setup" ||
        phase == "start") {
      ++phases[timeline];
    }
  }
  EXPECT_EQ(kWorkers * (5 + 4), phases["timeline"]);
  EXPECT_EQ(kWorkers * 5, phases["attempt-1"]);
  EXPECT_EQ(kWorkers * 4, phases["attempt-2"]);
  // In time order along each row; a row per worker, top to bottom.
  for (auto& [row, elements] : rows) {
    std::sort(elements.begin(), elements.end());
    for (size_t i = 1; i < elements.size(); ++i) {
      EXPECT_LE(elements[i - 1].second, elements[i].second + 0.5)
          << row.first << " w" << row.second;
    }
  }
  ASSERT_EQ(static_cast<size_t>(3 * kWorkers), row_y.size());
  for (const auto& [timeline, axis] : axes) {
    EXPECT_LT(row_y[Row(timeline, 0)], row_y[Row(timeline, 1)]) << timeline;
    EXPECT_LT(row_y[Row(timeline, 1)], row_y[Row(timeline, 2)]) << timeline;
  }

  const fs::path png = dir_ / "report.png";
  CommandResult shot = RunCommand(browser + "--screenshot=" + png.string() + " " +
                                  ShellQuote("file://" + page.string()));
  ASSERT_EQ(0, shot.exit_code) << shot.output;
  ASSERT_TRUE(fs::exists(png)) << shot.output;
  EXPECT_GT(fs::file_size(png), 10000u);
  EXPECT_EQ("\x89PNG", ReadTextFile(png.string()).substr(0, 4));
}

TEST_F(ReportTest, PhasesOfARealLaunch) {
  fs::create_directories(dir_ / "code");
  std::ofstream(dir_ / "code" / "train.sh") << "echo training\n";
  const fs::path spec = dir_ / "real.yaml";
  std::ofstream(spec) << "name: report-real\nsync: code\nsetup: \"true\"\nrun: |\n"
                         "  for i in 1 2 3; do echo \"step $i\"; sleep 0.1; done\n";
  CommandResult launch = RunCommand(Podrun() + " launch " + spec.string() + " --local 2");
  ASSERT_EQ(0, launch.exit_code) << launch.output;

  CommandResult json = RunCommand(Podrun() + " report --json", /*merge_stderr=*/false);
  ASSERT_EQ(0, json.exit_code) << json.output;
  const nlohmann::json report = nlohmann::json::parse(json.output);
  ASSERT_EQ(1u, report["attempts"].size());
  const auto& workers = report["attempts"][0]["workers"];
  ASSERT_EQ(2u, workers.size());
  for (const auto& w : workers) {
    std::vector<std::string> names;
    int64_t previous_start = 0;
    for (const auto& p : w["phases"]) {
      names.push_back(p["phase"]);
      EXPECT_FALSE(p["failed"].get<bool>());
      const int64_t start = p["start_ns"], end = p["end_ns"];
      EXPECT_LE(start, end);
      EXPECT_LE(previous_start, start);
      previous_start = start;
    }
    // No mounts in the spec: no mounts phase.
    EXPECT_EQ((std::vector<std::string>{"agents", "sync", "setup", "start"}), names) << w.dump();
    EXPECT_EQ("exited", w["end"]["state"]);
  }
  CommandResult text = RunCommand(Podrun() + " report report-real", false);
  ASSERT_EQ(0, text.exit_code) << text.output;
  EXPECT_NE(std::string::npos, text.output.find("w1   agents")) << text.output;
  EXPECT_NE(std::string::npos, text.output.find("exited 0")) << text.output;
}

// A worker whose setup fails is marked failed in its setup phase; nothing starts anywhere, so
// there is no start phase.
TEST_F(ReportTest, AFailedSetupIsRecordedAsFailedInItsPhase) {
  const fs::path spec = dir_ / "bad-setup.yaml";
  std::ofstream(spec) << "name: report-bad-setup\n"
                         "setup: 'if [ \"$PODRUN_WORKER_ID\" = 1 ]; then exit 3; fi'\n"
                         "run: echo never\n";
  CommandResult launch = RunCommand(Podrun() + " launch " + spec.string() + " --local 2");
  ASSERT_EQ(3, launch.exit_code) << launch.output;

  CommandResult json = RunCommand(Podrun() + " report report-bad-setup --json", false);
  ASSERT_EQ(0, json.exit_code) << json.output;
  const nlohmann::json report = nlohmann::json::parse(json.output);
  const auto& workers = report["attempts"][0]["workers"];
  ASSERT_EQ(2u, workers.size());
  for (int k = 0; k < 2; ++k) {
    std::map<std::string, bool> failed;
    for (const auto& p : workers[k]["phases"]) failed[p["phase"]] = p["failed"];
    EXPECT_EQ((std::map<std::string, bool>{{"agents", false}, {"setup", k == 1}}), failed)
        << workers[k].dump();
  }
  EXPECT_EQ("start_failed", report["attempts"][0]["state"]);
  EXPECT_EQ("failure", report["attempts"][0]["lost_to"]);
  EXPECT_TRUE(report["goodput"].is_null());
  CommandResult text = RunCommand(Podrun() + " report report-bad-setup", false);
  EXPECT_NE(std::string::npos, text.output.find("setup ")) << text.output;
  EXPECT_NE(std::string::npos, text.output.find("(failed)")) << text.output;
}

}  // namespace
}  // namespace podrun::testing
