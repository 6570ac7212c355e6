// Tests of the mounts drivers: their command lines, "already mounted" (the same type and source),
// the mount point reached one checked component at a time, and real bind mounts where root.
#include "worker/host/mounts.h"

#include <gtest/gtest.h>
#include <sys/mount.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace podrun::agent {
namespace {

using Argv = std::vector<std::string>;

// Where the commands reach the mount point: the descriptor OpenMountPoint opened.
const std::string kTarget = "/proc/42/fd/7";

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
  EXPECT_EQ(MountCommands(m, Pod(1), kTarget),
            (std::vector<Argv>{{"mount", "--no-canonicalize", "--bind", "/data", kTarget}}));
  // Options: a remount of the new mount's root, once it is there.
  m.options = "ro";
  EXPECT_EQ(MountCommands(m, Pod(1, /*root=*/false), kTarget),
            (std::vector<Argv>{
                {"sudo", "-n", "mount", "--no-canonicalize", "--bind", "/data", kTarget}}));
  EXPECT_EQ(RemountCommand(m, Pod(1, /*root=*/false), kTarget),
            (Argv{"sudo", "-n", "mount", "--no-canonicalize", "-o", "remount,bind,ro", kTarget}));
}

TEST(MountCommandsTest, TheNfsServerExportsToThePodOnlyAndTheOthersMountIt) {
  MountContext server = Pod(0);
  server.have_exportfs = false;
  const auto o = "rw,sync,no_subtree_check,root_squash";
  EXPECT_EQ(MountCommands(Nfs(), server, kTarget),
            (std::vector<Argv>{{"env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "install", "-y",
                                "nfs-kernel-server"},
                               {"mkdir", "-p", "/srv/share"},
                               {"exportfs", "-o", o, "10.0.0.3:/srv/share"},
                               {"exportfs", "-o", o, "10.0.0.4:/srv/share"},
                               {"mount", "--no-canonicalize", "--bind", "/srv/share", kTarget}}));
  MountEntry client = Nfs();
  client.options = "rw,hard";
  EXPECT_EQ(MountCommands(client, Pod(2, /*root=*/false), kTarget),
            (std::vector<Argv>{{"sudo", "-n", "mount", "--no-canonicalize", "-t", "nfs", "-o",
                                "nosuid,nodev,rw,hard", "10.0.0.2:/srv/share", kTarget}}));
}

