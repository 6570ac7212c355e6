// Where the connection holder's files are: `$PODRUN_HOME/holder/`, a directory of its user's
// alone (0700, owned by the user, never a symbolic link), holding only the socket the holder
// listens on, the lock that makes racing commands start one holder, and the holder's log. No
// key or secret is ever written there (docs/decisions.md, "Warm connections").
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace podrun {

struct HolderPaths {
  std::filesystem::path dir;     // $PODRUN_HOME/holder
  std::filesystem::path socket;  // holder.sock: the holder listens here
  std::filesystem::path lock;    // holder.lock: flock'd by whoever replaces the holder
  std::filesystem::path log;     // holder.log: what the holder says (truncated at each start)
};

// The holder's paths under `podrun_home`.
HolderPaths HolderPathsIn(const std::filesystem::path& podrun_home);

// Creates `paths.dir` (0700) when missing, then checks it: a directory itself (lstat: not a
// symbolic link), owned by this process's effective user, closed to group and others. Returns
// why it may not be used, or nullopt. The socket's path must also fit a sockaddr_un.
std::optional<std::string> PrepareHolderDir(const HolderPaths& paths);

// Why `path` may not be taken for the holder's socket, or nullopt: it exists and is not a
// socket owned by this user (a symbolic link, a file, someone else's socket). A missing path is
// fine.
std::optional<std::string> SocketPathProblem(const std::filesystem::path& path);

}  // namespace podrun
