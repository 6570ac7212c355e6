// Combining ssh_config with podrun's own SSH options (see ssh_options.h).
#include "launcher/ssh/ssh_options.h"

#include <fmt/format.h>

#include <algorithm>

#if defined(__aarch64__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

#include "launcher/base/error.h"
#include "launcher/ssh/host_key_policy.h"

namespace podrun {

std::string GetStringOption(ssh_session s, ssh_options_e option) {
  char* value = nullptr;
  if (ssh_options_get(s, option, &value) != SSH_OK || value == nullptr) return "";
  std::string out = value;
  ssh_string_free_char(value);
  return out;
}

std::string SshTarget::Describe() const {
  return fmt::format("{}{}:{}", user.empty() ? "" : user + "@", address, port);
}

void SetSshOption(ssh_session s, ssh_options_e option, const void* value, const char* name,
                  const std::string& host) {
  if (ssh_options_set(s, option, value) != SSH_OK) {
    throw Error(ExitCode::kUnreachable,
                fmt::format("{}: cannot set {}: {}", host, name, ssh_get_error(s)));
  }
}

const char* PreferredCiphers() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  const bool aes = __builtin_cpu_supports("aes") && __builtin_cpu_supports("pclmul");
#elif defined(__aarch64__)
  const unsigned long hwcap = ::getauxval(AT_HWCAP);
  const bool aes = (hwcap & HWCAP_AES) != 0 && (hwcap & HWCAP_PMULL) != 0;
#else
  const bool aes = false;
#endif
  return aes ? "aes128-gcm@openssh.com,aes256-gcm@openssh.com,chacha20-poly1305@openssh.com,"
               "aes256-ctr,aes192-ctr,aes128-ctr"
             : nullptr;
}

SshTarget ConfigureSession(ssh_session s, const HostSpec& target, const SshOptions& options) {
  const std::string& host = target.host;
  // The host first: ssh_config's Host and Match lines are matched against it. libssh reads
  // "user@host:port" here, so an IPv6 address goes in brackets.
  std::string host_option = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  SetSshOption(s, SSH_OPTIONS_HOST, host_option.c_str(), "host", host);
  int process_config = 0;  // parsed here, once, and not again by ssh_connect
  SetSshOption(s, SSH_OPTIONS_PROCESS_CONFIG, &process_config, "ProcessConfig", host);
  // Before ssh_config, whose Ciphers replaces it. The same algorithms in another order: with AES
  // instructions AES-GCM costs both ends less than ChaCha20-Poly1305 (sshd's encryption was most
  // of a worker's CPU for exec's output: docs/decisions.md, "SSH ciphers").
  if (const char* ciphers = PreferredCiphers()) {
    SetSshOption(s, SSH_OPTIONS_CIPHERS_C_S, ciphers, "ciphers", host);
    SetSshOption(s, SSH_OPTIONS_CIPHERS_S_C, ciphers, "ciphers", host);
  }
  const char* config_file = options.ssh_config ? options.ssh_config->c_str() : nullptr;
  if (ssh_options_parse_config(s, config_file) != SSH_OK) {
    throw Error(ExitCode::kUnreachable,
                fmt::format("{}: cannot read ssh_config {}: {}", host,
                            options.ssh_config.value_or("(~/.ssh/config, /etc/ssh/ssh_config)"),
                            ssh_get_error(s)));
  }
  // What podrun was given wins over ssh_config: set after it.
  if (auto user = target.user ? target.user : options.default_user) {
    SetSshOption(s, SSH_OPTIONS_USER, user->c_str(), "user", host);
  }
  if (auto port = target.port ? target.port : options.default_port) {
    unsigned int value = static_cast<unsigned int>(*port);
    SetSshOption(s, SSH_OPTIONS_PORT, &value, "port", host);
  }
  PinHostKeyOptions(s, options.known_hosts, host);

  SshTarget out;
  out.address = GetStringOption(s, SSH_OPTIONS_HOST);
  if (ssh_options_get_port(s, &out.port) != SSH_OK) out.port = 22;
  out.user = GetStringOption(s, SSH_OPTIONS_USER);
  out.proxy_command = GetStringOption(s, SSH_OPTIONS_PROXYCOMMAND);
  if (out.proxy_command == "none") out.proxy_command.clear();  // "ProxyJump none"
  if (options.jump) {
    out.jump = *options.jump;
    out.proxy_command.clear();
  } else if (std::optional<JumpChain> chain = JumpChainOfProxyCommand(out.proxy_command)) {
    out.proxy_command.clear();
    bool names_itself = std::any_of(chain->begin(), chain->end(), [&](const HostSpec& hop) {
      return hop.host == host || hop.host == out.address;
    });
    if (!(options.jump_depth > 0 && names_itself)) out.jump = std::move(*chain);
  }
  return out;
}

}  // namespace podrun
