// Tests of the peer link over loopback, between two caches: a whole fetch (an empty blob, a
// several-MiB one, duplicates, symlinks), blobs already cached not sent again, a wrong key, a
// hash outside the transfer, a peer lacking a blob, a blob corrupted in the server's cache, the
// server's lifetime, idle exit and destructor, strangers stalling in the handshake, a peer
// announcing a huge manifest, connect and read failures; and a throughput print.
#include "worker/sync/peer_link.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "proto/agent.pb.h"
#include "proto/sha256.h"
#include "worker/base/agent_error.h"
#include "worker/sync/peer_crypto.h"

namespace podrun::agent {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

std::string RandomBytes(size_t size, uint64_t seed) {
  std::mt19937_64 random(seed);
  std::string out(size, '\0');
  for (size_t i = 0; i < size; i += 8) {
    const uint64_t word = random();
    std::memcpy(out.data() + i, &word, std::min<size_t>(8, size - i));
  }
  return out;
}

// A listening (or, with listen=false, merely bound) socket on 127.0.0.1 nobody answers on.
UniqueFd Loopback(bool listen, uint16_t* port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof addr;
  EXPECT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  if (listen) {
    EXPECT_EQ(::listen(fd.get(), 4), 0);
  }
  EXPECT_EQ(::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &size), 0);
  *port = ntohs(addr.sin_port);
  return fd;
}

// A connection to 127.0.0.1:port, with 5 s send and receive timeouts (as PeerChannel wants).
UniqueFd ConnectTo(uint16_t port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  EXPECT_EQ(::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  const timeval tv{5, 0};
  EXPECT_EQ(::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv), 0);
  EXPECT_EQ(::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv), 0);
  return fd;
}

class PeerLinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "peerlink.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    server_cache_.emplace(dir_ / "server");
    client_cache_.emplace(dir_ / "client");
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Puts `files` into the server's cache and a manifest naming them (plus a symlink); returns
  // the manifest's hash.
  std::string Manifest(const std::vector<std::string>& files) {
    v1::SyncManifest manifest;
    for (size_t i = 0; i < files.size(); ++i) {
      auto* entry = manifest.add_entries();
      entry->set_path("f" + std::to_string(i));
      entry->set_size(files[i].size());
      entry->set_mode(0644);
      entry->set_sha256(server_cache_->Put(files[i]));
    }
    auto* link = manifest.add_entries();
    link->set_path("link");
    link->set_sha256(Sha256Hex("f0"));
    link->set_symlink("f0");
    return server_cache_->Put(manifest.SerializeAsString());
  }

  // The error FetchBlobs throws (and fails the test when it throws none).
  std::string FetchError(uint16_t port, const std::string& key, const std::string& manifest,
                         seconds timeout = seconds(5)) {
    try {
      FetchBlobs(*client_cache_, "127.0.0.1", port, key, manifest, timeout);
    } catch (const AgentError& e) {
      return e.what();
    }
    ADD_FAILURE() << "the fetch succeeded";
    return "";
  }

  bool ClientHasTempFiles() const {
    for (const auto& entry : fs::recursive_directory_iterator(dir_ / "client")) {
      if (entry.path().filename().string().find(".tmp.") != std::string::npos) return true;
    }
    return false;
  }

  const std::string key_ = RandomBytes(32, 7);
  fs::path dir_;
  std::optional<BlobCache> server_cache_;
  std::optional<BlobCache> client_cache_;
};

TEST_F(PeerLinkTest, FetchesEveryBlobOfTheManifest) {
  const std::vector<std::string> files = {"hello\n", "", RandomBytes(5 << 20, 1), "hello\n"};
  const std::string manifest = Manifest(files);
  BlobServer server(*server_cache_, "127.0.0.1", key_, manifest, seconds(30));
  ASSERT_NE(server.port(), 0);

  const FetchResult result =
      FetchBlobs(*client_cache_, "127.0.0.1", server.port(), key_, manifest, seconds(5));
  const uint64_t manifest_size = server_cache_->Read(manifest).size();
  EXPECT_EQ(result.blobs, 4u);  // the manifest, "hello\n", "", the big one
  EXPECT_EQ(result.bytes, manifest_size + 6 + (5 << 20));
  EXPECT_EQ(server.blobs_served(), 4u);
  EXPECT_EQ(server.bytes_served(), result.bytes);
  EXPECT_EQ(client_cache_->Read(manifest), server_cache_->Read(manifest));
  for (const std::string& file : files) {
    ASSERT_TRUE(client_cache_->Has(Sha256Hex(file)));
    EXPECT_EQ(client_cache_->Read(Sha256Hex(file)), file);
  }
  EXPECT_FALSE(client_cache_->Has(Sha256Hex("f0")));  // a symlink has no blob
}

