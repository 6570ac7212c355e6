// Finding the programs `podrun why` runs on a worker (gdb, py-spy, timeout, sudo, head) only where
// no one but root can change them (docs/reference.md, "podrun why"): a PATH entry the user, or
// anyone else, can write is never searched, so a program a job planted cannot be run by the agent,
// least of all as root through sudo.
#pragma once

#include <string>
#include <vector>

namespace podrun::agent {

// True when `path` (absolute) resolves, symbolic links followed, to a regular executable file
// owned by root and writable by no one else, in directories that are all (from "/") owned by
// root and writable by no one else.
bool IsTrustedProgram(const std::string& path);

// True when the directory `dir` and each above it are owned by root and writable by no one
// else (symbolic links followed).
bool IsTrustedDirectory(const std::string& dir);

// The first `name` in `dirs` (absolute entries only) that IsTrustedProgram, as its resolved
// path; "" when none is.
std::string FindTrustedProgram(const std::vector<std::string>& dirs, const std::string& name);

// Where programs are looked for by default: $PATH's absolute entries, then /usr/local/sbin,
// /usr/local/bin, /usr/sbin, /usr/bin, /sbin, /bin (FindTrustedProgram skips the untrusted).
std::vector<std::string> ProgramSearchDirs();

}  // namespace podrun::agent
