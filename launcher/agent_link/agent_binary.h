// The podrun-agent binary the launcher installs on workers: where it is on this machine, its
// content hash (the name it gets on workers), and its gzip-compressed bytes for upload.
#pragma once

#include <mutex>
#include <string>

namespace podrun {

class AgentBinary {
 public:
  // Returns the agent's path: $PODRUN_AGENT (or $PODRUN_AGENT_BINARY) if set, else, relative
  // to the running podrun (/proc/self/exe) in <dir>: <dir>/podrun-agent,
  // <dir>/../lib/podrun/podrun-agent, <dir>/../libexec/podrun/podrun-agent, and the build
  // tree's <dir>/../worker/podrun-agent. Throws Error(kUnreachable) naming the places looked at,
  // or when the variable names a file that is not executable.
  static std::string Locate();
  explicit AgentBinary(std::string path);

  const std::string& path() const { return path_; }
  // Hex SHA-256 of the binary's bytes.
  const std::string& sha256() const { return sha256_; }
  // The file name on workers: podrun-agent-<first 16 hex digits of sha256>.
  std::string remote_name() const { return "podrun-agent-" + sha256_.substr(0, 16); }
  size_t size() const { return size_; }
  // The binary in gzip format (computed once, on first use; thread-safe).
  const std::string& gzipped() const;

 private:
  std::string path_;
  std::string sha256_;
  size_t size_ = 0;
  mutable std::once_flag gzip_once_;
  mutable std::string gzipped_;
};

}  // namespace podrun
