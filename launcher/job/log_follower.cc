// See log_follower.h. FollowLogs is an event loop on the calling thread: streams and reconnect
// threads post events (a stream ended, a reconnect succeeded or gave up) to it, and it decides
// what comes next for each log.
#include "launcher/job/log_follower.h"

#include <fmt/format.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "launcher/error.h"

namespace podrun {
namespace {

using Clock = std::chrono::steady_clock;

std::string Describe(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown error";
  }
}

bool IsRefusal(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const AgentRefusal&) {
    return true;
  } catch (...) {
    return false;
  }
}

class Followers {
 public:
  Followers(std::vector<LogFollowJob> jobs,
            const std::function<void(size_t, const LogFollowResult&)>& on_finished)
      : jobs_(std::move(jobs)), on_finished_(on_finished), logs_(jobs_.size()) {
    for (size_t i = 0; i < jobs_.size(); ++i) logs_[i].result.next_seq = jobs_[i].params.from_seq;
  }

  std::vector<LogFollowResult> Run() {
    size_t remaining = jobs_.size();
    for (size_t i = 0; i < jobs_.size(); ++i) Open(i);
    while (remaining > 0) {
      Event e = Next();
      Log& log = logs_[e.index];
      switch (e.kind) {
        case Event::kStreamDone:
          log.stream.reset();
          if (OnStreamDone(e.index, e.end, e.error)) {
            --remaining;
            if (on_finished_) on_finished_(e.index, log.result);
          }
          break;
        case Event::kReconnected:
          jobs_[e.index].hooks.say(fmt::format("{}: reconnected; resuming its log at record {}",
                                               jobs_[e.index].params.description,
                                               log.result.next_seq));
          Open(e.index);
          break;
        case Event::kGaveUp:
          log.result.lost = e.message;
          --remaining;
          if (on_finished_) on_finished_(e.index, log.result);
          break;
      }
    }
    for (std::thread& t : reconnectors_) t.join();
    std::vector<LogFollowResult> results;
    for (Log& log : logs_) results.push_back(std::move(log.result));
    return results;
  }

 private:
  struct Event {
    enum Kind { kStreamDone, kReconnected, kGaveUp } kind = kStreamDone;
    size_t index = 0;
    AgentLogStreamEnd end;
    std::exception_ptr error;
    std::string message;
  };
  struct Log {
    LogFollowResult result;
    std::shared_ptr<AgentLogStream> stream;
    Clock::time_point opened;
    std::optional<Clock::time_point> give_up_at;  // set while the agent makes no progress
    std::shared_ptr<std::atomic<bool>> progressed = std::make_shared<std::atomic<bool>>(false);
  };

  void Post(Event e) {
    {
      std::lock_guard lock(mu_);
      events_.push_back(std::move(e));
    }
    cv_.notify_one();
  }

  Event Next() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return !events_.empty(); });
    Event e = std::move(events_.front());
    events_.pop_front();
    return e;
  }

  // Starts (or resumes) log i's stream at its next record.
  void Open(size_t i) {
    const LogFollowJob& job = jobs_[i];
    Log& log = logs_[i];
    log.opened = Clock::now();
    log.progressed->store(false);
    std::shared_ptr<AgentClient> client;
    try {
      client = job.hooks.client();
    } catch (...) {
    }
    if (!client) {
      Event e{Event::kStreamDone, i, {}, {}, {}};
      e.end.next_seq = log.result.next_seq;
      e.error = std::make_exception_ptr(Error(ExitCode::kUnreachable, "not connected"));
      Post(std::move(e));
      return;
    }
    auto progressed = log.progressed;
    AgentClient::OnBatch on_batch = job.on_batch;
    log.stream = client->StartStreamLogs(
        job.params.job_id, job.params.attempt, log.result.next_seq, job.params.follow,
        [progressed, on_batch](std::vector<LogRecord>&& records) {
          if (!records.empty()) progressed->store(true);
          return on_batch(std::move(records));
        },
        [this, i](AgentLogStreamEnd end, std::exception_ptr error) {
          Post({Event::kStreamDone, i, end, std::move(error), {}});
        });
  }

  // Returns true when log i is done; else a reconnect has been started.
  bool OnStreamDone(size_t i, const AgentLogStreamEnd& end, const std::exception_ptr& error) {
    const LogFollowJob& job = jobs_[i];
    Log& log = logs_[i];
    log.result.next_seq = std::max(log.result.next_seq, end.next_seq);
    std::string failure;
    if (!error) {
      if (end.cancelled) {
        log.result.cancelled = true;
        return true;
      }
      log.result.end = end.end;
      if (end.end || !job.params.follow) return true;
      failure = "the log stream ended before the process did";
    } else if (IsRefusal(error)) {
      // The agent answered and said no (e.g. it has no such job): no reconnect can help.
      log.result.lost = "its agent refused to stream the log: " + Describe(error);
      return true;
    } else {
      failure = Describe(error);
    }
    if (log.progressed->load() || Clock::now() - log.opened >= job.params.healthy_stream) {
      log.give_up_at.reset();
    }
    if (!log.give_up_at) {
      log.give_up_at = Clock::now() + job.params.lost_after;
      job.hooks.say(fmt::format("{}: connection to the agent lost ({}); reconnecting",
                                job.params.description, failure));
    }
    StartReconnect(i, *log.give_up_at, failure);
    return false;
  }

  // A thread that reconnects log i's agent until it succeeds or give_up_at passes.
  void StartReconnect(size_t i, Clock::time_point give_up_at, std::string last_error) {
    const LogFollowJob& job = jobs_[i];
    auto reconnect = [this, i, give_up_at, last_error, &job]() mutable {
      for (;;) {
        if (Clock::now() >= give_up_at) {
          Post({Event::kGaveUp,
                i,
                {},
                {},
                fmt::format(
                    "its agent gave no progress for {} s: {}",
                    std::chrono::duration_cast<std::chrono::seconds>(job.params.lost_after).count(),
                    last_error)});
          return;
        }
        std::this_thread::sleep_for(job.params.reconnect_pause);
        try {
          job.hooks.reconnect();
          Post({Event::kReconnected, i, {}, {}, {}});
          return;
        } catch (const std::exception& e) {
          last_error = e.what();  // keep trying until give_up_at
        }
      }
    };
    try {
      reconnectors_.emplace_back(reconnect);
    } catch (const std::system_error&) {
      reconnect();  // no thread to be had: reconnect here (the other logs wait meanwhile)
    }
  }

  std::vector<LogFollowJob> jobs_;
  const std::function<void(size_t, const LogFollowResult&)>& on_finished_;
  std::vector<Log> logs_;
  std::vector<std::thread> reconnectors_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Event> events_;
};

}  // namespace

std::vector<LogFollowResult> FollowLogs(
    std::vector<LogFollowJob> jobs,
    const std::function<void(size_t, const LogFollowResult&)>& on_finished) {
  Followers followers(std::move(jobs), on_finished);
  return followers.Run();
}

LogFollowResult FollowLog(const LogFollowParams& params, const LogFollowHooks& hooks,
                          const AgentClient::OnBatch& on_batch) {
  return FollowLogs({{params, hooks, on_batch}})[0];
}

}  // namespace podrun
