// The holder protocol's messages: JSON lines and frame headers.
#include "launcher/persist/holder_protocol.h"

#include <nlohmann/json.hpp>
#include <stdexcept>

namespace podrun {
namespace {

using nlohmann::json;

template <class T>
json Maybe(const std::optional<T>& value) {
  return value ? json(*value) : json();
}

template <class T>
std::optional<T> MaybeOf(const json& j, const char* name) {
  if (!j.contains(name) || j.at(name).is_null()) return std::nullopt;
  return j.at(name).get<T>();
}

json OptionsJson(const SshOptions& o, bool with_timeouts) {
  json j = {{"user", Maybe(o.default_user)},
            {"port", Maybe(o.default_port)},
            {"identity", Maybe(o.identity)},
            {"ssh_config", Maybe(o.ssh_config)},
            {"known_hosts", o.known_hosts},
            {"strict", o.strict_host_keys},
            {"jump", o.jump ? json(JumpChainToString(*o.jump)) : json()},
            {"keepalive_ms", o.keepalive_interval.count()}};
  if (with_timeouts) j["connect_timeout_ms"] = o.connect_timeout.count();
  return j;
}

SshOptions OptionsOf(const json& j) {
  SshOptions o;
  o.default_user = MaybeOf<std::string>(j, "user");
  o.default_port = MaybeOf<int>(j, "port");
  o.identity = MaybeOf<std::string>(j, "identity");
  o.ssh_config = MaybeOf<std::string>(j, "ssh_config");
  o.known_hosts = j.at("known_hosts").get<std::string>();
  o.strict_host_keys = j.at("strict").get<bool>();
  if (auto jump = MaybeOf<std::string>(j, "jump")) o.jump = ParseJumpChain(*jump);
  o.keepalive_interval = std::chrono::milliseconds(j.at("keepalive_ms").get<int64_t>());
  o.connect_timeout = std::chrono::milliseconds(j.at("connect_timeout_ms").get<int64_t>());
  if (o.keepalive_interval.count() <= 0 || o.connect_timeout.count() <= 0) {
    throw std::runtime_error("bad timeouts");
  }
  return o;
}

json Parse(std::string_view line) {
  json j = json::parse(line);  // throws json::exception, a std::exception
  if (!j.is_object() || j.value("v", 0) != kHolderProtocolVersion) {
    throw std::runtime_error("another protocol version");
  }
  return j;
}

// Any exception of the JSON library (a missing field, a wrong type) as std::runtime_error.
template <class F>
auto Decoding(const char* what, F f) {
  try {
    return f();
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("malformed holder ") + what + ": " + e.what());
  }
}

}  // namespace

std::string EncodeHolderRequest(const HolderRequest& r) {
  const bool tunnel = r.kind == HolderRequest::Kind::kTunnel;
  json j = {{"v", kHolderProtocolVersion},   {"op", tunnel ? "tunnel" : "exec"},
            {"target", r.target.ToString()}, {"ssh", OptionsJson(r.ssh, true)},
            {"command", r.command},          {"persist_s", r.persist.count()},
            {"auth_sock", r.auth_sock},      {"home", r.home}};
  if (tunnel) j["socket"] = r.socket_path;
  return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

HolderRequest DecodeHolderRequest(std::string_view line) {
  return Decoding("request", [&] {
    json j = Parse(line);
    const std::string op = j.at("op").get<std::string>();
    if (op != "exec" && op != "tunnel") throw std::runtime_error("unknown op");
    HolderRequest r;
    if (op == "tunnel") {
      r.kind = HolderRequest::Kind::kTunnel;
      r.socket_path = j.at("socket").get<std::string>();
      if (r.socket_path.empty()) throw std::runtime_error("no socket");
    }
    r.target = ParseHostSpec(j.at("target").get<std::string>());
    r.ssh = OptionsOf(j.at("ssh"));
    r.command = j.at("command").get<std::string>();
    r.persist = std::chrono::seconds(j.at("persist_s").get<int64_t>());
    if (r.persist.count() <= 0) throw std::runtime_error("bad persist_s");
    r.auth_sock = j.at("auth_sock").get<std::string>();
    r.home = j.at("home").get<std::string>();
    return r;
  });
}

std::string EncodeHolderReply(const HolderReply& r) {
  json j = {{"v", kHolderProtocolVersion}, {"ok", r.ok},
            {"fallback", r.fallback},      {"host", r.host},
            {"address", r.address},        {"reused", r.reused},
            {"dial_stdio", r.dial_stdio},  {"error", r.error}};
  return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

HolderReply DecodeHolderReply(std::string_view line) {
  return Decoding("reply", [&] {
    json j = Parse(line);
    HolderReply r;
    r.ok = j.at("ok").get<bool>();
    r.fallback = j.at("fallback").get<bool>();
    r.host = j.at("host").get<std::string>();
    r.address = j.at("address").get<std::string>();
    r.reused = j.at("reused").get<bool>();
    r.dial_stdio = j.at("dial_stdio").get<bool>();
    r.error = j.at("error").get<std::string>();
    return r;
  });
}

std::string SettingsKey(const SshOptions& options) { return OptionsJson(options, false).dump(); }

std::string SessionKey(const HolderRequest& request) {
  return json::array({request.target.ToString(), OptionsJson(request.ssh, false)}).dump();
}

std::string FrameHeader(FrameType type, size_t length) {
  std::string h(kFrameHeaderBytes, '\0');
  h[0] = static_cast<char>(type);
  const auto n = static_cast<uint32_t>(length);
  for (int i = 0; i < 4; ++i) h[1 + i] = static_cast<char>((n >> (24 - 8 * i)) & 0xff);
  return h;
}

std::optional<FrameInfo> ParseFrameHeader(std::string_view header) {
  if (header.size() != kFrameHeaderBytes) return std::nullopt;
  const auto type = static_cast<FrameType>(header[0]);
  if (type != FrameType::kStdout && type != FrameType::kStderr && type != FrameType::kExit &&
      type != FrameType::kLost) {
    return std::nullopt;
  }
  uint32_t n = 0;
  for (int i = 0; i < 4; ++i) n = (n << 8) | static_cast<unsigned char>(header[1 + i]);
  if (n > kHolderMaxFrame) return std::nullopt;
  return FrameInfo{type, n};
}

std::string EncodeExitStatus(const ExitStatus& status) {
  json j = json::object();
  if (status.exit_code) j["exit_code"] = *status.exit_code;
  if (!status.signal.empty()) j["signal"] = status.signal;
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

ExitStatus DecodeExitStatus(std::string_view payload) {
  return Decoding("exit status", [&] {
    json j = json::parse(payload);
    ExitStatus s;
    s.exit_code = MaybeOf<int>(j, "exit_code");
    if (j.contains("signal")) s.signal = j.at("signal").get<std::string>();
    return s;
  });
}

}  // namespace podrun
