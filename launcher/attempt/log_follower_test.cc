#include "launcher/attempt/log_follower.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "launcher/base/error.h"

namespace podrun {
namespace {

using std::chrono::milliseconds;

LogFollowParams FastParams() {
  LogFollowParams p;
  p.job_id = "j";
  p.description = "w1 (test)";
  p.lost_after = milliseconds(300);
  p.reconnect_pause = milliseconds(10);
  p.healthy_stream = milliseconds(200);
  return p;
}

// The reconnect succeeds every time but the stream fails at once (an agent that lost the job):
// the worker must be given up after lost_after, not reconnected without end.
TEST(LogFollower, ReconnectsThatNeverProgressEnd) {
  int reconnects = 0;
  std::vector<std::string> said;
  LogFollowHooks hooks{[] { return std::shared_ptr<AgentClient>(); },
                       [&] {
                         ++reconnects;
                         return std::shared_ptr<AgentClient>();
                       },
                       [&](const std::string& m) { said.push_back(m); },
                       {}};
  const auto began = std::chrono::steady_clock::now();
  LogFollowResult r = FollowLog(FastParams(), hooks, [](std::vector<LogRecord>&&) { return true; });
  const auto took = std::chrono::steady_clock::now() - began;
  EXPECT_FALSE(r.end);
  EXPECT_NE(r.lost.find("gave no progress"), std::string::npos) << r.lost;
  EXPECT_NE(r.lost.find("not connected"), std::string::npos) << r.lost;
  EXPECT_GE(took, milliseconds(300));
  EXPECT_LT(took, milliseconds(5000));
  // One "connection lost" message for the whole outage, not one per attempt.
  int lost_messages = 0;
  for (const std::string& m : said)
    lost_messages += m.find("connection to the agent lost") != std::string::npos;
  EXPECT_EQ(lost_messages, 1);
  EXPECT_GE(reconnects, 1);
  EXPECT_EQ(r.next_seq, 1u);
}

TEST(LogFollower, ReconnectFailuresGiveUpWithTheLastError) {
  LogFollowHooks hooks{[] { return std::shared_ptr<AgentClient>(); },
                       []() -> std::shared_ptr<AgentClient> {
                         throw Error(ExitCode::kUnreachable, "ssh connect: No route to host");
                       },
                       [](const std::string&) {},
                       {}};
  LogFollowResult r = FollowLog(FastParams(), hooks, [](std::vector<LogRecord>&&) { return true; });
  EXPECT_NE(r.lost.find("No route to host"), std::string::npos) << r.lost;
}

// A stream that had been healthy breaks: the first reconnection is tried at once (its hook asks
// gcloud whether the VM is gone), not after the pause, which here would last an hour. A stream
// that breaks again at once (FastParams' healthy_stream) pauses first: the test before this one.
TEST(LogFollower, TheFirstReconnectionAfterAHealthyStreamIsTriedAtOnce) {
  LogFollowParams p = FastParams();
  p.reconnect_pause = std::chrono::hours(1);
  p.lost_after = std::chrono::hours(1);
  p.healthy_stream = milliseconds(0);
  int reconnects = 0;
  LogFollowHooks hooks{[] { return std::shared_ptr<AgentClient>(); },
                       [&]() -> std::shared_ptr<AgentClient> {
                         ++reconnects;
                         throw GiveUpWorker("preempted: TPU node n is PREEMPTED (gcloud)");
                       },
                       [](const std::string&) {},
                       {}};
  LogFollowResult r = FollowLog(p, hooks, [](std::vector<LogRecord>&&) { return true; });
  EXPECT_EQ(1, reconnects);
  EXPECT_TRUE(r.lost_by_hook);
  EXPECT_NE(r.lost.find("PREEMPTED"), std::string::npos) << r.lost;
}

TEST(LogFollower, StartsWhereAsked) {
  LogFollowParams p = FastParams();
  p.from_seq = 42;
  LogFollowHooks hooks{
      [] { return std::shared_ptr<AgentClient>(); },
      []() -> std::shared_ptr<AgentClient> { throw Error(ExitCode::kUnreachable, "down"); },
      [](const std::string&) {},
      {}};
  EXPECT_EQ(FollowLog(p, hooks, [](std::vector<LogRecord>&&) { return true; }).next_seq, 42u);
}

// A log stream of FollowLogs' tests: it ends when told to (End), or when cancelled. Its on_done
// runs once, on the thread that ends it.
class FakeStream : public AgentLogStream {
 public:
  explicit FakeStream(AgentLogReader::OnStreamDone on_done) : on_done_(std::move(on_done)) {}
  void Cancel() override {
    cancelled = true;
    AgentLogStreamEnd end;
    end.cancelled = true;
    End(end, nullptr);
  }
  void End(AgentLogStreamEnd end, std::exception_ptr error) {
    AgentLogReader::OnStreamDone on_done;
    {
      std::lock_guard lock(mutex_);
      on_done = std::move(on_done_);
      on_done_ = nullptr;
    }
    if (on_done) on_done(std::move(end), std::move(error));
  }
  std::atomic<bool> cancelled{false};

