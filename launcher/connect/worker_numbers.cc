// Asking the VMs their TPU worker numbers through their agents (see worker_numbers.h).
#include "launcher/connect/worker_numbers.h"

#include <fmt/format.h>

#include "launcher/base/error.h"
#include "launcher/base/parallel_for.h"
#include "launcher/connect/agent_connection.h"

namespace podrun {

std::vector<int> AskTpuWorkerNumbers(const Pod& pod, const std::vector<int>& indexes) {
  AgentConnections connections(pod, {}, indexes, /*relay_agent=*/false);
  std::vector<int> numbers(indexes.size(), -1);
  std::vector<std::string> errors(indexes.size());
  auto& all = connections.all();
  ParallelFor(all.size(), [&](size_t i) {
    try {
      all[i]->Connect(AgentConnection::Greeting::kHello);
      if (all[i]->hello().tpu_worker_number) {
        numbers[i] = *all[i]->hello().tpu_worker_number;
      } else {
        errors[i] = fmt::format(
            "{}: its metadata server gives no TPU worker number "
            "(agent-worker-number): is it a TPU VM?",
            all[i]->description());
      }
    } catch (const std::exception& e) {
      errors[i] = e.what();
    }
  });
  std::string failed;
  for (const std::string& e : errors) {
    if (!e.empty()) failed += (failed.empty() ? "" : "; ") + e;
  }
  if (!failed.empty()) {
    throw Error(ExitCode::kUnreachable,
                "cannot put the workers in TPU worker order (the API does not show the VMs' "
                "numbers, so each VM is asked): " +
                    failed);
  }
  return numbers;
}

}  // namespace podrun
