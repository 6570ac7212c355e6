// See known_hosts_editor.h.
#include "launcher/ssh/known_hosts_editor.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "launcher/base/atomic_file.h"
#include "launcher/base/error.h"

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

}  // namespace

int RemoveKnownHosts(const std::string& path, const std::vector<std::string>& names) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return 0;
    throw FileError(path, std::strerror(errno));
  }
  if (S_ISLNK(st.st_mode)) {
    throw FileError(path, "a symbolic link: podrun does not rewrite it");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw FileError(path, "cannot read it");
  const std::set<std::string> wanted(names.begin(), names.end());
  std::string kept;
  int removed = 0;
  for (std::string line; std::getline(in, line);) {
    if (LineNames(line, wanted)) {
      ++removed;
    } else {
      kept += line + "\n";
    }
  }
  if (removed == 0) return 0;
  WriteFileAtomically(path, kept, 0600);
  return removed;
}

}  // namespace podrun
