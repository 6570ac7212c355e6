// Parses the job spec with yaml-cpp and validates every key, so that a mistake is reported with
// its file, line and column before anything starts anywhere. The top-level keys are read here,
// `pod:` in pod_section.cc and `mounts:` in mounts_section.cc.
#include "launcher/spec/spec.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "launcher/base/error.h"
#include "launcher/spec/mounts_section.h"
#include "launcher/spec/pod_section.h"
#include "launcher/spec/yaml_reader.h"
#include "proto/progress_pattern.h"

namespace podrun {
namespace {

using Node = YAML::Node;

// The default job name: the spec file's stem, made a valid job name ("job" if nothing is left).
std::string SanitizedStem(const std::string& file_name) {
  std::string stem = std::filesystem::path(file_name).stem().string();
  for (char& c : stem) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '-';
  }
  while (!stem.empty() && !std::isalnum(static_cast<unsigned char>(stem.front()))) {
    stem.erase(0, 1);
  }
  if (stem.size() > 64) stem.resize(64);
  return stem.empty() ? "job" : stem;
}

void ReadName(const YamlReader& yaml, const Node& key, const Node& value, JobSpec* spec) {
  spec->name = yaml.String(key, value);
  if (!IsValidJobName(spec->name)) {
    yaml.Fail(YamlReader::At(key, value),
              "bad name '" + spec->name + "' (letters, digits, '.', '_', '-'; at most 64)");
  }
}

void ReadPod(const YamlReader& yaml, const Node& key, const Node& value, JobSpec* spec) {
  ReadPodSection(yaml, key, value, &spec->pod);
}

void ReadWorkdir(const YamlReader& yaml, const Node& key, const Node& value, JobSpec* spec) {
  if (!value.IsNull()) spec->workdir = yaml.NonEmptyString(key, value);
}

void ReadEnv(const YamlReader& yaml, const Node& key, const Node& value, JobSpec* spec) {
  if (value.IsNull()) return;
  if (!value.IsMap()) yaml.WrongType(key, value, "a mapping");
  std::set<std::string> seen;
  for (auto it = value.begin(); it != value.end(); ++it) {
    const Node k = it->first;
    const Node v = it->second;
    std::string name = yaml.KeyName(k, &seen);
    if (!IsValidEnvName(name)) yaml.Fail(k.Mark(), "bad environment variable name '" + name + "'");
    if (name.rfind("PODRUN_", 0) == 0) {
      yaml.Fail(k.Mark(), "'" + name + "': PODRUN_ variables are set by podrun");
    }
    spec->env[name] = v.IsNull() ? "" : yaml.Scalar(k, v, "a string or number");
  }
}

void ReadSecretEnv(const YamlReader& yaml, const Node& key, const Node& value, JobSpec* spec) {
  std::vector<std::string>* secrets = &spec->secret_env;
  for (auto& [name, mark] : yaml.List(key, value, true)) {
    if (!IsValidEnvName(name)) yaml.Fail(mark, "bad environment variable name '" + name + "'");
    if (name.rfind("PODRUN_", 0) == 0) {
      yaml.Fail(mark,
                "'" + name + "': PODRUN_ variables are set by podrun (name the secret otherwise)");
    }
    if (std::find(secrets->begin(), secrets->end(), name) != secrets->end()) {
      yaml.Fail(mark, "'" + name + "' is listed twice");
    }
    secrets->push_back(name);
  }
}

void ReadMounts(const YamlReader& yaml, const Node& key, const Node& value, JobSpec* spec) {
  ReadMountsSection(yaml, key, value, &spec->mounts);
}

void ReadSetup(const YamlReader& yaml, const Node& key, const Node& value, JobSpec* spec) {
  if (!value.IsNull()) spec->setup = yaml.String(key, value);
}

void ReadSetupInputs(const YamlReader& yaml, const Node& key, const Node& value, JobSpec* spec) {
  for (auto& [input, mark] : yaml.List(key, value, true)) {
    if (input.empty() || input.front() == '/' || input.find("..") != std::string::npos) {
      yaml.Fail(mark, "'" + input + "': a path relative to the synced directory (or the spec's)");
    }
    spec->setup_inputs.push_back(input);
  }
}

void ReadRun(const YamlReader& yaml, const Node& key, const Node& value, JobSpec* spec) {
  spec->run = value.IsNull() ? "" : yaml.String(key, value);
  if (Trim(spec->run).empty()) yaml.Fail(YamlReader::At(key, value), "'run' must not be empty");
}

void ReadOnFailure(const YamlReader& yaml, const Node& key, const Node& value, JobSpec* spec) {
  std::string v = yaml.String(key, value);
  if (v == "stop_all") {
    spec->on_failure = OnFailure::kStopAll;
  } else if (v == "continue") {
    spec->on_failure = OnFailure::kContinue;
  } else {
    yaml.Fail(YamlReader::At(key, value),
              "bad on_failure '" + v + "' (expected stop_all or continue)");
  }
}

void ReadProgress(const YamlReader& yaml, const Node& key, const Node& value, JobSpec* spec) {
  const std::string pattern = yaml.NonEmptyString(key, value);
  if (pattern == "none") {
    spec->progress.clear();
    return;
  }
  try {
    ProgressPattern check(pattern);
  } catch (const std::invalid_argument& e) {
    yaml.Fail(YamlReader::At(key, value), std::string("progress: ") + e.what());
  }
  spec->progress = pattern;
}

void ReadStragglerRatio(const YamlReader& yaml, const Node& key, const Node& value, JobSpec* spec) {
  const std::string text = yaml.Scalar(key, value, "a number between 0 and 1");
  char* end = nullptr;
  errno = 0;
  const double ratio = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno != 0 || !(ratio > 0 && ratio < 1)) {
    yaml.Fail(YamlReader::At(key, value),
              "bad straggler_ratio '" + text + "' (a number between 0 and 1, e.g. 0.5)");
  }
  spec->straggler_ratio = ratio;
}

