// Host keys of the VMs podrun creates (docs/design.md decision 17; docs/reference.md, "Host keys
// from the API"): a new VM has new host keys, so the old keys of its addresses are forgotten, and
// the keys the VM publishes through the TPU API (guest attributes `hostkeys/`) are pinned in
// known_hosts before the first connection (with the comment kPublishedKeyComment, so that a
// refusal says the machine answering is not that VM). Only the workers of the node podrun created
// or recreated are touched: every other node's keys stay pinned. A VM publishes its keys some
// time after its node reads READY: they are asked for again, for a bounded time, until every
// worker has published. Edits go through known_hosts_editor.h (locked, renamed into place).
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "launcher/connect/pod.h"
#include "launcher/pod/pod_source.h"
#include "launcher/pod/tpu_discovery.h"
#include "launcher/pod/tpu_host_keys.h"

namespace podrun {

// A worker's SSH address, as known_hosts names it.
struct HostKeyAddress {
  std::string host;  // the address podrun connects to
  int port = 22;
};

// "10.0.0.5" at port 22, "[10.0.0.5]:2222" at any other.
std::string KnownHostsName(const HostKeyAddress& address);

// Removes the keys of `hosts` (at `port`) from the known_hosts file `known_hosts`
// (`ssh-keygen -R`). Nothing when the file does not exist. A failure is said, not thrown;
// a symbolic link is never rewritten (said).
void ForgetHostKeys(const std::string& known_hosts, const std::vector<std::string>& hosts,
                    int port);

// What PinHostKeys did.
struct PinnedHostKeys {
  std::vector<int> pinned;     // workers whose published keys were written
  std::vector<int> first_use;  // workers that published none: their key is recorded on first use
};

// For a node podrun has just created or recreated, whose worker i is at `workers[i]`: removes
// every key known_hosts holds for those addresses, then appends `published[i]`'s keys for them,
// hashed when the file already holds hashed names, else plain, each as "NAME TYPE KEY
// kPublishedKeyComment"; the file is created 0600 when missing. A worker without published keys
// is left to first use, said once ("w3: the TPU API published no host key: recorded on first
// contact"). Throws Error(kUnreachable) naming the file when it is a symbolic link (never written
// through) or cannot be written, or naming the worker whose address cannot be a known_hosts name.
PinnedHostKeys PinHostKeys(const std::string& known_hosts,
                           const std::vector<HostKeyAddress>& workers,
                           const TpuHostKeys& published);

// How long the published keys are waited for: until every worker has published, asked every
// `poll`, at most `limit` in all (the sum of the waits), then the rest is left to first use.
struct PublishWait {
  std::chrono::seconds limit{120};
  std::chrono::seconds poll{5};
  // Sleeps between two asks; false when interrupted (the wait ends there).
  std::function<bool(std::chrono::seconds)> sleep;
};
// The limit is $PODRUN_HOST_KEYS_WAIT_SECONDS (tests) or 120 s; the poll ProvisionPollInterval(5
// s); the sleep ends on Ctrl-C.
PublishWait DefaultPublishWait();

// What the node's VMs publish now (a call of gcloud); throws Error when it cannot be told.
using PublishedKeysFetch = std::function<TpuHostKeys()>;

// Asks `fetch` until every worker of `workers` has published a key or `wait` ends (said once:
// "waiting up to 2m for 3 of 4 workers of NODE to publish their host keys"), then PinHostKeys
// with each worker's keys from the first answer that had any (later answers, which any process
// on the VM could have written, change nothing), one key per type (the first).
// When `fetch` never told them, says why and leaves every worker to first use (old keys
// forgotten). `what` names the node in messages. Throws as PinHostKeys.
PinnedHostKeys PinPublishedHostKeys(const PublishedKeysFetch& fetch, const std::string& what,
                                    const std::string& known_hosts,
                                    const std::vector<HostKeyAddress>& workers,
                                    const PublishWait& wait);

// PinPublishedHostKeys with what the VMs of `state` (a ready answer of `source`: a TPU node, a
// MIG slice) publish, each VM's keys pinned to its own address (SourceHostKeyAddresses): needs no
// TPU worker number, so that it comes before anything connects to the VMs (a MIG whose API does
// not show the numbers asks its VMs over SSH).
// Written to pod.ssh.known_hosts.
PinnedHostKeys PinSourceHostKeys(PodSource& source, const SourceState& state, const Pod& pod,
                                 const PublishWait& wait = DefaultPublishWait());
// The addresses podrun connects to `state`'s VMs at, in state.workers' order, at `pod`'s SSH
// port (as discovery and recovery point the pod's workers at them).
std::vector<HostKeyAddress> SourceHostKeyAddresses(const Pod& pod, const SourceState& state);

}  // namespace podrun
