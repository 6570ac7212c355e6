// See clock_sync.h.
#include "launcher/connect/clock_sync.h"

#include <algorithm>

#include "launcher/agent_link/agent_client.h"
#include "launcher/store/job_store.h"

namespace podrun {

ClockOffset EstimateClockOffset(const std::vector<ClockSample>& samples) {
  ClockOffset best;
  bool first = true;
  for (const ClockSample& s : samples) {
    const int64_t rtt = s.received_ns - s.sent_ns;
    if (first || rtt < best.rtt_ns) {
      // The agent read its clock, on average, halfway through the round trip.
      best = {s.agent_now_ns - (s.sent_ns + rtt / 2), rtt};
      first = false;
    }
  }
  return best;
}

ClockOffset MeasureClockOffset(AgentClient& client, int probes, AgentHello* hello) {
  std::vector<ClockSample> samples;
  for (int i = 0; i < probes; ++i) {
    ClockSample sample;
    sample.sent_ns = NowUnixNs();
    AgentHello answer = client.Hello();
    sample.agent_now_ns = answer.now_ns;
    if (hello) *hello = std::move(answer);
    sample.received_ns = NowUnixNs();
    samples.push_back(sample);
  }
  return EstimateClockOffset(samples);
}

std::chrono::nanoseconds StartLead(std::chrono::nanoseconds minimum,
                                   std::chrono::nanoseconds reach) {
  return std::clamp(2 * reach, minimum, std::max(minimum, kMaxStartLead));
}

std::chrono::milliseconds StartConfirmWindow(std::chrono::nanoseconds lead,
                                             std::chrono::nanoseconds reach,
                                             std::chrono::milliseconds slack) {
  const auto window = std::chrono::ceil<std::chrono::milliseconds>(lead + 2 * reach) +
                      std::max(slack, std::chrono::milliseconds(0));
  return std::min(window, kMaxStartConfirmWindow);
}

}  // namespace podrun
