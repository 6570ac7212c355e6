// Removing hosts from a known_hosts file in one pass, as `ssh-keygen -R` does for one host: a
// VM podrun recreated has new host keys, and a node of 64 workers would otherwise cost 64
// ssh-keygen runs, each rewriting the whole file.
#pragma once

#include <string>
#include <vector>

namespace podrun {

// Removes every line of the known_hosts file `path` that names one of `names` (as known_hosts
// writes them: "host", or "[host]:port" for another port than 22), plainly (one of its
// comma-separated names) or hashed (`|1|salt|hash`, HMAC-SHA1 of the name keyed by the salt).
// Comments, marker lines (@cert-authority, @revoked) and other hosts' lines are kept as they
// are. The file is rewritten through a scratch file beside it (0600) renamed over it. Returns
// the number of lines removed (0, and no rewrite, when none named a host; nothing when the file
// does not exist). Throws podrun::Error (kFailed) naming the file when it is a symbolic link
// (never rewritten) or cannot be read or written.
int RemoveKnownHosts(const std::string& path, const std::vector<std::string>& names);

}  // namespace podrun
