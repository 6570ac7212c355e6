// ParallelFor: the launcher's per-worker phases (connect, prepare, start, stop) run on up to one
// thread per worker, and never die of a thread that cannot be had.
#pragma once

#include <cstddef>
#include <functional>

namespace podrun {

// Runs f(i) for every i in [0, n) on up to `max_threads` threads (0: n), and returns when all
// have run. When the system refuses a thread, the threads already made take the rest (the
// calling thread, if none could be made): slower, never std::terminate. f must not throw.
void ParallelFor(size_t n, const std::function<void(size_t)>& f, size_t max_threads = 0);

}  // namespace podrun
