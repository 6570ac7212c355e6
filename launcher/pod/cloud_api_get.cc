// A GET of Compute Engine's REST API through libcurl (see cloud_api_get.h).
#include "launcher/pod/cloud_api_get.h"

#include <curl/curl.h>
#include <fmt/format.h>

#include <cctype>
#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>

#include "proto/interrupt_note.h"

namespace podrun {
namespace {

// The longest answer taken: a VM's guest attributes are a few KB.
constexpr size_t kMaxAnswerBytes = 4 << 20;
constexpr long kConnectTimeoutMs = 20'000;

struct CurlEasyFree {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct CurlListFree {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

void InitCurlOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct Transfer {
  std::string body;
  bool too_big = false;
  uint64_t interrupts_at_start = 0;
};

size_t Append(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  if (t->body.size() + size * n > kMaxAnswerBytes) {
    t->too_big = true;
    return 0;  // ends the transfer
  }
  t->body.append(data, size * n);
  return size * n;
}

int Progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return InterruptCount() != static_cast<Transfer*>(user)->interrupts_at_start ? 1 : 0;
}

// The API's error status and message ({"error": {"code", "message", "status"}}); "" when the
// body is not one.
std::string ApiWords(const std::string& body) {
  const nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  if (!j.is_object() || !j.contains("error") || !j["error"].is_object()) return "";
  const nlohmann::json& e = j["error"];
  std::string status = e.value("status", std::string());
  std::string message = e.value("message", std::string());
  if (message.size() > 500) message.resize(500);
  return status.empty() ? message : message.empty() ? status : status + ": " + message;
}

const char* ApiName(CloudApi api) {
  return api == CloudApi::kTpu ? "the TPU API" : "the Compute Engine API";
}

// What the path asks for, without its query (for messages).
std::string Asked(const std::string& path) { return path.substr(0, path.find('?')); }

// The request's headers: the token, and the quota project as gcloud sends it.
std::unique_ptr<curl_slist, CurlListFree> Headers(const CloudApiAccess& access, bool post) {
  std::unique_ptr<curl_slist, CurlListFree> headers;
  const auto add = [&](const std::string& header) {
    // On failure curl_slist_append returns null and leaves the list as it was.
    if (curl_slist* more = curl_slist_append(headers.get(), header.c_str())) {
      (void)headers.release();
      headers.reset(more);
    }
  };
  add("Authorization: Bearer " + access.token);
  add("Accept: application/json");
  if (!access.quota_project.empty()) add("X-Goog-User-Project: " + access.quota_project);
  if (post) add("Content-Type: application/json");
  return headers;
}

// The error of a transfer that did not end with a 200 or a 404 (`rc`, then the HTTP `status`
// and `body`).
[[noreturn]] void ThrowFailure(CloudApi api, CURLcode rc, const Transfer& t, long status,
                               const std::string& asked, const std::string& what) {
  if (rc == CURLE_ABORTED_BY_CALLBACK) {
    throw GcloudError(ExitCode::kInterrupted,
                      fmt::format("{}: interrupted: {}'s {} stopped", what, ApiName(api), asked),
                      GcloudFailure::kInterrupted);
  }
  if (rc == CURLE_OPERATION_TIMEDOUT) {
    throw GcloudError(ExitCode::kUnreachable,
                      fmt::format("{}: {} did not answer {} within {} s", what, ApiName(api), asked,
                                  kGcloudQueryDeadline.count()),
                      GcloudFailure::kTimedOut,
                      fmt::format("no answer within {} s", kGcloudQueryDeadline.count()));
  }
  if (t.too_big) {
    throw GcloudError(ExitCode::kUnreachable,
                      fmt::format("{}: {}'s answer to {} is over {} MiB", what, ApiName(api), asked,
                                  kMaxAnswerBytes >> 20),
                      GcloudFailure::kFailed);
  }
  if (rc != CURLE_OK) {
    // A refused, reset or unresolved connection can be the network's bad minute; a certificate
    // that does not verify is not.
    const bool certificate = rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE;
    throw GcloudError(
        ExitCode::kUnreachable,
        fmt::format("{}: {}'s {} failed: {}", what, ApiName(api), asked, curl_easy_strerror(rc)),
        certificate ? GcloudFailure::kFailed : GcloudFailure::kTransient, curl_easy_strerror(rc));
  }
  const std::string words = ApiWords(t.body);
  const std::string message = fmt::format("{}: {} answered {} with HTTP {}{}", what, ApiName(api),
                                          asked, status, words.empty() ? "" : ": " + words);
  const std::string reason = fmt::format("HTTP {}", status);
  if (status == 401) {
    throw CloudApiTokenRefused(ExitCode::kUnreachable, message, GcloudFailure::kFailed, reason);
  }
  const bool transient = status >= 500 || status == 429 || status == 408;
  throw GcloudError(ExitCode::kUnreachable, message,
                    transient ? GcloudFailure::kTransient : GcloudFailure::kFailed, reason);
}

// `body`: a POST of it, else a GET.
std::optional<std::string> Request(const CloudApiAccess& access, CloudApi api,
                                   const std::string& path, const std::optional<std::string>& body,
                                   const std::string& what) {
  const bool post = body.has_value();
  InitCurlOnce();
  std::unique_ptr<CURL, CurlEasyFree> curl(curl_easy_init());
  if (!curl) {
    throw GcloudError(ExitCode::kUnreachable, what + ": libcurl could not start a request",
                      GcloudFailure::kCouldNotRun);
  }
  const std::string url =
      (api == CloudApi::kTpu ? access.tpu_endpoint : access.compute_endpoint) + path;
  const std::unique_ptr<curl_slist, CurlListFree> headers = Headers(access, post);
  Transfer t;
  t.interrupts_at_start = InterruptCount();
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(c, CURLOPT_USERAGENT, "podrun/" PODRUN_VERSION);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, kConnectTimeoutMs);
  const auto deadline = std::chrono::duration_cast<std::chrono::milliseconds>(kGcloudQueryDeadline);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(deadline.count()));
  if (!access.ca_file.empty()) curl_easy_setopt(c, CURLOPT_CAINFO, access.ca_file.c_str());
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, Append);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, Progress);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, &t);
  if (post) {
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, static_cast<long>(body->size()));
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body->c_str());
  }
  const CURLcode rc = curl_easy_perform(c);
  const std::string asked = (post ? "POST " : "GET ") + Asked(path);
  long status = 0;
  if (rc == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  if (status == 200 && !t.too_big) return std::move(t.body);
  if (status == 404) return std::nullopt;
  ThrowFailure(api, rc, t, status, asked, what);
}

}  // namespace

