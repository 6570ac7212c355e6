// RunTimeline: where a run's time went (`podrun report`, docs/reference.md): its attempts, each
// worker's phases, steps and end, and the recoveries between attempts, as plain data; and the
// run's account made from it (AccountRun): goodput and the time lost by cause.
//
// The rules, exactly (all times wall clock; step times are the workers' own clocks):
//  - The run's wall time goes from the first attempt's start (or, when the launch created its
//    TPU node first, from the start of that creation) to the last attempt's end (to now while it
//    has not ended).
//  - An attempt's steps go from the first step seen on any of its workers to the last step seen
//    on any of them, both clamped to the attempt's start and end (or now). The run's time making
//    steps is the sum of its attempts' steps; goodput = time making steps / wall time (0 when
//    the wall time is 0; none when no attempt ever stepped).
//  - An attempt ended by a preemption, a hang or a failure (its ended_by; an attempt that failed
//    or could not start without saying why counts as a failure), or stopped (its state; Ctrl-C
//    counts as a stop), loses to that cause the time from its last step (its start if it never
//    stepped) to the next attempt's first step (that attempt's end, or now, if it never
//    stepped; the run's end when there is no next attempt). An interval is clipped to begin no
//    earlier than the one before ends, so no time is lost twice: a preemption followed by an
//    attempt that never stepped keeps that attempt's time.
//  - Startup is the time from the run's start to the first attempt's first step (0 when it
//    never stepped: that time is lost to how it ended, or is "other"), split by the phases
//    recorded: the node's creation by the launch ("creating", or "queued/creating" for a queued
//    resource), "launch" (to the first worker phase), then each phase from where the last one
//    ended to its last worker's end, then "first step" (the last phase's end to the first step).
//  - Other is what is left: wall - steps - startup - lost (e.g. the time after the last step
//    of an attempt that succeeded, or between an attempt that succeeded and a rerun).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "launcher/store/attempt_reason.h"
#include "launcher/store/job_store.h"
#include "launcher/store/run_records.h"
#include "launcher/store/worker_state.h"

namespace podrun {

// One phase of one worker: agents, sync, mounts, setup or start.
struct PhaseSegment {
  std::string phase;
  int64_t start_ns = 0;
  std::optional<int64_t> end_ns;  // none: not ended (the launcher went meanwhile)
  bool failed = false;            // the worker dropped out in it
};

// One worker in one attempt.
struct WorkerTimeline {
  int worker = 0;
  std::string host;
  std::vector<PhaseSegment> phases;  // in the order they ran
  std::optional<int64_t> first_step_ns;
  std::optional<int64_t> last_step_ns;
  std::optional<int64_t> last_step;
  std::optional<double> steps_per_s;       // its recent rate, when recorded
  std::optional<StragglerNote> straggler;  // set: flagged as one, and why
  std::vector<StepSample> samples;         // thinned by the writer; may be empty
  // Its end (its run process's, or why it never ran).
  WorkerState state = WorkerState::kPending;
  std::optional<int> exit_code;
  std::optional<int> signal;
  std::optional<int64_t> start_ns;  // its run process started
  std::optional<int64_t> end_ns;
  std::string error;
};

struct AttemptTimeline {
  int number = 0;
  AttemptReason reason = AttemptReason::kLaunch;
  int64_t started_ns = 0;
  std::optional<int64_t> ended_ns;
  AttemptState state = AttemptState::kStarting;
  AttemptEnd ended_by = AttemptEnd::kNone;
  std::string cause;
  std::optional<int> exit_code;
  std::vector<WorkerTimeline> workers;          // by worker
  std::optional<HangReportRecord> hang_report;  // made when its stall watch fired
  // The pod's own phases before it (worker -1 in the store): the TPU node the launch created
  // ("creating" or "queued/creating"), before the attempt's start.
  std::vector<PhaseSegment> provisioning;
};

// The pod between attempts: a preemption seen after attempt `after_attempt`, until the node
// was READY again ("recreating" when podrun recreated it, else "waiting for READY").
struct RecoveryInterval {
  int after_attempt = 0;
  std::string node;
  std::string state;  // PREEMPTED, TERMINATED, ...
  int64_t seen_ns = 0;
  std::optional<int64_t> back_ns;
  bool recreated = false;
  const char* what() const { return recreated ? "recreating" : "waiting for READY"; }
};

struct RunTimeline {
  std::string job_id;
  std::string job_name;
  std::string pod;
  int64_t now_ns = 0;                     // when it was made: the end of what has not ended
  std::vector<AttemptTimeline> attempts;  // oldest first
  std::vector<RecoveryInterval> recoveries;
};

// Why time was lost.
enum class LostCause { kPreemption, kHang, kFailure, kStop };
constexpr size_t kLostCauses = 4;
// "preemption", "hang", "failure", "stop".
const char* LostCauseName(LostCause cause);
// What an attempt's end loses time to; none for one that succeeded or still runs.
std::optional<LostCause> LostCauseOf(const AttemptTimeline& attempt);

// An attempt's first and last step, on any worker (clamped to the attempt).
struct StepSpan {
  int64_t first_ns = 0;
  int64_t last_ns = 0;
};
std::optional<StepSpan> AttemptSteps(const AttemptTimeline& attempt, int64_t now_ns);

// A stretch of time lost to `cause` after attempt `attempt`.
struct LostInterval {
  int attempt = 0;
  LostCause cause = LostCause::kFailure;
  int64_t from_ns = 0;
  int64_t to_ns = 0;
};

// A part of the startup: "launch", a phase's name, or "first step".
struct StartupPart {
  std::string part;
  int64_t ns = 0;
};

struct RunAccount {
  int64_t start_ns = 0;  // the first attempt's start
  int64_t end_ns = 0;    // the last attempt's end, or now
  int64_t wall_ns = 0;
  int64_t steps_ns = 0;
  bool stepped = false;                        // some attempt stepped
  double goodput = 0;                          // steps_ns / wall_ns, 0..1
  std::vector<std::optional<StepSpan>> steps;  // per attempt, as the timeline's attempts
  std::array<int64_t, kLostCauses> lost_ns{};  // by LostCause
  std::vector<LostInterval> lost;
  int64_t startup_ns = 0;
  std::vector<StartupPart> startup;  // sums to startup_ns
  int64_t other_ns = 0;
};

// The account of `run` by the rules above. Pure.
RunAccount AccountRun(const RunTimeline& run);

// The timeline of job `job` from the store, as of `now_ns`.
RunTimeline LoadRunTimeline(JobStore& store, const JobRecord& job, int64_t now_ns = NowUnixNs());

}  // namespace podrun
