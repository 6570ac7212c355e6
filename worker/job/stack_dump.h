// StackDump: a stack of each of a job's processes, for `podrun why`, taken by an outside tool:
// py-spy (`py-spy dump --pid N`) for Python processes when it is installed, else gdb (attach,
// `thread apply all bt 32`, detach). The tools run in parallel, each in a process group of its
// own, the whole bounded by a timeout: what still runs then is stopped (SIGTERM, on which gdb
// detaches, then SIGKILL) and its process says "timed out". Where Yama keeps a process from
// tracing a non-descendant (ptrace_scope >= 1) and the agent is not root, the tool runs
// through `sudo -n` (Cloud TPU VMs allow it without a password). Every program (the tools, sudo,
// timeout) is run by its full path, found only in directories no one but root can write
// (trusted_program.h). gdb prints no argument values; a stack whose process is not the same any
// more once the tool is done (its start time differs) is dropped.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "worker/job/process_probe.h"

namespace podrun::agent {

// The most output kept of one process's stack.
inline constexpr size_t kStackMaxBytes = 16u << 10;
// The most processes of one worker that get a stack.
inline constexpr size_t kMaxStacksPerWorker = 16;

struct StackOptions {
  std::chrono::milliseconds timeout{10000};  // the whole gathering
  // Where the tools are looked for (only their root-owned, non-writable entries are used).
  // Empty: ProgramSearchDirs(). Tests put fakes first.
  std::vector<std::string> search_dirs = {};
  // Whether the tools run through `sudo -n`; nullopt: when ptrace_scope >= 1 and not root.
  std::optional<bool> use_sudo = {};
};

// The programs a stack is taken with, as full resolved paths ("" when not found).
struct StackTools {
  std::string py_spy = {}, gdb = {};
  std::string sudo = {}, timeout = {};  // used only with use_sudo
  bool use_sudo = false;
};

// Looks the tools up as `options` says.
StackTools FindStackTools(const StackOptions& options);

// The argv that takes `pid`'s stack with `tool` (a path from `tools`), e.g. {"/usr/bin/gdb",
// "-p", "42", ...}; through sudo (and coreutils' timeout, since a root tool cannot be killed
// by the agent) when the tools say so. `bound` is the time it has.
std::vector<std::string> StackCommand(const StackTools& tools, const std::string& tool, pid_t pid,
                                      std::chrono::milliseconds bound);

// Which of `processes` get a stack: not zombies; the job's non-shell processes first, then its
// shells, in their order; at most kMaxStacksPerWorker. Returns their indices, in order.
std::vector<size_t> ChooseStackTargets(const std::vector<ProcessProbe>& processes);

// Takes the stacks of the chosen `processes`, filling their stack_tool, stack and stack_error
// (those not chosen get a stack_error saying why; a process whose start_ticks no longer match
// once its tool is done gets none). `note` is set once for the worker when no
// tool is found. Returns within options.timeout plus a short grace for stopping the tools.
void DumpStacks(std::vector<ProcessProbe>* processes, const StackOptions& options,
                std::string* note);

}  // namespace podrun::agent
