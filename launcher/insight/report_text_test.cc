#include "launcher/insight/report_text.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "launcher/insight/report_html.h"
#include "launcher/insight/report_json.h"

namespace podrun {
namespace {

constexpr int64_t S(double seconds) { return static_cast<int64_t>(seconds * 1e9); }

// One attempt of `n` workers: worker k's setup takes 4 + k/10 s; the last one is lost.
RunTimeline SampleRun(int n) {
  RunTimeline run;
  run.job_id = "20261126-000000-abcd";
  run.job_name = "train";
  run.pod = "hosts:" + std::to_string(n);
  run.now_ns = S(1000);
  AttemptTimeline a;
  a.number = 1;
  a.started_ns = S(0);
  a.ended_ns = S(200);
  a.state = AttemptState::kFailed;
  a.ended_by = AttemptEnd::kFailure;
  a.cause = "w" + std::to_string(n - 1) + ": lost";
  for (int k = 0; k < n; ++k) {
    WorkerTimeline w;
    w.worker = k;
    w.phases = {{"agents", S(0), S(1.2), false}, {"setup", S(1.2), S(5.2 + k / 10.0), false}};
    w.start_ns = S(5.2 + k / 10.0);
    w.first_step_ns = S(10);
    w.last_step_ns = S(190);
    w.last_step = 180;
    w.state = k + 1 == n ? WorkerState::kLost : WorkerState::kExited;
    w.exit_code = k + 1 == n ? std::nullopt : std::optional<int>(0);
    w.error = k + 1 == n ? "node-1 is PREEMPTED\nmore" : "";
    if (k == 3) w.straggler = StragglerNote{0.41, 0.93};
    a.workers.push_back(w);
  }
  run.attempts.push_back(a);
  return run;
}

int Lines(const std::string& text) {
  return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

TEST(ReportTextTest, OneLinePerWorkerWhenFew) {
  const RunTimeline run = SampleRun(3);
  const std::string text = FormatReportText(run, AccountRun(run));
  EXPECT_NE(std::string::npos, text.find("attempt 1 (launch), started ")) << text;
  EXPECT_NE(std::string::npos, text.find(": 3m20s, failed: w2: lost\n")) << text;
  EXPECT_NE(
      std::string::npos,
      text.find("  w1   agents 1.2 s · setup 4.1 s · first step +4.7 s · steps 3m00s (to step "
                "180) · exited 0\n"))
      << text;
  // Only the first line of an error.
  EXPECT_NE(std::string::npos, text.find("lost: node-1 is PREEMPTED\n")) << text;
  EXPECT_NE(std::string::npos, text.find("goodput 90.0% (steps 3m00s of 3m20s")) << text;
  EXPECT_NE(std::string::npos, text.find("failure 10.0 s")) << text;
  EXPECT_NE(std::string::npos,
            text.find("startup 10.0 s: agents 1.2 s · setup 4.2 s · first step 4.6 s\n"))
      << text;
}

TEST(ReportTextTest, ManyWorkersAreSummarised) {
  const RunTimeline run = SampleRun(200);
  const RunAccount account = AccountRun(run);
  const std::string text = FormatReportText(run, account);
  EXPECT_LT(Lines(text), 15) << text;
  EXPECT_NE(std::string::npos,
            text.find("  200 workers (median, slowest): agents 1.2 s · setup 14.0 s (w199 23.9 s) "
                      "· first step +0.0 s (w0 +4.8 s) · steps 3m00s\n"))
      << text;
  EXPECT_NE(std::string::npos, text.find("  w0-198: exited 0\n")) << text;
  EXPECT_NE(std::string::npos, text.find("  w199: lost: node-1 is PREEMPTED\n")) << text;
  EXPECT_NE(std::string::npos, text.find("  stragglers: w3 (0.41 steps/s vs median 0.93)\n"))
      << text;
  const std::string all = FormatReportText(run, account, {.every_worker = true});
  EXPECT_GT(Lines(all), 200);
}

TEST(ReportTextTest, StoreTextIsEscapedInHtmlAndJsonKeepsIt) {
  RunTimeline run = SampleRun(2);
  run.job_name = "<img src=x onerror=alert(1)>";
  run.attempts[0].workers[1].error = "\"quoted\" & <b>";
  const RunAccount account = AccountRun(run);
  const std::string html = FormatReportHtml(run, account);
  EXPECT_EQ(std::string::npos, html.find("<img")) << html;
  EXPECT_EQ(std::string::npos, html.find("& <b>"));
  EXPECT_NE(std::string::npos, html.find("&quot;quoted&quot; &amp; &lt;b&gt;"));
  const nlohmann::json json = ReportJson(run, account);
  EXPECT_EQ("\"quoted\" & <b>", json["attempts"][0]["workers"][1]["end"]["error"]);
  EXPECT_DOUBLE_EQ(0.9, json["goodput"].get<double>());
  EXPECT_DOUBLE_EQ(10.0, json["lost_s"]["failure"].get<double>());
}

TEST(ReportTextTest, TheFirstLinesOfAHangReport) {
  RunTimeline run = SampleRun(2);
  std::string report;
  for (int i = 0; i < 30; ++i) report += "line " + std::to_string(i) + "\n";
  run.attempts[0].hang_report = HangReportRecord{.made_ns = S(150), .text = report, .json = "{}"};
  const std::string text = FormatReportText(run, AccountRun(run));
  EXPECT_NE(std::string::npos, text.find("  hang report, made ")) << text;
  EXPECT_NE(std::string::npos,
            text.find("    line 11\n    ... (all of it: podrun report --json)\n"))
      << text;
  EXPECT_EQ(std::string::npos, text.find("line 12")) << text;
  const nlohmann::json json = ReportJson(run, AccountRun(run));
  EXPECT_EQ(report, json["attempts"][0]["hang_report"]["text"]);
}

TEST(ReportTextTest, Durations) {
  EXPECT_EQ("0.0 s", ReportDuration(0));
  EXPECT_EQ("40 ms", ReportDuration(S(0.04)));
  EXPECT_EQ("1.2 s", ReportDuration(S(1.2)));
  EXPECT_EQ("59.9 s", ReportDuration(S(59.9)));
  EXPECT_EQ("3m05s", ReportDuration(S(185)));
}

}  // namespace
}  // namespace podrun
