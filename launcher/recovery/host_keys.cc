// Forgetting and pinning the host keys of created VMs (see host_keys.h).
#include "launcher/recovery/host_keys.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string_view>

#include "launcher/attempt/interrupt_watcher.h"
#include "launcher/base/error.h"
#include "launcher/output/control_escape.h"
#include "launcher/output/say.h"
#include "launcher/pod/tpu_gcloud.h"
#include "launcher/recovery/provisioner.h"
#include "launcher/ssh/host_key_policy.h"
#include "launcher/ssh/known_hosts_editor.h"

namespace podrun {
namespace {

bool IsSymlink(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}

// A host name known_hosts can hold as one field: printable, no whitespace, no ',' (a list),
// not starting with a marker ('@'), a comment ('#'), a negation ('!') or a hash ('|').
bool IsKnownHostsName(const std::string& name) {
  if (name.empty() || std::string_view("@#!|").find(name.front()) != std::string_view::npos) {
    return false;
  }
  return std::all_of(name.begin(), name.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u > 0x20 && u < 0x7f && c != ',';
  });
}

// `keys` with only the first key of each type.
std::vector<PublishedHostKey> OneKeyPerType(const std::vector<PublishedHostKey>& keys) {
  std::vector<PublishedHostKey> out;
  for (const PublishedHostKey& key : keys) {
    const bool seen = std::any_of(out.begin(), out.end(),
                                  [&](const PublishedHostKey& k) { return k.type == key.type; });
    if (!seen) out.push_back(key);
  }
  return out;
}

}  // namespace

std::string KnownHostsName(const HostKeyAddress& a) {
  return a.port == 22 ? a.host : fmt::format("[{}]:{}", a.host, a.port);
}

void ForgetHostKeys(const std::string& known_hosts, const std::vector<std::string>& hosts,
                    int port) {
  if (known_hosts.empty() || access(known_hosts.c_str(), F_OK) != 0) return;
  if (IsSymlink(known_hosts)) {
    Say(
        fmt::format("warning: {} is a symbolic link: podrun does not rewrite it (the old host "
                    "keys of the new VMs stay in it)",
                    known_hosts));
    return;
  }
  std::vector<std::string> names;
  for (const std::string& host : hosts) names.push_back(KnownHostsName({host, port}));
  try {
    RemoveKnownHosts(known_hosts, names);  // one pass, whatever the number of workers
  } catch (const Error& e) {
    Say(fmt::format("warning: could not forget the old host keys of the new VMs: {}", e.what()));
  }
}

std::vector<HostKeyAddress> SourceHostKeyAddresses(const Pod& pod, const SourceState& state) {
  std::vector<HostKeyAddress> out;
  for (const SourceWorker& vm : state.workers) {
    out.push_back({SshAddressOf(vm, pod.internal_ip), pod.ssh.default_port.value_or(22)});
  }
  return out;
}

PinnedHostKeys PinHostKeys(const std::string& known_hosts,
                           const std::vector<HostKeyAddress>& workers,
                           const TpuHostKeys& published) {
  PinnedHostKeys done;
  if (known_hosts.empty()) return done;
  if (IsSymlink(known_hosts)) {
    throw Error(ExitCode::kUnreachable,
                fmt::format("known_hosts {} is a symbolic link: podrun writes host keys only to "
                            "the file itself (name it in known_hosts:)",
                            known_hosts));
  }
  std::vector<std::string> names;
  std::vector<KnownHostsEntry> entries;
  for (size_t i = 0; i < workers.size(); ++i) {
    const std::string name = KnownHostsName(workers[i]);
    if (!IsKnownHostsName(name)) {
      std::string scratch;
      throw Error(ExitCode::kUnreachable,
                  fmt::format("w{}: its address '{}' cannot be written to known_hosts", i,
                              EscapeControls(name, scratch)));
    }
    names.push_back(name);
    auto keys = published.find(static_cast<int>(i));
    if (keys == published.end() || keys->second.empty()) {
      done.first_use.push_back(static_cast<int>(i));
      continue;
    }
    for (const PublishedHostKey& key : keys->second) {
      // Checked again where it is written: only OpenSSH's key types, base64 keys of that type.
      if (!IsPublishedHostKey(key.type, key.base64)) continue;
      entries.push_back({name, key.type, key.base64, kPublishedKeyComment});
    }
    done.pinned.push_back(static_cast<int>(i));
  }
  try {
    ReplaceKnownHosts(known_hosts, names, entries);  // one locked rewrite
  } catch (const Error& e) {
    throw Error(ExitCode::kUnreachable,
                fmt::format("cannot write the host keys to {}: {}", known_hosts, e.what()));
  }
  for (int w : done.first_use) {
    Say(fmt::format("w{} ({}): the TPU API published no host key: recorded on first contact", w,
                    workers[w].host));
  }
  return done;
}

