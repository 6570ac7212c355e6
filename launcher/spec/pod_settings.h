// PodSettings: the pod to run on, as the spec's `pod:` section and the command line's POD OPTIONS
// give it (docs/reference.md, "Selecting the pod").
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launcher/pod/tpu_create.h"

namespace podrun {

// The spec's `pod:` section: any POD OPTION by its long name. Every field is optional so that
// options given on the command line can win over the spec.
struct PodSettings {
  // `[user@]host[:port]` entries in rank order, kept verbatim (a YAML list or a comma string);
  // or a single "@FILE" entry naming a host file, as `--hosts @FILE` does.
  std::optional<std::vector<std::string>> hosts;
  std::optional<std::string> tpu;
  // A Compute Engine managed instance group of TPU VMs (a MIG slice), or several comma-separated
  // (one multislice pod); with `zone` and `project` as for `tpu`.
  std::optional<std::string> mig;
  std::optional<std::string> zone;
  std::optional<std::string> project;
  std::optional<bool> internal_ip;
  std::optional<bool> refresh;         // --refresh only: describe the TPU node again (no spec key)
  std::optional<int> local;            // number of local workers, >= 1
  std::optional<std::string> workers;  // index list, e.g. "0,2-3" (syntax checked)
  std::optional<std::string> user;
  std::optional<int> port;  // 1..65535
  std::optional<std::string> identity;
  std::optional<std::string> ssh_config;
  std::optional<std::string> known_hosts;
  std::optional<std::string> jump;  // -J: "[user@]host[:port][,...]" or "none" (syntax checked)
  std::optional<bool> strict_host_keys;
  std::optional<int> fanout;           // >= 1
  std::optional<int> connect_timeout;  // seconds, >= 1
  bool no_persist = false;             // --no-persist: no connection holder (command line only)
  // `create:` (spec only): podrun creates the `tpu` node when it is missing, and again after a
  // preemption (docs/reference.md, "Provisioning and recovery").
  std::optional<TpuCreate> create;
};

}  // namespace podrun
