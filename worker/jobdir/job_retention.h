// Retention of finished jobs on the worker: the agent's job directories would otherwise fill
// the (often small) boot disk of a TPU VM over weeks of runs.
#pragma once

#include <chrono>
#include <filesystem>

namespace podrun::agent {

inline constexpr auto kDefaultKeepFinished = std::chrono::hours(24 * 14);

// Removes every attempt directory under `home`/jobs whose exit_status was written before
// `now - keep`, and job directories left empty. Attempts without an exit_status (prepared or
// running) are never touched. Errors are skipped (the next pass tries again). Returns how many
// attempts were removed. keep == 0 keeps everything.
int PruneFinishedJobs(
    const std::filesystem::path& home, std::chrono::hours keep,
    std::filesystem::file_time_type now = std::filesystem::file_time_type::clock::now());

// Removes the sockets of supervisors that are gone (`home`/run/sup-<pid>.sock whose process is
// no supervisor any more: one killed by SIGKILL cannot remove its own). Returns how many.
int RemoveStaleSupervisorSockets(const std::filesystem::path& home);

}  // namespace podrun::agent
