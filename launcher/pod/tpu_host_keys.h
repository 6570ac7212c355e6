// The SSH host keys a Cloud TPU node's worker VMs publish through the TPU API, as guest
// attributes in the namespace `hostkeys/` (docs/reference.md, "Host keys from the API"): read
// from what `gcloud compute tpus tpu-vm get-guest-attributes NODE --format=json` prints.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace podrun {

// One published key: its type as known_hosts spells it and the key, base64.
struct PublishedHostKey {
  std::string type;    // "ssh-ed25519", "ecdsa-sha2-nistp256", "ssh-rsa"
  std::string base64;  // "AAAAC3NzaC1lZDI1NTE5AAAAI..."

  bool operator==(const PublishedHostKey&) const = default;
};

// Worker index (the API's workerId) -> the keys that worker published, in the order given.
// A worker that published none is absent.
using TpuHostKeys = std::map<int, std::vector<PublishedHostKey>>;

// The most keys taken of one worker (OpenSSH makes three: rsa, ecdsa, ed25519), and the longest
// key, base64 (an RSA key of 16384 bits is about 2.8 KB).
inline constexpr size_t kMaxHostKeysPerWorker = 8;
inline constexpr size_t kMaxHostKeyBase64 = 8192;

// True when `type` is exactly one of OpenSSH's host key types (ssh-ed25519,
// ecdsa-sha2-nistp256/384/521, ssh-rsa, sk-ssh-ed25519@openssh.com,
// sk-ecdsa-sha2-nistp256@openssh.com) and `base64` is a key of that type: standard base64
// (no whitespace, no control character), at most kMaxHostKeyBase64 bytes, decoding to SSH's
// wire format whose first string is `type`. What a VM publishes is written into known_hosts
// only when this holds.
bool IsPublishedHostKey(std::string_view type, std::string_view base64);

// Reads gcloud's JSON: a list of flattened items (gcloud 528: {"key": "ssh-ed25519",
// "namespace": "hostkeys", "value": "AAAA...", "worker_id": 0}; also {"queryPath":
// "hostkeys/", ..., "workerId": "0"}), a list of the API's guest attributes
// ({"queryPath", "queryValue": {"items": [{"namespace", "key", "value"}]}, "workerId"}), or the
// API's answer itself ({"guestAttributes": [...]}). Only keys of the `hostkeys` namespace whose
// name is a key type are taken (not `hostname`); a key that is not IsPublishedHostKey is skipped,
// and past kMaxHostKeysPerWorker a worker's further keys are. Throws
// Error(kUnreachable) "WHAT: ..." when `json` is not one of these.
TpuHostKeys ParseTpuHostKeys(std::string_view json, const std::string& what);

}  // namespace podrun
