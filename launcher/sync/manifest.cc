// The tree walk behind BuildManifest: openat/fstatat relative to the open directory, never
// following a symlink (O_NOFOLLOW, AT_SYMLINK_NOFOLLOW), one pass of reading per file.
#include "launcher/sync/manifest.h"

#include <dirent.h>
#include <fcntl.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>
#include <unordered_set>
#include <utility>

#include "launcher/base/error.h"
#include "launcher/sync/ignore_rules.h"
#include "proto/agent.pb.h"
#include "proto/sha256.h"
#include "proto/unique_fd.h"

namespace podrun {
namespace {

constexpr size_t kReadChunk = size_t{1} << 20;
constexpr size_t kMaxIgnoreFile = size_t{16} << 20;

struct DirCloser {
  void operator()(DIR* dir) const { ::closedir(dir); }
};
using DirStream = std::unique_ptr<DIR, DirCloser>;

std::string Join(const std::string& dir, const char* name) {
  return dir.empty() ? std::string(name) : dir + "/" + name;
}

// read() of up to `size` bytes, retried on EINTR; -1 with errno on an error.
ssize_t ReadSome(int fd, char* data, size_t size) {
  while (true) {
    ssize_t n = ::read(fd, data, size);
    if (n >= 0 || errno != EINTR) return n;
  }
}

class Walker {
 public:
  explicit Walker(std::filesystem::path root) : root_(std::move(root)), buffer_(kReadChunk) {}

  // Adds the entries below the open directory `fd` (whose path is `dir`, "" for the root).
  void Walk(UniqueFd fd, const std::string& dir);
  Manifest Take() { return std::move(manifest_); }

 private:
  Error FileError(const std::string& relative, int err) const {
    return UsageError((root_ / relative).string() + ": " + std::strerror(err));
  }
  // The contents of an ignore file of the directory; nullopt when there is none (or it is not
  // a regular file: git does not follow a symlinked .gitignore either).
  std::optional<std::string> ReadIgnoreFile(int dir_fd, const std::string& relative,
                                            const char* name);
  void AddFile(int dir_fd, const char* name, std::string relative);
  void AddSymlink(int dir_fd, const char* name, std::string relative, const struct stat& st);

