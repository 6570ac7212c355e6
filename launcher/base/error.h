// The one error type of the launcher: an exit code from the contract plus a message
// whose context (worker, host, file, step) is added where it is known.
#pragma once

#include <stdexcept>
#include <string>

namespace podrun {

// Exit codes of every command (docs/reference.md, "Exit codes").
enum class ExitCode : int {
  kOk = 0,
  kFailed = 1,       // the command or job failed on at least one worker
  kUsage = 2,        // bad usage or a bad spec: nothing was started
  kUnreachable = 3,  // a worker could not be reached, authenticated or bootstrapped
  kInterrupted = 130,
};

// Thrown across the launcher; caught once in main, which prints what() and exits with code().
// what() reads "context: detail", e.g. "w3 (10.0.0.5): upload agent: No space left on device".
class Error : public std::runtime_error {
 public:
  Error(ExitCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ExitCode code() const { return code_; }

  // Returns a copy whose message is "context: <this message>".
  Error WithContext(const std::string& context) const {
    return Error(code_, context + ": " + what());
  }

 private:
  ExitCode code_;
};

inline Error UsageError(const std::string& message) { return Error(ExitCode::kUsage, message); }

}  // namespace podrun
