// AgentRefusal: the error of an agent that answered and said no, as the agent's clients
// (agent_client.h, agent_log_reader.h, agent_sync_client.h, ssh_log_stream.h) throw it.
#pragma once

#include <string>

#include "launcher/base/error.h"

namespace podrun {

// An agent that answered and refused the request (a bad argument, an unknown job, a workdir it
// cannot use): trying again through a new connection cannot help. Still exit code 3 (the worker
// could not be set up), but never taken for a lost connection.
class AgentRefusal : public Error {
 public:
  // What the agent refused, as its status said it (never read back from the message).
  enum class Kind {
    kNotFound,  // it has no such job or attempt (e.g. its VM was recreated and wiped)
    kOther,
  };
  explicit AgentRefusal(const std::string& message, Kind kind = Kind::kOther)
      : Error(ExitCode::kUnreachable, message), kind_(kind) {}
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

}  // namespace podrun
