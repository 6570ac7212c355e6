// TestPod: a GoogleTest fixture helper owning a simulated pod made by scripts/testpod.
#include "tests/testpod.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#ifndef PODRUN_SOURCE_DIR
#error "PODRUN_SOURCE_DIR must be defined (the podrun source tree)"
#endif

namespace podrun::testing {

std::string TestPod::Script() { return std::string(PODRUN_SOURCE_DIR) + "/scripts/testpod"; }

namespace {

// $PODRUN_TESTPOD_ID_OFFSET shifts every pod id (mod 100), so that two checkouts can run their
// integration tests at the same time without sharing a pod.
int ShiftedId(int id) {
  const char* offset = std::getenv("PODRUN_TESTPOD_ID_OFFSET");
  return offset ? (id + std::atoi(offset)) % 100 : id;
}

}  // namespace

TestPod::TestPod(int workers, int id, const std::vector<std::string>& sshd_options)
    : workers_(workers), id_(ShiftedId(id)), dir_("/tmp/podrun-testpod-" + std::to_string(id_)) {
  std::string args = std::to_string(workers);
  for (const std::string& option : sshd_options) args += " --sshd-option " + ShellQuote(option);
  CommandResult up = RunScript("up", args);
  if (up.exit_code != 0) {
    RunScript("down");
    throw std::runtime_error("scripts/testpod up " + args + " --id " + std::to_string(id) +
                             " failed (exit " + std::to_string(up.exit_code) + "):\n" + up.output);
  }
  std::ifstream file(host_file());
  for (std::string line; std::getline(file, line);) {
    if (!line.empty()) hosts_.push_back(line);
  }
  if (static_cast<int>(hosts_.size()) != workers) {
    RunScript("down");
    throw std::runtime_error("scripts/testpod wrote " + std::to_string(hosts_.size()) +
                             " hosts to " + host_file() + ", expected " + std::to_string(workers));
  }
}

TestPod::~TestPod() { RunScript("down"); }

int TestPod::CountProcesses(const std::string& pattern) const {
  // Built with a stream: GCC 12 at -O3 reports a false -Wrestrict on string concatenation here.
  std::ostringstream command;
  command << "for i in $(seq 0 " << workers_ - 1 << "); do ip netns pids pr" << id_
          << "-w$i 2>/dev/null; done | while read -r p; do tr '\\0' ' ' </proc/$p/cmdline "
             "2>/dev/null && echo; done | grep -cE -- "
          << ShellQuote(pattern) << " || true";
  return std::atoi(RunCommand(command.str()).output.c_str());
}

std::string TestPod::address(int i) const {
  return "10.233." + std::to_string(id_) + "." + std::to_string(10 + i);
}

void TestPod::Cut(int i) {
  CommandResult r = RunScript("cut", std::to_string(i));
  if (r.exit_code != 0) {
    throw std::runtime_error("testpod cut " + std::to_string(i) + ": " + r.output);
  }
}

void TestPod::Heal(int i) {
  CommandResult r = RunScript("heal", std::to_string(i));
  if (r.exit_code != 0) {
    throw std::runtime_error("testpod heal " + std::to_string(i) + ": " + r.output);
  }
}

void TestPod::Reboot(int i) {
  CommandResult r = RunScript("reboot", std::to_string(i));
  if (r.exit_code != 0) {
    throw std::runtime_error("testpod reboot " + std::to_string(i) + ": " + r.output);
  }
}

void TestPod::RestartSshd(int i) {
  CommandResult r = RunScript("restart-sshd", std::to_string(i));
  if (r.exit_code != 0) {
    throw std::runtime_error("testpod restart-sshd " + std::to_string(i) + ": " + r.output);
  }
}

CommandResult TestPod::Exec(int i, const std::string& shell_command) const {
  return RunScript("exec", std::to_string(i) + " -- bash -c " + ShellQuote(shell_command));
}

CommandResult TestPod::Ssh(int i, const std::string& shell_command, int connect_timeout_s) const {
  // Built with a stream: GCC 12 at -O3 reports a false -Wrestrict on string concatenation here.
  std::ostringstream command;
  command << "ssh -F " << ShellQuote(ssh_config())
          << " -o BatchMode=yes -o ConnectTimeout=" << connect_timeout_s << ' ' << name(i) << ' '
          << ShellQuote(shell_command);
  return RunCommand(command.str());
}

CommandResult TestPod::RunScript(const std::string& verb, const std::string& args) const {
  return RunCommand(ShellQuote(Script()) + " " + verb + " --id " + std::to_string(id_) + " " +
                    args);
}

CommandResult TestPod::StartMetadataServer(int i, int number) const {
  // Written into the worker's own /tmp (the workers do not see this host's).
  const std::string script =
      "import http.server, sys\n"
      "n = sys.argv[1]\n"
      "class H(http.server.BaseHTTPRequestHandler):\n"
      "    def do_GET(self):\n"
      "        if (self.path == '/computeMetadata/v1/instance/attributes/agent-worker-number'\n"
      "                and self.headers.get('Metadata-Flavor') == 'Google'):\n"
      "            body = n.encode()\n"
      "            self.send_response(200)\n"
      "            self.send_header('Content-Length', str(len(body)))\n"
      "            self.end_headers()\n"
      "            self.wfile.write(body)\n"
      "        else:\n"
      "            self.send_response(404)\n"
      "            self.end_headers()\n"
      "    def log_message(self, *args):\n"
      "        pass\n"
      "http.server.HTTPServer(('169.254.169.254', 80), H).serve_forever()\n";
  const std::string server = "/tmp/podrun-test-metadata.py";
  return Exec(i, "cat > " + server + " <<'PYEOF'\n" + script + "PYEOF\n" +
                     "ip addr add 169.254.169.254/32 dev lo && (setsid /usr/bin/python3 " + server +
                     " " + std::to_string(number) +
                     " >/dev/null 2>&1 &) && "
                     "for t in $(seq 50); do curl -sf -o /dev/null http://169.254.169.254/ ; "
                     "[ $? = 22 ] && break; sleep 0.1; done; curl -sf -H 'Metadata-Flavor: Google' "
                     "http://169.254.169.254/computeMetadata/v1/instance/attributes/"
                     "agent-worker-number");
}

}  // namespace podrun::testing
