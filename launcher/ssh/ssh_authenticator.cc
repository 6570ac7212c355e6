// The handshake (with podrun's host-key decision, docs/design.md decision 13) and the public-key
// authentication of an SshSession (see ssh_authenticator.h).
#include "launcher/ssh/ssh_authenticator.h"

#include <fmt/format.h>

#include <fstream>

#include "launcher/base/error.h"
#include "launcher/ssh/connection_probe.h"
#include "launcher/ssh/host_key_policy.h"
#include "launcher/ssh/known_hosts_editor.h"
#include "launcher/ssh/ssh_connect_error.h"

namespace podrun {

using ssh_connect_error::TransientError;
using ssh_connect_error::Unreachable;

namespace {

struct ServerKey {
  std::string type;
  std::string fingerprint;
};

ServerKey GetServerKey(ssh_session s) {
  ServerKey out{"unknown", "unknown"};
  ssh_key key = nullptr;
  if (ssh_get_server_publickey(s, &key) != SSH_OK) return out;
  out.type = ssh_key_type_to_char(ssh_key_type(key));
  unsigned char* hash = nullptr;
  size_t hash_len = 0;
  if (ssh_get_publickey_hash(key, SSH_PUBLICKEY_HASH_SHA256, &hash, &hash_len) == SSH_OK) {
    char* fp = ssh_get_fingerprint_hash(SSH_PUBLICKEY_HASH_SHA256, hash, hash_len);
    if (fp != nullptr) {
      out.fingerprint = fp;
      ssh_string_free_char(fp);
    }
    ssh_clean_pubkey_hash(&hash);
  }
  ssh_key_free(key);
  return out;
}

// "TYPE SHA256:..." of `key`, or "" when it cannot be told.
std::string DescribeKey(ssh_key key) {
  if (key == nullptr) return "";
  std::string out = ssh_key_type_to_char(ssh_key_type(key));
  unsigned char* hash = nullptr;
  size_t hash_len = 0;
  if (ssh_get_publickey_hash(key, SSH_PUBLICKEY_HASH_SHA256, &hash, &hash_len) != SSH_OK) return "";
  char* fp = ssh_get_fingerprint_hash(SSH_PUBLICKEY_HASH_SHA256, hash, hash_len);
  ssh_clean_pubkey_hash(&hash);
  if (fp == nullptr) return "";
  out += std::string(" ") + fp;
  ssh_string_free_char(fp);
  return out;
}

// The key `known_hosts` holds for `host` at the port of `s` ("TYPE SHA256:..."), one of type
// `type` if there is one, else the first; "" when none. `published`: whether podrun pinned it
// from what the VM published (its line ends with kPublishedKeyComment).
std::string KnownKey(ssh_session s, const std::string& known_hosts, const std::string& host,
                     const std::string& type, bool* published) {
  unsigned int port = 22;
  ssh_options_get_port(s, &port);
  const std::string name = port == 22 ? host : fmt::format("[{}]:{}", host, port);
  std::ifstream in(known_hosts);
  std::string first;
  bool first_published = false;
  for (std::string line; std::getline(in, line);) {
    struct ssh_knownhosts_entry* entry = nullptr;
    if (ssh_known_hosts_parse_line(name.c_str(), line.c_str(), &entry) != SSH_OK) continue;
    std::string out = entry != nullptr ? DescribeKey(entry->publickey) : "";
    ssh_knownhosts_entry_free(entry);
    const bool pinned = line.ends_with(std::string(" ") + kPublishedKeyComment);
    if (out.starts_with(type + " ")) {
      *published = pinned;
      return out;
    }
    if (first.empty()) {
      first = out;
      first_published = pinned;
    }
  }
  *published = first_published;
  return first;
}

}  // namespace

asio::awaitable<void> SshAuthenticator::Handshake() {
  const std::string& description = session_.description();
  ssh_session s = session_.raw();
  int rc = co_await session_.Retry([s] { return ssh_connect(s); });
  if (rc != SSH_OK) {
    std::string message =
        fmt::format("{}: SSH handshake failed: {}", description, session_.LastError());
    // Worth another try: the server reset the connection, or closed it before saying anything
    // (an sshd past MaxStartups). A server that answered and then failed the handshake, or a
    // failure libssh saw on a live connection, would fail the same way again.
    ConnectionEnd end = ProbeConnection(session_.waiter().native_handle());
    bool banner = ssh_get_serverbanner(s) != nullptr;
    if (end == ConnectionEnd::kReset || (end == ConnectionEnd::kClosedByPeer && !banner)) {
      throw TransientError(message);
    }
    throw Unreachable(message);
  }
  // The decision is podrun's own (docs/design.md decision 13): the known_hosts files are still the
  // ones ConfigureSession pinned, whatever ssh_config said.
  if (!HostKeyOptionsPinned(s, options_.known_hosts)) {
    throw Unreachable(fmt::format("{}: the known_hosts setting is not {} (refusing to connect)",
                                  description, options_.known_hosts));
  }
  ssh_known_hosts_e state = ssh_session_is_known_server(s);
  HostKeyAction action = DecideHostKey(state, options_.strict_host_keys);
  if (action == HostKeyAction::kAccept) co_return;
  ServerKey key = GetServerKey(s);
  if (action == HostKeyAction::kRecord) {
    // Appended under known_hosts' lock (known_hosts_editor.h), never through a symbolic link:
    // a keeper pinning keys at the same time loses nothing.
    char* entry = nullptr;
    if (ssh_session_export_known_hosts_entry(s, &entry) != SSH_OK || entry == nullptr) {
      throw Unreachable(fmt::format("{}: cannot record the host key in {}: {}", description,
                                    options_.known_hosts, session_.LastError()));
    }
    const std::string line = entry;
    ssh_string_free_char(entry);
    try {
      AppendKnownHosts(options_.known_hosts, line);
    } catch (const Error& e) {
      throw Unreachable(fmt::format("{}: cannot record the host key: {}", description, e.what()));
    }
    co_return;
  }
  bool published = false;
  const std::string known_key =
      action == HostKeyAction::kRefuseChanged
          ? KnownKey(s, options_.known_hosts, session_.address(), key.type, &published)
          : "";
  throw Unreachable(
      fmt::format("{}: {}", description,
                  HostKeyRefusal(action, session_.address(), key.type, key.fingerprint,
                                 options_.known_hosts, known_key, published)));
}

asio::awaitable<void> SshAuthenticator::Authenticate() {
  const std::string& description = session_.description();
  ssh_session s = session_.raw();
  int rc = co_await session_.Retry([s] { return ssh_userauth_none(s, nullptr); }, SSH_AUTH_AGAIN);
  if (rc == SSH_AUTH_SUCCESS) co_return;
  if (rc == SSH_AUTH_ERROR) {
    throw Unreachable(fmt::format("{}: authentication: {}", description, session_.LastError()));
  }
  std::string tried;
  if (options_.identity) {
    ssh_key key = nullptr;
    if (ssh_pki_import_privkey_file(options_.identity->c_str(), nullptr, nullptr, nullptr, &key) !=
        SSH_OK) {
      throw Unreachable(
          fmt::format("{}: cannot read identity file {}", description, *options_.identity));
    }
    std::unique_ptr<ssh_key_struct, void (*)(ssh_key)> owned(key, ssh_key_free);
    rc = co_await session_.Retry([s, key] { return ssh_userauth_publickey(s, nullptr, key); },
                                 SSH_AUTH_AGAIN);
    tried = "identity file " + *options_.identity;
  } else {
    rc = co_await session_.Retry([s] { return ssh_userauth_publickey_auto(s, nullptr, nullptr); },
                                 SSH_AUTH_AGAIN);
    tried = "ssh-agent and the default key files";
  }
  if (rc == SSH_AUTH_SUCCESS) co_return;
  if (rc == SSH_AUTH_ERROR) {
    throw Unreachable(fmt::format("{}: authentication: {}", description, session_.LastError()));
  }
  throw Unreachable(fmt::format("{}: permission denied (publickey; tried {})", description, tried));
}

}  // namespace podrun
