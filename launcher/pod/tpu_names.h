// The names podrun hands to gcloud and uses in cache paths, checked against what the Cloud TPU
// and Resource Manager APIs allow before any use (docs/reference.md, "Discovery"): a name that
// starts with '-' would be read by gcloud as an option, and one with '/' or ".." would leave
// the cache directory.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launcher/pod/tpu_discovery.h"

namespace podrun {

// The node names of a `tpu:` / --tpu list ("A" or "A,B" for a multislice pod), in order. Empty
// names are kept ("A,,B", "A,") for the checks to refuse.
std::vector<std::string> SplitTpuNames(const std::string& list);

// Why `name` is not a TPU node name, or "" when it is: 1 to 63 lowercase letters, digits and
// hyphens, starting with a letter, not ending with a hyphen.
std::string TpuNodeNameProblem(const std::string& name);
// Why `zone` is not a zone name (like us-central1-a), or "": 1 to 63 lowercase letters, digits
// and hyphens, starting with a letter, not ending with a hyphen.
std::string ZoneNameProblem(const std::string& zone);
// Why `project` is not a project id, or "": 6 to 30 lowercase letters, digits and hyphens,
// starting with a letter, not ending with a hyphen; a domain-scoped id (`example.com:my-project`)
// may put a domain of lowercase letters, digits, dots and hyphens before the id.
std::string ProjectIdProblem(const std::string& project);

// The first problem of --tpu (each name of a comma-separated list), --zone or --project, as
// "--zone '-x': <why>", or "" when every one is valid. Empty optionals are not checked.
std::string TpuOptionsProblem(const std::optional<std::string>& tpu,
                              const std::optional<std::string>& zone,
                              const std::optional<std::string>& project);

// Throws Error(kUsage) "tpu name 'A/B': <why>" unless every name in `query` is valid.
void CheckSliceRef(const SliceRef& query);

}  // namespace podrun
