// The holder protocol's messages: what goes in comes out, and what a session is reused for.
#include "launcher/persist/holder_protocol.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace podrun {
namespace {

HolderRequest Sample() {
  HolderRequest r;
  r.target = ParseHostSpec("root@10.0.0.5:2222");
  r.ssh.default_user = "me";
  r.ssh.identity = "/home/me/.ssh/id_ed25519";
  r.ssh.known_hosts = "/home/me/.ssh/known_hosts";
  r.ssh.strict_host_keys = true;
  r.ssh.jump = ParseJumpChain("bastion:22");
  r.ssh.connect_timeout = std::chrono::seconds(7);
  r.command = "echo 'a  b'\nexit 3";
  r.persist = std::chrono::seconds(42);
  r.auth_sock = "/tmp/agent.1";
  r.home = "/home/me";
  return r;
}

std::string WithoutNewline(const std::string& line) {
  EXPECT_EQ('\n', line.back());
  EXPECT_EQ(std::string::npos, line.substr(0, line.size() - 1).find('\n'));  // one line
  return line.substr(0, line.size() - 1);
}

TEST(HolderProtocol, RequestRoundTrips) {
  const HolderRequest in = Sample();
  const HolderRequest out = DecodeHolderRequest(WithoutNewline(EncodeHolderRequest(in)));
  EXPECT_EQ(in.target, out.target);
  EXPECT_EQ(in.ssh.default_user, out.ssh.default_user);
  EXPECT_EQ(std::nullopt, out.ssh.default_port);
  EXPECT_EQ(in.ssh.identity, out.ssh.identity);
  EXPECT_EQ(in.ssh.known_hosts, out.ssh.known_hosts);
  EXPECT_TRUE(out.ssh.strict_host_keys);
  ASSERT_TRUE(out.ssh.jump);
  EXPECT_EQ("bastion:22", JumpChainToString(*out.ssh.jump));
  EXPECT_EQ(in.ssh.connect_timeout, out.ssh.connect_timeout);
  EXPECT_EQ(in.command, out.command);
  EXPECT_EQ(in.persist, out.persist);
  EXPECT_EQ(in.auth_sock, out.auth_sock);
  EXPECT_EQ(in.home, out.home);
  EXPECT_EQ(SessionKey(in), SessionKey(out));
  EXPECT_EQ(HolderRequest::Kind::kExec, out.kind);
}

// A tunnel names the worker's socket; it shares the session of an exec to the same worker.
TEST(HolderProtocol, TunnelRequestRoundTripsAndSharesTheExecsSession) {
  HolderRequest in = Sample();
  in.kind = HolderRequest::Kind::kTunnel;
  in.socket_path = "/root/.podrun/agent-1.sock";
  const HolderRequest out = DecodeHolderRequest(WithoutNewline(EncodeHolderRequest(in)));
  EXPECT_EQ(HolderRequest::Kind::kTunnel, out.kind);
  EXPECT_EQ(in.socket_path, out.socket_path);
  EXPECT_EQ(in.command, out.command);
  EXPECT_EQ(SessionKey(Sample()), SessionKey(out));
  std::string line = WithoutNewline(EncodeHolderRequest(in));
  line.replace(line.find(in.socket_path), in.socket_path.size(), "");
  EXPECT_THROW(DecodeHolderRequest(line), std::runtime_error);  // a tunnel to nowhere
}

TEST(HolderProtocol, ReplyRoundTrips) {
  HolderReply in;
  in.error = "w3: host key CHANGED: SHA256:abc";
  HolderReply out = DecodeHolderReply(WithoutNewline(EncodeHolderReply(in)));
  EXPECT_FALSE(out.ok);
  EXPECT_FALSE(out.fallback);
  EXPECT_EQ(in.error, out.error);
  in = HolderReply{};
  in.ok = true;
  in.host = "root@10.0.0.5:22";
  in.address = "10.0.0.5";
  in.reused = true;
  in.dial_stdio = true;
  out = DecodeHolderReply(WithoutNewline(EncodeHolderReply(in)));
  EXPECT_TRUE(out.ok);
  EXPECT_TRUE(out.reused);
  EXPECT_TRUE(out.dial_stdio);
  EXPECT_EQ("root@10.0.0.5:22", out.host);
  EXPECT_EQ("10.0.0.5", out.address);
}

TEST(HolderProtocol, MalformedOrOtherVersionIsRefused) {
  EXPECT_THROW(DecodeHolderRequest("not json"), std::runtime_error);
  EXPECT_THROW(DecodeHolderRequest("{\"v\":99,\"op\":\"exec\"}"), std::runtime_error);
  EXPECT_THROW(DecodeHolderRequest("{\"v\":2,\"op\":\"exec\"}"), std::runtime_error);
  // A holder of protocol 1 (exec only) reads a request of this one as another version: the
  // command falls back to connecting on its own.
  std::string old = WithoutNewline(EncodeHolderRequest(Sample()));
  old.replace(old.find("\"v\":2"), 5, "\"v\":1");
  EXPECT_THROW(DecodeHolderRequest(old), std::runtime_error);
  std::string line = WithoutNewline(EncodeHolderRequest(Sample()));
  line.replace(line.find("\"exec\""), 6, "\"shell\"");
  EXPECT_THROW(DecodeHolderRequest(line), std::runtime_error);
  EXPECT_THROW(DecodeHolderReply("[]"), std::runtime_error);
}

// A kept session serves only the same target with the same trust and identity settings.
TEST(HolderProtocol, SessionKeyChangesWithEverySettingThatMatters) {
  const HolderRequest base = Sample();
  auto differs = [&](auto change) {
    HolderRequest r = base;
    change(r);
    return SessionKey(r) != SessionKey(base);
  };
  EXPECT_TRUE(differs([](HolderRequest& r) { r.target = ParseHostSpec("root@10.0.0.5:22"); }));
  EXPECT_TRUE(differs([](HolderRequest& r) { r.target = ParseHostSpec("me@10.0.0.5:2222"); }));
  EXPECT_TRUE(differs([](HolderRequest& r) { r.ssh.default_user = "other"; }));
  EXPECT_TRUE(differs([](HolderRequest& r) { r.ssh.default_port = 2200; }));
  EXPECT_TRUE(differs([](HolderRequest& r) { r.ssh.identity.reset(); }));
  EXPECT_TRUE(differs([](HolderRequest& r) { r.ssh.ssh_config = "/etc/other"; }));
  EXPECT_TRUE(differs([](HolderRequest& r) { r.ssh.known_hosts = "/tmp/kh"; }));
  EXPECT_TRUE(differs([](HolderRequest& r) { r.ssh.strict_host_keys = false; }));
  EXPECT_TRUE(differs([](HolderRequest& r) { r.ssh.jump.reset(); }));
  EXPECT_TRUE(differs([](HolderRequest& r) { r.ssh.jump = JumpChain{}; }));
  EXPECT_TRUE(differs([](HolderRequest& r) { r.ssh.keepalive_interval *= 2; }));
  // What does not change the connection does not change the key.
  EXPECT_FALSE(differs([](HolderRequest& r) { r.command = "true"; }));
  EXPECT_FALSE(differs([](HolderRequest& r) { r.persist = std::chrono::seconds(1); }));
  EXPECT_FALSE(differs([](HolderRequest& r) { r.ssh.connect_timeout *= 2; }));
}

TEST(HolderProtocol, FrameHeadersRoundTripAndBoundTheLength) {
  auto info = ParseFrameHeader(FrameHeader(FrameType::kStderr, 65536));
  ASSERT_TRUE(info);
  EXPECT_EQ(FrameType::kStderr, info->type);
  EXPECT_EQ(65536u, info->length);
  EXPECT_FALSE(ParseFrameHeader(FrameHeader(FrameType::kStdout, kHolderMaxFrame + 1)));
  EXPECT_FALSE(ParseFrameHeader(std::string("z\0\0\0\1", 5)));
  EXPECT_FALSE(ParseFrameHeader("o\0\0"));
}

TEST(HolderProtocol, ExitStatusRoundTrips) {
  ExitStatus s;
  s.exit_code = 7;
  EXPECT_EQ(7, DecodeExitStatus(EncodeExitStatus(s)).exit_code);
  s = ExitStatus{};
  s.signal = "KILL";
  ExitStatus out = DecodeExitStatus(EncodeExitStatus(s));
  EXPECT_FALSE(out.exit_code);
  EXPECT_EQ("KILL", out.signal);
  EXPECT_TRUE(DecodeExitStatus(EncodeExitStatus(ExitStatus{})).failed());  // no status at all
}

}  // namespace
}  // namespace podrun
