// Where the launcher keeps its state (CONTRACT.md, "Where state lives"): $PODRUN_HOME, holding
// podrun.db and jobs/<id>/.
#pragma once

#include <filesystem>
#include <string>

#include "launcher/job/job_env.h"

namespace podrun {

// The state directory: $PODRUN_HOME, else $XDG_STATE_HOME/podrun (when absolute), else
// ~/.local/state/podrun ($HOME, else the passwd entry). Creates it (0700, parents as needed)
// when missing. Empty variables count as unset. Throws podrun::Error (kUsage) when it cannot be
// created or no home directory is known.
std::filesystem::path PodrunHome(const EnvLookup& lookup = LauncherEnv);

// `home`/jobs/<job_id>/, created (0700) when missing. Throws podrun::Error (kUsage) on failure.
std::filesystem::path JobDir(const std::filesystem::path& home, const std::string& job_id);

}  // namespace podrun
