// TestPod: a GoogleTest fixture helper owning a simulated pod made by scripts/testpod.
#pragma once

#include <string>
#include <vector>

#include "tests/run_command.h"

namespace podrun::testing {

// A pod of N workers (network namespaces with a real sshd each), up for the object's
// lifetime: the constructor runs `scripts/testpod up`, the destructor `scripts/testpod down`.
// Pods with different ids can exist at the same time. Needs root.
class TestPod {
 public:
  // Brings up `workers` workers as pod `id` (0..99, shifted by $PODRUN_TESTPOD_ID_OFFSET); each of
  // `sshd_options` (e.g. "AllowStreamLocalForwarding no") is appended to every worker's
  // sshd_config. Throws std::runtime_error with the script's output if the pod does not come up.
  explicit TestPod(int workers, int id = 0, const std::vector<std::string>& sshd_options = {});
  // Tears the pod down (every process in it included).
  ~TestPod();

  TestPod(const TestPod&) = delete;
  TestPod& operator=(const TestPod&) = delete;

  // Number of workers.
  int size() const { return workers_; }
  // Pod id.
  int id() const { return id_; }
  // State directory, /tmp/podrun-testpod-<id>.
  const std::string& dir() const { return dir_; }
  // Workers in rank order, as "root@10.233.<id>.<10+i>".
  const std::vector<std::string>& hosts() const { return hosts_; }
  // Pod file: one "root@address" per line, rank order.
  std::string host_file() const { return dir_ + "/hosts"; }
  // Client private key (ed25519, no passphrase) that every worker accepts.
  std::string identity() const { return dir_ + "/id_ed25519"; }
  // known_hosts with every worker's host key, under its address and its name wI.
  std::string known_hosts() const { return dir_ + "/known_hosts"; }
  // ssh_config with a `Host wI` entry per worker and a `Host 10.233.<id>.*` entry.
  std::string ssh_config() const { return dir_ + "/ssh_config"; }
  // Address of worker i, "10.233.<id>.<10+i>".
  std::string address(int i) const;
  // Name of worker i ("wI"): its hostname, resolvable on every worker and in ssh_config().
  // Built by append: GCC 12 at -O3 reports a false -Wrestrict on `"w" + std::to_string(i)`.
  std::string name(int i) const { return std::string("w").append(std::to_string(i)); }

  // How many processes of this pod (in its workers' namespaces: sshd, sessions, agents, jobs)
  // have a command line matching the extended regex `pattern`. Nothing outside the pod counts.
  int CountProcesses(const std::string& pattern) const;
  // Cuts worker i off the network (its link goes down; connections hang, new ones time out).
  void Cut(int i);
  // Puts worker i back on the network.
  void Heal(int i);
  // What a reboot does to worker i: every process in it is killed (its /tmp goes too), then its
  // sshd starts afresh with a new boot id; its home and its network stay.
  void Reboot(int i);
  // Kills every sshd process of worker i (its SSH connections break; nothing else is touched)
  // and starts its sshd again.
  void RestartSshd(int i);
  // Starts in worker i's namespaces a Compute Engine metadata server (a real HTTP server at
  // 169.254.169.254:80) that answers `instance/attributes/agent-worker-number` with `number`, as
  // a TPU VM's does; it ends with the worker's processes. Returns what it answered once up.
  CommandResult StartMetadataServer(int i, int number) const;
  // Runs `shell_command` (with bash -c) in worker i's network, UTS and mount namespaces, as
  // root, as the worker sees things. Returns its exit code and output (stderr merged).
  CommandResult Exec(int i, const std::string& shell_command) const;
  // Runs `shell_command` on worker i through the system ssh client (BatchMode, this pod's
  // ssh_config, ConnectTimeout of `connect_timeout_s`). Exit code 255: ssh itself failed.
  CommandResult Ssh(int i, const std::string& shell_command, int connect_timeout_s = 5) const;

  // Path of scripts/testpod in the source tree.
  static std::string Script();

 private:
  // Runs `scripts/testpod VERB --id <id> ARGS` (args already shell-quoted as needed).
  CommandResult RunScript(const std::string& verb, const std::string& args = "") const;

  int workers_;
  int id_;
  std::string dir_;
  std::vector<std::string> hosts_;
};

}  // namespace podrun::testing
