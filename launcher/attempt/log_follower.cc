// See log_follower.h. FollowLogs is an event loop on the calling thread: streams and reconnect
// threads post events (a stream ended, a reconnect succeeded or gave up) to it, and it decides
// what comes next for each log.
#include "launcher/attempt/log_follower.h"

#include <fmt/format.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <stop_token>
#include <thread>

#include "launcher/base/error.h"

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

// What happens to one log after each stream: done, or reconnect until when (the rules of
// log_follower.h). Shared by FollowLog (one log, a blocking stream) and FollowLogs (many,
// streams on gRPC's threads). Not thread-safe: its owner serializes the calls.
class FollowPolicy {
 public:
  FollowPolicy(const LogFollowParams& params, const LogFollowHooks& hooks)
      : params_(params), hooks_(hooks) {
    result.next_seq = params.from_seq;
  }

  // A stream is being opened.
  void Opened() {
    opened_ = Clock::now();
    progressed = std::make_shared<std::atomic<bool>>(false);
  }

  // A stream ended, with `end` or `error`. Returns nullopt when the log is done (see result),
  // else the instant until which reconnecting is worth it (`last_error` says why).
  std::optional<Clock::time_point> OnStreamDone(const AgentLogStreamEnd& end,
                                                const std::exception_ptr& error) {
    result.next_seq = std::max(result.next_seq, end.next_seq);
    std::string failure;
    if (!error) {
      if (end.cancelled) {
        result.cancelled = true;
        return std::nullopt;
      }
      result.end = end.end;
      if (end.gap) result.gap = end.gap;
      if (end.end || !params_.follow) return std::nullopt;
      failure = "the log stream ended before the process did";
    } else if (IsRefusal(error)) {
      // The agent answered and said no (e.g. it has no such job): no reconnect can help.
      result.lost = "its agent refused to stream the log: " + Describe(error);
      return std::nullopt;
    } else {
      failure = Describe(error);
    }
    last_error = failure;
    if (progressed->load() || Clock::now() - opened_ >= params_.healthy_stream) {
      give_up_at_.reset();
    }
    fresh_loss_ = !give_up_at_;
    if (!give_up_at_) {
      give_up_at_ = Clock::now() + params_.lost_after;
      hooks_.say(fmt::format("{}: connection to the agent lost ({}); reconnecting",
                             params_.description, failure));
    }
    return give_up_at_;
  }

  // Whether the last OnStreamDone began a loss (the first, or one after a healthy stream): its
  // first reconnection is tried at once, so that a VM gone is found sooner (the reconnect hook
  // asks gcloud); a stream that keeps breaking is reconnected after a pause each time.
  bool fresh_loss() const { return fresh_loss_; }

  // Reconnects until it works (true) or `give_up_at` passes (false, `lost` set; `by_hook` when
  // the reconnect hook gave the worker up), pausing before each attempt but the first when
  // `at_once`. Blocks; `stop` ends it early (false) between attempts. Touches only what its
  // arguments and the hooks hold, so that it may run on a thread of its own.
  static bool Reconnect(const LogFollowParams& params, const LogFollowHooks& hooks,
                        Clock::time_point give_up_at, std::string last_error, std::string* lost,
                        bool* by_hook, bool at_once, std::stop_token stop = {}) {
    for (bool first = true;; first = false) {
      if (stop.stop_requested()) {
        *lost = "stopped following the log: " + last_error;
        return false;
      }
      if (Clock::now() >= give_up_at) {
        *lost =
            fmt::format("its agent gave no progress for {} s: {}",
                        std::chrono::duration_cast<std::chrono::seconds>(params.lost_after).count(),
                        last_error);
        return false;
      }
      if (!(first && at_once)) {  // the pause, which `stop` cuts short
        std::mutex mutex;
        std::condition_variable_any pause;
        std::unique_lock lock(mutex);
        (void)pause.wait_for(lock, stop, params.reconnect_pause, [] { return false; });
      }
      if (stop.stop_requested()) continue;
      try {
        hooks.reconnect();
        return true;
      } catch (const GiveUpWorker& e) {
        *lost = e.what();
        *by_hook = true;
        return false;
      } catch (const std::exception& e) {
        last_error = e.what();  // keep trying until give_up_at
      }
    }
  }

