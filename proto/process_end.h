// How a job's process ended: the one type both sides use (the agent records it, the launcher
// reads it). v1::ProcessEnd is its wire form, converted in worker/rpc/agent_proto.cc and
// launcher/agent_link/agent_client.cc. A command run straight over SSH ends with a signal's
// name instead (RFC 4254), which launcher/base/exit_status.h keeps as it came.
#pragma once

#include <cstdint>
#include <optional>

namespace podrun {

// Why a job whose start was never confirmed ended (ProcessEnd::start_unconfirmed), as the worker's
// log and podrun's commands say it.
inline constexpr char kStartUnconfirmedReason[] =
    "the start was never confirmed: the launcher was lost while starting the gang";

struct ProcessEnd {
  std::optional<int> exit_code;  // set when it exited
  std::optional<int> signal;     // set when a signal killed it
  int64_t end_time_ns = 0;       // the worker's wall clock
  bool stopped_by_request = false;
  bool never_started = false;  // stopped while only prepared: neither code nor signal is set
  // Its supervisor vanished without recording how it ended (killed, or the machine rebooted):
  // neither code nor signal is set.
  bool lost = false;
  bool killed = false;  // a requested stop needed SIGKILL after the grace period
  // Its start was never confirmed (the launcher was lost while starting the gang), so its
  // supervisor stopped it; exit_code or signal say how it ended.
  bool start_unconfirmed = false;

  bool operator==(const ProcessEnd&) const = default;
};

}  // namespace podrun