TEST(MountCommandsTest, FuseMountsRunAsTheUser) {
  MountEntry gcs;
  gcs.type = "gcsfuse";
  gcs.bucket = "my-bucket";
  gcs.path = "/mnt/gcs";
  EXPECT_EQ(MountCommands(gcs, Pod(1, /*root=*/false), kTarget),
            (std::vector<Argv>{{"gcsfuse", "--implicit-dirs", "my-bucket", kTarget}}));
  MountEntry ssh;
  ssh.type = "sshfs";
  ssh.source = "10.0.0.2:/srv/share";
  ssh.path = "/mnt/share";
  ssh.options = "reconnect";
  EXPECT_EQ(MountCommands(ssh, Pod(1), kTarget),
            (std::vector<Argv>{{"sshfs", "-o", "reconnect", "10.0.0.2:/srv/share", kTarget}}));
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

// A fresh directory under the test's temporary directory, removed (with anything mounted in it
// unmounted) at the end.
class MountPointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("mount-point-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    for (const std::string& path : mounted_) ::umount2(path.c_str(), MNT_DETACH);
    std::filesystem::remove_all(dir_);
  }
  std::string Path(const std::string& relative) const { return (dir_ / relative).string(); }
  static std::string Mountinfo() {
    std::ifstream in("/proc/self/mountinfo");
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  // The error `f` throws (and a test failure when it throws none).
  template <typename F>
  static std::string ErrorOf(F f) {
    try {
      f();
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    ADD_FAILURE() << "no error";
    return "";
  }
  static MountEntry Bind(const std::string& source, const std::string& path) {
    MountEntry m;
    m.type = "bind";
    m.source = source;
    m.path = path;
    return m;
  }

  std::filesystem::path dir_;
  std::vector<std::string> mounted_;  // unmounted at the end
};

const MakeDirFn kNoMkdir = [](int, const std::string& parent, const std::string& name) {
  throw std::runtime_error("would make " + parent + "/" + name);
};

TEST_F(MountPointTest, ASymlinkComponentIsRefusedNamingThePathAndTheComponent) {
  std::filesystem::create_directories(Path("real/sub"));
  std::filesystem::create_directory_symlink(Path("real"), Path("link"));
  EXPECT_TRUE(OpenMountPoint(Path("real/sub"), ::geteuid(), kNoMkdir));
  // A symlink in the middle of the path, or at its end.
  EXPECT_EQ(ErrorOf([&] { OpenMountPoint(Path("link/sub"), ::geteuid(), kNoMkdir); }),
            "mount point " + Path("link/sub") + ": " + Path("link") +
                " is a symlink; give the real path; nothing is mounted through it");
  EXPECT_NE(ErrorOf([&] {
              OpenMountPoint(Path("link"), ::geteuid(), kNoMkdir);
            }).find(Path("link") + " is a symlink"),
            std::string::npos);
  // ApplyMounts refuses before it runs anything, naming the mount.
  int ran = 0;
  auto count = [&](const Argv&) {
    ++ran;
    return ProgramResult{0, "", ""};
  };
  const std::string error =
      ErrorOf([&] { ApplyMounts({Bind("/data", Path("link/sub"))}, Pod(0), count, Mountinfo); });
  EXPECT_NE(error.find("mount /data on " + Path("link/sub") + " (bind): mount point"),
            std::string::npos)
      << error;
  EXPECT_EQ(ran, 0);
}

TEST_F(MountPointTest, AComponentOwnedByAnotherUidIsRefusedAndNothingIsMadeUnderIt) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a directory away";
  std::filesystem::create_directories(Path("theirs"));
  ASSERT_EQ(0, ::chown(Path("theirs").c_str(), 65534, 65534));
  bool made = false;
  const MakeDirFn mkdir = [&](int, const std::string&, const std::string&) { made = true; };
  const std::string error =
      ErrorOf([&] { OpenMountPoint(Path("theirs/mnt"), ::geteuid(), mkdir); });
  EXPECT_EQ(error, "mount point " + Path("theirs/mnt") + ": " + Path("theirs") +
                       " is owned by uid 65534, another user; mount on a path of root's or your "
                       "own; nothing is mounted through it");
  EXPECT_FALSE(made);
  EXPECT_FALSE(std::filesystem::exists(Path("theirs/mnt")));
  // The same directory is fine for the user who owns it.
  EXPECT_TRUE(OpenMountPoint(Path("theirs"), 65534, kNoMkdir));
}

TEST_F(MountPointTest, MissingDirectoriesAreMadeAndTheMountIsMadeOnTheDescriptor) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to bind mount";
  std::filesystem::create_directories(Path("src"));
  std::ofstream(Path("src/hello")) << "hi\n";
  const std::string point = Path("new/deeper/mnt");
  std::vector<Argv> ran;
  auto real = [&](const Argv& argv) {
    ran.push_back(argv);
    return RunProgram(argv);
  };
  const MountEntry m = Bind(Path("src"), point);
  EXPECT_EQ(ApplyMounts({m}, Pod(0), real, Mountinfo),
            (std::vector<std::string>{"mounted " + Path("src") + " on " + point + " (bind)"}));
  mounted_.push_back(point);
  // Mounted through the descriptor, not the path: the command never names the mount point.
  ASSERT_EQ(ran.size(), 1u);
  EXPECT_TRUE(ran[0].back().starts_with("/proc/" + std::to_string(::getpid()) + "/fd/"))
      << ran[0].back();
  EXPECT_TRUE(std::filesystem::exists(point + "/hello"));
  EXPECT_TRUE(IsMountPoint(Mountinfo(), point));
  // Again: already there, nothing run.
  EXPECT_EQ(ApplyMounts({m}, Pod(0), real, Mountinfo),
            (std::vector<std::string>{point + ": already mounted"}));
  EXPECT_EQ(ran.size(), 1u);
}

TEST_F(MountPointTest, ABindMountsOptionsApplyToTheNewMount) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to bind mount";
  std::filesystem::create_directories(Path("src"));
  MountEntry m = Bind(Path("src"), Path("ro"));
  m.options = "ro";
  EXPECT_EQ(ApplyMounts({m}, Pod(0), RunProgram, Mountinfo),
            (std::vector<std::string>{"mounted " + Path("src") + " on " + Path("ro") + " (bind)"}));
  mounted_.push_back(Path("ro"));
  EXPECT_NE(0, ::access(Path("ro").c_str(), W_OK));
  EXPECT_EQ(EROFS, errno);
  EXPECT_EQ(0, ::access(Path("src").c_str(), W_OK));  // the source itself stays writable
}