  LogFollowResult result;
  std::string last_error;
  // Set by the stream's on_batch when records arrive (from whichever thread runs it).
  std::shared_ptr<std::atomic<bool>> progressed = std::make_shared<std::atomic<bool>>(false);

 private:
  const LogFollowParams& params_;
  const LogFollowHooks& hooks_;
  Clock::time_point opened_;
  std::optional<Clock::time_point> give_up_at_;  // set while the agent makes no progress
  bool fresh_loss_ = false;
};

class Followers {
 public:
  Followers(std::vector<LogFollowJob> jobs,
            const std::function<void(size_t, const LogFollowResult&)>& on_finished)
      : jobs_(std::move(jobs)), on_finished_(on_finished) {
    logs_.reserve(jobs_.size());
    for (const LogFollowJob& job : jobs_) logs_.emplace_back(job.params, job.hooks);
  }

  // However Run ends (a hook or on_finished may throw out of it), no stream or reconnect thread
  // outlives this object, to which each posts: the threads are stopped, the streams cancelled,
  // and their last events awaited.
  ~Followers() {
    for (std::jthread& t : reconnectors_) t.request_stop();
    for (Log& log : logs_) {
      if (log.stream) log.stream->Cancel();
    }
    for (; owed_ > 0; --owed_) Next();
    reconnectors_.clear();  // joins: each has posted its event, its last use of this object
  }
  Followers(const Followers&) = delete;
  Followers& operator=(const Followers&) = delete;

  std::vector<LogFollowResult> Run() {
    size_t remaining = jobs_.size();
    for (size_t i = 0; i < jobs_.size(); ++i) Open(i);
    while (remaining > 0) {
      Event e = Next();
      --owed_;
      Log& log = logs_[e.index];
      bool finished = false;
      switch (e.kind) {
        case Event::kStreamDone:
          log.stream.reset();
          if (auto give_up_at = log.policy.OnStreamDone(e.end, e.error)) {
            StartReconnect(e.index, *give_up_at, log.policy.last_error, log.policy.fresh_loss());
          } else {
            finished = true;
          }
          break;
        case Event::kReconnected:
          jobs_[e.index].hooks.say(fmt::format("{}: reconnected; resuming its log at record {}",
                                               jobs_[e.index].params.description,
                                               log.policy.result.next_seq));
          Open(e.index);
          break;
        case Event::kGaveUp:
          log.policy.result.lost = e.message;
          log.policy.result.lost_by_hook = e.by_hook;
          finished = true;
          break;
      }
      if (finished) {
        --remaining;
        if (on_finished_) on_finished_(e.index, log.policy.result);
      }
    }
    reconnectors_.clear();  // joins
    std::vector<LogFollowResult> results;
    for (Log& log : logs_) results.push_back(std::move(log.policy.result));
    return results;
  }

 private:
  struct Event {
    enum Kind { kStreamDone, kReconnected, kGaveUp } kind = kStreamDone;
    size_t index = 0;
    AgentLogStreamEnd end;
    std::exception_ptr error;
    std::string message;
    bool by_hook = false;  // kGaveUp: the reconnect hook gave the worker up
  };
  struct Log {
    Log(const LogFollowParams& params, const LogFollowHooks& hooks) : policy(params, hooks) {}
    FollowPolicy policy;
    std::shared_ptr<AgentLogStream> stream;
  };