TEST_F(PeerLinkTest, ServesOnTheGivenAddressOnlyNeverTheWildcard) {
  const std::string manifest = Manifest({"a"});
  BlobServer server(*server_cache_, "127.0.0.2", key_, manifest, seconds(30));
  EXPECT_EQ("127.0.0.2", server.bound_address());
  // Not on every interface: the same port on another of this machine's addresses is closed.
  EXPECT_NE(FetchError(server.port(), key_, manifest).find("127.0.0.1"), std::string::npos);
  EXPECT_EQ(
      2u, FetchBlobs(*client_cache_, "127.0.0.2", server.port(), key_, manifest, seconds(5)).blobs);
  // A wildcard or an address of another machine is refused, naming it.
  for (const std::string address : {"0.0.0.0", "192.0.2.1"}) {
    try {
      BlobServer refused(*server_cache_, address, key_, manifest, seconds(30));
      ADD_FAILURE() << "served on " << address;
    } catch (const AgentError& e) {
      EXPECT_NE(std::string(e.what()).find("serve blobs on " + address), std::string::npos)
          << e.what();
    }
  }
}

TEST_F(PeerLinkTest, BlobsAlreadyCachedAreNotSent) {
  const std::string big = RandomBytes(3 << 20, 2);
  const std::string manifest = Manifest({"one", "two", big});
  client_cache_->Put(server_cache_->Read(manifest));
  client_cache_->Put("one");
  BlobServer server(*server_cache_, "127.0.0.1", key_, manifest, seconds(30));

  FetchResult result =
      FetchBlobs(*client_cache_, "127.0.0.1", server.port(), key_, manifest, seconds(5));
  EXPECT_EQ(result.blobs, 2u);
  EXPECT_EQ(result.bytes, 3u + big.size());
  EXPECT_EQ(server.blobs_served(), 2u);
  EXPECT_EQ(client_cache_->Read(Sha256Hex(big)), big);

  result = FetchBlobs(*client_cache_, "127.0.0.1", server.port(), key_, manifest, seconds(5));
  EXPECT_EQ(result.blobs, 0u);
  EXPECT_EQ(result.bytes, 0u);
  EXPECT_EQ(server.blobs_served(), 2u);
}

TEST_F(PeerLinkTest, AWrongKeyGetsNothing) {
  const std::string manifest = Manifest({"secret"});
  BlobServer server(*server_cache_, "127.0.0.1", key_, manifest, seconds(30));
  std::string wrong = key_;
  wrong[5] ^= 1;
  const std::string error = FetchError(server.port(), wrong, manifest);
  EXPECT_NE(error.find("127.0.0.1:" + std::to_string(server.port())), std::string::npos) << error;
  EXPECT_NE(error.find("authentication failed"), std::string::npos) << error;
  EXPECT_FALSE(client_cache_->Has(manifest));
  EXPECT_EQ(server.blobs_served(), 0u);
  EXPECT_NE(FetchError(server.port(), "short", manifest).find("32 bytes"), std::string::npos);
}

TEST_F(PeerLinkTest, RefusesBlobsOutsideTheTransfer) {
  const std::string manifest = Manifest({"in the transfer"});
  const std::string other = server_cache_->Put("cached, but not in the transfer");
  BlobServer server(*server_cache_, "127.0.0.1", key_, manifest, seconds(30));
  const std::string error = FetchError(server.port(), key_, other);
  EXPECT_NE(error.find("refused blob " + other + ": not part of this transfer"), std::string::npos)
      << error;
  EXPECT_FALSE(client_cache_->Has(other));
  EXPECT_EQ(server.blobs_served(), 0u);
}

TEST_F(PeerLinkTest, APeerLackingABlobSaysSo) {
  const std::string manifest = Manifest({"kept", "lost"});
  fs::remove(server_cache_->PathOf(Sha256Hex("lost")));
  BlobServer server(*server_cache_, "127.0.0.1", key_, manifest, seconds(30));
  const std::string error = FetchError(server.port(), key_, manifest);
  EXPECT_NE(error.find("not in the peer's cache"), std::string::npos) << error;
  EXPECT_TRUE(client_cache_->Has(Sha256Hex("kept")));  // whole and checked: kept
}

