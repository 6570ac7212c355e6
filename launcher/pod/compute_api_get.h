// One GET of Compute Engine's REST API (libcurl) with the access gcloud gave
// (compute_api_access.h), its failure classified as a gcloud command's is (gcloud_run.h), so
// that discovery and recovery treat both alike.
#pragma once

#include <optional>
#include <string>

#include "launcher/pod/compute_api_access.h"
#include "launcher/pod/gcloud_run.h"

namespace podrun {

// The API refused the token (HTTP 401): gcloud is to be asked for another, or to make the call.
class ComputeApiTokenRefused : public GcloudError {
 public:
  using GcloudError::GcloudError;
};

// GETs `access.endpoint + path` ("projects/P/zones/Z/instances/I/getGuestAttributes?...") with
// the token in the Authorization header; certificates are verified, redirects not followed,
// proxies taken from the environment (HTTPS_PROXY, NO_PROXY) as gcloud does. Returns the body
// of a 200; nullopt for a 404. Throws GcloudError naming `what` and the path: kInterrupted on
// a Ctrl-C noted meanwhile, kTimedOut past kGcloudQueryDeadline, kTransient for a 5xx, a 429
// or a connection that failed, ComputeApiTokenRefused for a 401, else kFailed with the API's
// own message.
std::optional<std::string> ComputeApiGet(const ComputeApiAccess& access, const std::string& path,
                                         const std::string& what);

}  // namespace podrun
