// Tests of the spec parser: the full contract example, defaults, and errors that point at
// file:line:col with the source line and a caret.
#include "launcher/spec/spec.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "launcher/base/error.h"
#include "launcher/spec/pod_create.h"
#include "proto/progress_pattern.h"

namespace podrun {
namespace {

// The message of the podrun::Error that parsing `text` throws (fails the test if none is).
std::string ParseError(const std::string& text, const std::string& file = "spec.yaml") {
  try {
    ParseSpecText(text, file);
  } catch (const Error& e) {
    EXPECT_EQ(ExitCode::kUsage, e.code());
    return e.what();
  }
  ADD_FAILURE() << "no error for:\n" << text;
  return "";
}

TEST(Spec, FullSpec) {
  const std::string text = R"(name: bert-base
pod:
  hosts: [10.0.0.2, "matt@10.0.0.3:2222"]
  user: matt
  port: 22
  workers: 0,2-3
  internal_ip: true
  identity: ~/.ssh/id_ed25519
  ssh_config: ~/.ssh/config
  known_hosts: /tmp/kh
  strict_host_keys: yes
  fanout: 8
  connect_timeout: 5
workdir: ~/work
env: {WANDB_PROJECT: bert, EPOCHS: 3, DEBUG: true, EMPTY: }
secret_env: [WANDB_API_KEY, HF_TOKEN]
mounts:
  - {type: nfs, server: worker0, export: /srv/share, path: /mnt/share}
  - {type: gcsfuse, bucket: my-bucket, path: /mnt/gcs, options: [ro, implicit_dirs]}
  - {type: sshfs, source: "worker0:/srv/share", path: /mnt/share2}
  - {type: bind, source: /data, path: /mnt/data, options: ro}
setup: |
  pip install -r requirements.txt
run: |
  python3 train.py
on_failure: continue
restarts: 2
grace_seconds: 30
stall_seconds: 600
coordinator_port: 9000
free_accelerators: false
)";
  JobSpec spec = ParseSpecText(text, "dir/bert.yaml");
  EXPECT_EQ("bert-base", spec.name);
  ASSERT_TRUE(spec.pod.hosts);
  EXPECT_EQ((std::vector<std::string>{"10.0.0.2", "matt@10.0.0.3:2222"}), *spec.pod.hosts);
  EXPECT_EQ("matt", spec.pod.user);
  EXPECT_EQ(22, spec.pod.port);
  EXPECT_EQ("0,2-3", spec.pod.workers);
  EXPECT_EQ(true, spec.pod.internal_ip);
  EXPECT_EQ("~/.ssh/id_ed25519", spec.pod.identity);
  EXPECT_EQ("~/.ssh/config", spec.pod.ssh_config);
  EXPECT_EQ("/tmp/kh", spec.pod.known_hosts);
  EXPECT_EQ(true, spec.pod.strict_host_keys);
  EXPECT_EQ(8, spec.pod.fanout);
  EXPECT_EQ(5, spec.pod.connect_timeout);
  EXPECT_FALSE(spec.pod.tpu);
  EXPECT_FALSE(spec.pod.local);
  EXPECT_EQ("~/work", spec.workdir);
  EXPECT_EQ((std::map<std::string, std::string>{
                {"WANDB_PROJECT", "bert"}, {"EPOCHS", "3"}, {"DEBUG", "true"}, {"EMPTY", ""}}),
            spec.env);
  EXPECT_EQ((std::vector<std::string>{"WANDB_API_KEY", "HF_TOKEN"}), spec.secret_env);
  ASSERT_EQ(4u, spec.mounts.size());
  EXPECT_EQ(MountType::kNfs, spec.mounts[0].type);
  EXPECT_EQ("worker0", spec.mounts[0].server);
  EXPECT_EQ("/srv/share", spec.mounts[0].export_path);
  EXPECT_EQ("/mnt/share", spec.mounts[0].path);
  EXPECT_FALSE(spec.mounts[0].options);
  EXPECT_EQ(MountType::kGcsfuse, spec.mounts[1].type);
  EXPECT_EQ("my-bucket", spec.mounts[1].bucket);
  EXPECT_EQ("ro,implicit_dirs", spec.mounts[1].options);
  EXPECT_EQ(MountType::kSshfs, spec.mounts[2].type);
  EXPECT_EQ("worker0:/srv/share", spec.mounts[2].source);
  EXPECT_EQ(MountType::kBind, spec.mounts[3].type);
  EXPECT_EQ("/data", spec.mounts[3].source);
  EXPECT_EQ("ro", spec.mounts[3].options);
  EXPECT_STREQ("gcsfuse", MountTypeName(spec.mounts[1].type));
  EXPECT_EQ("pip install -r requirements.txt\n", spec.setup);
  EXPECT_EQ("python3 train.py\n", spec.run);
  EXPECT_EQ(OnFailure::kContinue, spec.on_failure);
  EXPECT_EQ(2, spec.restarts);
  EXPECT_EQ(30, spec.grace_seconds);
  EXPECT_EQ(600, spec.stall_seconds);
  EXPECT_EQ(9000, spec.coordinator_port);
  EXPECT_FALSE(spec.free_accelerators);
  EXPECT_EQ(text, spec.text);
  EXPECT_EQ("dir/bert.yaml", spec.path);
}

TEST(Spec, TpuAndLocalPods) {
  JobSpec tpu = ParseSpecText("pod: {tpu: node-1, zone: us-central1-a, project: my-proj}\nrun: x\n",
                              "s.yaml");
  EXPECT_EQ("node-1", tpu.pod.tpu);
  EXPECT_EQ("us-central1-a", tpu.pod.zone);
  EXPECT_EQ("my-proj", tpu.pod.project);
  EXPECT_FALSE(tpu.pod.hosts);
  JobSpec local = ParseSpecText("pod: {local: 4}\nrun: x\n", "s.yaml");
  EXPECT_EQ(4, local.pod.local);
  JobSpec comma = ParseSpecText("pod: {hosts: 'a, b:2022,u@c'}\nrun: x\n", "s.yaml");
  EXPECT_EQ((std::vector<std::string>{"a", "b:2022", "u@c"}), *comma.pod.hosts);
  JobSpec file = ParseSpecText("pod: {hosts: '@pod.txt'}\nrun: x\n", "s.yaml");
  EXPECT_EQ(std::vector<std::string>{"@pod.txt"}, *file.pod.hosts);
  EXPECT_NE(std::string::npos,
            ParseError("pod: {hosts: ['@pod.txt', b]}\nrun: x\n").find("bad host '@pod.txt'"));
}

TEST(Spec, MigPods) {
  JobSpec mig =
      ParseSpecText("pod: {mig: 'slice-1,slice-2', zone: us-central1-a}\nrun: x\n", "s.yaml");
  EXPECT_EQ("slice-1,slice-2", mig.pod.mig);
  EXPECT_FALSE(mig.pod.tpu);
  EXPECT_NE(std::string::npos, ParseError("pod: {mig: s-1, tpu: n, zone: z}\nrun: x\n")
                                   .find("'pod' has both 'mig' and 'tpu'"));
  EXPECT_NE(std::string::npos,
            ParseError("pod: {mig: 'a/b', zone: z}\nrun: x\n").find("bad mig name 'a/b'"));
  // A MIG slice is made from its machine type and topology, not a node's keys.
  EXPECT_NE(std::string::npos,
            ParseError("pod:\n  mig: s-1\n  zone: z\n  create: {accelerator_type: v5p-16, "
                       "version: v}\nrun: x\n")
                .find("spec.yaml:4:11: create: accelerator_type, version, queued, preemptible "
                      "and valid_until are for a TPU node"));
  const JobSpec made = ParseSpecText(
      "pod:\n  mig: s-1\n  zone: z\n  create: {machine_type: tpu7x-standard-4t, topology: 2x2x4, "
      "image_family: f, image_project: p, spot: true, capacity_wait: 2h}\nrun: x\n",
      "s.yaml");
  ASSERT_TRUE(made.pod.create);
  EXPECT_EQ(4, MigVmCount(*made.pod.create));
  EXPECT_EQ("spot", MigProvisioningOf(*made.pod.create));
  EXPECT_NE(std::string::npos,
            ParseError("pod:\n  mig: s-1\n  zone: z\n  create: {machine_type: tpu7x-standard-4t, "
                       "topology: 3x1, image_family: f, image_project: p}\nrun: x\n")
                .find("topology 3x1 is not a whole number of tpu7x-standard-4t VMs"));
  EXPECT_NE(std::string::npos,
            ParseError("pod:\n  mig: s-1\n  zone: z\n  create: {machine_type: ct6e-standard-4t, "
                       "topology: 4x4, image_family: f, image_project: p, provisioning: "
                       "flex_start}\nrun: x\n")
                .find("flex_start needs max_run_duration"));
  // A node's spec with a MIG's key is told which kind the key is for.
  EXPECT_NE(std::string::npos,
            ParseError("pod:\n  tpu: n\n  zone: z\n  create: {accelerator_type: v4-8, version: v, "
                       "topology: 2x2}\nrun: x\n")
                .find("are for a MIG slice (pod.mig)"));
}

TEST(Spec, TpuZoneAndProjectNamesAreCheckedWhereTheyAreWritten) {
  JobSpec two = ParseSpecText(
      "pod:\n  tpu: slice-a,slice-b\n  zone: europe-west4-a\n  project: example.com:proj-1\n"
      "run: x\n",
      "s.yaml");
  EXPECT_EQ("slice-a,slice-b", two.pod.tpu);
  EXPECT_EQ("example.com:proj-1", two.pod.project);
  EXPECT_EQ(
      "spec.yaml:2:9: bad zone '-x': it must start with a letter: 1 to 63 lowercase letters, "
      "digits and hyphens, starting with a letter and not ending with a hyphen (e.g. "
      "us-central1-a)\n    zone: -x\n          ^",
      ParseError("pod:\n  zone: -x\n  tpu: node-1\nrun: x\n"));
  EXPECT_NE(std::string::npos, ParseError("pod:\n  tpu: ../x\n  zone: z\nrun: x\n")
                                   .find("spec.yaml:2:8: bad tpu name '../x': '.' is not allowed"));
  EXPECT_NE(std::string::npos, ParseError("pod: {tpu: 'node-1,a/b', zone: z}\nrun: x\n")
                                   .find("spec.yaml:1:12: bad tpu name 'a/b': '/' is not allowed"));
  EXPECT_NE(std::string::npos, ParseError("pod: {tpu: Node-1, zone: z}\nrun: x\n")
                                   .find("spec.yaml:1:12: bad tpu name 'Node-1': 'N'"));
  EXPECT_NE(std::string::npos,
            ParseError("pod: {tpu: n, zone: z, project: p}\nrun: x\n")
                .find("spec.yaml:1:33: bad project 'p': 1 characters: it must be 6 to 30"));
}

TEST(Spec, Defaults) {
  JobSpec spec = ParseSpecText("run: python3 train.py\n", "/some/where/my_job.yaml");
  EXPECT_EQ("my_job", spec.name);
  EXPECT_FALSE(spec.pod.hosts || spec.pod.tpu || spec.pod.zone || spec.pod.project ||
               spec.pod.internal_ip || spec.pod.local || spec.pod.workers || spec.pod.user ||
               spec.pod.port || spec.pod.identity || spec.pod.ssh_config || spec.pod.known_hosts ||
               spec.pod.strict_host_keys || spec.pod.fanout || spec.pod.connect_timeout);
  EXPECT_EQ("~", spec.workdir);
  EXPECT_TRUE(spec.env.empty());
  EXPECT_TRUE(spec.secret_env.empty());
  EXPECT_TRUE(spec.mounts.empty());
  EXPECT_EQ("", spec.setup);
  EXPECT_EQ("python3 train.py", spec.run);
  EXPECT_EQ(OnFailure::kStopAll, spec.on_failure);
  EXPECT_EQ(0, spec.restarts);
  EXPECT_FALSE(spec.preemptions.has_value());  // unlimited
  EXPECT_EQ(10, spec.grace_seconds);
  EXPECT_EQ(0, spec.stall_seconds);
  EXPECT_EQ(8476, spec.coordinator_port);
  EXPECT_TRUE(spec.free_accelerators);
  // `workdir: ~` is YAML's null: the default.
  EXPECT_EQ("~", ParseSpecText("workdir: ~\nrun: x\n", "a.yaml").workdir);
  // A stem that is not a valid job name is made into one.
  EXPECT_EQ("my-job", ParseSpecText("run: x\n", "my job.yaml").name);
}

TEST(Spec, UnknownKeyWithSuggestionAndCaret) {
  EXPECT_EQ(
      "spec.yaml:4:1: unknown key 'runn' (did you mean 'run'?)\n"
      "  runn: python3 train.py\n"
      "  ^",
      ParseError("name: x\npod:\n  local: 2\nrunn: python3 train.py\n"));
  EXPECT_EQ(
      "spec.yaml:3:3: unknown key 'usr' (did you mean 'user'?)\n"
      "    usr: matt\n"
      "    ^",
      ParseError("run: x\npod:\n  usr: matt\n"));
  // Nothing close: no suggestion.
  EXPECT_EQ("spec.yaml:2:1: unknown key 'frobnicate'\n  frobnicate: 1\n  ^",
            ParseError("run: x\nfrobnicate: 1\n"));
  // A pod option at the top level.
  EXPECT_NE(std::string::npos,
            ParseError("run: x\nhosts: [a]\n").find("pod options go under 'pod:'"));
}

TEST(Spec, WrongTypes) {
  EXPECT_EQ(
      "spec.yaml:2:11: 'restarts': expected an integer, got 'abc'\n"
      "  restarts: abc\n"
      "            ^",
      ParseError("run: x\nrestarts: abc\n"));
  EXPECT_NE(std::string::npos,
            ParseError("run: x\nenv: [A, B]\n").find("spec.yaml:2:6: 'env': expected a mapping"));
  EXPECT_NE(std::string::npos, ParseError("run: [a, b]\n").find("spec.yaml:1:6: 'run': expected"));
  EXPECT_NE(std::string::npos, ParseError("run: x\nfree_accelerators: maybe\n")
                                   .find("spec.yaml:2:20: 'free_accelerators': expected true"));
  EXPECT_NE(std::string::npos,
            ParseError("run: x\nenv: {A: {b: 1}}\n").find("spec.yaml:2:10: 'A': expected"));
  EXPECT_NE(std::string::npos, ParseError("run: x\nmounts: {type: bind}\n")
                                   .find("spec.yaml:2:9: 'mounts': expected a list of mounts"));
  EXPECT_NE(std::string::npos, ParseError("- run\n- x\n").find("spec.yaml:1:1: a spec is a"));
}

TEST(Spec, PreemptionsIsANumberOrUnlimited) {
  EXPECT_EQ(3, ParseSpecText("run: x\npreemptions: 3\n", "a.yaml").preemptions);
  EXPECT_EQ(0, ParseSpecText("run: x\npreemptions: 0\n", "a.yaml").preemptions);
  EXPECT_FALSE(ParseSpecText("run: x\npreemptions: unlimited\n", "a.yaml").preemptions);
  EXPECT_EQ(
      "spec.yaml:2:14: bad preemptions 'many' (a number from 0 to 1000000, or unlimited)\n"
      "  preemptions: many\n"
      "               ^",
      ParseError("run: x\npreemptions: many\n"));
  EXPECT_NE(std::string::npos, ParseError("run: x\npreemptions: -1\n").find("bad preemptions"));
}

TEST(Spec, BadValues) {
  EXPECT_EQ(
      "spec.yaml:2:13: bad on_failure 'sometimes' (expected stop_all or continue)\n"
      "  on_failure: sometimes\n"
      "              ^",
      ParseError("run: x\non_failure: sometimes\n"));
  EXPECT_NE(std::string::npos, ParseError("run: x\ncoordinator_port: 70000\n")
                                   .find("spec.yaml:2:19: 'coordinator_port': 70000 is out of "
                                         "range (1..65535)"));
  EXPECT_NE(std::string::npos, ParseError("run: x\ncoordinator_port: 0\n").find("out of range"));
  EXPECT_NE(std::string::npos, ParseError("run: x\npod: {port: 0}\n").find("'port': 0 is out"));
  EXPECT_NE(std::string::npos, ParseError("run: x\nrestarts: -1\n").find("out of range (>= 0)"));
  EXPECT_NE(std::string::npos, ParseError("run: x\ngrace_seconds: 0\n").find("out of range"));
  EXPECT_NE(std::string::npos, ParseError("run: x\nstall_seconds: -5\n").find("out of range"));
  EXPECT_NE(std::string::npos, ParseError("run: x\npod: {workers: '3-1'}\n").find("bad worker"));
  EXPECT_NE(std::string::npos, ParseError("run: x\npod: {hosts: [a, 'b:99999']}\n")
                                   .find("spec.yaml:2:18: bad host 'b:99999': bad port"));
  EXPECT_NE(std::string::npos,
            ParseError("run: x\npod: {hosts: [a], tpu: t}\n").find("has both 'hosts' and 'tpu'"));
  EXPECT_NE(std::string::npos, ParseError("name: 'bad name'\nrun: x\n").find("bad name"));
  EXPECT_NE(std::string::npos, ParseError("run: x\nrun: y\n").find("2:1: duplicate key 'run'"));
  EXPECT_NE(std::string::npos, ParseError("run: x\nenv: {1BAD: v}\n")
                                   .find("spec.yaml:2:7: bad environment variable name '1BAD'"));
  EXPECT_NE(std::string::npos,
            ParseError("run: x\nenv: {PODRUN_X: v}\n").find("PODRUN_ variables are set by"));
  EXPECT_NE(
      std::string::npos,
      ParseError("run: x\nsecret_env: [PODRUN_TOKEN]\n").find("PODRUN_ variables are set by"));
  EXPECT_NE(std::string::npos, ParseError("run: x\nsecret_env: [OK, 'NOT-OK']\n")
                                   .find("spec.yaml:2:18: bad environment variable name"));
  EXPECT_NE(std::string::npos, ParseError("run: x\nenv: {K: v}\nsecret_env: [K]\n")
                                   .find("'K' is in both env and secret_env"));
}

TEST(Spec, MissingOrEmptyRun) {
  EXPECT_NE(std::string::npos,
            ParseError("name: x\nsetup: y\n").find("spec.yaml:1:1: missing required key 'run'"));
  EXPECT_NE(std::string::npos, ParseError("").find("spec.yaml:1:1: missing required key 'run'"));
  EXPECT_NE(std::string::npos, ParseError("run: ''\n").find("spec.yaml:1:6: 'run' must not"));
  EXPECT_NE(std::string::npos, ParseError("run: '  '\n").find("'run' must not be empty"));
  EXPECT_NE(std::string::npos, ParseError("run:\n").find("spec.yaml:1:1: 'run' must not be"));
}

TEST(Spec, Mounts) {
  EXPECT_EQ(
      "spec.yaml:3:5: nfs mount without 'export'\n"
      "    - {type: nfs, server: s, path: /mnt}\n"
      "      ^",
      ParseError("run: x\nmounts:\n  - {type: nfs, server: s, path: /mnt}\n"));
  EXPECT_NE(std::string::npos, ParseError("run: x\nmounts:\n  - {type: gcsfuse, path: /m}\n")
                                   .find("gcsfuse mount without 'bucket'"));
  EXPECT_NE(std::string::npos, ParseError("run: x\nmounts:\n  - {type: ceph, path: /m}\n")
                                   .find("spec.yaml:3:12: bad mount type 'ceph'"));
  EXPECT_NE(std::string::npos,
            ParseError("run: x\nmounts:\n  - {path: /m}\n").find("mount without 'type'"));
  EXPECT_NE(std::string::npos,
            ParseError("run: x\nmounts:\n  - {type: bind, source: /d, path: /m, sorce: /x}\n")
                .find("unknown key 'sorce' (did you mean 'source'?)"));
  EXPECT_NE(std::string::npos,
            ParseError("run: x\nmounts:\n  - {type: bind, source: /d, path: /m, bucket: b}\n")
                .find("'bucket' does not apply to a bind mount"));
  EXPECT_NE(std::string::npos,
            ParseError("run: x\nmounts:\n  - {type: bind, source: /d, path: rel}\n")
                .find("must be absolute"));
  EXPECT_NE(std::string::npos, ParseError("run: x\nmounts:\n  - {type: bind, source: /d, path: "
                                          "/m}\n  - {type: bind, source: /e, path: /m}\n")
                                   .find("spec.yaml:4:5: mount path '/m' is used twice"));
}

TEST(Spec, SyntaxErrorPosition) {
  std::string message = ParseError("run: x\nenv: [1, 2\nsetup: y\n");
  EXPECT_EQ(0u, message.find("spec.yaml:")) << message;
  EXPECT_NE(std::string::npos, message.find("end of sequence flow not found")) << message;
  EXPECT_EQ(
      "spec.yaml:2:4: illegal map value\n"
      "    b: 2\n"
      "     ^",
      ParseError("a: 1\n  b: 2\n"));
}

TEST(Spec, ParseFile) {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("podrun-spec-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::filesystem::path file = dir / "train.yaml";
  std::ofstream(file) << "run: echo hi\n";
  JobSpec spec = ParseSpecFile(file.string());
  EXPECT_EQ("train", spec.name);
  EXPECT_EQ(file.string(), spec.path);
  EXPECT_EQ("run: echo hi\n", spec.text);
  try {
    ParseSpecFile((dir / "missing.yaml").string());
    ADD_FAILURE() << "no error for a missing file";
  } catch (const Error& e) {
    EXPECT_EQ(ExitCode::kUsage, e.code());
    EXPECT_NE(std::string::npos, std::string(e.what()).find("missing.yaml: cannot read"));
  }
  std::filesystem::remove_all(dir);
}

TEST(Spec, SyncIsADirectoryBesideTheSpec) {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("podrun-sync-spec-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "code");
  std::ofstream(dir / "code" / "requirements.txt") << "jax\n";
  std::ofstream(dir / "file.txt") << "x\n";
  std::ofstream(dir / "a.yaml") << "sync: code\nsetup_inputs: [requirements.txt]\nrun: x\n";
  JobSpec spec = ParseSpecFile((dir / "a.yaml").string());
  EXPECT_EQ("code", spec.sync);
  EXPECT_EQ((dir / "code").lexically_normal(), SyncDirectory(spec));
  EXPECT_EQ(SyncDirectory(spec), SetupInputsBase(spec));  // setup_inputs are files under sync
  std::ofstream(dir / "b.yaml") << "run: x\nsync: nowhere\n";
  std::ofstream(dir / "c.yaml") << "run: x\nsync: file.txt\n";
  std::ofstream(dir / "d.yaml") << "run: x\nsync: [a, b]\n";
  for (const auto& [file, expected] :
       std::vector<std::pair<std::string, std::string>>{{"b.yaml", "b.yaml:2:7: sync: "},
                                                        {"c.yaml", "is not a directory"},
                                                        {"d.yaml", "d.yaml:2:"}}) {
    try {
      ParseSpecFile((dir / file).string());
      ADD_FAILURE() << "no error for " << file;
    } catch (const Error& e) {
      EXPECT_EQ(ExitCode::kUsage, e.code());
      EXPECT_NE(std::string::npos, std::string(e.what()).find(expected)) << e.what();
    }
  }
  JobSpec plain = ParseSpecText("run: x\n", (dir / "e.yaml").string());
  EXPECT_EQ(dir, SetupInputsBase(plain));
  std::filesystem::remove_all(dir);
}

TEST(Spec, Names) {
  EXPECT_TRUE(IsValidJobName("bert-base_1.2"));
  EXPECT_FALSE(IsValidJobName("-x"));
  EXPECT_FALSE(IsValidJobName("a b"));
  EXPECT_FALSE(IsValidJobName(std::string(65, 'a')));
  EXPECT_TRUE(IsValidEnvName("_A1"));
  EXPECT_FALSE(IsValidEnvName("1A"));
  EXPECT_FALSE(IsValidEnvName("A-B"));
  EXPECT_FALSE(IsValidEnvName(""));
}

TEST(Spec, PodCreate) {
  JobSpec spec = ParseSpecText(
      "run: x\npod:\n  tpu: node-1\n  zone: z\n  create: {accelerator_type: v4-32, "
      "version: tpu-ubuntu2204-base, spot: true, queued: true, valid_until: 6h}\n",
      "spec.yaml");
  ASSERT_TRUE(spec.pod.create);
  EXPECT_EQ("v4-32", spec.pod.create->accelerator_type);
  EXPECT_EQ("tpu-ubuntu2204-base", spec.pod.create->version);
  EXPECT_TRUE(spec.pod.create->spot);
  EXPECT_TRUE(spec.pod.create->queued);
  EXPECT_EQ("6h", spec.pod.create->valid_until);
  EXPECT_NE(std::string::npos,
            ParseError("run: x\npod:\n  tpu: n\n  zone: z\n  create: {version: v}\n")
                .find("spec.yaml:5:11: create: accelerator_type is missing"));
  EXPECT_NE(std::string::npos,
            ParseError("run: x\npod:\n  tpu: n\n  zone: z\n  create:\n    accelerator_type: a\n"
                       "    version: v\n    spot: true\n    preemptible: true\n")
                .find("spot and preemptible exclude each other"));
  EXPECT_NE(std::string::npos,
            ParseError("run: x\npod:\n  tpu: n\n  zone: z\n  create: {acelerator_type: a}\n")
                .find("did you mean 'accelerator_type'?"));
  EXPECT_NE(std::string::npos,
            ParseError("run: x\npod:\n  local: 2\n  create: {accelerator_type: a, version: v}\n")
                .find("spec.yaml:4:3: 'create' needs the node's 'tpu' and 'zone'"));
  // Multislice: create: is for each node tpu: names.
  const JobSpec two = ParseSpecText(
      "run: x\npod:\n  tpu: a,b\n  zone: z\n  create: {accelerator_type: a, version: v}\n",
      "spec.yaml");
  EXPECT_TRUE(SpecCreateCovers(two.pod, {"a", "z", std::nullopt}));
  EXPECT_TRUE(SpecCreateCovers(two.pod, {"b", "z", std::nullopt}));
  EXPECT_FALSE(SpecCreateCovers(two.pod, {"c", "z", std::nullopt}));
  EXPECT_FALSE(SpecCreateCovers(two.pod, {"a", "other-zone", std::nullopt}));
  // A spec naming a project covers only its own node in that project: the same name and zone
  // without a project (`--tpu a --zone z`: gcloud's default project) is not covered.
  const JobSpec in_project = ParseSpecText(
      "run: x\npod:\n  tpu: a\n  zone: z\n  project: proj-1\n  create: {accelerator_type: a, "
      "version: "
      "v}\n",
      "spec.yaml");
  EXPECT_TRUE(SpecCreateCovers(in_project.pod, {"a", "z", "proj-1"}));
  EXPECT_FALSE(SpecCreateCovers(in_project.pod, {"a", "z", "other"}));
  EXPECT_FALSE(SpecCreateCovers(in_project.pod, {"a", "z", std::nullopt}));
}

TEST(Spec, PodCreateCapacityWait) {
  JobSpec spec = ParseSpecText(
      "run: x\npod:\n  tpu: n\n  zone: z\n  create: {accelerator_type: v4-32, version: v, "
      "capacity_wait: 6h}\n",
      "spec.yaml");
  ASSERT_TRUE(spec.pod.create);
  EXPECT_EQ(std::chrono::hours(6), CapacityWaitOf(*spec.pod.create));
  spec = ParseSpecText(
      "run: x\npod:\n  tpu: n\n  zone: z\n  create: {accelerator_type: a, version: v, "
      "capacity_wait: 0}\n",
      "spec.yaml");
  EXPECT_EQ(std::chrono::seconds(0), CapacityWaitOf(*spec.pod.create));
  EXPECT_NE(std::string::npos,
            ParseError("run: x\npod:\n  tpu: n\n  zone: z\n  create: {accelerator_type: a, "
                       "version: v, capacity_wait: a while}\n")
                .find("spec.yaml:5:11: create: bad capacity_wait 'a while'"));
}

TEST(Spec, PodCreateFallbackZonesAreZonesOnceEachAndCoverTheNodeThere) {
  JobSpec spec = ParseSpecText(
      "run: x\npod:\n  tpu: n\n  zone: us-central2-b\n  create: {accelerator_type: v4-32, "
      "version: v,\n    fallback_zones: [us-east5-a, europe-west4-a]}\n",
      "spec.yaml");
  ASSERT_TRUE(spec.pod.create);
  EXPECT_EQ((std::vector<std::string>{"us-central2-b", "us-east5-a", "europe-west4-a"}),
            SliceZones(*spec.pod.create, *spec.pod.zone));
  // The node lives where it was made: the spec's create: covers it in every one of its zones.
  EXPECT_TRUE(SpecCreateCovers(spec.pod, {"n", "us-east5-a", std::nullopt}));
  EXPECT_FALSE(SpecCreateCovers(spec.pod, {"n", "us-west4-a", std::nullopt}));
  const std::string bad = ParseError(
      "run: x\npod:\n  tpu: n\n  zone: z\n  create: {accelerator_type: a, version: v,\n"
      "    fallback_zones: [us-east5-a, us-east5-a]}\n");
  EXPECT_NE(std::string::npos, bad.find("spec.yaml:6:34: zone 'us-east5-a' is twice")) << bad;
  const std::string odd = ParseError(
      "run: x\npod:\n  tpu: n\n  zone: z\n  create: {accelerator_type: a, version: v,\n"
      "    fallback_zones: [\"us east\"]}\n");
  EXPECT_NE(std::string::npos, odd.find("bad zone 'us east' in fallback_zones")) << odd;
}

}  // namespace
}  // namespace podrun

namespace podrun {
namespace {

TEST(Spec, SeeingWhyKeys) {
  JobSpec d = ParseSpecText("run: x\n", "spec.yaml");
  EXPECT_EQ(kDefaultProgressPattern, d.progress);
  EXPECT_DOUBLE_EQ(0.5, d.straggler_ratio);
  EXPECT_EQ(120, d.straggler_seconds);
  EXPECT_EQ(0, d.stacks_signal);
  JobSpec s = ParseSpecText(
      "run: x\nprogress: 'it=(\\d+)'\nstraggler_ratio: 0.25\nstraggler_seconds: 30\n"
      "stacks: {signal: SIGUSR1}\n",
      "spec.yaml");
  EXPECT_EQ("it=(\\d+)", s.progress);
  EXPECT_DOUBLE_EQ(0.25, s.straggler_ratio);
  EXPECT_EQ(30, s.straggler_seconds);
  EXPECT_EQ(SIGUSR1, s.stacks_signal);
  EXPECT_EQ("", ParseSpecText("run: x\nprogress: none\n", "spec.yaml").progress);
  EXPECT_EQ(SIGUSR2, ParseSpecText("run: x\nstacks: {signal: USR2}\n", "s.yaml").stacks_signal);
}

TEST(Spec, SeeingWhyKeysAreCheckedWhereTheyAreWritten) {
  EXPECT_NE(
      std::string::npos,
      ParseError("run: x\nprogress: 'step (\\d+'\n").find("spec.yaml:2:11: progress: bad regex"));
  EXPECT_NE(std::string::npos,
            ParseError("run: x\nprogress: 'step \\d+'\n").find("exactly one capture group"));
  EXPECT_NE(
      std::string::npos,
      ParseError("run: x\nstraggler_ratio: 1.5\n").find("spec.yaml:2:18: bad straggler_ratio"));
  EXPECT_NE(std::string::npos, ParseError("run: x\nstraggler_ratio: abc\n").find("bad straggler"));
  EXPECT_NE(std::string::npos, ParseError("run: x\nstraggler_seconds: 0\n").find("out of range"));
  EXPECT_NE(std::string::npos,
            ParseError("run: x\nstacks: {signal: SIGKILL}\n").find("bad stacks signal 'SIGKILL'"));
  EXPECT_NE(std::string::npos,
            ParseError("run: x\nstacks: {sig: SIGUSR1}\n").find("unknown key 'sig'"));
}

}  // namespace
}  // namespace podrun