TEST_F(MountPointTest, ThePathMountedFromAnotherSourceIsNotAlreadyMounted) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to bind mount";
  std::filesystem::create_directories(Path("one"));
  std::filesystem::create_directories(Path("two"));
  std::filesystem::create_directories(Path("mnt"));
  ASSERT_EQ(0, RunProgram({"mount", "--bind", Path("one"), Path("mnt")}).exit_code);
  mounted_.push_back(Path("mnt"));
  int ran = 0;
  auto count = [&](const Argv&) {
    ++ran;
    return ProgramResult{0, "", ""};
  };
  // The same type (a bind of the same filesystem) but another source: an error, nothing run.
  const std::string error =
      ErrorOf([&] { ApplyMounts({Bind(Path("two"), Path("mnt"))}, Pod(0), count, Mountinfo); });
  EXPECT_NE(error.find(Path("mnt") + " is already mounted from"), std::string::npos) << error;
  EXPECT_EQ(ran, 0);
  EXPECT_EQ(ApplyMounts({Bind(Path("one"), Path("mnt"))}, Pod(0), count, Mountinfo),
            (std::vector<std::string>{Path("mnt") + ": already mounted"}));
  EXPECT_EQ(ran, 0);
}

TEST_F(MountPointTest, AFailedMountNamesTheMountAndItsCommand) {
  auto fail = [](const Argv& argv) {
    return argv[0] == "mount"
               ? ProgramResult{32, "", "mount: special device /nope does not exist.\n"}
               : ProgramResult{0, "", ""};
  };
  const std::string error =
      ErrorOf([&] { ApplyMounts({Bind("/nope", Path("x"))}, Pod(0), fail, Mountinfo); });
  // The command is told with the mount point's path (it had the path's descriptor).
  EXPECT_EQ(error, "mount /nope on " + Path("x") +
                       " (bind): `mount --no-canonicalize --bind /nope " + Path("x") +
                       "` failed (exit 32): mount: special device /nope does not exist.");
}

TEST(MountsTest, AFuseMountIsAlreadyThereOnlyWithTheSameTypeAndSource) {
  MountEntry m;
  m.type = "gcsfuse";
  m.bucket = "my-bucket";
  m.path = "/mnt/gcs";
  auto never = [](const Argv&) -> ProgramResult { throw std::logic_error("nothing may run"); };
  auto at = [](const std::string& type, const std::string& source) {
    return "22 1 8:1 / / rw - ext4 /dev/vda rw\n41 22 0:50 / /mnt/gcs rw - " + type + " " + source +
           " rw,user_id=0,group_id=0\n";
  };
  EXPECT_EQ(ApplyMounts({m}, Pod(1), never, [&] { return at("fuse.gcsfuse", "my-bucket"); }),
            (std::vector<std::string>{"/mnt/gcs: already mounted"}));
  for (const auto& [type, source] : std::vector<std::pair<std::string, std::string>>{
           {"fuse.gcsfuse", "other-bucket"}, {"fuse.sshfs", "my-bucket"}}) {
    try {
      ApplyMounts({m}, Pod(1), never, [&] { return at(type, source); });
      ADD_FAILURE() << type << " " << source << " taken for gs://my-bucket";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("already mounted from " + source + " (" + type + ")"),
                std::string::npos)
          << e.what();
    }
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

// FUSE lets any user name its mount's source (fsname): a FUSE mount with the asked type and
// source counts as already mounted only when the agent's user or root made it.
TEST(MountsTest, AFuseMountOfAnotherUserIsNotTakenForTheAskedOne) {
  MountEntry m;
  m.type = "sshfs";
  m.source = "10.0.0.2:/srv/share";
  m.path = "/mnt/share";
  auto never = [](const Argv&) -> ProgramResult { throw std::logic_error("nothing may run"); };
  auto by = [](const std::string& options) {
    return "41 22 0:50 / /mnt/share rw - fuse.sshfs 10.0.0.2:/srv/share " + options + "\n";
  };
  MountContext agent = Pod(1, /*root=*/false);
  agent.uid = 1000;
  EXPECT_EQ(ApplyMounts({m}, agent, never, [&] { return by("rw,user_id=1000,group_id=1000"); }),
            (std::vector<std::string>{"/mnt/share: already mounted"}));
  EXPECT_EQ(ApplyMounts({m}, agent, never, [&] { return by("rw,user_id=0,group_id=0"); }),
            (std::vector<std::string>{"/mnt/share: already mounted"}));
  for (const std::string& options : {std::string("rw,user_id=1001,group_id=1001"),
                                     std::string("rw"), std::string("rw,user_id=x")}) {
    try {
      ApplyMounts({m}, agent, never, [&] { return by(options); });
      ADD_FAILURE() << options << " taken for the agent's own mount";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("/mnt/share"), std::string::npos) << e.what();
    }
  }
  try {
    ApplyMounts({m}, agent, never, [&] { return by("rw,user_id=1001,group_id=1001"); });
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("fuse.sshfs mount of uid 1001, another user"),
              std::string::npos)
        << e.what();
  }
}