TEST_F(PeerLinkTest, ACorruptedBlobFailsTheHashCheck) {
  const std::string big = RandomBytes(2 << 20, 3);
  const std::string manifest = Manifest({big});
  {
    UniqueFd file(::open(server_cache_->PathOf(Sha256Hex(big)).c_str(), O_WRONLY | O_CLOEXEC));
    ASSERT_TRUE(file);
    ASSERT_EQ(::pwrite(file.get(), "corrupt", 7, 1 << 20), 7);
  }
  BlobServer server(*server_cache_, "127.0.0.1", key_, manifest, seconds(30));
  const std::string error = FetchError(server.port(), key_, manifest);
  EXPECT_NE(error.find("hash to"), std::string::npos) << error;
  EXPECT_NE(error.find("127.0.0.1:"), std::string::npos) << error;
  EXPECT_FALSE(client_cache_->Has(Sha256Hex(big)));
  EXPECT_FALSE(ClientHasTempFiles());
}

TEST_F(PeerLinkTest, StopsAfterItsLifetime) {
  const std::string manifest = Manifest({"brief"});
  BlobServer server(*server_cache_, "127.0.0.1", key_, manifest, seconds(1));
  EXPECT_EQ(
      FetchBlobs(*client_cache_, "127.0.0.1", server.port(), key_, manifest, seconds(5)).blobs, 2u);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_NE(FetchError(server.port(), key_, manifest).find("refused"), std::string::npos);
}

TEST_F(PeerLinkTest, ClosesWhenIdle) {
  const std::string manifest = Manifest({"idle"});
  BlobServer server(*server_cache_, "127.0.0.1", key_, manifest, seconds(60),
                    {.idle = std::chrono::seconds(1)});
  EXPECT_TRUE(server.serving());
  std::this_thread::sleep_for(std::chrono::milliseconds(2000));
  EXPECT_FALSE(server.serving());
  EXPECT_NE(FetchError(server.port(), key_, manifest).find("refused"), std::string::npos);
}

TEST_F(PeerLinkTest, AnOpenConnectionKeepsItFromIdling) {
  const std::string manifest = Manifest({"busy"});
  BlobServer server(*server_cache_, "127.0.0.1", key_, manifest, seconds(60),
                    {.idle = std::chrono::seconds(2)});
  {
    UniqueFd fd = ConnectTo(server.port());
    PeerChannel held(fd.get(), key_, PeerChannel::Role::kClient, kPeerChunkSize);
    std::this_thread::sleep_for(std::chrono::milliseconds(3000));
    EXPECT_TRUE(server.serving());
  }
  // Idle counts from when the last connection ended, not from when the server opened.
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  EXPECT_EQ(
      FetchBlobs(*client_cache_, "127.0.0.1", server.port(), key_, manifest, seconds(5)).blobs, 2u);
  std::this_thread::sleep_for(std::chrono::milliseconds(3500));
  EXPECT_FALSE(server.serving());
  EXPECT_NE(FetchError(server.port(), key_, manifest).find("refused"), std::string::npos);
}

