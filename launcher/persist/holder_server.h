// The connection holder itself: the detached process a command starts (holder_client.h) as
// `podrun __holder --fd N`, N being the unix socket the command bound and listens on in the
// holder's private directory (holder_paths.h). One event loop: it accepts connections from its
// own user only (SO_PEERCRED), serves each (holder_service.h) with its kept sessions
// (kept_sessions.h), closes a session once unused for its persist time, and exits once it holds
// nothing and serves no one, or once its socket was removed or replaced (a newer holder took
// its place). It writes nothing but its log; its keys live in memory as a command's do.
#pragma once

#include "launcher/persist/holder_paths.h"

namespace podrun {

// The hidden command that runs the holder.
inline constexpr const char* kHolderCommand = "__holder";

// Runs the holder on `listen_fd` (taken) until it has nothing left to hold; returns the process
// exit code. Forks once first so that the process that started it may reap its child at once
// (the holder is reparented, in the session of its own it was started in). `paths` names the
// socket it serves (removed at exit when it is still this holder's) and the lock taken for it.
int RunHolder(int listen_fd, const HolderPaths& paths);

}  // namespace podrun
