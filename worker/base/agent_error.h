// AgentError: what the agent's request handlers throw; the gRPC service maps kind to a status.
#pragma once

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace podrun::agent {

enum class ErrorKind {
  kInvalidArgument,     // a malformed request (bad job id, relative path, ...)
  kNotFound,            // no such job (attempt) on this worker
  kFailedPrecondition,  // the request does not fit the job's state or the machine's
  kInternal,            // the machine failed us (spawn, disk)
};

// Message reads "context: detail", e.g. "workdir /data/x: Permission denied".
class AgentError : public std::runtime_error {
 public:
  AgentError(ErrorKind kind, const std::string& message)
      : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

// "what: <strerror(err)>", or only the strerror text when `what` is empty. err defaults to
// errno as it is where this is called, so call it right after the call that failed.
inline std::string ErrnoMessage(const std::string& what = {}, int err = errno) {
  return what.empty() ? std::string(std::strerror(err)) : what + ": " + std::strerror(err);
}

}  // namespace podrun::agent