std::string CloudApiQueryValue(const std::string& text) {
  std::string out;
  for (const unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

bool Reaches(const CloudApiAccess& access, CloudApi api) {
  return !(api == CloudApi::kTpu ? access.tpu_endpoint : access.compute_endpoint).empty();
}

std::optional<std::string> CloudApiGet(const CloudApiAccess& access, CloudApi api,
                                       const std::string& path, const std::string& what) {
  return Request(access, api, path, std::nullopt, what);
}

std::optional<std::string> CloudApiPost(const CloudApiAccess& access, CloudApi api,
                                        const std::string& path, const std::string& body,
                                        const std::string& what) {
  return Request(access, api, path, body, what);
}

std::optional<std::string> CloudApiList(const CloudApiAccess& access, CloudApi api,
                                        const std::string& path, const std::string& items_key,
                                        bool post, const std::string& what) {
  nlohmann::json all = nlohmann::json::array();
  std::string token;
  for (int page = 0; page < 100; ++page) {
    const std::string asked = token.empty()
                                  ? path
                                  : path + (path.find('?') == std::string::npos ? "?" : "&") +
                                        "pageToken=" + CloudApiQueryValue(token);
    const std::optional<std::string> body =
        Request(access, api, asked, post ? std::optional<std::string>("") : std::nullopt, what);
    if (!body) return std::nullopt;
    const nlohmann::json j = nlohmann::json::parse(*body, nullptr, false);
    if (!j.is_object()) {
      throw GcloudError(ExitCode::kUnreachable,
                        fmt::format("{}: {}'s answer to {} is not a JSON object", what,
                                    ApiName(api), Asked(path)),
                        GcloudFailure::kFailed);
    }
    if (auto items = j.find(items_key); items != j.end() && items->is_array()) {
      for (const nlohmann::json& item : *items) all.push_back(item);
    }
    auto next = j.find("nextPageToken");
    if (next == j.end() || !next->is_string() || next->get<std::string>().empty()) break;
    token = next->get<std::string>();
  }
  return all.dump();
}

}  // namespace podrun
