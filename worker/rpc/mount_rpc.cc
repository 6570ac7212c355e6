// See mount_rpc.h.
#include "worker/rpc/mount_rpc.h"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "proto/home_path.h"
#include "worker/base/agent_error.h"
#include "worker/host/mounts.h"
#include "worker/job/job_runner.h"

namespace podrun::agent {
namespace {

// "~" and "~/x" under the user's home; anything else must be absolute.
std::string ExpandPath(const std::string& path, const char* what) {
  if (auto expanded = ExpandHome(path, UserHome().string())) return *expanded;
  if (path.empty() || path[0] != '/') {
    throw AgentError(ErrorKind::kInvalidArgument,
                     std::string(what) + " '" + path + "': not an absolute path");
  }
  return path;
}

bool OnPath(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/sbin:/usr/bin:/sbin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (!dir.empty() && ::access((dir + "/" + program).c_str(), X_OK) == 0) return true;
  }
  return ::access(("/usr/sbin/" + program).c_str(), X_OK) == 0 ||
         ::access(("/sbin/" + program).c_str(), X_OK) == 0;
}

}  // namespace

void MountForRequest(const v1::MountRequest& request, v1::MountReply* reply) {
  MountContext context;
  context.worker_id = static_cast<int>(request.worker_id());
  context.peer_addresses.assign(request.peer_addresses().begin(), request.peer_addresses().end());
  context.root = ::geteuid() == 0;
  context.uid = ::geteuid();
  context.have_exportfs = OnPath("exportfs");
  std::vector<MountEntry> mounts;
  for (const v1::MountSpec& m : request.mounts()) {
    MountEntry e;
    e.type = m.type();
    e.server_worker = m.server_worker();
    e.server = m.server();
    e.export_path = m.export_path();
    e.bucket = m.bucket();
    e.source = e.type == "bind" ? ExpandPath(m.source(), "bind source") : m.source();
    e.path = ExpandPath(m.path(), "mount path");
    e.options = m.options();
    mounts.push_back(std::move(e));
  }
  try {
    for (const std::string& action : ApplyMounts(mounts, context, RunProgram, [] {
           std::ifstream in("/proc/self/mountinfo");
           std::stringstream text;
           text << in.rdbuf();
           return text.str();
         })) {
      reply->add_actions(action);
    }
  } catch (const std::runtime_error& e) {
    throw AgentError(ErrorKind::kFailedPrecondition, e.what());
  }
}

}  // namespace podrun::agent