PublishWait DefaultPublishWait() {
  PublishWait wait;
  if (const char* env = std::getenv("PODRUN_HOST_KEYS_WAIT_SECONDS")) {
    wait.limit = std::chrono::seconds(std::max(0L, std::strtol(env, nullptr, 10)));
  }
  wait.poll = ProvisionPollInterval(std::chrono::seconds(5));
  wait.sleep = SleepUnlessInterrupted;
  return wait;
}

PinnedHostKeys PinPublishedHostKeys(const PublishedKeysFetch& fetch, const std::string& what,
                                    const std::string& known_hosts,
                                    const std::vector<HostKeyAddress>& workers,
                                    const PublishWait& wait) {
  // Each worker's keys as the first answer that had any gave them, one key per type: any process
  // on a VM may write its guest attributes, while its guest environment publishes the VM's own
  // keys once, as it boots; a later answer changes nothing of a worker already seen.
  std::optional<TpuHostKeys> published;
  std::string error;
  std::chrono::seconds waited{0};
  bool said = false;
  for (;;) {
    try {
      const TpuHostKeys now = fetch();
      if (!published) published.emplace();
      for (const auto& [worker, keys] : now) {
        if (published->contains(worker) || keys.empty()) continue;
        (*published)[worker] = OneKeyPerType(keys);
      }
      error.clear();
    } catch (const Error& e) {
      error = e.what();
    }
    size_t missing = 0;
    for (size_t i = 0; i < workers.size(); ++i) {
      auto it = published ? published->find(static_cast<int>(i)) : TpuHostKeys::const_iterator();
      if (!published || it == published->end() || it->second.empty()) ++missing;
    }
    if (missing == 0 || waited >= wait.limit || !wait.sleep) break;
    if (!said) {
      Say(fmt::format("waiting up to {}s for {} of {} workers of {} to publish their host keys",
                      (wait.limit - waited).count(), missing, workers.size(), what));
      said = true;
    }
    const std::chrono::seconds step =
        std::clamp(wait.poll, std::chrono::seconds(1), wait.limit - waited);
    if (!wait.sleep(step)) break;
    waited += step;
  }
  if (!published) {
    Say(
        fmt::format("could not read the host keys {} publishes ({}): the new VMs' keys are "
                    "recorded on first contact",
                    what, error));
    PinnedHostKeys done;
    std::vector<std::string> names;
    for (size_t i = 0; i < workers.size(); ++i) {
      names.push_back(KnownHostsName(workers[i]));
      done.first_use.push_back(static_cast<int>(i));
    }
    try {
      RemoveKnownHosts(known_hosts, names);  // one locked rewrite for the whole node
    } catch (const Error& e) {
      Say(fmt::format("warning: could not forget the old host keys of the new VMs: {}", e.what()));
    }
    return done;
  }
  PinnedHostKeys done = PinHostKeys(known_hosts, workers, *published);
  if (!done.pinned.empty()) {
    Say(fmt::format("{}: pinned the host keys its {} of {} workers publish as guest attributes",
                    what, done.pinned.size(), workers.size()));
  }
  return done;
}

PinnedHostKeys PinSourceHostKeys(PodSource& source, const SourceState& state, const Pod& pod,
                                 const PublishWait& wait) {
  return PinPublishedHostKeys([&] { return source.PublishedHostKeys(state); }, source.What(),
                              pod.ssh.known_hosts, SourceHostKeyAddresses(pod, state), wait);
}

}  // namespace podrun
