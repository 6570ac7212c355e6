// Reads of Google's REST APIs (Compute Engine, Cloud TPU; libcurl) with the access gcloud gave
// (cloud_api_access.h), each failure classified as a gcloud command's is (gcloud_run.h), so that
// discovery and recovery treat both alike.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "launcher/pod/cloud_api_access.h"
#include "launcher/pod/gcloud_run.h"

namespace podrun {

// Which API a call is for: its endpoint, and its name in messages.
enum class CloudApi { kCompute, kTpu };

// The API refused the token (HTTP 401): gcloud is to be asked for another, or to make the call.
class CloudApiTokenRefused : public GcloudError {
 public:
  using GcloudError::GcloudError;
};

// GETs `path` of `api` ("projects/P/zones/Z/instances/I/getGuestAttributes?...") with
// the token in the Authorization header; certificates are verified, redirects not followed,
// proxies taken from the environment (HTTPS_PROXY, NO_PROXY) as gcloud does. Returns the body
// of a 200; nullopt for a 404. Throws GcloudError naming `what` and the path: kInterrupted on
// a Ctrl-C noted meanwhile, kTimedOut past kGcloudQueryDeadline, kTransient for a 5xx, a 429
// or a connection that failed, CloudApiTokenRefused for a 401, else kFailed with the API's
// own message.
std::optional<std::string> CloudApiGet(const CloudApiAccess& access, CloudApi api,
                                       const std::string& path, const std::string& what);
// The same as a POST of `body` (JSON): for the methods that only read but are POSTs
// (the TPU API's getGuestAttributes).
std::optional<std::string> CloudApiPost(const CloudApiAccess& access, CloudApi api,
                                        const std::string& path, const std::string& body,
                                        const std::string& what);

// The items of a list method, every page (`pageToken`, at most 100 pages) merged into one JSON
// array, as gcloud prints a list: `path` with its query ("...?maxResults=500"); the answer's
// array `items_key` ("items", "managedInstances"). `post`: the method is a POST with an empty
// body (listManagedInstances). nullopt for a 404; throws as CloudApiGet.
std::optional<std::string> CloudApiList(const CloudApiAccess& access, CloudApi api,
                                        const std::string& path, const std::string& items_key,
                                        bool post, const std::string& what);

// `text` as a URL's query value: every byte but letters, digits and -._~ as %XX.
std::string CloudApiQueryValue(const std::string& text);

// True when `access` has an endpoint for `api`.
bool Reaches(const CloudApiAccess& access, CloudApi api);

// `read(access, project)` when gcloud's access may be used for `api` (GcloudApiAccess) and the
// project is known (`project`, else gcloud's configured one); else `gcloud()`, also when the API
// refuses the token (which is then forgotten: gcloud refreshes its own).
template <typename T>
T ThroughApiElseGcloud(CloudApi api, const std::optional<std::string>& project,
                       const std::function<T(const CloudApiAccess&, const std::string&)>& read,
                       const std::function<T()>& gcloud) {
  if (std::optional<CloudApiAccess> access = GcloudApiAccess(); access && Reaches(*access, api)) {
    const std::string p = project.value_or(access->project);
    if (!p.empty()) {
      try {
        return read(*access, p);
      } catch (const CloudApiTokenRefused&) {
        ForgetGcloudApiAccess();
      }
    }
  }
  return gcloud();
}

}  // namespace podrun
