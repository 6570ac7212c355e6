// The keeper's environment (docs/design.md decision 21): an allow-list of what it needs from
// the environment of whoever started it, not that whole environment (a keeper lives for days
// and outlives the terminal): HOME and PATH; SSH_AUTH_SOCK (the user's agent, for SSH);
// CLOUDSDK_* (gcloud's own settings); HTTPS_PROXY, HTTP_PROXY, NO_PROXY and their lower-case
// forms (so gcloud reaches Google behind a proxy); PODRUN_* (podrun's); and the values of the
// job's secret_env names, which a restart hands to the workers again (never written anywhere).
// PODRUN_PERSIST is always 0 there: a keeper connects on its own, never through the connection
// holder.
#pragma once

#include <string>
#include <vector>

namespace podrun {

// The "NAME=value" entries of `environ` (a null-terminated array, as ::environ) that the keeper
// keeps, in their order.
std::vector<std::string> KeeperEnvironment(const char* const* environ,
                                           const std::vector<std::string>& secret_names);

}  // namespace podrun