TEST_F(PeerLinkTest, SilentStrangersDoNotLockOutPeers) {
  const std::string manifest = Manifest({"wanted"});
  BlobServer server(*server_cache_, "127.0.0.1", key_, manifest, seconds(60));
  std::vector<UniqueFd> strangers;
  for (size_t i = 0; i < BlobServer::kMaxConnections + 4; ++i) {
    strangers.push_back(ConnectTo(server.port()));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const auto start = Clock::now();
  EXPECT_EQ(
      FetchBlobs(*client_cache_, "127.0.0.1", server.port(), key_, manifest, seconds(5)).blobs, 2u);
  EXPECT_LT(Clock::now() - start, seconds(3));
}

TEST_F(PeerLinkTest, StrangersBeyondTheHandshakeCapWaitOnlyForTheDeadline) {
  const std::string manifest = Manifest({"wanted"});
  BlobServer server(*server_cache_, "127.0.0.1", key_, manifest, seconds(60),
                    {.handshake = std::chrono::seconds(1)});
  std::vector<UniqueFd> strangers;
  for (size_t i = 0; i < BlobServer::kMaxHandshakes + 4; ++i) {
    strangers.push_back(ConnectTo(server.port()));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const auto start = Clock::now();
  EXPECT_EQ(
      FetchBlobs(*client_cache_, "127.0.0.1", server.port(), key_, manifest, seconds(10)).blobs,
      2u);
  EXPECT_LT(Clock::now() - start, seconds(6));
}

TEST_F(PeerLinkTest, ATricklingHandshakeIsDroppedAtItsDeadline) {
  const std::string manifest = Manifest({"x"});
  BlobServer server(*server_cache_, "127.0.0.1", key_, manifest, seconds(60),
                    {.handshake = std::chrono::seconds(1)});
  UniqueFd fd = ConnectTo(server.port());
  // The start of a genuine handshake, a byte every 100 ms: each read of the server's is quick.
  const std::string hello = "podrun-peer v1" + RandomBytes(32, 9);
  const auto start = Clock::now();
  std::optional<Clock::duration> dropped;
  for (size_t i = 0; i < hello.size() && !dropped; ++i) {
    ::send(fd.get(), &hello[i], 1, MSG_NOSIGNAL);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    char buffer[256];
    for (;;) {
      const ssize_t n = ::recv(fd.get(), buffer, sizeof buffer, MSG_DONTWAIT);
      if (n > 0) continue;  // the server's own hello
      if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) dropped = Clock::now() - start;
      break;
    }
  }
  ASSERT_TRUE(dropped) << "still connected after " << hello.size() << " bytes";
  EXPECT_GE(*dropped, std::chrono::milliseconds(900));
  EXPECT_LT(*dropped, seconds(3));
  EXPECT_EQ(
      FetchBlobs(*client_cache_, "127.0.0.1", server.port(), key_, manifest, seconds(5)).blobs, 2u);
}

TEST_F(PeerLinkTest, AManifestTooLargeIsRefused) {
  const std::string manifest = Manifest({"m"});
  uint16_t port = 0;
  UniqueFd listener = Loopback(true, &port);
  // A peer that holds the key and announces a manifest of 1 TiB: its size frame ('S', 8 bytes
  // big-endian), then a first data frame.
  std::thread peer([&] {
    UniqueFd fd(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
    const timeval tv{5, 0};
    ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    try {
      PeerChannel channel(fd.get(), key_, PeerChannel::Role::kServer, 64);
      char type = 0;
      std::string_view payload;
      ASSERT_TRUE(channel.Receive(&type, &payload));
      EXPECT_EQ(payload, manifest);
      channel.Send('S', std::string("\0\0\x01\0\0\0\0\0", 8));
      channel.Send('D', "not a manifest");
      while (channel.Receive(&type, &payload)) {
      }
    } catch (const AgentError&) {
      // The fetcher hung up.
    }
  });
  const std::string error = FetchError(port, key_, manifest);
  peer.join();
  EXPECT_NE(error.find("peer 127.0.0.1:" + std::to_string(port)), std::string::npos) << error;
  EXPECT_NE(error.find("1099511627776 bytes, more than a manifest may have (64 MiB)"),
            std::string::npos)
      << error;
  EXPECT_FALSE(client_cache_->Has(manifest));
  EXPECT_FALSE(ClientHasTempFiles());
}

TEST_F(PeerLinkTest, TheDestructorEndsOpenConnections) {
  const std::string manifest = Manifest({"x"});
  auto server =
      std::make_unique<BlobServer>(*server_cache_, "127.0.0.1", key_, manifest, seconds(60));
  const uint16_t port = server->port();
  // A client that connects and then says nothing: its thread waits on it until shut down.
  UniqueFd idle(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  ASSERT_EQ(::connect(idle.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto start = Clock::now();
  server.reset();
  EXPECT_LT(Clock::now() - start, seconds(2));
  EXPECT_NE(FetchError(port, key_, manifest).find("refused"), std::string::npos);
}

TEST_F(PeerLinkTest, NobodyListeningFailsPromptly) {
  uint16_t port = 0;
  UniqueFd bound = Loopback(false, &port);
  const auto start = Clock::now();
  const std::string error = FetchError(port, key_, Sha256Hex("m"));
  EXPECT_LT(Clock::now() - start, seconds(2));
  EXPECT_NE(error.find("peer 127.0.0.1:" + std::to_string(port) + ": connect: Connection refused"),
            std::string::npos)
      << error;
}

TEST_F(PeerLinkTest, ASilentPeerTimesOut) {
  uint16_t port = 0;
  UniqueFd listener = Loopback(true, &port);  // the kernel accepts; nobody speaks
  const auto start = Clock::now();
  const std::string error = FetchError(port, key_, Sha256Hex("m"), seconds(1));
  EXPECT_LT(Clock::now() - start, seconds(3));
  EXPECT_NE(error.find("timed out"), std::string::npos) << error;
}

TEST_F(PeerLinkTest, Throughput) {
  const std::string big = RandomBytes(64 << 20, 4);
  const std::string manifest = Manifest({big});
  BlobServer server(*server_cache_, "127.0.0.1", key_, manifest, seconds(60));
  const auto start = Clock::now();
  const FetchResult result =
      FetchBlobs(*client_cache_, "127.0.0.1", server.port(), key_, manifest, seconds(10));
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_EQ(result.blobs, 2u);
  EXPECT_TRUE(client_cache_->Has(Sha256Hex(big)));
  std::printf("peer link: 64 MiB over loopback in %.3f s: %.0f MB/s (hash check included)\n",
              elapsed, static_cast<double>(result.bytes) / elapsed / 1e6);
}

}  // namespace
}  // namespace podrun::agent
