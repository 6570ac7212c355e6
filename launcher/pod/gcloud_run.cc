// Running gcloud, reading how it failed (see gcloud_run.h).
#include "launcher/pod/gcloud_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "proto/run_program.h"

namespace podrun {
namespace {

std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

// `text` without what is quoted in it ('...', "..."): resource paths, metric names, zones.
std::string Unquoted(std::string_view text) {
  std::string out;
  char quote = 0;
  for (char c : text) {
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  return out;
}

// True when `word` stands alone in `text` (lowercase): not inside a name like my-quota-lab.
bool HasWord(const std::string& text, std::string_view word) {
  auto part_of_name = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  };
  for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
    const bool before = at > 0 && part_of_name(text[at - 1]);
    const size_t end = at + word.size();
    // "quota." ends a sentence; "quota.x" is a name.
    const bool after = end < text.size() && part_of_name(text[end]) &&
                       !(text[end] == '.' && (end + 1 == text.size() || text[end + 1] == ' '));
    if (!before && !after) return true;
  }
  return false;
}

// The HTTP status of gcloud's "HttpError accessing <URL>: response: <{... 'status': '503'}>"
// (500 and 503, after gcloud's own retries), or of Compute's "HTTPError 503: ..."; 0 when none.
int HttpStatusOf(std::string_view words) {
  for (std::string_view mark : {"'status': '", "'status': ", "HTTPError "}) {
    const size_t at = words.find(mark);
    if (at == words.npos) continue;
    int status = 0;
    for (size_t i = at + mark.size();
         i < words.size() && std::isdigit(static_cast<unsigned char>(words[i])) && status < 1000;
         ++i) {
      status = status * 10 + (words[i] - '0');
    }
    if (status >= 100 && status < 600) return status;
  }
  return 0;
}

// gcloud's status word: "UNAVAILABLE" of "ERROR: (gcloud.compute.tpus.tpu-vm.describe)
// UNAVAILABLE: message"; empty when the last ERROR line has none (an operation's JSON, "HttpError
// accessing <URL>").
std::string_view StatusWordOf(std::string_view words) {
  const size_t error = words.rfind("ERROR: (");
  if (error == words.npos) return {};
  const std::string_view line = words.substr(error);
  const size_t paren = line.find(") ");
  if (paren == line.npos) return {};
  const std::string_view rest = line.substr(paren + 2);
  const std::string_view status = rest.substr(0, rest.find(": "));
  const bool word = !status.empty() && std::all_of(status.begin(), status.end(), [](char c) {
    return std::isupper(static_cast<unsigned char>(c)) || c == '_';
  });
  return word ? status : std::string_view();
}

// True for the words of a network that failed or a token that could not be refreshed: outside
// quoted names, so that a node named "connection-refused" is not one.
bool SaysNetworkOrTokenFailure(std::string_view words) {
  const std::string plain = Unquoted(words);
  for (std::string_view phrase :
       {"connection refused", "connection reset", "connection aborted", "connectionerror",
        "failed to establish a new connection", "max retries exceeded", "temporary failure in name",
        "there was a problem refreshing your current auth tokens", "timed out",
        "network connectivity issues", "remote end closed connection"}) {
    if (plain.find(phrase) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

bool IsTransientGcloudFailure(GcloudFailure failure) {
  return failure == GcloudFailure::kTransient || failure == GcloudFailure::kTimedOut;
}

std::string GcloudFailureReason(std::string_view words) {
  const std::string_view status = StatusWordOf(words);
  if (const int http = HttpStatusOf(words)) {
    return status.empty() ? fmt::format("HTTP {}", http) : fmt::format("{} {}", http, status);
  }
  if (!status.empty()) return std::string(status);
  if (SaysNetworkOrTokenFailure(words)) {
    if (Unquoted(words).find("refreshing your current auth tokens") != std::string::npos) {
      return "a failed token refresh";
    }
    return "a network failure";
  }
  return "";
}

GcloudFailure ClassifyGcloudWords(std::string_view words) {
  // The status: "ERROR: (gcloud.compute.tpus.tpu-vm.create) RESOURCE_EXHAUSTED: ..." or a failed
  // operation's {"code": 8, "message": "..."} (8: RESOURCE_EXHAUSTED, 5: NOT_FOUND).
  std::string_view message;
  std::string_view status;
  // A failed operation: the JSON after the ERROR line's context, its "code" field exactly (a
  // 503 is no NOT_FOUND, an 80 no RESOURCE_EXHAUSTED).
  std::optional<int64_t> operation_code;
  std::string operation_message;
  // Warnings may come first: the ERROR line is the last one's.
  if (const size_t error = words.rfind("ERROR: ("); error != words.npos) {
    const std::string_view line = words.substr(error);
    const size_t paren = line.find(") ");
    const std::string_view rest = paren == line.npos ? std::string_view() : line.substr(paren + 2);
    if (rest.starts_with('{')) {
      const nlohmann::json j = nlohmann::json::parse(rest, nullptr, /*allow_exceptions=*/false);
      if (j.is_object() && j.contains("code") && j["code"].is_number_integer()) {
        operation_code = j["code"].get<int64_t>();
        if (j.contains("message") && j["message"].is_string()) {
          operation_message = j["message"].get<std::string>();
        }
      }
    } else {
      const size_t colon = rest.find(": ");
      status = rest.substr(0, colon);
      message = colon == rest.npos ? std::string_view() : rest.substr(colon + 2);
    }
  }
  const bool operation_code_8 = operation_code == 8;
  const bool operation_code_5 = operation_code == 5;
  if (operation_code_8) message = operation_message;
  // Compute Engine's forms: "Some requests did not succeed:" or "Could not fetch resource:" then
  // " - The resource 'projects/...' was not found" (a quoted name never holds a space, so the
  // words cannot come from one); "HTTPError 404: ..." (managed describe, get-guest-attributes).
  const bool compute_not_found = (words.find(" - The resource '") != words.npos &&
                                  words.find("' was not found") != words.npos) ||
                                 words.find("HTTPError 404") != words.npos;
  if (status == "NOT_FOUND" || operation_code_5 || compute_not_found) {
    return GcloudFailure::kNotFound;
  }
  // Compute Engine's 409: " - The resource 'projects/...' already exists".
  const bool compute_exists =
      words.find(" - The resource '") != words.npos && words.find("' already exists") != words.npos;
  if (status == "ALREADY_EXISTS" || compute_exists) return GcloudFailure::kExists;
  if (status == "RESOURCE_EXHAUSTED" || operation_code_8) {
    if (message.empty()) message = words;
    const std::string plain = Unquoted(message);
    if (plain.find("no more capacity") != std::string::npos) return GcloudFailure::kStockout;
    // A rate limit ("Quota exceeded for quota metric 'Read requests' ... per minute") passes.
    if (plain.find("per minute") != std::string::npos) return GcloudFailure::kTransient;
    return HasWord(plain, "quota") ? GcloudFailure::kQuota : GcloudFailure::kStockout;
  }
  // The API's bad minutes: a 5xx, UNAVAILABLE (14), INTERNAL (13), DEADLINE_EXCEEDED (4).
  if (status == "UNAVAILABLE" || status == "INTERNAL" || status == "UNKNOWN" ||
      status == "DEADLINE_EXCEEDED" || HttpStatusOf(words) >= 500 ||
      (operation_code && (*operation_code == 14 || *operation_code == 13 ||
                          *operation_code == 4)) ||
      SaysNetworkOrTokenFailure(words)) {
    return GcloudFailure::kTransient;
  }
  return GcloudFailure::kFailed;
}

namespace {

// The command's deadline, unless $PODRUN_GCLOUD_TIMEOUT_SECONDS (tests) replaces it.
std::chrono::seconds DeadlineOf(const GcloudCommand& command) {
  if (const char* env = std::getenv("PODRUN_GCLOUD_TIMEOUT_SECONDS")) {
    if (const int seconds = std::atoi(env); seconds > 0) return std::chrono::seconds(seconds);
  }
  return command.deadline;
}

}  // namespace

namespace {

GcloudError FailureOf(const std::vector<std::string>& argv, const ProgramResult& r,
                      const std::string& what, std::chrono::seconds deadline) {
  const std::string message = Trimmed(r.err);
  const std::string verb = argv.size() > 4 ? argv[3] + " " + argv[4] : "";
  if (r.interrupted) {
    return GcloudError(ExitCode::kInterrupted,
                       fmt::format("{}: interrupted: `{} ... {}` stopped", what, argv[0], verb),
                       GcloudFailure::kInterrupted);
  }
  if (r.timed_out) {
    return GcloudError(
        ExitCode::kUnreachable,
        fmt::format("{}: `{} ... {}` did not end within {} s: podrun stopped it (is gcloud "
                    "waiting for the network, or for an answer to a prompt? run the command "
                    "by hand to see){}",
                    what, argv[0], verb, deadline.count(), message.empty() ? "" : ":\n" + message),
        GcloudFailure::kTimedOut, fmt::format("no answer within {} s", deadline.count()));
  }
  return GcloudError(ExitCode::kUnreachable,
                     fmt::format("{}: `{} ... {}` failed{}{}", what, argv[0], verb,
                                 r.exit_code > 0 ? fmt::format(" (exit {})", r.exit_code) : "",
                                 message.empty() ? "" : ":\n" + message),
                     r.exit_code < 0 ? GcloudFailure::kCouldNotRun : ClassifyGcloudWords(r.err),
                     GcloudFailureReason(r.err));
}

}  // namespace

std::string RunGcloud(const GcloudCommand& command, const std::string& what) {
  const std::chrono::seconds deadline = DeadlineOf(command);
  ProgramResult r = RunProgramWithin(command.argv, deadline);
  if (r.exit_code == 0 && !r.interrupted && !r.timed_out) return r.out;
  throw FailureOf(command.argv, r, what, deadline);
}

std::optional<std::string> RunGcloudUnlessNotFound(const GcloudCommand& command,
                                                   const std::string& what) {
  try {
    return RunGcloud(command, what);
  } catch (const GcloudError& e) {
    if (e.failure() == GcloudFailure::kNotFound) return std::nullopt;
    throw;
  }
}

std::string RunGcloud(const std::vector<std::string>& argv, const std::string& what) {
  return RunGcloud(GcloudCommand{argv, kGcloudQueryDeadline}, what);
}

std::optional<std::string> RunGcloudUnlessNotFound(const std::vector<std::string>& argv,
                                                   const std::string& what) {
  return RunGcloudUnlessNotFound(GcloudCommand{argv, kGcloudQueryDeadline}, what);
}

}  // namespace podrun
