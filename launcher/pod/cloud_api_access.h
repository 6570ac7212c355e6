// What podrun needs to read Google's REST APIs (Compute Engine, Cloud TPU) itself, taken from the
// user's own gcloud (docs/decisions.md, "A MIG's host keys read through the API, with gcloud's
// token"): one `gcloud config config-helper --format=json` (gcloud's helper for external tools)
// gives the access token, the endpoints (api_endpoint_overrides/compute and /tpu), the CA file
// and the project. The
// token is kept in this process's memory only, never on disk or on a command line, and is asked
// for again before it expires.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace podrun {

struct CloudApiAccess {
  // Each ends with '/'; "" where gcloud's universe is another without an override (gcloud then
  // makes that API's calls).
  std::string compute_endpoint;  // "https://compute.googleapis.com/compute/v1/"
  std::string tpu_endpoint;      // "https://tpu.googleapis.com/"
  std::string token;             // an OAuth access token (sent as "Authorization: Bearer ...")
  std::string ca_file;           // core/custom_ca_certs_file; "" for the system's
  std::string project;           // core/project; "" when gcloud has none configured
  // billing/quota_project, sent as X-Goog-User-Project as gcloud does ("CURRENT_PROJECT":
  // core/project); "" for none.
  std::string quota_project;
  std::chrono::system_clock::time_point expiry;  // when to ask gcloud again
};

// Reads config-helper's JSON (taken at `now`). nullopt, with `*why`, when podrun must leave the
// calls to gcloud itself: gcloud's config sets a proxy (proxy/*) or a client certificate
// (context_aware/*), another universe than googleapis.com without an override of either endpoint,
// an endpoint that is neither https nor http on loopback (a token never crosses a network in
// clear), or there is no token. A token without an expiry (an access-token file) is asked for
// again after 5 minutes; any other, 2 minutes before it expires.
std::optional<CloudApiAccess> ParseGcloudConfigHelper(std::string_view json,
                                                      std::chrono::system_clock::time_point now,
                                                      std::string* why);

// The access of the user's gcloud, asked for once and kept until it is due again; nullopt when
// gcloud cannot give one that podrun may use (remembered for 10 minutes; a config-helper that
// failed, for five): the caller then runs gcloud for each call, as before. Any thread; gcloud
// runs outside the lock.
std::optional<CloudApiAccess> GcloudApiAccess();
// Forgets the kept access (the API refused its token: HTTP 401).
void ForgetGcloudApiAccess();

}  // namespace podrun
