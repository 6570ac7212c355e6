// ApplySync's work on the worker's disk (see workdir_sync.h).
#include "worker/sync/workdir_sync.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <vector>

#include "proto/sha256.h"
#include "proto/unique_fd.h"
#include "proto/write_all.h"
#include "worker/base/agent_error.h"
#include "worker/base/own_directory.h"

namespace podrun::agent {
namespace {

namespace fs = std::filesystem;

constexpr size_t kCopyChunk = 1 << 20;
constexpr mode_t kSyncedModeBits = 0775;

[[noreturn]] void Fail(const std::string& what) {
  throw AgentError(ErrorKind::kInternal, what + ": " + std::strerror(errno));
}

int64_t MtimeNs(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

// The file as the previous sync left it (same content, same inode, untouched since)?
bool Untouched(const fs::path& target, const v1::SyncState& state, int i) {
  struct stat st {};
  if (::lstat(target.c_str(), &st) != 0) return false;
  const v1::ManifestEntry& e = state.entries(i);
  return st.st_ino == state.inode(i) && MtimeNs(st) == state.mtime_ns(i) &&
         (e.symlink().empty() ? S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) == e.size()
                              : S_ISLNK(st.st_mode));
}

// Copies the blob into a temporary file beside `target`, checking its hash, then renames it
// into place with the entry's mode.
void WriteFile(const BlobCache& cache, const v1::ManifestEntry& e, const fs::path& target) {
  const fs::path blob = cache.PathOf(e.sha256());
  UniqueFd in(::open(blob.c_str(), O_RDONLY | O_CLOEXEC));
  if (!in) {
    throw AgentError(ErrorKind::kFailedPrecondition,
                     "sync: " + e.path() + ": blob " + e.sha256() + " is not in the cache");
  }
  fs::path temp = target;
  temp += ".podrun-sync." + std::to_string(::getpid());
  ::unlink(temp.c_str());
  UniqueFd out(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!out) Fail("sync: " + temp.string());
  Sha256 hash;
  std::string buffer(kCopyChunk, '\0');
  for (;;) {
    ssize_t n = ::read(in.get(), buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) Fail("sync: " + blob.string());
    if (n == 0) break;
    std::string_view chunk(buffer.data(), static_cast<size_t>(n));
    hash.Update(chunk);
    if (!WriteAll(out.get(), chunk)) {
      const int saved = errno;
      ::unlink(temp.c_str());
      errno = saved;
      Fail("sync: " + target.string());
    }
  }
  if (hash.FinishHex() != e.sha256()) {
    ::unlink(temp.c_str());
    ::unlink(blob.c_str());  // corrupt: the next sync sends it again
    throw AgentError(ErrorKind::kFailedPrecondition,
                     "sync: " + e.path() + ": the cached blob " + e.sha256() +
                         " was corrupt (removed from the cache; launch again)");
  }
  // Never setuid, setgid, sticky or world-writable, whatever the manifest says: a synced tree
  // gives no other user of the worker a way in (docs/reliability.md).
  if (::fchmod(out.get(), e.mode() & kSyncedModeBits) != 0 || ::close(out.release()) != 0 ||
      ::rename(temp.c_str(), target.c_str()) != 0) {
    const int saved = errno;
    ::unlink(temp.c_str());
    errno = saved;
    Fail("sync: " + target.string());
  }
}

void WriteSymlink(const v1::ManifestEntry& e, const fs::path& target) {
  fs::path temp = target;
  temp += ".podrun-sync." + std::to_string(::getpid());
  ::unlink(temp.c_str());
  if (::symlink(e.symlink().c_str(), temp.c_str()) != 0 ||
      ::rename(temp.c_str(), target.c_str()) != 0) {
    Fail("sync: " + target.string());
  }
}

// Removes the directories above `path` (inside workdir) that became empty.
void RemoveEmptyParents(const fs::path& workdir, fs::path path) {
  for (path = path.parent_path(); path != workdir && path.string().size() > workdir.string().size();
       path = path.parent_path()) {
    if (::rmdir(path.c_str()) != 0) return;
  }
}

v1::SyncState ReadState(int fd) {
  v1::SyncState state;
  std::string data;
  char buffer[65536];
  for (ssize_t n; (n = ::pread(fd, buffer, sizeof buffer, static_cast<off_t>(data.size()))) > 0;) {
    data.append(buffer, static_cast<size_t>(n));
  }
  if (!state.ParseFromString(data) || state.mtime_ns_size() != state.entries_size() ||
      state.inode_size() != state.entries_size()) {
    return {};  // unreadable: as if never synced (nothing is deleted)
  }
  return state;
}

// Whether a file the previous sync wrote may still be deleted: its parents are still real
// directories. A parent gone, or replaced by a symlink or a file, leaves nothing of ours there.
bool ParentsAreOurs(const fs::path& workdir, const std::string& path) {
  try {
    return RealParentDirectories(workdir, path, /*create=*/false);
  } catch (const AgentError&) {
    return false;
  }
}

// A manifest whose entry lies beneath one of its own symlinks would write through the link.
void RefusePathsBeneathSymlinks(const v1::SyncManifest& manifest) {
  std::set<std::string_view> links;
  for (const v1::ManifestEntry& e : manifest.entries()) {
    if (!e.symlink().empty()) links.insert(e.path());
  }
  if (links.empty()) return;
  for (const v1::ManifestEntry& e : manifest.entries()) {
    const std::string_view path = e.path();
    for (size_t slash = path.find('/'); slash != std::string_view::npos;
         slash = path.find('/', slash + 1)) {
      if (links.count(path.substr(0, slash))) {
        throw AgentError(ErrorKind::kInvalidArgument,
                         "sync: " + e.path() + " lies beneath the symlink " +
                             std::string(path.substr(0, slash)) + " in the manifest");
      }
    }
  }
}

}  // namespace

bool IsSafeManifestPath(const std::string& path) {
  if (path.empty() || path.front() == '/' || path.find('\0') != std::string::npos) return false;
  size_t begin = 0;
  while (begin <= path.size()) {
    size_t end = path.find('/', begin);
    if (end == std::string::npos) end = path.size();
    std::string_view part(path.data() + begin, end - begin);
    if (part.empty() || part == "." || part == "..") return false;
    begin = end + 1;
  }
  return true;
}

SyncApplied ApplyManifest(const BlobCache& cache, const v1::SyncManifest& manifest,
                          const fs::path& workdir, const fs::path& state_file) {
  for (const v1::ManifestEntry& e : manifest.entries()) {
    if (!IsSafeManifestPath(e.path())) {
      throw AgentError(ErrorKind::kInvalidArgument, "sync: bad path in manifest: " + e.path());
    }
  }
  RefusePathsBeneathSymlinks(manifest);
  std::error_code ec;
  fs::create_directories(state_file.parent_path(), ec);
  UniqueFd lock(::open(state_file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!lock) Fail("sync state " + state_file.string());
  while (::flock(lock.get(), LOCK_EX) != 0) {
    if (errno != EINTR) Fail("sync state " + state_file.string());
  }
  const v1::SyncState previous = ReadState(lock.get());
  std::map<std::string, int> before;
  for (int i = 0; i < previous.entries_size(); ++i) before[previous.entries(i).path()] = i;
  std::map<std::string, const v1::ManifestEntry*> now;
  for (const v1::ManifestEntry& e : manifest.entries()) now[e.path()] = &e;

  SyncApplied applied;
  // Deletions first: a directory may be replaced by a file of the same name.
  for (const auto& [path, i] : before) {
    if (now.count(path)) continue;
    if (!ParentsAreOurs(workdir, path)) continue;  // already gone, or not ours to delete
    const fs::path target = workdir / path;
    struct stat st {};
    if (::lstat(target.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) {
      if (::unlink(target.c_str()) != 0) Fail("sync: delete " + target.string());
      ++applied.deleted;
      RemoveEmptyParents(workdir, target);
    }
  }
  v1::SyncState next;
  for (const v1::ManifestEntry& e : manifest.entries()) {
    const fs::path target = workdir / e.path();
    auto was = before.find(e.path());
    const bool same = was != before.end() && previous.entries(was->second).sha256() == e.sha256() &&
                      previous.entries(was->second).symlink() == e.symlink() &&
                      previous.entries(was->second).mode() == e.mode();
    if (!(same && Untouched(target, previous, was->second))) {
      RealParentDirectories(workdir, e.path(), /*create=*/true);
      struct stat st {};
      if (::lstat(target.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
        throw AgentError(ErrorKind::kFailedPrecondition,
                         "sync: " + target.string() +
                             " is a directory on the worker; the synced tree has a file there");
      }
      if (e.symlink().empty()) {
        WriteFile(cache, e, target);
      } else {
        WriteSymlink(e, target);
      }
      ++applied.written;
    } else {
      ++applied.unchanged;
    }
    struct stat st {};
    if (::lstat(target.c_str(), &st) != 0) Fail("sync: " + target.string());
    *next.add_entries() = e;
    next.add_mtime_ns(MtimeNs(st));
    next.add_inode(st.st_ino);
  }
  const std::string data = next.SerializeAsString();
  if (::ftruncate(lock.get(), 0) != 0 ||
      ::pwrite(lock.get(), data.data(), data.size(), 0) != static_cast<ssize_t>(data.size())) {
    Fail("sync state " + state_file.string());
  }
  return applied;
}

}  // namespace podrun::agent
