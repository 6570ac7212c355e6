// Tests of `podrun top`'s rows: the order (failed first, then stragglers, then by whole seconds of
// silence), the table (one line per worker, cut to a width, control characters defused, step
// columns only when some worker has a step) and the JSON objects.
#include "launcher/output/top_table.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

namespace podrun {
namespace {

TopRow Row(int worker, std::string state, std::optional<double> silent, bool failed = false) {
  TopRow row;
  row.worker = worker;
  row.host = "10.0.0." + std::to_string(worker);
  row.state = std::move(state);
  row.silent_seconds = silent;
  row.failed = failed;
  return row;
}

std::vector<int> Order(std::vector<TopRow> rows) {
  SortTopRows(rows);
  std::vector<int> order;
  for (const TopRow& r : rows) order.push_back(r.worker);
  return order;
}

TEST(TopTableTest, FailedFirstThenTheLongestSilent) {
  EXPECT_EQ(
      Order({Row(0, "running", 0.4), Row(1, "running", 12.0), Row(2, "exited", {}),
             Row(3, "failed", {}, true), Row(4, "running", 3.5), Row(5, "unreachable", {}, true)}),
      (std::vector<int>{3, 5, 1, 4, 0, 2}));
  // Within the same whole second, by worker: rows that print all the time keep their places.
  EXPECT_EQ(Order({Row(2, "running", 0.9), Row(0, "running", 0.1), Row(1, "running", 0.5)}),
            (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(Order({}), std::vector<int>{});
}

TEST(TopTableTest, ATableLinePerWorker) {
  TopRow busy = Row(0, "running", 0.2);
  busy.pid = 4242;
  busy.cpu_percent = 197.54;
  busy.rss_bytes = 3u << 20;
  busy.processes = 3;
  busy.accelerators = {"/dev/accel0", "/dev/accel1"};
  busy.output_bytes_per_second = 2048;
  busy.last_line = "step 10\tloss \x1b[31m0.5\x1b[0m\x07";
  TopRow quiet = Row(1, "running", 125);
  quiet.last_line = "hello from 1";
  TopRow gone = Row(2, "unreachable", {}, true);
  gone.note = "ssh connect: Connection refused";
  const std::string table = FormatTopTable({gone, quiet, busy});
  std::istringstream lines(table);
  std::vector<std::string> got;
  for (std::string line; std::getline(lines, line);) got.push_back(line);
  ASSERT_EQ(got.size(), 4u) << table;
  EXPECT_EQ(got[0].rfind("WORKER  HOST", 0), 0u) << got[0];
  EXPECT_EQ(got[1].rfind("w2  ", 0), 0u) << got[1];
  EXPECT_NE(got[1].find("unreachable"), std::string::npos);
  EXPECT_NE(got[1].find("ssh connect: Connection refused"), std::string::npos);
  EXPECT_NE(got[2].find("2m05s"), std::string::npos) << got[2];
  EXPECT_NE(got[2].find("hello from 1"), std::string::npos);
  EXPECT_NE(got[3].find("4242"), std::string::npos) << got[3];
  EXPECT_NE(got[3].find("197.5"), std::string::npos);
  EXPECT_NE(got[3].find("3.0M"), std::string::npos);
  EXPECT_NE(got[3].find("accel0,accel1"), std::string::npos);
  EXPECT_NE(got[3].find("2.0K"), std::string::npos);
  EXPECT_NE(got[3].find("step 10 loss 0.5?"), std::string::npos) << got[3];
  EXPECT_EQ(table.find('\x1b'), std::string::npos);
  // Columns line up: every row's STATE starts where the header's does.
  const size_t state_column = got[0].find("STATE");
  EXPECT_EQ(got[2].find("running"), state_column);
  EXPECT_EQ(got[3].find("running"), state_column);
}

TEST(TopTableTest, CutToAWidthAndARowCount) {
  TopRow row = Row(0, "running", 1);
  row.last_line = std::string(300, 'x') + "\xc3\xa9";
  std::vector<TopRow> rows(5, row);
  const std::string table = FormatTopTable(rows, 60, 3);
  std::istringstream lines(table);
  int count = 0;
  for (std::string line; std::getline(lines, line); ++count) {
    EXPECT_LE(line.size(), 60u) << line;
  }
  EXPECT_EQ(count, 5);  // the header, 3 rows, "... 2 more workers"
  EXPECT_NE(table.find("... 2 more workers\n"), std::string::npos) << table;
  // A character is not split: "é" is two bytes and one column.
  const std::string wide = FormatTopTable({row});
  EXPECT_NE(wide.find("x\xc3\xa9\n"), std::string::npos);
}

TEST(TopTableTest, OneJsonObjectPerRow) {
  TopRow row = Row(3, "running", 4.04);
  row.pid = 17;
  row.cpu_percent = 12.345;
  row.cpu_seconds = 1.5;
  row.rss_bytes = 1000;
  row.processes = 2;
  row.output_bytes = 20;
  row.output_bytes_per_second = 0;
  row.last_line = "bad utf-8 \xff here";
  const nlohmann::json j = nlohmann::json::parse(TopRowJson(row));
  EXPECT_EQ(j["worker"], 3);
  EXPECT_EQ(j["host"], "10.0.0.3");
  EXPECT_EQ(j["state"], "running");
  EXPECT_EQ(j["pid"], 17);
  EXPECT_EQ(j["cpu_percent"], 12.3);
  EXPECT_EQ(j["cpu_seconds"], 1.5);
  EXPECT_EQ(j["rss_bytes"], 1000);
  EXPECT_EQ(j["processes"], 2);
  EXPECT_EQ(j["accelerators"], nlohmann::json::array());
  EXPECT_EQ(j["output_bytes"], 20);
  EXPECT_EQ(j["output_bytes_per_second"], 0.0);
  EXPECT_EQ(j["silent_seconds"], 4.0);
  EXPECT_EQ(j["last_line"], "bad utf-8 \xef\xbf\xbd here");
  EXPECT_TRUE(j["error"].is_null());
  EXPECT_TRUE(j["exit_code"].is_null());
  EXPECT_EQ(TopRowJson(row).find('\n'), std::string::npos);

  TopRow gone = Row(1, "unreachable", {}, true);
  gone.note = "timed out";
  const nlohmann::json u = nlohmann::json::parse(TopRowJson(gone));
  EXPECT_EQ(u["error"], "timed out");
  EXPECT_TRUE(u["cpu_percent"].is_null());
  EXPECT_TRUE(u["silent_seconds"].is_null());
}

TEST(TopTableTest, StragglersRightAfterTheFailed) {
  std::vector<TopRow> rows = {Row(0, "running", 30.0), Row(1, "running", 0.2),
                              Row(2, "failed", {}, true), Row(3, "running", 0.1),
                              Row(4, "running", 0.3)};
  rows[3].straggler = true;
  rows[3].straggler_note = "0.41 steps/s vs median 0.93";
  rows[1].straggler = true;
  rows[1].straggler_note = "0.10 steps/s vs median 0.93";
  // The failed first, then the stragglers (by worker), then the silent longest.
  EXPECT_EQ(Order(rows), (std::vector<int>{2, 1, 3, 0, 4}));
}

// The table's lines, split.
std::vector<std::string> Lines(const std::string& table) {
  std::istringstream in(table);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(TopTableTest, StepColumnsOnlyWhenSomeWorkerHasAStep) {
  TopRow a = Row(0, "running", 1);
  a.last_line = "loss 0.5";
  TopRow b = Row(1, "running", 2);
  // No step anywhere (a program that prints none, or progress: none): the table as it was.
  const std::vector<std::string> plain = Lines(FormatTopTable({b, a}));
  ASSERT_EQ(plain.size(), 3u);
  EXPECT_EQ(plain[0].find("STEP"), std::string::npos) << plain[0];
  EXPECT_NE(plain[0].find("SILENT  LAST LINE"), std::string::npos) << plain[0];
  EXPECT_EQ(plain[2].find("straggler"), std::string::npos);

  // Steps: STEP and STEPS/S, "-" for a worker without one; a straggler's note leads its line.
  a.step = 1513;
  a.steps_per_s = 0.934;
  b.step = 1512;
  b.steps_per_s = 12.34;
  b.straggler = true;
  b.straggler_note = "0.41 steps/s vs median 0.93";
  b.last_line = "step 1512";
  TopRow c = Row(2, "running", 0);
  const std::vector<std::string> got = Lines(FormatTopTable({b, a, c}));
  ASSERT_EQ(got.size(), 4u);
  EXPECT_NE(got[0].find("SILENT  STEP  STEPS/S  LAST LINE"), std::string::npos) << got[0];
  const size_t step_column = got[0].find("STEP ");
  const size_t rate_column = got[0].find("STEPS/S");
  EXPECT_EQ(got[1].find("1512"), step_column) << got[1];
  EXPECT_EQ(got[1].find("12.3"), rate_column) << got[1];
  EXPECT_NE(got[1].find("straggler: 0.41 steps/s vs median 0.93 | step 1512"), std::string::npos)
      << got[1];
  EXPECT_EQ(got[2].find("1513"), step_column) << got[2];
  EXPECT_EQ(got[2].find("0.93"), rate_column) << got[2];
  EXPECT_EQ(got[2].find("straggler"), std::string::npos) << got[2];
  EXPECT_EQ(got[3][step_column], '-') << got[3];
  EXPECT_EQ(got[3][rate_column], '-') << got[3];

  // The columns are decided by every row, not only the rows shown.
  EXPECT_NE(FormatTopTable({c, a}, 0, 1).find("STEPS/S"), std::string::npos);
}

TEST(TopTableTest, StepsInJson) {
  TopRow row = Row(0, "running", 1);
  nlohmann::json j = nlohmann::json::parse(TopRowJson(row));
  EXPECT_TRUE(j["step"].is_null());
  EXPECT_TRUE(j["step_ns"].is_null());
  EXPECT_TRUE(j["steps_per_s"].is_null());
  EXPECT_TRUE(j["straggler"].is_null());
  row.step = 1513;
  row.step_ns = 1'700'000'000'000'000'000;
  row.steps_per_s = 0.93456;
  row.straggler = true;
  row.straggler_note = "0.41 steps/s vs median 0.93";
  j = nlohmann::json::parse(TopRowJson(row));
  EXPECT_EQ(j["step"], 1513);
  EXPECT_EQ(j["step_ns"], 1'700'000'000'000'000'000);
  EXPECT_EQ(j["steps_per_s"], 0.935);
  EXPECT_EQ(j["straggler"], "0.41 steps/s vs median 0.93");
}

TEST(TopTableTest, StepRates) {
  EXPECT_EQ(FormatStepRate(0), "0.00");
  EXPECT_EQ(FormatStepRate(0.934), "0.93");
  EXPECT_EQ(FormatStepRate(12.34), "12.3");
  EXPECT_EQ(FormatStepRate(150.4), "150");
}

TEST(TopTableTest, Bytes) {
  EXPECT_EQ(FormatBytes(0), "0B");
  EXPECT_EQ(FormatBytes(1023), "1023B");
  EXPECT_EQ(FormatBytes(1536), "1.5K");
  EXPECT_EQ(FormatBytes(12.0 * 1024 * 1024), "12M");
  EXPECT_EQ(FormatBytes(1.5 * 1024 * 1024 * 1024), "1.5G");
}

}  // namespace
}  // namespace podrun