  // From any thread. Notifies under the lock: once the lock is released, Run may take this
  // event, finish and destroy this object, cv_ included.
  void Post(Event e) {
    std::lock_guard lock(mu_);
    events_.push_back(std::move(e));
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
    log.policy.Opened();
    auto progressed = log.policy.progressed;
    AgentLogReader::OnBatch on_batch = [progressed,
                                        on_batch = job.on_batch](std::vector<LogRecord>&& records) {
      if (!records.empty()) progressed->store(true);
      return on_batch(std::move(records));
    };
    auto on_done = [this, i](AgentLogStreamEnd end, std::exception_ptr error) {
      Post({Event::kStreamDone, i, end, std::move(error), {}, false});
    };
    if (job.hooks.open_stream) {
      log.stream = job.hooks.open_stream(log.policy.result.next_seq, on_batch, on_done);
      if (log.stream) {
        ++owed_;  // its on_done
        return;
      }
    }
    std::shared_ptr<AgentClient> client;
    try {
      client = job.hooks.client();
    } catch (...) {
    }
    if (!client) {
      Event e{Event::kStreamDone, i, {}, {}, {}, false};
      e.end.next_seq = log.policy.result.next_seq;
      e.error = std::make_exception_ptr(Error(ExitCode::kUnreachable, "not connected"));
      Post(std::move(e));
      ++owed_;
      return;
    }
    log.stream = client->logs().StartStreamLogs(job.params.job_id, job.params.attempt,
                                                log.policy.result.next_seq, job.params.follow,
                                                std::move(on_batch), std::move(on_done));
    ++owed_;  // its on_done
  }

  // A thread that reconnects log i's agent until it succeeds or give_up_at passes.
  void StartReconnect(size_t i, Clock::time_point give_up_at, const std::string& last_error,
                      bool at_once) {
    const LogFollowJob& job = jobs_[i];
    auto reconnect = [this, i, give_up_at, last_error, at_once, &job](std::stop_token stop) {
      std::string lost;
      bool by_hook = false;
      if (FollowPolicy::Reconnect(job.params, job.hooks, give_up_at, last_error, &lost, &by_hook,
                                  at_once, stop)) {
        Post({Event::kReconnected, i, {}, {}, {}, false});
      } else {
        Post({Event::kGaveUp, i, {}, {}, lost, by_hook});
      }
    };
    try {
      reconnectors_.emplace_back(reconnect);
    } catch (const std::system_error&) {
      reconnect({});  // no thread to be had: reconnect here (the other logs wait meanwhile)
    }
    ++owed_;  // its kReconnected or kGaveUp
  }

  std::vector<LogFollowJob> jobs_;
  const std::function<void(size_t, const LogFollowResult&)>& on_finished_;
  std::vector<Log> logs_;
  std::vector<std::jthread> reconnectors_;
  size_t owed_ = 0;  // events still to come from started streams and reconnects (Run's thread)
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
                          const AgentLogReader::OnBatch& on_batch) {
  FollowPolicy policy(params, hooks);
  for (;;) {
    policy.Opened();
    AgentLogStreamEnd end;
    end.next_seq = policy.result.next_seq;
    std::exception_ptr error;
    try {
      std::shared_ptr<AgentClient> client = hooks.client();
      if (!client) throw Error(ExitCode::kUnreachable, "not connected");
      auto progressed = policy.progressed;
      end = client->logs().StreamLogs(params.job_id, params.attempt, policy.result.next_seq,
                                      params.follow, [&](std::vector<LogRecord>&& records) {
                                        if (!records.empty()) {
                                          progressed->store(true);
                                          policy.result.next_seq = records.back().seq + 1;
                                        }
                                        return on_batch(std::move(records));
                                      });
    } catch (const Error&) {
      error = std::current_exception();
      end.next_seq = policy.result.next_seq;
    }
    std::optional<Clock::time_point> give_up_at = policy.OnStreamDone(end, error);
    if (!give_up_at) return policy.result;
    std::string lost;
    bool by_hook = false;
    if (!FollowPolicy::Reconnect(params, hooks, *give_up_at, policy.last_error, &lost, &by_hook,
                                 policy.fresh_loss())) {
      policy.result.lost = lost;
      policy.result.lost_by_hook = by_hook;
      return policy.result;
    }
    hooks.say(fmt::format("{}: reconnected; resuming its log at record {}", params.description,
                          policy.result.next_seq));
  }
}

}  // namespace podrun
