#include "worker/host/mounts.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>

namespace podrun::agent {
namespace {

using Argv = std::vector<std::string>;

MountContext Pod(int worker, bool root = true) {
  MountContext c;
  c.worker_id = worker;
  c.peer_addresses = {"10.0.0.2", "10.0.0.3", "10.0.0.4"};
  c.root = root;
  return c;
}

MountEntry Nfs() {
  MountEntry m;
  m.type = "nfs";
  m.server_worker = 0;
  m.server = "10.0.0.2";
  m.export_path = "/srv/share";
  m.path = "/mnt/share";
  return m;
}

TEST(MountCommandsTest, BindMountsTheSourceOnThePath) {
  MountEntry m;
  m.type = "bind";
  m.source = "/data";
  m.path = "/mnt/data";
  EXPECT_EQ(
      MountCommands(m, Pod(1)),
      (std::vector<Argv>{{"mkdir", "-p", "/mnt/data"}, {"mount", "--bind", "/data", "/mnt/data"}}));
  m.options = "ro";
  EXPECT_EQ(
      MountCommands(m, Pod(1, /*root=*/false)),
      (std::vector<Argv>{{"sudo", "-n", "mkdir", "-p", "/mnt/data"},
                         {"sudo", "-n", "mount", "--bind", "-o", "ro", "/data", "/mnt/data"}}));
}

TEST(MountCommandsTest, TheNfsServerExportsToThePodOnlyAndTheOthersMountIt) {
  MountContext server = Pod(0);
  server.have_exportfs = false;
  const auto o = "rw,sync,no_subtree_check,root_squash";
  EXPECT_EQ(MountCommands(Nfs(), server),
            (std::vector<Argv>{{"mkdir", "-p", "/mnt/share"},
                               {"env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "install", "-y",
                                "nfs-kernel-server"},
                               {"mkdir", "-p", "/srv/share"},
                               {"exportfs", "-o", o, "10.0.0.3:/srv/share"},
                               {"exportfs", "-o", o, "10.0.0.4:/srv/share"},
                               {"mount", "--bind", "/srv/share", "/mnt/share"}}));
  MountEntry client = Nfs();
  client.options = "rw,hard";
  EXPECT_EQ(MountCommands(client, Pod(2, /*root=*/false)),
            (std::vector<Argv>{{"sudo", "-n", "mkdir", "-p", "/mnt/share"},
                               {"sudo", "-n", "mount", "-t", "nfs", "-o", "nosuid,nodev,rw,hard",
                                "10.0.0.2:/srv/share", "/mnt/share"}}));
}

TEST(MountCommandsTest, FuseMountsRunAsTheUser) {
  MountEntry gcs;
  gcs.type = "gcsfuse";
  gcs.bucket = "my-bucket";
  gcs.path = "/mnt/gcs";
  EXPECT_EQ(MountCommands(gcs, Pod(1, /*root=*/false)),
            (std::vector<Argv>{{"sudo", "-n", "mkdir", "-p", "/mnt/gcs"},
                               {"gcsfuse", "--implicit-dirs", "my-bucket", "/mnt/gcs"}}));
  MountEntry ssh;
  ssh.type = "sshfs";
  ssh.source = "10.0.0.2:/srv/share";
  ssh.path = "/mnt/share";
  ssh.options = "reconnect";
  EXPECT_EQ(MountCommands(ssh, Pod(1)),
            (std::vector<Argv>{{"mkdir", "-p", "/mnt/share"},
                               {"sshfs", "-o", "reconnect", "10.0.0.2:/srv/share", "/mnt/share"}}));
}

TEST(MountsTest, MountPointsAreReadFromMountinfoWithEscapes) {
  const std::string mountinfo =
      "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
      "40 22 8:1 /data /mnt/my\\040data rw,relatime - ext4 /dev/vda rw\n";
  EXPECT_TRUE(IsMountPoint(mountinfo, "/"));
  EXPECT_TRUE(IsMountPoint(mountinfo, "/mnt/my data"));
  EXPECT_FALSE(IsMountPoint(mountinfo, "/mnt/my"));
  EXPECT_FALSE(IsMountPoint(mountinfo, "/data"));  // a root within a filesystem, not a mount point
}

TEST(MountsTest, AMountedPathIsLeftAloneAndAFailureNamesTheCommand) {
  MountEntry m;
  m.type = "bind";
  m.source = "/data";
  m.path = "/mnt/data";
  std::vector<Argv> ran;
  auto ok = [&](const Argv& argv) {
    ran.push_back(argv);
    return ProgramResult{0, "", ""};
  };
  std::string mountinfo = "22 1 8:1 / / rw - ext4 /dev/vda rw\n";
  auto info = [&] { return mountinfo; };
  EXPECT_EQ(ApplyMounts({m}, Pod(0), ok, info),
            (std::vector<std::string>{"mounted /data on /mnt/data (bind)"}));
  EXPECT_EQ(ran.size(), 2u);
  mountinfo += "41 22 8:1 /data /mnt/data rw - ext4 /dev/vda rw\n";
  EXPECT_EQ(ApplyMounts({m}, Pod(0), ok, info),
            (std::vector<std::string>{"/mnt/data: already mounted"}));
  EXPECT_EQ(ran.size(), 2u);  // nothing run
  auto fail = [](const Argv& argv) {
    return argv[0] == "mount"
               ? ProgramResult{32, "", "mount: /mnt/x: special device /nope does not exist.\n"}
               : ProgramResult{0, "", ""};
  };
  m.source = "/nope";
  m.path = "/mnt/x";
  try {
    ApplyMounts({m}, Pod(0), fail, info);
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()),
              "mount /nope on /mnt/x (bind): `mount --bind /nope /mnt/x` failed (exit 32): mount: "
              "/mnt/x: special device /nope does not exist.");
  }
}

