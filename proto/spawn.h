// Starting a program clean. Every program podrun and its agent start (gcloud, ssh-keygen, a
// ProxyCommand, a local agent or worker, mount commands, the keeper) starts through
// SpawnProcess, so it begins as a shell would start it: every signal at its default
// disposition and an empty signal mask, whatever the starting thread had (the launcher blocks
// SIGINT for its interrupt watcher and ignores SIGPIPE; neither may leak into a child, or the
// child cannot be stopped by Ctrl-C and dies silently on a closed pipe).
#pragma once

#include <sys/types.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace podrun {

// For SpawnFd::parent: the child's descriptor is /dev/null (opened read-write).
inline constexpr int kSpawnDevNull = -1;

// One descriptor the child gets: the caller's `parent` (or /dev/null) as the child's `child`.
struct SpawnFd {
  int child;
  int parent;
};

enum class SpawnGroup {
  kInherit,     // the caller's process group and session
  kNewGroup,    // a process group of its own (signal it whole with kill(-pid, ...))
  kNewSession,  // a session of its own (setsid: no controlling terminal), e.g. a daemon
};

struct SpawnRequest {
  // argv[0] with a '/' is the program's path; without one it is searched on the PATH of `env`
  // (or of the caller's environment), unless `program` says where it is.
  std::vector<std::string> argv = {};
  std::string program = {};  // e.g. "/proc/self/exe" (argv[0] then only names it); empty: argv[0]
  // "NAME=value" entries; nullopt: the caller's environment.
  std::optional<std::vector<std::string>> env = {};
  // The child's descriptors. Those above the highest one named here (and above stderr) are
  // closed at exec; unnamed ones up to it (e.g. stderr when only stdout is named) are the
  // caller's, as they are.
  std::vector<SpawnFd> fds = {};
  SpawnGroup group = SpawnGroup::kInherit;
  std::string cwd = {};              // empty: the caller's
  std::optional<mode_t> umask = {};  // nullopt: the caller's
};

// Why a program could not be started. what(): "cannot run ARGV0: STEP: reason".
class SpawnError : public std::runtime_error {
 public:
  SpawnError(const std::string& message, int error_number, bool not_found)
      : std::runtime_error(message), error_number_(error_number), not_found_(not_found) {}
  int error_number() const { return error_number_; }
  // The exit status a shell gives for it: 127 when the program does not exist, else 126.
  int shell_exit_code() const { return not_found_ ? 127 : 126; }

 private:
  int error_number_;
  bool not_found_;
};

// Starts `request` and returns the child's pid once it runs the program (the caller reaps it).
// Throws SpawnError, with the child already reaped, when it cannot: fork failed, the program
// is not found, a descriptor, the directory, the session or exec failed. Thread-safe: any
// thread may call it; the child makes only async-signal-safe calls before exec.
pid_t SpawnProcess(const SpawnRequest& request);

}  // namespace podrun
