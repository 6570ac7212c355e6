#include "launcher/spec/mount_request.h"

#include <gtest/gtest.h>

#include "launcher/base/error.h"

namespace podrun {
namespace {

TEST(MountRequestTest, WorkerNamesBecomeTheirInternalAddresses) {
  Mount nfs;
  nfs.type = MountType::kNfs;
  nfs.server = "worker0";
  nfs.export_path = "/srv/share";
  nfs.path = "/mnt/share";
  Mount ssh;
  ssh.type = MountType::kSshfs;
  ssh.source = "worker1:/srv/data";
  ssh.path = "/mnt/data";
  ssh.options = "reconnect";
  Mount outside = nfs;
  outside.server = "filer.example.com";
  const std::vector<std::string> addresses = {"10.0.0.2", "10.0.0.3"};
  const AgentMountRequest r = MountRequestFor({nfs, ssh, outside}, 1, addresses);
  EXPECT_EQ(r.worker_id, 1u);
  EXPECT_EQ(r.peer_addresses, addresses);
  ASSERT_EQ(r.mounts.size(), 3u);
  EXPECT_EQ(r.mounts[0].type, "nfs");
  EXPECT_EQ(r.mounts[0].server_worker, 0);
  EXPECT_EQ(r.mounts[0].server, "10.0.0.2");
  EXPECT_EQ(r.mounts[1].source, "10.0.0.3:/srv/data");
  EXPECT_EQ(r.mounts[1].options, "reconnect");
  EXPECT_EQ(r.mounts[2].server_worker, -1);
  EXPECT_EQ(r.mounts[2].server, "filer.example.com");
  EXPECT_EQ(NfsServers({nfs, ssh, outside, nfs}, 2), std::vector<int>{0});
  nfs.server = "worker5";
  EXPECT_THROW(MountRequestFor({nfs}, 0, addresses), Error);
}

}  // namespace
}  // namespace podrun