// `preemptions: N` or `preemptions: unlimited`.
void ReadPreemptions(const YamlReader& yaml, const Node& key, const Node& value, JobSpec* spec) {
  const std::string text = yaml.Scalar(key, value, "a number or unlimited");
  if (text == "unlimited") {
    spec->preemptions.reset();
    return;
  }
  char* end = nullptr;
  errno = 0;
  const long n = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || n < 0 || n > 1000000) {
    yaml.Fail(YamlReader::At(key, value),
              "bad preemptions '" + text + "' (a number from 0 to 1000000, or unlimited)");
  }
  spec->preemptions = static_cast<int>(n);
}

// The signals a program may ask for before a hang report: those it can catch to dump its own
// stacks without being stopped by them.
constexpr std::pair<const char*, int> kStackSignals[] = {
    {"SIGUSR1", SIGUSR1}, {"SIGUSR2", SIGUSR2}, {"SIGQUIT", SIGQUIT}, {"SIGHUP", SIGHUP}};

void ReadStacks(const YamlReader& yaml, const Node& key, const Node& value, JobSpec* spec) {
  if (value.IsNull()) return;
  if (!value.IsMap()) yaml.WrongType(key, value, "a mapping ({signal: SIGUSR1})");
  std::set<std::string> seen;
  for (auto it = value.begin(); it != value.end(); ++it) {
    const std::string name = yaml.KeyName(it->first, &seen);
    if (name != "signal") yaml.UnknownKey(it->first, name, std::vector<std::string>{"signal"});
    std::string signal = yaml.String(it->first, it->second);
    if (signal == "none") continue;
    if (signal.rfind("SIG", 0) != 0) signal = "SIG" + signal;
    bool found = false;
    for (const auto& [n, number] : kStackSignals) {
      if (signal == n) {
        spec->stacks_signal = number;
        found = true;
      }
    }
    if (!found) {
      yaml.Fail(YamlReader::At(it->first, it->second),
                "bad stacks signal '" + yaml.String(it->first, it->second) +
                    "' (SIGUSR1, SIGUSR2, SIGQUIT or SIGHUP; it is sent only to processes that "
                    "catch it)");
    }
  }
}

// Every top-level key, in the order in which "did you mean" prefers equally close ones.
constexpr KeyReader<JobSpec> kTopKeys[] = {
    {"name", ReadName},
    {"pod", ReadPod},
    {"workdir", ReadWorkdir},
    {"sync", ReadNonEmptyStringField<&JobSpec::sync>},
    {"env", ReadEnv},
    {"secret_env", ReadSecretEnv},
    {"mounts", ReadMounts},
    {"setup", ReadSetup},
    {"setup_inputs", ReadSetupInputs},
    {"run", ReadRun},
    {"on_failure", ReadOnFailure},
    {"restarts", ReadIntField<&JobSpec::restarts, 0, 1000000>},
    {"preemptions", ReadPreemptions},
    {"grace_seconds", ReadIntField<&JobSpec::grace_seconds, 1, 1000000>},
    {"stall_seconds", ReadIntField<&JobSpec::stall_seconds, 0, 100000000>},
    {"progress", ReadProgress},
    {"straggler_ratio", ReadStragglerRatio},
    {"straggler_seconds", ReadIntField<&JobSpec::straggler_seconds, 1, 100000000>},
    {"stacks", ReadStacks},
    {"coordinator_port", ReadIntField<&JobSpec::coordinator_port, 1, 65535>},
    {"megascale_port", ReadIntField<&JobSpec::megascale_port, 1, 65535>},
    {"free_accelerators", ReadBoolField<&JobSpec::free_accelerators>},
};

