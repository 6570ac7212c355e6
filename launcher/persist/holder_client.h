// A command's way to the connection holder (docs/decisions.md, "Warm connections"): find the holder
// of its $PODRUN_HOME, or start one. Nothing here ever fails a command: when the holder cannot be
// had (a directory that is not private, a socket that is not the user's, a start that failed), the
// command connects on its own as if persistence were off.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

#include "launcher/persist/holder_paths.h"
#include "launcher/persist/holder_protocol.h"

namespace podrun {

// Whether a command may use the holder: not with --no-persist, nor with PODRUN_PERSIST=0.
bool PersistWanted(bool no_persist_flag);
// PODRUN_PERSIST_SECONDS (whole seconds, > 0), else 600.
std::chrono::seconds PersistSeconds();

// What the holder is asked to run `command` on `target` with (or to tunnel to, with the kind and
// socket set after): `ssh`'s paths made absolute (the holder runs in /), this command's persist
// time, SSH_AUTH_SOCK and HOME.
HolderRequest HolderRequestFor(const HostSpec& target, const SshOptions& ssh, std::string command);

class HolderClient {
 public:
  // The holder listening in `podrun_home`'s holder directory: one that answers is used; when
  // none does (no socket, or a stale one whose holder died) one is started under the holder
  // lock, so that commands racing start one holder: the socket is bound and listening here
  // before `program` (this podrun: /proc/self/exe) is started on it, detached (a session of its
  // own, stdin and stdout /dev/null, stderr its log). nullopt when no holder can be had; `why`
  // (when given) then says why.
  static std::optional<HolderClient> Reach(const std::filesystem::path& podrun_home,
                                           std::string* why = nullptr,
                                           const std::string& program = "/proc/self/exe");

  const std::filesystem::path& socket() const { return paths_.socket; }

 private:
  explicit HolderClient(HolderPaths paths) : paths_(std::move(paths)) {}
  HolderPaths paths_;
};

}  // namespace podrun
