// Editing a known_hosts file: removing hosts in one pass, as `ssh-keygen -R` does for one host (a
// VM podrun recreated has new host keys, and a node of 64 workers would otherwise cost 64
// ssh-keygen runs, each rewriting the whole file), pinning keys, recording a key on first use.
// Every edit holds an exclusive lock (flock on `FILE.podrun-lock` beside it) around its
// read-modify-rename, and a rewrite goes through a scratch file of a unique name: two podrun
// processes (two keepers, a keeper and a launch) never lose each other's lines.
#pragma once

#include <string>
#include <vector>

namespace podrun {

// One known_hosts line to write: `name` (as known_hosts writes it: "host", or "[host]:port"
// for another port than 22), the key type, the key (base64), an optional comment. The caller
// vouches for the fields (no whitespace or control characters).
struct KnownHostsEntry {
  std::string name, type, base64, comment;
};

// Under the file's lock: removes every line of the known_hosts file `path` that names one of
// `names`, plainly (one of its comma-separated names) or hashed (`|1|salt|hash`, HMAC-SHA1 of
// the name keyed by the salt), then appends `entries`, their names hashed when the file already
// holds hashed names (as HashKnownHosts does), else plain. Comments, marker lines
// (@cert-authority, @revoked) and other hosts' lines are kept as they are. The file is
// rewritten through a scratch file of a unique name beside it (0600) renamed over it; a missing
// file is created (0600, its directory 0700) only when there are entries. Returns the number
// of lines removed (no rewrite when nothing changes). Throws podrun::Error (kFailed) naming the
// file when it is a symbolic link (never rewritten) or cannot be read or written.
int ReplaceKnownHosts(const std::string& path, const std::vector<std::string>& names,
                      const std::vector<KnownHostsEntry>& entries);

// ReplaceKnownHosts(path, names, {}).
int RemoveKnownHosts(const std::string& path, const std::vector<std::string>& names);

// Under the file's lock, appends `line` (one known_hosts line, its newline added when missing)
// to `path`, never through a symbolic link; a missing file is created 0600 (its directory 0700).
// Throws podrun::Error (kFailed) naming the file.
void AppendKnownHosts(const std::string& path, std::string line);

// `name` hashed as OpenSSH's HashKnownHosts writes it: "|1|" base64(salt) "|" base64(HMAC-SHA1
// of name keyed by salt), with a fresh random salt.
std::string HashKnownHostsName(const std::string& name);

}  // namespace podrun