// The mark of the value of key `name` in `map` (as YamlReader::At); the map's if it has none.
YAML::Mark FindValueMark(const Node& map, const std::string& name) {
  for (auto it = map.begin(); it != map.end(); ++it) {
    if (it->first.IsScalar() && it->first.Scalar() == name) {
      return YamlReader::At(it->first, it->second);
    }
  }
  return map.Mark();
}

// `look_at_disk`: check that the sync: directory exists (a spec being launched); a recorded
// spec is re-read without looking at this machine's disk.
JobSpec Parse(const YamlReader& yaml, const std::string& text, const std::string& file_name,
              bool look_at_disk) {
  Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    yaml.Fail(e.mark, e.msg);
  }
  JobSpec spec;
  spec.text = text;
  spec.path = file_name;
  spec.name = SanitizedStem(file_name);
  spec.progress = kDefaultProgressPattern;
  if (root.IsNull()) yaml.Fail(YAML::Mark(), "missing required key 'run'");
  if (!root.IsMap()) {
    yaml.Fail(root.Mark(), "a spec is a mapping of keys (name:, pod:, run:, ...)");
  }

  std::set<std::string> seen;
  for (auto it = root.begin(); it != root.end(); ++it) {
    const Node key = it->first;
    const Node value = it->second;
    std::string k = yaml.KeyName(key, &seen);
    if (const KeyReader<JobSpec>* reader = FindKey(kTopKeys, k)) {
      reader->read(yaml, key, value, &spec);
    } else if (IsPodKey(k)) {
      yaml.Fail(key.Mark(), "unknown key '" + k + "' (pod options go under 'pod:')");
    } else {
      yaml.UnknownKey(key, k, KeyNames(kTopKeys));
    }
  }
  if (!seen.count("run")) yaml.Fail(root.Mark(), "missing required key 'run'");
  if (!spec.sync.empty() && look_at_disk) {
    std::error_code ec;
    const std::filesystem::path dir = SyncDirectory(spec);
    if (!std::filesystem::is_directory(dir, ec)) {
      yaml.Fail(FindValueMark(root, "sync"),
                "sync: " + dir.string() +
                    (std::filesystem::exists(dir, ec) ? " is not a directory" : " does not exist") +
                    " (a local directory, relative to the spec's)");
    }
  }
  for (const std::string& secret : spec.secret_env) {
    if (spec.env.count(secret)) {
      yaml.Fail(YamlReader::FindKeyMark(root, "secret_env"),
                "'" + secret + "' is in both env and secret_env");
    }
  }
  return spec;
}

}  // namespace

std::filesystem::path SyncDirectory(const JobSpec& spec) {
  if (spec.sync.empty()) return {};
  return (std::filesystem::path(spec.path).parent_path() / spec.sync).lexically_normal();
}

std::filesystem::path SetupInputsBase(const JobSpec& spec) {
  return spec.sync.empty() ? std::filesystem::path(spec.path).parent_path() : SyncDirectory(spec);
}

bool IsValidJobName(const std::string& name) {
  if (name.empty() || name.size() > 64 || !std::isalnum(static_cast<unsigned char>(name[0]))) {
    return false;
  }
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
  });
}

bool IsValidEnvName(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

JobSpec ParseSpecText(const std::string& text, const std::string& file_name) {
  return Parse(YamlReader(text, file_name), text, file_name, /*look_at_disk=*/true);
}

JobSpec ParseRecordedSpec(const std::string& text, const std::string& file_name) {
  return Parse(YamlReader(text, file_name), text, file_name, /*look_at_disk=*/false);
}

JobSpec ParseSpecFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError(path + ": cannot read the spec: " + std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) throw UsageError(path + ": cannot read the spec");
  return ParseSpecText(text.str(), path);
}

}  // namespace podrun