TEST(MountsTest, AnotherFilesystemOnTheMountPointIsAnError) {
  MountEntry m = Nfs();
  auto never = [](const Argv&) -> ProgramResult { throw std::logic_error("nothing may run"); };
  const std::string ours = "41 22 0:50 / /mnt/share rw - nfs4 10.0.0.2:/srv/share rw\n";
  EXPECT_EQ(ApplyMounts({m}, Pod(2), never, [&] { return ours; }),
            (std::vector<std::string>{"/mnt/share: already mounted"}));
  const std::string other = "41 22 0:50 / /mnt/share rw - nfs4 10.9.9.9:/elsewhere rw\n";
  try {
    ApplyMounts({m}, Pod(2), never, [&] { return other; });
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("already mounted from 10.9.9.9:/elsewhere (nfs4)"),
              std::string::npos)
        << e.what();
  }
}

TEST(MountsTest, ASymlinkedOrForeignMountPointIsRefused) {
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / ("mount-point-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "real");
  std::filesystem::create_directory_symlink(dir / "real", dir / "link");
  EXPECT_NO_THROW(CheckMountPoint((dir / "real").string()));
  EXPECT_NO_THROW(CheckMountPoint((dir / "missing").string()));
  EXPECT_THROW(CheckMountPoint((dir / "link").string()), std::runtime_error);
  if (::geteuid() == 0) {
    ASSERT_EQ(0, ::chown((dir / "real").c_str(), 65534, 65534));
    EXPECT_THROW(CheckMountPoint((dir / "real").string()), std::runtime_error);
  }
  // ApplyMounts checks before it runs anything.
  MountEntry m;
  m.type = "bind";
  m.source = "/data";
  m.path = (dir / "link").string();
  int ran = 0;
  auto count = [&](const Argv&) {
    ++ran;
    return ProgramResult{0, "", ""};
  };
  EXPECT_THROW(ApplyMounts({m}, Pod(0), count, [] { return std::string(); }), std::runtime_error);
  EXPECT_EQ(ran, 0);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace podrun::agent
