// Locating, hashing and compressing the agent binary.
#include "launcher/agent_link/agent_binary.h"

#include <fmt/format.h>
#include <openssl/evp.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "launcher/base/error.h"
#include "proto/sha256.h"

namespace podrun {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ExitCode::kUnreachable, fmt::format("cannot read agent binary {}", path));
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string Gzip(const std::string& data) {
  z_stream z{};
  // windowBits 15 + 16: gzip framing, so that `gzip -dc` on the worker unpacks it.
  deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, data.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

}  // namespace

AgentBinary::AgentBinary(std::string path) : path_(std::move(path)) {
  // Hashed in pieces as read: every command that reaches an agent does this, so it costs a
  // few milliseconds, not a copy of the whole binary.
  std::ifstream in(path_, std::ios::binary);
  if (!in) throw Error(ExitCode::kUnreachable, fmt::format("cannot read agent binary {}", path_));
  Sha256 hash;
  std::vector<char> buffer(1u << 20);
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    const auto got = static_cast<size_t>(in.gcount());
    hash.Update(std::string_view(buffer.data(), got));
    size_ += got;
  }
  if (in.bad()) {
    throw Error(ExitCode::kUnreachable, fmt::format("cannot read agent binary {}", path_));
  }
  sha256_ = hash.FinishHex();
}

const std::string& AgentBinary::gzipped() const {
  std::call_once(gzip_once_, [this] { gzipped_ = Gzip(ReadFile(path_)); });
  return gzipped_;
}

std::string AgentBinary::Locate() {
  // An explicit choice wins over anything found beside the binary.
  for (const char* name : {"PODRUN_AGENT", "PODRUN_AGENT_BINARY"}) {
    if (const char* env = std::getenv(name); env && *env) {
      if (::access(env, X_OK) == 0) return env;
      throw Error(ExitCode::kUnreachable,
                  fmt::format("${} is {}, which is not an executable file", name, env));
    }
  }
  // Relative to the running podrun itself, so an installed copy finds its own agent wherever
  // its prefix was moved to.
  std::vector<std::filesystem::path> candidates;
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    auto dir = self.parent_path();    // <prefix>/bin or <build>/launcher
    auto prefix = dir.parent_path();  // <prefix> or <build>
    candidates.push_back(dir / "podrun-agent");
    candidates.push_back(prefix / "lib" / "podrun" / "podrun-agent");
    candidates.push_back(prefix / "libexec" / "podrun" / "podrun-agent");
    candidates.push_back(prefix / "worker" / "podrun-agent");  // the build tree
  }
  for (const auto& c : candidates) {
    if (::access(c.c_str(), X_OK) == 0) return c.string();
  }
  std::string looked;
  for (const auto& c : candidates) looked.append(" ").append(c.string());
  throw Error(ExitCode::kUnreachable,
              fmt::format("cannot find podrun-agent (looked at:{}); set PODRUN_AGENT", looked));
}

}  // namespace podrun
