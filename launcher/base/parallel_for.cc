// See parallel_for.h.
#include "launcher/base/parallel_for.h"

#include <atomic>
#include <system_error>
#include <thread>
#include <vector>

namespace podrun {

void ParallelFor(size_t n, const std::function<void(size_t)>& f, size_t max_threads) {
  if (max_threads == 0 || max_threads > n) max_threads = n;
  std::atomic<size_t> next{0};
  auto drain = [&] {
    for (size_t i = next++; i < n; i = next++) f(i);
  };
  std::vector<std::thread> threads;
  threads.reserve(max_threads);
  for (size_t t = 0; t < max_threads; ++t) {
    try {
      threads.emplace_back(drain);
    } catch (const std::system_error&) {
      break;  // out of threads (or memory for stacks): the ones made take the rest
    }
  }
  if (threads.empty()) drain();
  for (std::thread& t : threads) t.join();
}

}  // namespace podrun
