// Where the launcher keeps its state (docs/reference.md, "Where state lives"): $PODRUN_HOME, holding
// podrun.db and jobs/<id>/. The state is private (docs/design.md decision 14): the launcher runs
// with umask 077 (RestrictUmask, proto/private_state.h), the directory is its user's alone,
// and nothing in it is a symbolic link.
#pragma once

#include <filesystem>
#include <string>

#include "launcher/spec/job_env.h"

namespace podrun {

// The state directory: $PODRUN_HOME, else $XDG_STATE_HOME/podrun (when absolute), else
// ~/.local/state/podrun ($HOME, else the passwd entry). Creates it (0700, parents as needed)
// when missing. Empty variables count as unset. Throws podrun::Error (kUsage) when it cannot be
// created, when no home directory is known, or when it is not private (CheckPrivateDirectory)
// or holds a symbolic link where podrun.db, its journals, jobs/ or local/ go.
std::filesystem::path PodrunHome(const EnvLookup& lookup = LauncherEnv);

// Refuses (podrun::Error, kUsage) a state directory that is not a directory, is owned by
// another user than this process's effective one, or is open to group or others
// (mode & 077); the message says how to fix it. `what` names it ("PODRUN_HOME").
void CheckPrivateDirectory(const std::filesystem::path& dir, const std::string& what);

// Refuses (podrun::Error, kUsage) `path` if it exists as a symbolic link: state files are never
// followed out of the state directory.
void RefuseSymlink(const std::filesystem::path& path);

// `home`/jobs/<job_id>/, created (0700) when missing; neither jobs/ nor <job_id>/ may be a
// symbolic link. Throws podrun::Error (kUsage) on failure.
std::filesystem::path JobDir(const std::filesystem::path& home, const std::string& job_id);

}  // namespace podrun
