// The job spec of `podrun launch` (docs/reference.md, "The spec (YAML)"): its data, and the parser
// that validates it and points at the offending line and column when it is wrong.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "launcher/spec/pod_settings.h"

namespace podrun {

enum class MountType { kNfs, kGcsfuse, kSshfs, kBind };

// "nfs", "gcsfuse", "sshfs", "bind".
const char* MountTypeName(MountType type);

// One entry of `mounts:`. Which fields are set depends on the type:
// nfs: server, export_path, path; gcsfuse: bucket, path; sshfs and bind: source, path.
struct Mount {
  MountType type = MountType::kBind;
  std::string server;
  std::string export_path;  // the YAML key `export`
  std::string bucket;
  std::string source;
  std::string path;                    // the mount point on the worker (absolute or ~/...)
  std::optional<std::string> options;  // mount options; a YAML list is joined with ','
};

enum class OnFailure { kStopAll, kContinue };

// A parsed, validated spec. Defaults are those of the contract.
struct JobSpec {
  std::string name;  // default: the spec file's stem
  PodSettings pod;
  std::string workdir = "~";
  // The local directory copied into workdir on every worker (relative to the spec's directory;
  // checked to be a directory when parsed); empty: nothing is synced.
  std::string sync;
  std::map<std::string, std::string> env;  // scalars keep their text: `N: 3` gives "3"
  std::vector<std::string> secret_env;     // names only; values come from the launcher's env
  std::vector<Mount> mounts;
  std::string setup;                      // empty: no setup
  std::vector<std::string> setup_inputs;  // files (relative to SetupInputsBase) in the setup stamp
  std::string run;                        // never empty
  OnFailure on_failure = OnFailure::kStopAll;
  int restarts = 0;  // whole-gang restarts after a failure of the program (not preemptions)
  // `preemptions:`: recoveries after a preemption (they never use up `restarts`); nullopt for
  // `unlimited`, the default.
  std::optional<int> preemptions;
  int grace_seconds = 10;
  int stall_seconds = 0;  // 0: no stall detection
  // `progress:`: the regex whose one group is a worker's step (proto/progress_pattern.h); empty
  // for `progress: none`.
  std::string progress;
  double straggler_ratio = 0.5;  // a rate below this fraction of the gang's median ...
  int straggler_seconds = 120;   // ... for this long is a straggler
  int stacks_signal = 0;         // `stacks: {signal: SIGUSR1}`: sent before a hang report; 0: none
  int coordinator_port = 8476;
  int megascale_port = 8081;  // multislice only (MEGASCALE_COORDINATOR_ADDRESS, MEGASCALE_PORT)
  bool free_accelerators = true;

  std::string text;  // the spec's source text, as read (the job store keeps it)
  std::string path;  // the file it was read from (absolute once launched: see RecordedSpec)
};

// Parses and validates a spec file. Throws podrun::Error (ExitCode::kUsage) when the file cannot
// be read or the spec is invalid; the message starts with "path:line:col: " (1-based), followed
// by the offending source line and a caret under the column.
JobSpec ParseSpecFile(const std::string& path);

// As ParseSpecFile, for text already in memory; `file_name` is used in messages and for the
// default name.
JobSpec ParseSpecText(const std::string& text, const std::string& file_name);

// As ParseSpecText, for a spec recorded in the job store at launch (`file_name` absolute): looks
// at nothing on this machine's disk, so that a sync: directory gone since does not make the
// job's spec unreadable (the sync phase says so when it needs it).
JobSpec ParseRecordedSpec(const std::string& text, const std::string& file_name);

// The synced directory: `sync` resolved against the spec file's directory (empty path if none).
std::filesystem::path SyncDirectory(const JobSpec& spec);

// Where setup_inputs are read from: the synced directory, else the spec file's directory.
std::filesystem::path SetupInputsBase(const JobSpec& spec);

// True for a name usable as a job name (`name:` or `-n`): [A-Za-z0-9][A-Za-z0-9._-]*, at most
// 64 characters.
bool IsValidJobName(const std::string& name);

// True for a valid environment variable name: [A-Za-z_][A-Za-z0-9_]*.
bool IsValidEnvName(const std::string& name);

}  // namespace podrun
