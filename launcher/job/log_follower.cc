// See log_follower.h.
#include "launcher/job/log_follower.h"

#include <fmt/format.h>

#include <thread>

#include "launcher/error.h"

namespace podrun {

using Clock = std::chrono::steady_clock;

LogFollowResult FollowLog(const LogFollowParams& params, const LogFollowHooks& hooks,
                          const AgentClient::OnBatch& on_batch) {
  LogFollowResult result;
  result.next_seq = params.from_seq;
  std::optional<Clock::time_point> give_up_at;  // set while the agent makes no progress
  std::string last_error;
  for (;;) {
    const Clock::time_point opened = Clock::now();
    bool progressed = false;
    try {
      std::shared_ptr<AgentClient> client = hooks.client();
      if (!client) throw Error(ExitCode::kUnreachable, "not connected");
      AgentLogStreamEnd end =
          client->StreamLogs(params.job_id, params.attempt, result.next_seq, params.follow,
                             [&](std::vector<LogRecord>&& records) {
                               if (!records.empty()) {
                                 result.next_seq = records.back().seq + 1;
                                 progressed = true;
                               }
                               return on_batch(std::move(records));
                             });
      result.next_seq = std::max(result.next_seq, end.next_seq);
      if (end.cancelled) {
        result.cancelled = true;
        return result;
      }
      result.end = end.end;
      if (end.end || !params.follow) return result;
      throw Error(ExitCode::kUnreachable, "the log stream ended before the process did");
    } catch (const AgentRefusal& e) {
      // The agent answered and said no (e.g. it has no such job): no reconnect can help.
      result.lost = fmt::format("its agent refused to stream the log: {}", e.what());
      return result;
    } catch (const Error& e) {
      last_error = e.what();
    } catch (const std::system_error& e) {
      last_error = e.what();
    }
    if (progressed || Clock::now() - opened >= params.healthy_stream) give_up_at.reset();
    if (!give_up_at) {
      give_up_at = Clock::now() + params.lost_after;
      hooks.say(fmt::format("{}: connection to the agent lost ({}); reconnecting",
                            params.description, last_error));
    }
    for (;;) {
      if (Clock::now() >= *give_up_at) {
        result.lost =
            fmt::format("its agent gave no progress for {} s: {}",
                        std::chrono::duration_cast<std::chrono::seconds>(params.lost_after).count(),
                        last_error);
        return result;
      }
      std::this_thread::sleep_for(params.reconnect_pause);
      try {
        hooks.reconnect();
        hooks.say(fmt::format("{}: reconnected; resuming its log at record {}", params.description,
                              result.next_seq));
        break;
      } catch (const std::exception& e) {
        last_error = e.what();  // keep trying until give_up_at
      }
    }
  }
}

}  // namespace podrun