  std::filesystem::path root_;
  IgnoreRules rules_;
  Manifest manifest_;
  std::vector<char> buffer_;
};

void Walker::Walk(UniqueFd fd, const std::string& dir) {
  DirStream stream(::fdopendir(fd.get()));
  if (!stream) throw FileError(dir, errno);
  const int dir_fd = fd.release();

  std::vector<std::string> ignore_files;
  for (std::string_view file : kIgnoreFileNames) {
    std::string name(file);
    if (auto contents = ReadIgnoreFile(dir_fd, Join(dir, name.c_str()), name.c_str())) {
      ignore_files.push_back(std::move(*contents));
    }
  }
  rules_.Push(dir, ignore_files);

  while (true) {
    errno = 0;
    const dirent* entry = ::readdir(stream.get());
    if (entry == nullptr) {
      if (errno != 0) throw FileError(dir, errno);
      break;
    }
    const char* name = entry->d_name;
    if (std::strcmp(name, ".") == 0 || std::strcmp(name, "..") == 0) continue;
    std::string relative = Join(dir, name);
    struct stat st {};
    if (::fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) continue;  // gone since readdir
      throw FileError(relative, errno);
    }
    const bool is_dir = S_ISDIR(st.st_mode);
    if (!is_dir && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) continue;
    if (rules_.Ignored(relative, is_dir)) continue;
    if (is_dir) {
      UniqueFd sub(::openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!sub) {
        if (errno == ENOENT) continue;
        throw FileError(relative, errno);
      }
      Walk(std::move(sub), relative);
    } else if (S_ISREG(st.st_mode)) {
      AddFile(dir_fd, name, std::move(relative));
    } else {
      AddSymlink(dir_fd, name, std::move(relative), st);
    }
  }
  rules_.Pop();
}

std::optional<std::string> Walker::ReadIgnoreFile(int dir_fd, const std::string& relative,
                                                  const char* name) {
  UniqueFd fd(::openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (!fd) {
    if (errno == ENOENT || errno == ELOOP) return std::nullopt;
    throw FileError(relative, errno);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw FileError(relative, errno);
  if (!S_ISREG(st.st_mode)) return std::nullopt;
  std::string contents;
  while (true) {
    ssize_t n = ReadSome(fd.get(), buffer_.data(), buffer_.size());
    if (n < 0) throw FileError(relative, errno);
    if (n == 0) break;
    contents.append(buffer_.data(), n);
    if (contents.size() > kMaxIgnoreFile) {
      throw UsageError((root_ / relative).string() + ": too large for an ignore file");
    }
  }
  return contents;
}

void Walker::AddFile(int dir_fd, const char* name, std::string relative) {
  UniqueFd fd(::openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (!fd) {
    if (errno == ENOENT) return;
    throw FileError(relative, errno);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw FileError(relative, errno);
  if (!S_ISREG(st.st_mode)) return;  // replaced since fstatat
  ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
  Sha256 hash;
  uint64_t size = 0;
  while (true) {
    ssize_t n = ReadSome(fd.get(), buffer_.data(), buffer_.size());
    if (n < 0) throw FileError(relative, errno);
    if (n == 0) break;
    hash.Update(std::string_view(buffer_.data(), n));
    size += n;
  }
  ManifestFile file;
  file.path = std::move(relative);
  file.size = size;  // what was hashed, should the file have changed since fstat
  file.mode = st.st_mode & 07777;
  file.sha256 = hash.FinishHex();
  manifest_.bytes += size;
  manifest_.files.push_back(std::move(file));
}

void Walker::AddSymlink(int dir_fd, const char* name, std::string relative, const struct stat& st) {
  std::string target(st.st_size > 0 ? st.st_size + 1 : 256, '\0');
  while (true) {
    ssize_t n = ::readlinkat(dir_fd, name, target.data(), target.size());
    if (n < 0) {
      if (errno == ENOENT || errno == EINVAL) return;  // gone, or no longer a symlink
      throw FileError(relative, errno);
    }
    if (static_cast<size_t>(n) < target.size()) {
      target.resize(n);
      break;
    }
    target.resize(target.size() * 2);  // truncated: it grew since fstatat
  }
  ManifestFile file;
  file.path = std::move(relative);
  file.size = target.size();
  file.mode = st.st_mode & 07777;
  file.sha256 = Sha256Hex(target);
  file.symlink = std::move(target);
  manifest_.files.push_back(std::move(file));
}

}  // namespace

Manifest BuildManifest(const std::filesystem::path& root) {
  UniqueFd fd(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) {
    throw UsageError(root.string() + ": not a readable directory (" + std::strerror(errno) + ")");
  }
  Walker walker(root);
  walker.Walk(std::move(fd), "");
  Manifest manifest = walker.Take();
  std::sort(manifest.files.begin(), manifest.files.end(),
            [](const ManifestFile& a, const ManifestFile& b) { return a.path < b.path; });
  return manifest;
}

std::string SerializeManifest(const Manifest& manifest) {
  agent::v1::SyncManifest message;
  message.mutable_entries()->Reserve(static_cast<int>(manifest.files.size()));
  for (const ManifestFile& file : manifest.files) {
    agent::v1::ManifestEntry* entry = message.add_entries();
    entry->set_path(file.path);
    entry->set_size(file.size);
    entry->set_mode(file.mode);
    entry->set_sha256(file.sha256);
    entry->set_symlink(file.symlink);
  }
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    message.SerializeToCodedStream(&coded);
  }
  return bytes;
}

std::vector<std::string> ManifestBlobs(const Manifest& manifest) {
  std::vector<std::string> blobs;
  std::unordered_set<std::string_view> seen;
  for (const ManifestFile& file : manifest.files) {
    if (!file.symlink.empty()) continue;
    if (seen.insert(file.sha256).second) blobs.push_back(file.sha256);
  }
  return blobs;
}

}  // namespace podrun