 private:
  std::mutex mutex_;
  AgentLogReader::OnStreamDone on_done_;
};

AgentLogStreamEnd ProcessEnded() {
  AgentLogStreamEnd end;
  end.end = ProcessEnd{};
  end.next_seq = 1;
  return end;
}

std::exception_ptr ConnectionLost() {
  return std::make_exception_ptr(
      Error(ExitCode::kUnreachable, "agent StreamLogs: connection lost"));
}

// A stream that fails at once is reconnected and resumed; every log ends with its process.
TEST(FollowLogs, ReconnectsAndFinishesEveryLog) {
  std::vector<LogFollowJob> jobs(2);
  int opened0 = 0;
  for (LogFollowJob& job : jobs) {
    job.params = FastParams();
    job.params.lost_after = std::chrono::hours(1);  // never given up here
    job.hooks.client = [] { return std::shared_ptr<AgentClient>(); };
    job.hooks.reconnect = [] { return std::shared_ptr<AgentClient>(); };
    job.hooks.say = [](const std::string&) {};
    job.on_batch = [](std::vector<LogRecord>&&) { return true; };
  }
  jobs[0].hooks.open_stream = [&](uint64_t, AgentLogReader::OnBatch,
                                  AgentLogReader::OnStreamDone done) {
    auto stream = std::make_shared<FakeStream>(std::move(done));
    if (opened0++ == 0) {
      stream->End(AgentLogStreamEnd{}, ConnectionLost());
    } else {
      stream->End(ProcessEnded(), nullptr);
    }
    return stream;
  };
  jobs[1].hooks.open_stream = [](uint64_t, AgentLogReader::OnBatch,
                                 AgentLogReader::OnStreamDone done) {
    auto stream = std::make_shared<FakeStream>(std::move(done));
    stream->End(ProcessEnded(), nullptr);
    return stream;
  };
  std::vector<size_t> finished;
  std::vector<LogFollowResult> results =
      FollowLogs(std::move(jobs), [&](size_t i, const LogFollowResult&) { finished.push_back(i); });
  ASSERT_EQ(results.size(), 2u);
  EXPECT_TRUE(results[0].end);
  EXPECT_TRUE(results[1].end);
  EXPECT_EQ(opened0, 2);
  EXPECT_EQ(finished.size(), 2u);
}

// on_finished throws while one log reconnects (on a thread of its own, in a pause of an hour)
// and another's stream is still open: FollowLogs throws that exception, having stopped the
// reconnect and cancelled the stream, whose on_done has run before FollowLogs returns (nothing
// is left to call into it afterwards). Before, the joinable thread called std::terminate.
TEST(FollowLogs, ACallbackThatThrowsLeavesNoThreadOrStreamBehind) {
  std::vector<LogFollowJob> jobs(3);
  for (LogFollowJob& job : jobs) {
    job.params = FastParams();
    job.params.lost_after = std::chrono::hours(1);
    job.params.reconnect_pause = std::chrono::hours(1);
    job.hooks.client = [] { return std::shared_ptr<AgentClient>(); };
    job.hooks.reconnect = []() -> std::shared_ptr<AgentClient> {
      throw Error(ExitCode::kUnreachable, "down");
    };
    job.hooks.say = [](const std::string&) {};
    job.on_batch = [](std::vector<LogRecord>&&) { return true; };
  }
  jobs[0].hooks.open_stream = [](uint64_t, AgentLogReader::OnBatch,
                                 AgentLogReader::OnStreamDone done) {
    auto stream = std::make_shared<FakeStream>(std::move(done));
    stream->End(AgentLogStreamEnd{}, ConnectionLost());  // then a reconnect thread
    return stream;
  };
  std::shared_ptr<FakeStream> open;
  jobs[1].hooks.open_stream = [&](uint64_t, AgentLogReader::OnBatch,
                                  AgentLogReader::OnStreamDone done) {
    open = std::make_shared<FakeStream>(std::move(done));
    return open;
  };
  jobs[2].hooks.open_stream = [](uint64_t, AgentLogReader::OnBatch,
                                 AgentLogReader::OnStreamDone done) {
    auto stream = std::make_shared<FakeStream>(std::move(done));
    stream->End(ProcessEnded(), nullptr);
    return stream;
  };
  std::vector<size_t> finished;
  auto on_finished = [&](size_t i, const LogFollowResult&) {
    finished.push_back(i);
    throw std::runtime_error("on_finished failed");
  };
  EXPECT_THROW(FollowLogs(std::move(jobs), on_finished), std::runtime_error);
  EXPECT_EQ(finished, std::vector<size_t>{2});
  ASSERT_TRUE(open);
  EXPECT_TRUE(open->cancelled);
}

}  // namespace
}  // namespace podrun
