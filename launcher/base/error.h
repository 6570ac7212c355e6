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

  // Prefixes the message in place: what() becomes "context: <message>". The object keeps its
  // class and code, so a handler adds context and rethrows the same exception:
  //   catch (Error& e) { e.AddContext("w3"); throw; }
  // (`throw e` or a copy would slice a derived class such as AgentRefusal down to Error.)
  void AddContext(const std::string& context) {
    std::runtime_error::operator=(std::runtime_error(context + ": " + what()));
  }

 private:
  ExitCode code_;
};

inline Error UsageError(const std::string& message) { return Error(ExitCode::kUsage, message); }

}  // namespace podrun