// sshfs for real (FUSE; its "ssh" is a script that runs sftp-server on this machine): mounted
// once, then already mounted; the same source mounted by another user is refused, and so is the
// agent's own mount once its path runs through another user's directory.
class SshfsTest : public MountPointTest {
 protected:
  void SetUp() override {
    MountPointTest::SetUp();
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to mount FUSE here";
    for (const char* tool : {"/usr/bin/sshfs", "/usr/lib/openssh/sftp-server"}) {
      if (::access(tool, X_OK) != 0) GTEST_SKIP() << tool << " is not installed";
    }
    ::chmod(dir_.c_str(), 0755);
    std::filesystem::create_directories(Path("remote"));
    std::ofstream(Path("remote/hello")) << "hello\n";
    std::ofstream(Path("fake-ssh")) << "#!/bin/sh\nexec /usr/lib/openssh/sftp-server\n";
    ::chmod(Path("fake-ssh").c_str(), 0755);
  }
  MountEntry Sshfs(const std::string& path) const {
    MountEntry m;
    m.type = "sshfs";
    m.source = "localhost:" + Path("remote");
    m.path = path;
    m.options = "ssh_command=" + Path("fake-ssh");
    return m;
  }
};

TEST_F(SshfsTest, MountedOnceThenAlreadyMounted) {
  const MountEntry m = Sshfs(Path("mnt/data"));
  mounted_.push_back(m.path);
  EXPECT_EQ(ApplyMounts({m}, Pod(0), RunProgram, Mountinfo),
            (std::vector<std::string>{"mounted localhost:" + Path("remote") + " on " + m.path +
                                      " (sshfs)"}));
  std::ifstream hello(m.path + "/hello");
  std::string line;
  EXPECT_TRUE(std::getline(hello, line));
  EXPECT_EQ(line, "hello");
  EXPECT_EQ(ApplyMounts({m}, Pod(0), RunProgram, Mountinfo),
            (std::vector<std::string>{m.path + ": already mounted"}));
  // Its parent given to another user: the path is walked before the mount is taken as ours.
  ASSERT_EQ(0, ::chown(Path("mnt").c_str(), 65534, 65534));
  const std::string error = ErrorOf([&] { ApplyMounts({m}, Pod(0), RunProgram, Mountinfo); });
  EXPECT_NE(error.find(Path("mnt") + " is owned by uid 65534"), std::string::npos) << error;
}

TEST_F(SshfsTest, TheSameSourceMountedByAnotherUserIsRefused) {
  const MountEntry m = Sshfs(Path("theirs"));
  std::filesystem::create_directories(m.path);
  mounted_.push_back(m.path);
  // Mounted with uid 65534 as its real uid: the kernel records user_id=65534.
  const ProgramResult r =
      RunProgram({"setpriv", "--ruid=65534", "sshfs", "-o", m.options, m.source, m.path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_NE(Mountinfo().find(m.path + " "), std::string::npos);
  const std::string error = ErrorOf([&] { ApplyMounts({m}, Pod(0), RunProgram, Mountinfo); });
  EXPECT_NE(error.find(m.path + " is already a fuse.sshfs mount of uid 65534, another user"),
            std::string::npos)
      << error;
}

}  // namespace
}  // namespace podrun::agent
