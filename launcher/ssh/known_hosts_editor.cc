// See known_hosts_editor.h.
#include "launcher/ssh/known_hosts_editor.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "launcher/base/atomic_file.h"
#include "launcher/base/error.h"
#include "proto/unique_fd.h"
#include "proto/write_all.h"

namespace podrun {
namespace {

Error FileError(const std::string& path, const std::string& what) {
  return Error(ExitCode::kFailed, fmt::format("{}: {}", path, what));
}

// Standard base64 to bytes; "" when malformed.
std::string DecodeBase64(const std::string& text) {
  if (text.empty() || text.size() % 4 != 0) return "";
  std::string out(text.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()),
                                static_cast<int>(text.size()));
  if (n < 0) return "";
  size_t pad = 0;
  for (size_t i = text.size(); i > 0 && text[i - 1] == '='; --i) ++pad;
  out.resize(static_cast<size_t>(n) - pad);
  return out;
}

// True when the hashed entry `|1|salt|hash` names one of `names`.
bool HashedNames(const std::string& entry, const std::set<std::string>& names) {
  const size_t bar = entry.find('|', 3);
  if (bar == std::string::npos) return false;
  const std::string salt = DecodeBase64(entry.substr(3, bar - 3));
  const std::string hash = DecodeBase64(entry.substr(bar + 1));
  if (salt.empty() || hash.empty()) return false;
  for (const std::string& name : names) {
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    HMAC(EVP_sha1(), salt.data(), static_cast<int>(salt.size()),
         reinterpret_cast<const unsigned char*>(name.data()), name.size(), mac, &length);
    if (hash.size() == length && std::memcmp(hash.data(), mac, length) == 0) return true;
  }
  return false;
}

// True when the known_hosts line `line` names one of `names`.
bool LineNames(const std::string& line, const std::set<std::string>& names) {
  const size_t start = line.find_first_not_of(" \t");
  if (start == std::string::npos || line[start] == '#' || line[start] == '@') return false;
  const size_t end = line.find_first_of(" \t", start);
  const std::string field = line.substr(start, end == std::string::npos ? end : end - start);
  if (field.starts_with("|1|")) return HashedNames(field, names);
  std::stringstream patterns(field);
  for (std::string name; std::getline(patterns, name, ',');) {
    if (names.count(name)) return true;
  }
  return false;
}

std::string EncodeBase64(const unsigned char* data, size_t size) {
  std::string out((size + 2) / 3 * 4 + 1, '\0');
  const int n =
      EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), data, static_cast<int>(size));
  out.resize(static_cast<size_t>(std::max(n, 0)));
  return out;
}

// Makes the directory of `path` (0700) when it is missing.
void MakeParent(const std::string& path) {
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  std::error_code ignored;
  if (!dir.empty() && !std::filesystem::exists(dir, ignored)) {
    std::filesystem::create_directories(dir, ignored);
    ::chmod(dir.c_str(), 0700);
  }
}

// An exclusive flock on `known_hosts`.podrun-lock, held while it lives. The lock file stays (an
// unlinked lock file would let two processes hold "the" lock on two files).
class KnownHostsLock {
 public:
  explicit KnownHostsLock(const std::string& known_hosts) {
    MakeParent(known_hosts);
    const std::string path = known_hosts + ".podrun-lock";
    fd_.reset(::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd_) throw FileError(path, std::strerror(errno));
    while (::flock(fd_.get(), LOCK_EX) != 0) {
      if (errno != EINTR) throw FileError(path, std::string("lock: ") + std::strerror(errno));
    }
  }

 private:
  UniqueFd fd_;
};

// Throws when `path` is a symbolic link; false when it does not exist.
bool ExistsAndNotALink(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return false;
    throw FileError(path, std::strerror(errno));
  }
  if (S_ISLNK(st.st_mode)) throw FileError(path, "a symbolic link: podrun does not rewrite it");
  return true;
}

}  // namespace

std::string HashKnownHostsName(const std::string& name) {
  unsigned char salt[20];
  if (RAND_bytes(salt, sizeof salt) != 1) throw Error(ExitCode::kFailed, "no random bytes");
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HMAC(EVP_sha1(), salt, sizeof salt, reinterpret_cast<const unsigned char*>(name.data()),
       name.size(), mac, &length);
  return "|1|" + EncodeBase64(salt, sizeof salt) + "|" + EncodeBase64(mac, length);
}

int ReplaceKnownHosts(const std::string& path, const std::vector<std::string>& names,
                      const std::vector<KnownHostsEntry>& entries) {
  if (!entries.empty()) MakeParent(path);
  if (entries.empty() && !ExistsAndNotALink(path)) return 0;
  const KnownHostsLock lock(path);
  const bool exists = ExistsAndNotALink(path);
  if (!exists && entries.empty()) return 0;
  std::string kept;
  int removed = 0;
  bool hashed = false;
  if (exists) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw FileError(path, "cannot read it");
    const std::set<std::string> wanted(names.begin(), names.end());
    for (std::string line; std::getline(in, line);) {
      hashed = hashed || line.starts_with("|1|");
      if (LineNames(line, wanted)) {
        ++removed;
      } else {
        kept += line + "\n";
      }
    }
  }
  if (removed == 0 && entries.empty()) return 0;
  for (const KnownHostsEntry& e : entries) {
    kept += fmt::format("{} {} {}{}\n", hashed ? HashKnownHostsName(e.name) : e.name, e.type,
                        e.base64, e.comment.empty() ? "" : " " + e.comment);
  }
  WriteFileAtomically(path, kept, 0600);  // a scratch file of a unique name, renamed over it
  return removed;
}

int RemoveKnownHosts(const std::string& path, const std::vector<std::string>& names) {
  return ReplaceKnownHosts(path, names, {});
}

void AppendKnownHosts(const std::string& path, std::string line) {
  if (line.empty()) return;
  if (line.back() != '\n') line += '\n';
  const KnownHostsLock lock(path);
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) {
    const int e = errno;
    throw FileError(
        path, e == ELOOP ? "a symbolic link: podrun does not write through it" : std::strerror(e));
  }
  struct stat st {};
  char last = '\n';
  if (::fstat(fd.get(), &st) == 0 && st.st_size > 0 &&
      ::pread(fd.get(), &last, 1, st.st_size - 1) != 1) {
    last = '\n';
  }
  if (last != '\n') line = "\n" + line;
  if (!WriteAll(fd.get(), line)) throw FileError(path, std::strerror(errno));
}

}  // namespace podrun
