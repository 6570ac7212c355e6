// Cloud TPU discovery through gcloud (see tpu_discovery.h).
#include "launcher/pod/tpu_discovery.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "launcher/error.h"
#include "proto/unique_fd.h"

extern char** environ;

namespace podrun {
namespace {

struct ProgramResult {
  int exit_code = -1;  // -1: could not run it
  std::string out, err;
};

// Runs argv (searched on PATH), stdin /dev/null, collecting stdout and stderr.
ProgramResult RunProgram(const std::vector<std::string>& args) {
  ProgramResult result;
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
    result.err = std::strerror(errno);
    return result;
  }
  UniqueFd out_r(out[0]), out_w(out[1]), err_r(err[0]), err_w(err[1]);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out_w.get(), STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&fa, err_w.get(), STDERR_FILENO);
  std::vector<std::string> copy = args;
  std::vector<char*> argv;
  argv.reserve(copy.size() + 1);
  for (auto& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  out_w.reset();
  err_w.reset();
  if (rc != 0) {
    result.err = fmt::format("cannot run {}: {}", args[0], std::strerror(rc));
    return result;
  }
  pollfd fds[2] = {{out_r.get(), POLLIN, 0}, {err_r.get(), POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  char buf[65536];
  int open = 2;
  while (open > 0) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !fds[i].revents) continue;
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[i]->append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        fds[i].fd = -1;
        --open;
      }
    }
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

std::filesystem::path CacheFile(const std::filesystem::path& dir, const TpuQuery& q) {
  return dir / fmt::format("tpu-{}-{}-{}.json", q.project.value_or("default"), q.zone, q.name);
}

std::string Describe(const TpuQuery& q) {
  return fmt::format("tpu {} (zone {}{})", q.name, q.zone,
                     q.project ? ", project " + *q.project : std::string());
}

}  // namespace

std::vector<std::string> GcloudDescribeCommand(const TpuQuery& q) {
  const char* gcloud = std::getenv("PODRUN_GCLOUD");
  std::vector<std::string> argv = {gcloud && *gcloud ? gcloud : "gcloud",
                                   "compute",
                                   "tpus",
                                   "tpu-vm",
                                   "describe",
                                   q.name,
                                   "--zone",
                                   q.zone};
  if (q.project) {
    argv.push_back("--project");
    argv.push_back(*q.project);
  }
  argv.push_back("--format=json");
  return argv;
}

TpuNode DescribeTpuNode(const TpuQuery& query, const std::filesystem::path& cache_dir, bool refresh,
                        bool* from_cache) {
  if (from_cache != nullptr) *from_cache = false;
  const std::string what = Describe(query);
  const std::filesystem::path cache = CacheFile(cache_dir, query);
  std::error_code ec;
  if (!refresh) {
    const auto written = std::filesystem::last_write_time(cache, ec);
    if (!ec && std::filesystem::file_time_type::clock::now() - written < kTpuCacheTtl) {
      std::ifstream in(cache);
      std::stringstream text;
      text << in.rdbuf();
      try {
        TpuNode node = ParseTpuNode(text.str(), what);
        if (node.state == "READY") {
          if (from_cache != nullptr) *from_cache = true;
          return node;
        }
      } catch (const Error&) {  // a damaged cache entry: ask again
      }
    }
  }
  const std::vector<std::string> argv = GcloudDescribeCommand(query);
  ProgramResult r = RunProgram(argv);
  if (r.exit_code != 0) {
    std::string message = r.err;
    while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) {
      message.pop_back();
    }
    throw Error(ExitCode::kUnreachable,
                fmt::format("{}: `{} ... describe` failed{}{}", what, argv[0],
                            r.exit_code > 0 ? fmt::format(" (exit {})", r.exit_code) : "",
                            message.empty() ? "" : ": " + message));
  }
  TpuNode node = ParseTpuNode(r.out, what);
  if (node.state == "READY") {
    std::filesystem::create_directories(cache_dir, ec);
    const std::filesystem::path tmp = cache.string() + ".tmp";
    {
      std::ofstream out(tmp, std::ios::trunc);
      out << r.out;
    }
    std::filesystem::rename(tmp, cache, ec);
  }
  return node;
}

}  // namespace podrun
