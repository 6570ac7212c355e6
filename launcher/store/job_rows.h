// How the job store's rows of jobs and attempts map to their records (job_store.h): the columns
// selected, and the records read from a row selected with them.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "launcher/store/job_store.h"
#include "launcher/store/sqlite_statement.h"

namespace podrun {

// The hosts as stored (jobs.hosts_json), and back.
nlohmann::json HostsToJson(const std::vector<JobHost>& hosts);
std::vector<JobHost> HostsFromJson(const std::string& text);

// The columns of a job's row, in the order ReadJob reads them.
extern const char* const kJobColumns;
JobRecord ReadJob(Statement& s);

// The columns of an attempt's row, in the order ReadAttempt reads them. Throws podrun::Error
// naming `path` (the database) for an unknown state.
extern const char* const kAttemptColumns;
AttemptRecord ReadAttempt(Statement& s, const std::filesystem::path& path);

}  // namespace podrun
