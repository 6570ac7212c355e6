// Running the user's gcloud (docs/design.md decision 16) and reading how a command failed, once,
// where it ran: the failure is a field of the error (GcloudError::failure), never looked for
// again in a message that also holds names the user chose (a project called "quota-lab").
// Every command has a deadline: a gcloud that hangs (a network that drops packets, a prompt
// nobody answers) is stopped and said, never waited for while a keeper's heartbeat says alive.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/base/error.h"

namespace podrun {

// How a gcloud command failed.
enum class GcloudFailure {
  kFailed,       // any other failure: gcloud's words say which
  kCouldNotRun,  // gcloud could not be started
  kNotFound,     // NOT_FOUND: the node or queued resource does not exist
  kExists,       // ALREADY_EXISTS: what a create asked for exists already
  kStockout,     // RESOURCE_EXHAUSTED for capacity: the zone has none now (it can come back)
  kQuota,        // RESOURCE_EXHAUSTED for a quota: waiting does not raise it
  kInterrupted,  // Ctrl-C (or a stop) while it ran: it was stopped
  kTimedOut,     // it outlived its deadline: it was stopped
  kTransient,    // the API's bad minute: HTTP 5xx, UNAVAILABLE, INTERNAL, DEADLINE_EXCEEDED, a
                 // rate limit, a connection refused or reset, a failed token refresh
};

// True for the failures that waiting may end (kTransient, kTimedOut): tried again, backing off.
bool IsTransientGcloudFailure(GcloudFailure failure);

// A failed gcloud command: exit 3 (130 when interrupted), what() "WHAT: `gcloud ... VERB`
// failed (exit N):\n<gcloud's stderr>", and how it failed.
class GcloudError : public Error {
 public:
  GcloudError(ExitCode code, const std::string& message, GcloudFailure failure)
      : Error(code, message), failure_(failure) {}
  GcloudError(ExitCode code, const std::string& message, GcloudFailure failure, std::string reason)
      : Error(code, message), failure_(failure), reason_(std::move(reason)) {}
  GcloudFailure failure() const { return failure_; }
  // A few words on the failure for a status line ("HTTP 503", "UNAVAILABLE", "no answer within
  // 120 s"); "" when gcloud said nothing readable.
  const std::string& reason() const { return reason_; }

 private:
  GcloudFailure failure_;
  std::string reason_;
};

// How a failed command's stderr says it failed (kFailed, kNotFound, kExists, kStockout or kQuota).
// Reads the status of gcloud's `ERROR: (gcloud.GROUP.COMMAND) STATUS: message` lines (or a failed
// operation's JSON); a RESOURCE_EXHAUSTED is a quota when its message, outside quoted names,
// has the word "quota", else a stockout ("There is no more capacity in the zone ...").
// A 5xx answer (gcloud's "HttpError accessing ... 'status': 503"), a status UNAVAILABLE, INTERNAL,
// UNKNOWN or DEADLINE_EXCEEDED, a RESOURCE_EXHAUSTED "per minute" (a rate limit), a connection
// refused or reset and a failed token refresh are kTransient.
GcloudFailure ClassifyGcloudWords(std::string_view stderr_text);
// The few words GcloudError::reason() gives for gcloud's stderr `stderr_text`.
std::string GcloudFailureReason(std::string_view stderr_text);

// How long a gcloud command may run, by what it does: a query (describe, list,
// get-guest-attributes), a create (returns when the request is taken: --async, or Compute
// Engine's operation on a template, policy or group) or a delete (waits until the resource is
// gone). $PODRUN_GCLOUD_TIMEOUT_SECONDS (tests) replaces them all.
inline constexpr std::chrono::seconds kGcloudQueryDeadline = std::chrono::minutes(2);
inline constexpr std::chrono::seconds kGcloudCreateDeadline = std::chrono::minutes(5);
inline constexpr std::chrono::seconds kGcloudDeleteDeadline = std::chrono::minutes(30);

// A gcloud command line and its deadline, both given by its builder (tpu_gcloud.h, mig_gcloud.h,
// ...), which knows what the command does: never read back from the words of argv, which hold
// names the user chose (a node called `delete`).
struct GcloudCommand {
  std::vector<std::string> argv;
  std::chrono::seconds deadline = kGcloudQueryDeadline;
};

// Runs gcloud with `command.argv` (RunProgram: a Ctrl-C noted meanwhile stops it) within its
// deadline; returns its stdout. Throws GcloudError: kInterrupted (exit 130) "WHAT: interrupted:
// `gcloud ... VERB` stopped", kTimedOut "WHAT: `gcloud ... VERB` did not end within N s: podrun
// stopped it", else exit 3 with gcloud's words.
std::string RunGcloud(const GcloudCommand& command, const std::string& what);
// As RunGcloud; nullopt when gcloud says NOT_FOUND.
std::optional<std::string> RunGcloudUnlessNotFound(const GcloudCommand& command,
                                                   const std::string& what);
// The same for a command line built elsewhere: a query (kGcloudQueryDeadline).
std::string RunGcloud(const std::vector<std::string>& argv, const std::string& what);
std::optional<std::string> RunGcloudUnlessNotFound(const std::vector<std::string>& argv,
                                                   const std::string& what);

}  // namespace podrun
