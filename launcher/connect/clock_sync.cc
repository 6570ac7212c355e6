// See clock_sync.h.
#include "launcher/connect/clock_sync.h"

#include <algorithm>
#include <cstdint>

#include "launcher/agent_link/agent_client.h"
#include "launcher/store/job_store.h"

namespace podrun {

ClockOffset EstimateClockOffset(const std::vector<ClockSample>& samples) {
  ClockOffset best;  // the quickest sample's
  int64_t low = INT64_MIN, high = INT64_MAX;
  bool first = true;
  for (const ClockSample& s : samples) {
    const int64_t rtt = s.received_ns - s.sent_ns;
    low = std::max(low, s.agent_now_ns - s.received_ns);
    high = std::min(high, s.agent_now_ns - s.sent_ns);
    if (first || rtt < best.rtt_ns) {
      best = {0, rtt, s.agent_now_ns - s.received_ns, s.agent_now_ns - s.sent_ns};
      first = false;
    }
  }
  if (low <= high) best.low_ns = low, best.high_ns = high;
  best.offset_ns = std::clamp<int64_t>(0, best.low_ns, best.high_ns);
  return best;
}

std::vector<int64_t> StartOffsets(const std::vector<ClockOffset>& measured) {
  // Marzullo's idea, simply: the best value is 0 or an interval's end.
  std::vector<int64_t> candidates = {0};
  for (const ClockOffset& m : measured) {
    candidates.push_back(m.low_ns);
    candidates.push_back(m.high_ns);
  }
  const auto magnitude = [](int64_t v) {
    return v < 0 ? uint64_t{0} - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  };
  int64_t common = 0;
  size_t most = 0;
  for (const int64_t c : candidates) {
    const auto held = static_cast<size_t>(
        std::count_if(measured.begin(), measured.end(),
                      [c](const ClockOffset& m) { return m.low_ns <= c && c <= m.high_ns; }));
    if (held > most || (held == most && magnitude(c) < magnitude(common))) {
      most = held;
      common = c;
    }
  }
  std::vector<int64_t> offsets;
  offsets.reserve(measured.size());
  for (const ClockOffset& m : measured) {
    offsets.push_back(std::clamp(common, m.low_ns, std::max(m.low_ns, m.high_ns)));
  }
  return offsets;
}

ClockOffset MeasureClockOffset(AgentClient& client, int probes, AgentHello* hello,
                               bool tpu_worker_number) {
  std::vector<ClockSample> samples;
  for (int i = 0; i < probes; ++i) {
    ClockSample sample;
    sample.sent_ns = NowUnixNs();
    AgentHello answer = client.Hello(tpu_worker_number);
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
                      kQuietAfterStart + std::max(slack, std::chrono::milliseconds(0));
  return std::min(window, kMaxStartConfirmWindow);
}

}  // namespace podrun
